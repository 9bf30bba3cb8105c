//! The embedded sink: Parquet files on local disk, sorted by (tracker_id,
//! msg_time), zstd-compressed, with page statistics on the key columns
//! (tracker, message and server time), one directory per UTC day of message
//! time (`day=2024-06-01/f000000000042.parquet`), and a catalog.

mod catalog;
mod footers;
mod writer;

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Mutex;

use arrow::record_batch::RecordBatch;
use schemas::FileEntry;

use crate::Result;
use crate::batch::{DAY_MS, day_of};
use crate::dedup::PartitionKey;
use crate::sink::{Rewrite, Sink};
use catalog::Catalog;
pub use catalog::listed_files;
pub(crate) use footers::FooterMetrics;
use footers::Footers;

/// Settings of the Parquet sink.
#[derive(Debug, Clone)]
pub(crate) struct ParquetConfig {
    /// The telemetry root (holds the catalog, `catalog.json` and
    /// `catalog.log`, and the day directories).
    pub(crate) root: PathBuf,
    /// Rows per row group: smaller groups prune finer, larger ones compress better.
    pub(crate) row_group_rows: usize,
    /// zstd level.
    pub(crate) zstd_level: i32,
    /// Bytes of decoded footers kept for the deduplication index's reads
    /// ([`footers`]).
    pub(crate) footer_cache_bytes: usize,
}

/// Parquet files and their catalog.
#[derive(Debug)]
pub(crate) struct ParquetSink {
    config: ParquetConfig,
    catalog: Mutex<Catalog>,
    footers: Footers,
}

impl ParquetSink {
    /// Opens the catalog under `config.root`, removing files a crash left
    /// out of it; the footer cache counts on `metrics`.
    pub(crate) fn open(config: ParquetConfig, metrics: FooterMetrics) -> Result<Self> {
        let catalog = Catalog::open(&config.root)?;
        Ok(Self {
            footers: Footers::new(config.footer_cache_bytes, metrics),
            config,
            catalog: Mutex::new(catalog),
        })
    }

    /// Deletes files written for a flush or rewrite that failed before its
    /// commit: no catalog names them, and a retry writes its own.
    fn discard(&self, written: &[FileEntry]) {
        for file in written {
            let path = self.config.root.join(&file.path);
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(error = %e, path = %path.display(), "could not delete a file of a failed flush; it goes at the next start");
            }
        }
    }

    fn catalog(&self) -> std::sync::MutexGuard<'_, Catalog> {
        self.catalog
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Sink for ParquetSink {
    fn persist(&self, batches: &[RecordBatch], wal_segment: u64) -> Result<Vec<FileEntry>> {
        let mut catalog = self.catalog();
        let mut written = Vec::new();
        let outcome = writer::write_day_files(
            &self.config,
            batches,
            || catalog.next_file_id(),
            &mut written,
        )
        .and_then(|()| catalog.commit(written.clone(), &[], Some(wal_segment)));
        if let Err(e) = outcome {
            self.discard(&written);
            return Err(e);
        }
        Ok(written)
    }

    fn rewrite(&self, files: &[FileEntry], keep: &dyn Fn(i64, i64) -> bool) -> Result<Rewrite> {
        let mut batches = Vec::new();
        let mut rewrite = Rewrite::default();
        for file in files {
            let (kept, read) = writer::read_filtered(&self.config.root.join(&file.path), keep)?;
            rewrite.rows_read += read;
            rewrite.rows_dropped += read - kept.iter().map(|b| b.num_rows() as u64).sum::<u64>();
            batches.extend(kept);
        }
        let mut catalog = self.catalog();
        let mut written = Vec::new();
        rewrite.removed = files.iter().map(|f| f.id).collect();
        let committed = writer::write_day_files(
            &self.config,
            &batches,
            || catalog.next_file_id(),
            &mut written,
        )
        .and_then(|()| catalog.commit(written.clone(), &rewrite.removed, None));
        match committed {
            Ok(obsolete) => {
                self.footers.forget(&rewrite.removed);
                rewrite.added = written;
                rewrite.obsolete = obsolete;
                Ok(rewrite)
            }
            Err(e) => {
                self.discard(&written);
                Err(e)
            }
        }
    }

    fn files(&self) -> Vec<FileEntry> {
        self.catalog().files().to_vec()
    }

    fn flushed_wal_segment(&self) -> u64 {
        self.catalog().flushed_wal_segment()
    }

    fn inner_names(&self, files: &[FileEntry], tracker: i64, day: i64) -> Result<Vec<String>> {
        let (from, to) = (day * DAY_MS, (day + 1) * DAY_MS);
        let mut names: Vec<String> = files
            .iter()
            .filter_map(|file| {
                let span = file.span(tracker)?;
                span.meets_message_times(from, to)
                    .then(|| span.inner_names(file).map(str::to_owned))
            })
            .flatten()
            .collect();
        names.sort_unstable();
        names.dedup();
        Ok(names)
    }

    fn keys(
        &self,
        files: &[FileEntry],
        tracker: i64,
        times: Range<i64>,
    ) -> Result<Vec<(i64, u64)>> {
        let partition = (tracker, day_of(times.start));
        let mut keys = self.keys_many(files, &HashMap::from([(partition, times)]))?;
        Ok(keys.remove(&partition).unwrap_or_default())
    }

    /// Reads each file once for all the partitions it holds rows of in
    /// their times: a flush's file holds minutes of each tracker's messages,
    /// so a read of minutes opens a few files, not the day's.
    fn keys_many(
        &self,
        files: &[FileEntry],
        wanted: &HashMap<PartitionKey, Range<i64>>,
    ) -> Result<HashMap<PartitionKey, Vec<(i64, u64)>>> {
        let mut keys = HashMap::new();
        for file in files {
            // The file's spans say which of the partitions it holds rows of.
            let holds = |(&(tracker, _), times): (&PartitionKey, &Range<i64>)| {
                file.span(tracker)
                    .is_some_and(|span| span.meets_message_times(times.start, times.end))
            };
            let mut trackers: Vec<i64> = wanted
                .iter()
                .filter(|&p| holds(p))
                .map(|(p, _)| p.0)
                .collect();
            if trackers.is_empty() {
                continue;
            }
            trackers.sort_unstable();
            trackers.dedup();
            writer::read_keys(
                &self.config.root.join(&file.path),
                file.id,
                &self.footers,
                wanted,
                &trackers,
                &mut keys,
            )?;
        }
        Ok(keys)
    }

    fn watermarks(&self, files: &[FileEntry]) -> Option<HashMap<i64, i64>> {
        let mut marks: HashMap<i64, i64> = HashMap::new();
        for span in files.iter().flat_map(|f| f.trackers.iter()) {
            let mark = marks.entry(span.tracker_id).or_insert(i64::MIN);
            *mark = (*mark).max(span.message_time_max_ms);
        }
        Some(marks)
    }
}

#[cfg(test)]
mod tests;
