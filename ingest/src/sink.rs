//! Where flushed batches go: `parquet` files on local disk (the embedded
//! default) or `clickhouse` tables.

pub(crate) mod clickhouse;
pub(crate) mod parquet;

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use schemas::{ClickHouseTable, FileEntry};

use crate::Result;
use crate::dedup::PartitionKey;

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
    /// Stores `batches` (durable in the WAL through segment `wal_segment`)
    /// and records `wal_segment`; returns the files written, if the sink
    /// keeps files. When this returns Ok, the rows are durable in the sink
    /// and the WAL segments up to `wal_segment` may be deleted; on error
    /// `wal_segment` was not recorded (some rows may be stored: storing them
    /// again must not duplicate them).
    fn persist(&self, batches: &[RecordBatch], wal_segment: u64) -> Result<Vec<FileEntry>>;

    /// Every file of the catalog.
    fn files(&self) -> Vec<FileEntry>;

    /// The last WAL segment whose records are all in the sink.
    fn flushed_wal_segment(&self) -> u64;

    /// Rewrites `files` into new day files keeping only rows for which
    /// `keep(tracker_id, message_time_ms)` holds, sorted; replaces them in the
    /// catalog in one commit (compaction keeps every row, retention drops old ones).
    fn rewrite(&self, files: &[FileEntry], keep: &dyn Fn(i64, i64) -> bool) -> Result<Rewrite>;

    /// The (message time, content hash) keys of a tracker's rows with
    /// message times in `times` (ms, within one day), for deduplication.
    /// `files` is the engine's current list (held by its epoch, so none is
    /// deleted meanwhile); a sink without files ignores it.
    fn keys(&self, files: &[FileEntry], tracker: i64, times: Range<i64>)
    -> Result<Vec<(i64, u64)>>;

    /// [`keys`](Self::keys) of many partitions, each of its times (absent:
    /// no keys).
    fn keys_many(
        &self,
        files: &[FileEntry],
        wanted: &HashMap<PartitionKey, Range<i64>>,
    ) -> Result<HashMap<PartitionKey, Vec<(i64, u64)>>> {
        let mut keys = HashMap::new();
        for (&(tracker, day), times) in wanted {
            keys.insert((tracker, day), self.keys(files, tracker, times.clone())?);
        }
        Ok(keys)
    }

    /// The storage names of the inner columns (`inputs.fuel`) a tracker has
    /// stored rows with on day `day` (days since the epoch), to hold the
    /// distinct names of a tracker and day to their limit.
    fn inner_names(&self, files: &[FileEntry], tracker: i64, day: i64) -> Result<Vec<String>>;

    /// The newest message time stored for each tracker (trackers without
    /// rows absent), if the sink knows it without reading rows.
    fn watermarks(&self, _files: &[FileEntry]) -> Option<HashMap<i64, i64>> {
        None
    }

    /// Deletes rows older than their tracker's cutoff (ms) itself and says
    /// how many; `None` when the sink keeps files, which the engine rewrites.
    fn delete_expired(&self, _cutoffs: &BTreeMap<i64, i64>) -> Result<Option<u64>> {
        Ok(None)
    }

    /// The ClickHouse tables readers query, when the sink is ClickHouse.
    fn clickhouse(&self) -> Option<Arc<ClickHouseTable>> {
        None
    }
}
