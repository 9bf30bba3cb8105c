//! Reading stored telemetry with DataFusion.
//!
//! [`scan::scan`] streams one tracker's rows over a
//! [`schemas::TelemetrySnapshot`] in message-time order, pruning files by the
//! catalog and row groups by Parquet statistics. This crate will also own the
//! raw data export of
//! `/dwh/v1/tracker/raw_data/read` (CSV, Parquet and NDJSON encoders over Arrow
//! arrays, `.*` column expansion, message-time and server-time filters) and
//! `get_inputs`, and the series reads that feed `resample` ([`series`]).
//!
//! It does not own writing (that is `ingest`) nor HTTP (that is `api`).

mod clickhouse;
pub mod columns;
pub mod csv;
mod error;
pub mod export;
pub mod scan;
pub mod series;
pub mod time_range;

pub use datafusion::execution::TaskContext;
pub use error::{Error, Result};

/// The DataFusion task context reads run in: shared by every read of a server.
pub fn task_context() -> std::sync::Arc<TaskContext> {
    task_context_with_batch_size(8192)
}

/// The task context of reads that keep whole series in memory (see
/// [`series`]): every operator's batches hold up to `rows` rows, so a day of
/// 1 Hz readings comes in two batches rather than eleven (DataFusion splits a
/// scan's batches to the session's batch size).
pub fn task_context_with_batch_size(rows: usize) -> std::sync::Arc<TaskContext> {
    let config = datafusion::prelude::SessionConfig::new()
        .with_batch_size(rows)
        .with_target_partitions(2);
    datafusion::prelude::SessionContext::new_with_config(config).task_ctx()
}
