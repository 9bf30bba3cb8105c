//! Benchmarks, measurements and load generators.
//!
//! - [`backends`]: ingest and full export on both storage backends (Parquet,
//!   ClickHouse) against ClickHouse's own HTTP interface on the same rows.
//! - [`fleet`]: a deterministic simulated fleet of vehicles reporting
//!   realistic telemetry at 1 Hz; the source of data for every measurement
//!   and load generator here.
//! - [`export`]: the raw data export load generator (server over HTTP
//!   against DuckDB and ClickHouse on the same files).
//! - [`layout`]: how many bytes of the stored Parquet files a read of a few
//!   inner columns touches compared with a read of every column (the `layout`
//!   binary prints it; a test keeps it under the bound).
//! - [`vehicle_list`]: `vehicle/list` over an account of 100,000 vehicles
//!   among 1,000 accounts (issue 14), pages checked, then timed.
//! - [`user_upload`]: `panel/user/upload` of a dealer's 10,000 users as CSV
//!   and XLSX (issue 15), with the server's split of each upload.
//! - [`panel_user_list`]: `panel/user/list` over a dealer of 100,000 users
//!   (issue 15), pages checked, then timed.
//! - [`ingest_load`]: the HTTP ingest load generator of issue 17 (the real
//!   `trackhouse serve` process against ClickHouse's `JSONEachRow` insert).
//!
//! Criterion benches of the kernels (batching, CSV encoding, resampling) and
//! load-generator binaries for the end-to-end paths live here, each compared
//! side by side with a named peer in the same run; results and the commands
//! to reproduce them are recorded in `BENCHMARKS.md`.

pub mod backends;
pub mod export;
pub mod fleet;
pub mod ingest_load;
pub mod layout;
pub mod panel_user_list;
pub mod resampling;
pub mod user_upload;
pub mod vehicle_list;
