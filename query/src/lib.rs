//! Reading stored telemetry with DataFusion.
//!
//! This crate will own the DataFusion session and table providers over the
//! Parquet files (and ClickHouse), the raw data export of
//! `/dwh/v1/tracker/raw_data/read` (CSV, Parquet and NDJSON encoders over Arrow
//! arrays, `.*` column expansion, message-time and server-time filters) and
//! `get_inputs`, and the series reads that feed `resample`.
//!
//! It does not own writing (that is `ingest`) nor HTTP (that is `api`).
