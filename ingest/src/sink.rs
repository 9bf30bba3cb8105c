//! Where flushed batches go. One folder per sink with the same file names;
//! `parquet` is the embedded default (ClickHouse joins it later).

pub(crate) mod parquet;

use std::path::PathBuf;

use arrow::record_batch::RecordBatch;
use schemas::FileEntry;

use crate::Result;

/// What a rewrite of files did.
#[derive(Debug, Default)]
pub(crate) struct Rewrite {
    /// The new files, in the catalog.
    pub(crate) added: Vec<FileEntry>,
    /// The ids of the replaced files, out of the catalog.
    pub(crate) removed: Vec<u64>,
    /// Their paths, to delete once no reader holds them.
    pub(crate) obsolete: Vec<PathBuf>,
    /// Rows read, and rows dropped by the filter.
    pub(crate) rows_read: u64,
    /// Rows the filter dropped.
    pub(crate) rows_dropped: u64,
}

/// Persists acknowledged batches.
pub(crate) trait Sink: Send + Sync + std::fmt::Debug {
    /// Writes `batches` (durable in the WAL through segment `wal_segment`) to
    /// files and records them and `wal_segment` in the catalog. When this
    /// returns Ok, the rows are durable in the sink and the WAL segments up to
    /// `wal_segment` may be deleted; on error nothing was recorded.
    fn persist(&self, batches: &[RecordBatch], wal_segment: u64) -> Result<Vec<FileEntry>>;

    /// Every file of the catalog.
    fn files(&self) -> Vec<FileEntry>;

    /// The last WAL segment whose records are all in the sink.
    fn flushed_wal_segment(&self) -> u64;

    /// Rewrites `files` into new day files keeping only rows for which
    /// `keep(tracker_id, message_time_ms)` holds, sorted; replaces them in the
    /// catalog in one commit (compaction keeps every row, retention drops old ones).
    fn rewrite(&self, files: &[FileEntry], keep: &dyn Fn(i64, i64) -> bool) -> Result<Rewrite>;

    /// The (message time, content hash) keys of a tracker's rows in files
    /// overlapping day `day` (days since the epoch), for deduplication.
    fn keys(&self, tracker: i64, day: i64) -> Result<Vec<(i64, u64)>>;
}
