//! Intake of device messages, from request to durable columnar storage.
//!
//! ```text
//! lines ──parse/validate (line)──► Ingest::write: encode, hash, Arrow batches (batch)
//!   writer thread: dedup (dedup) → WAL append … one fdatasync per group (wal)
//!                  → kept rows' batches → memtable, visible to readers → ack
//!   flusher thread: rotate WAL → sort, write Parquet + catalog (sink/parquet)
//!                   → swap memtable for files → delete WAL segments
//! ```
//!
//! [`Ingest`] is the entry point; [`Ingest::write`] returns only once the
//! messages are durable in the write-ahead log and visible to readers through
//! [`schemas::TelemetrySource`]. It does not own reading (that is `query`) nor
//! HTTP (that is `api`, which resolves trackers and calls in here).
//!
//! With [`IngestConfig::clickhouse`] set, the flusher inserts into ClickHouse
//! (`deploy/clickhouse/schema.sql`) instead of writing Parquet files:
//! [`clickhouse`] maps stored batches to rows of the table and inserts them,
//! retrying while the server is down; the WAL is truncated only after
//! ClickHouse confirmed.
//!
//! [`Ingest::live`] holds each tracker's recent positions in memory
//! ([`LivePositions`]), recorded as writes are acknowledged, for live views.

mod batch;
mod buffers;
pub mod clickhouse;
mod dedup;
mod engine;
mod error;
pub mod intake;
mod line;
mod live;
mod metrics;
pub mod priority;
mod record;
mod rows;
mod sink;
#[doc(hidden)]
pub mod stages;
mod wal;

pub use engine::{
    DEFAULT_COMPACT_MAX_ROWS, DEFAULT_COMPACT_MIN_FILES, DEFAULT_COMPACT_SMALL_ROWS,
    DEFAULT_DEDUP_FOOTER_CACHE_BYTES, DEFAULT_DEDUP_MAX_ENTRIES, DEFAULT_DEDUP_RECENT,
    DEFAULT_FLUSH_BYTES, DEFAULT_FLUSH_NICE, DEFAULT_LIVE_POINTS_PER_TRACKER,
    DEFAULT_MAX_INNER_NAMES_PER_DAY, DEFAULT_MAX_UNFLUSHED_BYTES, DEFAULT_WAL_ZSTD_LEVEL, Handed,
    Ingest, IngestConfig, PreparedWrite, Preparer, WriteOutcome,
};
pub use error::{Error, Result};
pub use live::{LivePoint, LivePositions, TrackerTrail};
pub use rows::Rows;
pub use sink::clickhouse::ClickHouseConfig;
pub use sink::parquet::listed_files;
