//! The stages a write runs on its request's thread, one at a time, and the
//! flusher's, for the criterion benchmarks `benches/benches/intake.rs` and
//! `benches/benches/flush.rs` (what each costs a message). Not an API: the
//! server goes through [`crate::Preparer::prepare`] and its flusher thread,
//! which run the same functions.

use std::path::Path;

use arrow::record_batch::RecordBatch;

use schemas::TrackerId;

use crate::batch::Encoding;
use crate::live::{LivePoint, LivePositions};
use crate::rows::Rows;
use crate::sink::Sink;
use crate::sink::parquet::{FooterMetrics, ParquetConfig, ParquetSink};
use crate::{IngestConfig, Result};

/// A write's rows after [`encode`].
#[derive(Debug)]
pub struct Encoded(Encoding);

/// Encodes each row for the WAL and hashes its content.
pub fn encode(rows: Rows) -> Encoded {
    Encoded(Encoding::new(rows))
}

/// Builds the memtable batches (sorted, cut, inner columns' keys listed)
/// and drops the rows; returns how many batches.
pub fn prepare(encoded: Encoded) -> Result<usize> {
    Ok(encoded.0.prepare(&[])?.batches())
}

/// The memtable batches of a write whose rows are all new: what the writer
/// puts in the memtable for it.
pub fn memtable_batches(encoded: Encoded) -> Result<Vec<RecordBatch>> {
    let prepared = encoded.0.prepare(&[])?;
    let all: Vec<usize> = (0..prepared.keys().len()).collect();
    Ok(prepared
        .into_kept(&all)?
        .into_iter()
        .map(|resident| resident.batch)
        .collect())
}

/// An empty store of live trails keeping `points_per_tracker` points of
/// each tracker, as the engine's ([`crate::Ingest::live`]).
pub fn live_store(points_per_tracker: usize) -> LivePositions {
    LivePositions::new(points_per_tracker, Default::default(), Default::default())
}

/// Records the acknowledged points of a write in `live`, as the engine
/// does once the write is answered.
pub fn record_live(live: &LivePositions, points: impl IntoIterator<Item = (TrackerId, LivePoint)>) {
    live.record(points);
}

/// Flushes `batches` into a Parquet store at `root` as the flusher does with
/// the engine's default settings: day files sorted by (tracker, time), and
/// the catalog's commit. Returns how many files it wrote.
pub fn flush(root: &Path, batches: &[RecordBatch]) -> Result<usize> {
    Ok(sink(root)?.persist(batches, 0)?.len())
}

/// Rewrites every file of the Parquet store at `root` into as few as the
/// engine's defaults allow, keeping every row, as compaction does with a
/// day's small files. Returns how many files it wrote.
pub fn compact(root: &Path) -> Result<usize> {
    let files = crate::listed_files(root)?;
    Ok(sink(root)?.rewrite(&files, &|_, _| true)?.added.len())
}

/// The Parquet sink at `root` with the engine's default settings.
fn sink(root: &Path) -> Result<ParquetSink> {
    let defaults = IngestConfig::new(root);
    ParquetSink::open(
        ParquetConfig {
            root: root.to_path_buf(),
            row_group_rows: defaults.row_group_rows,
            zstd_level: defaults.zstd_level,
            footer_cache_bytes: defaults.dedup_footer_cache_bytes,
        },
        FooterMetrics::default(),
    )
}
