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

/// The writer's deduplication index over a fleet whose trackers each send
/// a message a second, interleaved across writes (as the load generator's
/// do): every tracker's partition loaded with no stored rows, as after the
/// loader read it. What the writer thread does for each message of a group
/// is [`DedupFleet::admit`].
#[derive(Debug)]
pub struct DedupFleet {
    index: crate::dedup::DedupIndex,
    trackers: u64,
    /// Messages made so far: message `n` is of tracker `n * 7,919 %
    /// trackers`, at second `n / trackers`.
    made: u64,
    /// Keys admitted since the last [`DedupFleet::flush`].
    admitted: Vec<crate::batch::DedupKey>,
}

/// Inner columns' keys of every message of the fleet: eight names.
const FLEET_NAMES: [u64; 8] = [11, 22, 33, 44, 55, 66, 77, 88];
/// The fleet's first message time: 2024-06-02T00:00:00Z.
const FLEET_START_MS: i64 = 1_717_286_400_000;

impl DedupFleet {
    /// `trackers` trackers (7,919 must be prime to it), their partitions of
    /// the first day loaded.
    pub fn new(trackers: u64) -> Self {
        let mut index = crate::dedup::DedupIndex::new(
            crate::DEFAULT_DEDUP_MAX_ENTRIES,
            Some(Default::default()),
            crate::DEFAULT_DEDUP_RECENT.as_millis() as i64,
        );
        let day = crate::batch::day_of(FLEET_START_MS);
        for tracker in 0..trackers {
            index.load((tracker as i64, day), None, []);
        }
        Self {
            index,
            trackers,
            made: 0,
            admitted: Vec::new(),
        }
    }

    /// The keys of the next `count` messages.
    pub fn next_write(&mut self, count: usize) -> Vec<crate::batch::DedupKey> {
        let keys = (self.made..self.made + count as u64)
            .map(|n| {
                let tracker = ((n * 7_919) % self.trackers) as i64;
                let time = FLEET_START_MS + (n / self.trackers) as i64 * 1_000;
                let hash = xxhash_rust::xxh3::xxh3_64(&n.to_le_bytes());
                ((tracker, crate::batch::day_of(time)), time, hash)
            })
            .collect();
        self.made += count as u64;
        keys
    }

    /// Settles each of `keys` as the writer does ([`DedupIndex::admit`]
    /// with the engine's limit of inner names); answers how many were new.
    ///
    /// [`DedupIndex::admit`]: crate::dedup::DedupIndex::admit
    pub fn admit(&mut self, keys: &[crate::batch::DedupKey]) -> usize {
        let limit = crate::DEFAULT_MAX_INNER_NAMES_PER_DAY;
        let mut new = 0;
        for &(partition, time, hash) in keys {
            let admitted = self
                .index
                .admit(partition, time, hash, &FLEET_NAMES, limit, false);
            if admitted == crate::dedup::Admitted::New {
                new += 1;
                self.admitted.push((partition, time, hash));
            }
        }
        new
    }

    /// Counts off every key admitted since the last flush as in the sink,
    /// as the flusher does once their rows are written.
    pub fn flush(&mut self) {
        self.admitted
            .sort_unstable_by_key(|&(partition, _, _)| partition);
        self.index.flushed(&self.admitted);
        self.admitted.clear();
    }
}
