//! The ingest engine: one writer thread (dedup, WAL group commit, memtable)
//! and one flusher thread (memtable to Parquet or ClickHouse, WAL truncation).

mod flusher;
mod loader;
mod maintenance;
mod writer;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arrow::record_batch::RecordBatch;
use crossbeam_channel::{Sender, TrySendError};
use prometheus_client::registry::Registry;
use schemas::{FileEntry, Message, TelemetrySnapshot, TelemetrySource, TrackerId, columns};

use crate::batch::{
    DAY_MS, Encoding, Entry, Prepared, Resident, day_of, name_key, recovered_batches,
};
use crate::dedup::{DedupIndex, Known, Needs, PartitionKey, StoredRead};
use crate::live::{LivePoint, LivePositions};
use crate::metrics::{IngestMetrics, Stage};
use crate::rows::Rows;
use crate::sink::Sink;
use crate::sink::clickhouse::{ClickHouseConfig, ClickHouseSink};
use crate::sink::parquet::{ParquetConfig, ParquetSink};
use crate::wal::{Released, Wal, WalConfig};
use crate::{Error, Result};

/// Settings of the ingest engine.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    /// The data directory: the WAL goes to `wal/`, Parquet files and the catalog to `telemetry/`.
    pub data_dir: PathBuf,
    /// A WAL segment is sealed once it exceeds this size.
    pub wal_segment_bytes: u64,
    /// Whether each group commit ends with an fdatasync of the WAL before
    /// its writes are acknowledged. Off only for benchmarks against
    /// databases that answer before their data is on disk: a crash of the
    /// machine (not of the process) then loses what the kernel had not yet
    /// written back (about the last half minute, by Linux's defaults): a
    /// roll-over does not sync either.
    pub wal_fsync: bool,
    /// zstd level at which a write's WAL record is compressed on its
    /// request's thread (0: written plain). Fewer bytes for each group
    /// commit's fdatasync to wait for (decision 150).
    pub wal_zstd_level: i32,
    /// The memtable is flushed to Parquet at least this often.
    pub flush_interval: Duration,
    /// ... or as soon as it holds this many rows ...
    pub flush_rows: usize,
    /// ... or this many bytes of Arrow arrays (what bounds the server's memory).
    pub flush_bytes: usize,
    /// Nice steps below the engine's threads at which a flush that is on
    /// time writes its files: the flusher was idle at least as long as its
    /// last flush took, and the memtable holds less than twice a flush's
    /// rows and bytes. Intake then goes first, and the flush takes the CPU
    /// it leaves. A flush that is behind, or asked for, runs at the
    /// engine's priority. 0: every flush at the engine's priority.
    /// Linux only (decision 148).
    pub flush_nice: u8,
    /// Writes are refused (HTTP 503, code 8) while the memtable holds more rows than this.
    pub max_unflushed_rows: usize,
    /// ... or more bytes of Arrow arrays than this (flushes falling behind:
    /// a slow disk, ClickHouse away), so memory stays bounded whatever the rows hold.
    pub max_unflushed_bytes: usize,
    /// Writes waiting for the writer thread before new ones are refused.
    pub max_pending_writes: usize,
    /// Rows per Parquet row group.
    pub row_group_rows: usize,
    /// zstd level of Parquet files.
    pub zstd_level: i32,
    /// Keys the deduplication index holds before evicting partitions.
    pub dedup_max_entries: usize,
    /// How far behind its tracker's newest message a flushed key stays in
    /// the deduplication index (a retransmission within it needs no read of
    /// storage).
    pub dedup_recent: Duration,
    /// Bytes of Parquet footers (with their page indexes) kept decoded for
    /// the deduplication index's reads of stored keys (a late message's
    /// partition is read from every file of its day).
    pub dedup_footer_cache_bytes: usize,
    /// Files with fewer rows than this are small: merged once a day has `compact_min_files` of them.
    pub compact_small_rows: usize,
    /// Small files of one day that trigger a merge.
    pub compact_min_files: usize,
    /// Most rows one compaction or retention rewrite reads at once (bounds memory).
    pub compact_max_rows: usize,
    /// Most distinct inner columns (`inputs.*`, `states.*`, `discrete_*.*`) one
    /// tracker may have on one UTC day; a message that would add more is
    /// refused (code 7), so a day's columns, and the memory and files they
    /// take, stay bounded.
    pub max_inner_names_per_day: usize,
    /// How often retention runs once cutoffs are known.
    pub retention_interval: Duration,
    /// Store flushed rows in ClickHouse instead of Parquet files under
    /// `data_dir` (the WAL stays under `data_dir` either way).
    pub clickhouse: Option<ClickHouseConfig>,
    /// Most recent positions held in memory per tracker for live views
    /// ([`Ingest::live`]); packed, 6-9 bytes each at 1 Hz (coordinates kept
    /// to 1e-7 degree; speed, to 0.001 km/h, and heading of the newest only).
    pub live_points_per_tracker: usize,
}

impl IngestConfig {
    /// Defaults for a data directory.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            wal_segment_bytes: 64 * 1024 * 1024,
            wal_fsync: true,
            wal_zstd_level: DEFAULT_WAL_ZSTD_LEVEL,
            flush_interval: Duration::from_secs(5),
            flush_rows: 1_000_000,
            flush_bytes: DEFAULT_FLUSH_BYTES,
            flush_nice: DEFAULT_FLUSH_NICE,
            max_unflushed_rows: 4_000_000,
            max_unflushed_bytes: DEFAULT_MAX_UNFLUSHED_BYTES,
            max_pending_writes: 1024,
            row_group_rows: 64 * 1024,
            zstd_level: 3,
            dedup_max_entries: DEFAULT_DEDUP_MAX_ENTRIES,
            dedup_recent: DEFAULT_DEDUP_RECENT,
            dedup_footer_cache_bytes: DEFAULT_DEDUP_FOOTER_CACHE_BYTES,
            compact_small_rows: DEFAULT_COMPACT_SMALL_ROWS,
            compact_min_files: DEFAULT_COMPACT_MIN_FILES,
            compact_max_rows: DEFAULT_COMPACT_MAX_ROWS,
            max_inner_names_per_day: DEFAULT_MAX_INNER_NAMES_PER_DAY,
            retention_interval: Duration::from_secs(600),
            clickhouse: None,
            live_points_per_tracker: DEFAULT_LIVE_POINTS_PER_TRACKER,
        }
    }
}

/// Nice steps of a flush that is on time ([`IngestConfig::flush_nice`]),
/// by default: none, every flush at the engine's priority. 10 (below the
/// request threads' 5) cut the half-rate tail of 10,000-line bodies but
/// raised that of 1,000-line ones in some rounds (decision 148).
pub const DEFAULT_FLUSH_NICE: u8 = 0;

/// zstd level of WAL records ([`IngestConfig::wal_zstd_level`]), by
/// default: none, records written plain. Level 1 takes the log's bytes
/// down 4.7 times but costs about 0.7 µs of CPU a message, 7-12% of the
/// maximum rate on two cores (decision 150): for disks whose bandwidth is
/// the limit.
pub const DEFAULT_WAL_ZSTD_LEVEL: i32 = 0;

/// Bytes of Arrow arrays in the memtable that start a flush, by default.
pub const DEFAULT_FLUSH_BYTES: usize = 128 * 1024 * 1024;

/// How long a write waits for the loader thread to read the partitions it
/// needs before it goes to the writer thread anyway (which then reads them).
const LOADER_PATIENCE: Duration = Duration::from_secs(5);

/// Bytes of Arrow arrays in the memtable beyond which writes are refused, by default.
pub const DEFAULT_MAX_UNFLUSHED_BYTES: usize = 512 * 1024 * 1024;

/// Keys of stored rows the deduplication index keeps, by default: about
/// 100 MB. A key evicted costs a read of minutes of files when a message
/// needs it again, not of its day (decision 142).
pub const DEFAULT_DEDUP_MAX_ENTRIES: usize = 8_000_000;

/// How far behind its tracker's newest message a flushed key stays in the
/// deduplication index, by default.
pub const DEFAULT_DEDUP_RECENT: Duration = Duration::from_secs(120);

/// Bytes of decoded Parquet footers kept for the deduplication index's
/// reads, by default: a flush file's footer with its page index takes some
/// hundred kB, so this holds a few days of a busy fleet's files.
pub const DEFAULT_DEDUP_FOOTER_CACHE_BYTES: usize = 64 * 1024 * 1024;

/// Rows one compaction or retention rewrite reads at once, by default.
pub const DEFAULT_COMPACT_MAX_ROWS: usize = 2_000_000;

/// Files with fewer rows than this are small (compacted), by default.
pub const DEFAULT_COMPACT_SMALL_ROWS: usize = 256 * 1024;

/// Small files of one day that start a merge, by default.
pub const DEFAULT_COMPACT_MIN_FILES: usize = 4;

/// Recent positions held in memory per tracker, by default.
pub const DEFAULT_LIVE_POINTS_PER_TRACKER: usize = 1_000;

/// Distinct inner columns one tracker may have on one UTC day, by default.
pub const DEFAULT_MAX_INNER_NAMES_PER_DAY: usize = 1_024;

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriteOutcome {
    /// Messages stored.
    pub accepted: usize,
    /// Messages already stored (same tracker, message time and content), not stored again.
    pub duplicates: usize,
    /// Messages refused, by their index in the write, with the reason (code 7):
    /// they would take their tracker's day beyond its distinct inner columns.
    pub rejected: Vec<(usize, String)>,
}

/// A partition read from the sink: its keys of some times (when it is to
/// be complete from their start) and its inner columns' name keys.
type Loaded = (PartitionKey, Option<StoredRead>, Vec<u64>);

/// The message times of each partition whose keys are read.
pub(crate) type KeyTimes = HashMap<PartitionKey, std::ops::Range<i64>>;

/// State shared by the engine's threads and its readers.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: IngestConfig,
    pub(crate) sink: Arc<dyn Sink>,
    pub(crate) metrics: IngestMetrics,
    pub(crate) state: RwLock<State>,
    /// A `parking_lot` mutex: the flusher hands it over fairly between
    /// chunks of a flush's keys ([`parking_lot::MutexGuard::unlock_fair`]),
    /// so a waiting writer gets it between two chunks.
    pub(crate) dedup: parking_lot::Mutex<DedupIndex>,
    pub(crate) retention: Mutex<Retention>,
    /// Files a merge could not make into one; compaction leaves them alone.
    pub(crate) unmergeable: Mutex<HashSet<u64>>,
    /// What failed, while the WAL cannot take appends (intake refuses
    /// writes with [`Error::StorageUnavailable`] until it heals).
    pub(crate) wal_failure: Mutex<Option<String>>,
    /// Buffers of writes' WAL encodings: taken where a write is prepared,
    /// given back by the writer once it appended them (decision 134).
    pub(crate) encodings: crate::buffers::Buffers,
    /// Writes' rows, emptied: taken where a body is parsed
    /// ([`Preparer::empty_rows`]), given back once prepared (decision 147).
    pub(crate) rows: crate::buffers::Pool<Rows>,
}

/// The room of a pooled encoding buffer: a 1 MiB chunk of benchmark lines
/// (590 bytes each) encodes to about 530 KB.
const ENCODING_ROOM: usize = 1 << 20;
/// Encoding buffers kept idle: the writer gives back a group's at a time.
const ENCODINGS_IDLE: usize = 8;
/// Writes' rows kept idle: about one per parse task at once, and each
/// 1-2 MB for a 1 MiB chunk of the benchmark's lines.
const ROWS_IDLE: usize = 4;
/// Rows a pooled write's columns may have room for: a 1 MiB chunk of
/// 590-byte lines holds 1,800; one of the shortest lines more, and its
/// columns are not kept.
const POOLED_ROWS: usize = 8 * 1024;

/// Retention cutoffs by tracker (ms since the epoch), and whether they changed since the last run.
#[derive(Debug, Default)]
pub(crate) struct Retention {
    pub(crate) cutoffs: Option<Arc<BTreeMap<i64, i64>>>,
    pub(crate) changed: bool,
}

/// Files and memtable, swapped together so readers never see a row twice or miss one.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) files: Arc<Vec<FileEntry>>,
    pub(crate) unflushed: Vec<Resident>,
    pub(crate) unflushed_rows: usize,
    /// Bytes of the memtable's arrays: the sum of its batches' counts.
    pub(crate) unflushed_bytes: usize,
    pub(crate) oldest_unflushed: Option<Instant>,
    /// Held by snapshots; deletes replaced files once no snapshot needs them.
    pub(crate) epoch: Arc<maintenance::Epoch>,
}

impl Shared {
    pub(crate) fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Loads partitions into the dedup index from the sink: each one's
    /// inner column names, and its keys too for those in `complete` (those
    /// with messages the index cannot settle, from the earliest such
    /// message's time on). Holds the epoch, so no file of the list goes
    /// meanwhile.
    pub(crate) fn load_partitions(
        &self,
        dedup: &mut DedupIndex,
        partitions: &HashSet<PartitionKey>,
        complete: &HashMap<PartitionKey, i64>,
    ) -> Result<()> {
        let times = key_times(dedup, complete);
        let loaded = self.read_partitions(partitions, &times)?;
        self.metrics.dedup_writer_loads.inc_by(times.len() as u64);
        for (partition, keys, names) in loaded {
            dedup.load(partition, keys, names);
        }
        Ok(())
    }

    /// Reads from the sink what [`load_partitions`](Self::load_partitions)
    /// loads: per partition, its keys of `times` (those in it) and its name keys.
    fn read_partitions(
        &self,
        partitions: &HashSet<PartitionKey>,
        times: &KeyTimes,
    ) -> Result<Vec<Loaded>> {
        let (files, _epoch) = {
            let state = self.read();
            (state.files.clone(), state.epoch.clone())
        };
        let mut keys = match times.is_empty() {
            true => HashMap::new(),
            false => self.sink.keys_many(&files, times)?,
        };
        self.metrics.dedup_loads.inc_by(times.len() as u64);
        let mut loaded = Vec::with_capacity(partitions.len());
        for &(tracker, day) in partitions {
            let keys = times.get(&(tracker, day)).map(|times| StoredRead {
                times: times.clone(),
                keys: keys.remove(&(tracker, day)).unwrap_or_default(),
            });
            let names = self.sink.inner_names(&files, tracker, day)?;
            loaded.push((
                (tracker, day),
                keys,
                names.iter().map(|n| name_key(n)).collect(),
            ));
        }
        Ok(loaded)
    }

    /// What a write of `keys` needs read before the writer thread sees it
    /// (partitions the index lacks, and those its late or retransmitted
    /// messages need complete), if anything; and which of its messages the
    /// index knows as stored already (retransmissions), whose rows are
    /// then kept apart from the others ([`Encoding::prepare`]). Only the
    /// writer settles a message: one known as stored here may be new again
    /// there (a failed group took its key back), and one new here may be a
    /// copy there (of one in the same group).
    fn screen(&self, keys: &[(PartitionKey, i64, u64)]) -> (Option<Needs>, Vec<bool>) {
        let dedup = self.dedup.lock();
        let mut needs = Needs::default();
        let stored = keys
            .iter()
            .map(|&(partition, time, hash)| {
                dedup.known_noting(partition, time, hash, &mut needs) == Known::Duplicate
            })
            .collect();
        ((!needs.partitions.is_empty()).then_some(needs), stored)
    }

    fn publish_gauges(&self) {
        let state = self.read();
        self.metrics
            .set_unflushed(state.unflushed_rows, state.unflushed_bytes);
        self.metrics.files.set(state.files.len() as i64);
        self.metrics
            .file_bytes
            .set(state.files.iter().map(|f| f.bytes as i64).sum());
        let lag = state
            .oldest_unflushed
            .map_or(0.0, |t| t.elapsed().as_secs_f64());
        self.metrics.flush_lag_seconds.set(lag);
    }
}

/// The message times whose keys make each partition of `complete` (with
/// the earliest time it must settle) complete from there, as `dedup` says
/// ([`DedupIndex::to_read`]); those it settles already are left out.
pub(crate) fn key_times(dedup: &DedupIndex, complete: &HashMap<PartitionKey, i64>) -> KeyTimes {
    complete
        .iter()
        .filter_map(|(&partition, &from)| Some((partition, dedup.to_read(partition, from)?)))
        .collect()
}

/// Creates `dir` if missing; its canonical path (absolute, no `..`, no symlink).
fn canonical_dir(dir: &std::path::Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(Error::io("creating", dir))?;
    std::fs::canonicalize(dir).map_err(Error::io("resolving", dir))
}

/// The (partition, message time, content hash) of each row of a memtable batch.
pub(crate) fn flushed_keys(batch: &RecordBatch, out: &mut Vec<(PartitionKey, i64, u64)>) {
    let Some(keys) = columns::key_columns(batch) else {
        return;
    };
    let Some(hashes) = columns::content_hashes(batch) else {
        return;
    };
    for i in 0..batch.num_rows() {
        let time = keys.message_time.value(i);
        out.push(((keys.tracker.value(i), day_of(time)), time, hashes.value(i)));
    }
}

/// Commands of the writer thread, handled in order.
#[derive(Debug)]
pub(crate) enum Command {
    /// Writes committed together: all in one group, so all or none.
    Write {
        /// Each write's keys, WAL encoding and memtable batches.
        prepared: Vec<Prepared>,
        /// One outcome per write, in order.
        reply: tokio::sync::oneshot::Sender<Result<Vec<WriteOutcome>>>,
    },
    /// Seal the WAL segment; answer it and how many memtable batches it covers.
    Rotate {
        reply: crossbeam_channel::Sender<Result<(u64, usize)>>,
    },
    /// Stop tracking the WAL segments up to this one (their rows are in
    /// the sink) and answer them, for the flusher to delete.
    Release {
        through: u64,
        reply: crossbeam_channel::Sender<Released>,
    },
    /// Make the next group's sync fail after this pause, as a failing disk would.
    #[cfg(test)]
    FailNextSync { pause: Duration },
}

/// The ingest engine. [`Ingest::write`] returns once messages are durable and visible.
#[derive(Debug)]
pub struct Ingest {
    shared: Arc<Shared>,
    commands: Mutex<Option<Sender<Command>>>,
    /// Requests to the loader thread (taken at shutdown, which ends it).
    loads: Mutex<Option<Sender<loader::Request>>>,
    flush_requests: Sender<flusher::Request>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    live: LivePositions,
}

impl Ingest {
    /// Opens the data directory: recovers the WAL into memory, starts the threads.
    ///
    /// The directory is created if missing and used by its canonical path
    /// from then on (relative, with `..`, behind a symlink: all the same), so
    /// the paths readers get in a [`TelemetrySnapshot`] are absolute.
    pub fn open(mut config: IngestConfig, registry: &mut Registry) -> Result<Self> {
        config.data_dir = canonical_dir(&config.data_dir)?;
        let metrics = IngestMetrics::register(registry);
        let live = LivePositions::new(
            config.live_points_per_tracker,
            metrics.live_trackers.clone(),
            metrics.live_points.clone(),
        );
        let sink: Arc<dyn Sink> = match &config.clickhouse {
            Some(clickhouse) => Arc::new(ClickHouseSink::open(
                clickhouse.clone(),
                config.data_dir.join("clickhouse"),
                metrics.dead_letter_rows.clone(),
            )?),
            None => Arc::new(ParquetSink::open(
                ParquetConfig {
                    root: config.data_dir.join("telemetry"),
                    row_group_rows: config.row_group_rows,
                    zstd_level: config.zstd_level,
                    footer_cache_bytes: config.dedup_footer_cache_bytes,
                },
                metrics.footers.clone(),
            )?),
        };
        let mut recovered = Recovered::default();
        let (wal, report) = Wal::open(
            WalConfig {
                dir: config.data_dir.join("wal"),
                segment_bytes: config.wal_segment_bytes,
            },
            sink.flushed_wal_segment(),
            |_segment, payload| {
                let entries =
                    crate::record::decode(payload).map_err(crate::wal::WalError::rejected)?;
                live.record(entries.iter().filter_map(|e| LivePoint::of(&e.message)));
                recovered
                    .add(entries)
                    .map_err(crate::wal::WalError::rejected)
            },
        )
        .map_err(Error::Wal)?;
        recovered.finish()?;
        metrics.wal_torn_tails.inc_by(report.torn_tails as u64);
        if report.records > 0 || report.torn_tails > 0 {
            tracing::info!(
                segments = report.segments,
                records = report.records,
                messages = recovered.rows,
                torn_tails = report.torn_tails,
                "recovered the write-ahead log"
            );
        }
        let files = Arc::new(sink.files());
        let shared = Arc::new(Shared {
            state: RwLock::new(State {
                files: files.clone(),
                ..State::default()
            }),
            dedup: parking_lot::Mutex::new(DedupIndex::new(
                config.dedup_max_entries,
                sink.watermarks(&files),
                i64::try_from(config.dedup_recent.as_millis()).unwrap_or(i64::MAX),
            )),
            retention: Mutex::new(Retention::default()),
            unmergeable: Mutex::new(HashSet::new()),
            wal_failure: Mutex::new(None),
            encodings: crate::buffers::Buffers::new(ENCODING_ROOM, ENCODINGS_IDLE),
            rows: crate::buffers::Pool::new(ROWS_IDLE),
            config,
            sink,
            metrics,
        });
        shared.recover(recovered)?;
        shared.publish_gauges();

        let (commands, command_rx) = crossbeam_channel::bounded(shared.config.max_pending_writes);
        let (flush_requests, flush_rx) = crossbeam_channel::unbounded();
        let writer = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("ingest-writer".into())
                .spawn(move || writer::run(shared, wal, command_rx))
                .map_err(Error::io("starting the writer thread", "ingest-writer"))?
        };
        let flusher = {
            let (shared, commands) = (shared.clone(), commands.clone());
            std::thread::Builder::new()
                .name("ingest-flusher".into())
                .spawn(move || flusher::run(shared, commands, flush_rx))
                .map_err(Error::io("starting the flusher thread", "ingest-flusher"))?
        };
        let (loads, load_rx) = crossbeam_channel::unbounded();
        let loader = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("ingest-loader".into())
                .spawn(move || loader::run(shared, load_rx))
                .map_err(Error::io("starting the loader thread", "ingest-loader"))?
        };
        Ok(Self {
            shared,
            commands: Mutex::new(Some(commands)),
            loads: Mutex::new(Some(loads)),
            flush_requests,
            threads: Mutex::new(vec![writer, flusher, loader]),
            live,
        })
    }

    /// Each tracker's recent positions: every acknowledged message with a
    /// position (and, after a restart, those the WAL replayed).
    pub fn live(&self) -> &LivePositions {
        &self.live
    }

    /// Stores messages; returns once the accepted ones are durable in the WAL
    /// and visible to readers. Duplicates of stored messages are counted, not stored.
    /// [`Error::Backpressure`] when the writer is behind (retry later).
    ///
    /// The messages are prepared ([`Preparer::prepare`]) on a blocking
    /// thread; a caller already on one (the intake's parse) prepares there
    /// and calls [`Ingest::commit`], so that the messages are made and
    /// dropped by the same thread.
    pub async fn write(&self, messages: Vec<Message>) -> Result<WriteOutcome> {
        if messages.is_empty() {
            return Ok(WriteOutcome::default());
        }
        let preparer = self.preparer()?;
        let write =
            tokio::task::spawn_blocking(move || preparer.prepare(Rows::from_messages(&messages)))
                .await
                .map_err(|e| Error::Io {
                    what: "encoding a write failed on its thread",
                    path: PathBuf::from("-"),
                    source: std::io::Error::other(e.to_string()),
                })??;
        self.commit(write).await
    }

    /// What prepares the writes of one request: a handle for blocking
    /// threads. Its clones admit or refuse the request's writes together
    /// (see [`Preparer::prepare`]).
    pub fn preparer(&self) -> Result<Preparer> {
        Ok(Preparer {
            shared: self.shared.clone(),
            loads: open_sender(&self.loads)?,
            admission: Arc::new(AtomicU8::new(UNDECIDED)),
        })
    }

    /// Hands a prepared write to the writer thread; returns once its
    /// accepted messages are durable and visible (as [`Ingest::write`]).
    pub async fn commit(&self, write: PreparedWrite) -> Result<WriteOutcome> {
        let mut outcomes = self.commit_all(vec![write]).await?;
        Ok(outcomes.pop().unwrap_or_default())
    }

    /// Commits `writes` as one, answering each one's outcome in order: the
    /// writer takes them into one group, so either every accepted message
    /// of every write is durable and visible, or (an error) none was
    /// acknowledged and a retry stores them all.
    pub async fn commit_all(&self, writes: Vec<PreparedWrite>) -> Result<Vec<WriteOutcome>> {
        self.hand(writes, false).await?.outcomes().await
    }

    /// Hands `writes` to the writer as one group, once the loader has read
    /// what their dedup needs, and returns without waiting for them to be
    /// durable ([`Handed::outcomes`] waits). Groups handed one after the
    /// other are taken in that order.
    ///
    /// When the writer's queue is full, a write that is the first of its
    /// request is refused ([`Error::Backpressure`], nothing stored); one
    /// that `continues` a request whose earlier parts were handed waits
    /// for room instead, so that an admitted body is stored whole.
    pub async fn hand(&self, writes: Vec<PreparedWrite>, continues: bool) -> Result<Handed<'_>> {
        // Past the patience (a slow disk), the writer reads what is left.
        let patience = tokio::time::Instant::now() + LOADER_PATIENCE;
        let metrics = &self.shared.metrics;
        let begun = Instant::now();
        let mut waited = false;
        let mut prepared = Vec::with_capacity(writes.len());
        let mut points = Vec::with_capacity(writes.len());
        for write in writes {
            if let Some(read) = write.loading {
                waited = true;
                let _ = tokio::time::timeout_at(patience, read).await;
            }
            points.push((write.prepared.is_some(), write.points));
            prepared.extend(write.prepared);
        }
        if waited {
            metrics.observe_stage(Stage::LoaderWait, begun);
        }
        if prepared.is_empty() {
            return Ok(Handed {
                ingest: self,
                answer: None,
                points,
            });
        }
        let handed = Instant::now();
        let (reply, answer) = tokio::sync::oneshot::channel();
        let sender = open_sender(&self.commands)?;
        let mut command = Command::Write { prepared, reply };
        loop {
            match sender.try_send(command) {
                Ok(()) => break,
                // Behind the request's earlier groups in the same queue: as
                // long a wait as theirs for their sync, and a 503 now would
                // have to say "nothing stored" of a body partly stored.
                Err(TrySendError::Full(back)) if continues => {
                    command = back;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                Err(TrySendError::Full(_)) => {
                    metrics.count_backpressure("pending_writes");
                    return Err(Error::Backpressure {
                        reason: "too many writes are queued",
                    });
                }
                Err(TrySendError::Disconnected(_)) => return Err(Error::Stopped),
            }
        }
        Ok(Handed {
            ingest: self,
            answer: Some((answer, handed)),
            points,
        })
    }

    /// Records the acknowledged points of a write (duplicates again, harmlessly; not the rejected).
    fn record_live(&self, points: LivePoints, outcome: &WriteOutcome) {
        if outcome.rejected.is_empty() {
            self.live.record(points.into_iter().map(|(_, point)| point));
            return;
        }
        let rejected: HashSet<usize> = outcome.rejected.iter().map(|(i, _)| *i).collect();
        self.live.record(
            points
                .into_iter()
                .filter(|(i, _)| !rejected.contains(i))
                .map(|(_, point)| point),
        );
    }

    /// Sets the retention cutoff of each tracker (ms since the epoch): rows with
    /// an older message time are removed by the next retention run, which
    /// starts soon after new cutoffs arrive. Trackers not named keep their data.
    ///
    /// Cutoffs are rounded down to the start of their UTC day: a day's
    /// expired rows go at once, so the file holding a cutoff is rewritten
    /// once a day, not at every push (rows are kept up to a day longer;
    /// reads apply the exact store period). Cutoffs equal to the current
    /// ones change nothing and start no run.
    pub fn set_retention(&self, cutoffs: HashMap<i64, i64>) {
        let rounded: BTreeMap<i64, i64> = cutoffs
            .into_iter()
            .map(|(tracker, cutoff)| (tracker, cutoff.div_euclid(DAY_MS) * DAY_MS))
            .collect();
        let mut retention = self
            .shared
            .retention
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if retention.cutoffs.as_deref() == Some(&rounded) {
            return;
        }
        *retention = Retention {
            cutoffs: Some(Arc::new(rounded)),
            changed: true,
        };
    }

    /// Counts lines refused before they reached the engine (for the metrics).
    pub fn count_rejected(&self, lines: usize) {
        self.shared.metrics.count("rejected", lines);
    }

    /// Counts intake lines refused by a configured limit, on `/metrics`.
    pub fn count_limit(&self, limit: crate::line::Limit, lines: usize) {
        self.shared.metrics.count_limit(limit, lines);
    }

    /// Why intake cannot store writes now, if it cannot: the write-ahead
    /// log's disk is full or failing (it heals by itself once the disk
    /// takes writes again). For `/healthz`.
    pub fn storage_problem(&self) -> Option<String> {
        self.shared
            .wal_failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Flushes everything acknowledged so far to Parquet; blocks until done.
    pub fn flush(&self) -> Result<()> {
        let (reply, done) = crossbeam_channel::bounded(1);
        self.flush_requests
            .send(flusher::Request::Flush { reply })
            .map_err(|_| Error::Stopped)?;
        done.recv().map_err(|_| Error::Stopped)?
    }

    /// Flushes and stops the threads. Later writes fail with [`Error::Stopped`].
    pub fn shutdown(&self) -> Result<()> {
        let flushed = self.flush();
        for panicked in self.stop_threads() {
            if panicked {
                tracing::error!("an ingest thread panicked");
            }
        }
        flushed
    }

    /// Stops the flusher, closes the writer's and the loader's queues (which
    /// ends their threads) and joins them all; whether each panicked.
    fn stop_threads(&self) -> Vec<bool> {
        let _ = self.flush_requests.send(flusher::Request::Stop);
        self.commands
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        self.loads.lock().unwrap_or_else(|p| p.into_inner()).take();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|p| p.into_inner()));
        threads.into_iter().map(|t| t.join().is_err()).collect()
    }
}

impl Ingest {
    /// Stops the threads without flushing, as a crash would leave things: what
    /// was acknowledged is only in the WAL.
    #[cfg(test)]
    pub(crate) fn crash_for_tests(&self) {
        self.stop_threads();
    }
}

/// Prepares writes where their messages are: encodes and hashes them,
/// asks the loader for what dedup will need, builds their memtable batches
/// (all off the writer thread). Cloned out of [`Ingest::preparer`].
#[derive(Debug, Clone)]
pub struct Preparer {
    shared: Arc<Shared>,
    loads: Sender<loader::Request>,
    /// Whether the request's writes pass the memtable's limits: decided
    /// by the first of them prepared, for all ([`UNDECIDED`], [`ADMITTED`]
    /// or the index of the limit in [`MEMTABLE_LIMITS`] that refused them).
    admission: Arc<AtomicU8>,
}

/// A request none of whose writes was prepared yet.
const UNDECIDED: u8 = u8::MAX;
/// A request whose writes pass the memtable's limits.
const ADMITTED: u8 = u8::MAX - 1;
/// The memtable's limits: the label on `/metrics` and the refusal's reason.
const MEMTABLE_LIMITS: [(&str, &str); 2] = [
    ("unflushed_rows", "too many rows wait to be flushed"),
    ("unflushed_bytes", "too many bytes wait to be flushed"),
];

/// A write made ready by [`Preparer::prepare`], for [`Ingest::commit`]:
/// the messages are gone, dropped by the thread that prepared them.
#[derive(Debug)]
pub struct PreparedWrite {
    /// `None` for a write of no messages.
    prepared: Option<Prepared>,
    /// The positions, by message, for the live trails once acknowledged.
    points: LivePoints,
    /// Answered once the loader has read what the write's dedup needs.
    loading: Option<tokio::sync::oneshot::Receiver<()>>,
}

/// Writes handed to the writer ([`Ingest::hand`]), not yet durable.
#[derive(Debug)]
#[must_use = "the writes are acknowledged only once their outcomes are awaited"]
pub struct Handed<'a> {
    ingest: &'a Ingest,
    /// The writer's answer and when the writes were handed; `None` when
    /// no write had messages.
    answer: Option<(WriterAnswer, Instant)>,
    /// Each write's live points, and whether it went to the writer.
    points: Vec<(bool, LivePoints)>,
}

/// A write's positions for the live trails: each with its message's index.
type LivePoints = Vec<(usize, (TrackerId, LivePoint))>;

/// The writer's answer to a group: one outcome per write, in order.
type WriterAnswer = tokio::sync::oneshot::Receiver<Result<Vec<WriteOutcome>>>;

impl Handed<'_> {
    /// Waits until the writes' accepted messages are durable and visible,
    /// records their live points, and answers each write's outcome in the
    /// order handed.
    pub async fn outcomes(self) -> Result<Vec<WriteOutcome>> {
        let metrics = &self.ingest.shared.metrics;
        let mut outcomes = match self.answer {
            None => Vec::new().into_iter(),
            Some((answer, handed)) => {
                let answered = answer.await.map_err(|_| Error::Stopped)??;
                metrics.observe_stage(Stage::Writer, handed);
                answered.into_iter()
            }
        };
        let recording = Instant::now();
        let mut answered = Vec::with_capacity(self.points.len());
        for (sent, points) in self.points {
            let outcome = match sent {
                true => outcomes.next().unwrap_or_default(),
                false => WriteOutcome::default(),
            };
            self.ingest.record_live(points, &outcome);
            answered.push(outcome);
        }
        metrics.observe_stage(Stage::Live, recording);
        Ok(answered)
    }
}

impl Preparer {
    /// Prepares the write of `rows` (their trackers resolved) on this
    /// thread (CPU only: what the write's dedup needs from storage is asked
    /// of the loader thread, and [`Ingest::commit`] awaits it).
    ///
    /// [`Error::Backpressure`] at once when the memtable is full, as it is
    /// when the first write of this preparer and its clones (the request)
    /// is prepared: they are all refused then, or none is. So a long body's
    /// chunks, prepared and committed one by one, are stored whole or not
    /// at all under memory pressure (the memtable may go beyond its limit
    /// by the bodies in flight, each bounded by `--max-ingest-bytes`).
    pub fn prepare(&self, rows: Rows) -> Result<PreparedWrite> {
        if rows.is_empty() {
            return Ok(PreparedWrite {
                prepared: None,
                points: Vec::new(),
                loading: None,
            });
        }
        let shared = &self.shared;
        self.admit()?;
        // Sized for every row (nearly all have a position): collected from
        // a filter, the vector grew by doubling, copied into fresh memory.
        let mut points: LivePoints = Vec::with_capacity(rows.len());
        points
            .extend((0..rows.len()).filter_map(|row| Some((row, LivePoint::of_row(&rows, row)?))));
        // A pooled buffer for a write of a fair size (a small one needs no
        // megabyte).
        let buffer = if rows.len().saturating_mul(crate::batch::ENCODED_ROW_BYTES)
            >= shared.encodings.room() / 4
        {
            shared.encodings.take()
        } else {
            Vec::new()
        };
        let mut encoding = Encoding::with_buffer(rows, buffer);
        let (needs, stored) = shared.screen(&encoding.keys);
        let loading = needs.and_then(|needs| {
            let (done, read) = tokio::sync::oneshot::channel();
            let request = loader::Request { needs, done };
            self.loads.send(request).is_ok().then_some(read)
        });
        // The WAL record compressed while the loader reads, unless the
        // screen found the write mostly stored (a retransmission): that
        // one is written plain, with just the entries kept.
        let level = shared.config.wal_zstd_level;
        let screened_new = stored.iter().filter(|&&known| !known).count();
        if level != 0 && crate::record::keeps_enough(screened_new, stored.len()) {
            encoding.compress(level);
        }
        // The batches are built while the loader reads.
        let (prepared, mut rows) = encoding.prepare_keeping_rows(&stored)?;
        if rows.capacity() <= POOLED_ROWS {
            rows.clear();
            shared.rows.give(rows);
        }
        Ok(PreparedWrite {
            prepared: Some(prepared),
            points,
            loading,
        })
    }

    /// Empty rows to parse a write into (their memory an earlier write's,
    /// if one is idle: [`Preparer::prepare`] gives them back).
    pub fn empty_rows(&self) -> Rows {
        self.shared.rows.take().unwrap_or_default()
    }

    /// Whether the request's writes may be prepared: decided by the
    /// memtable's state at the first of them, for all.
    fn admit(&self) -> Result<()> {
        let mut decision = self.admission.load(Ordering::Acquire);
        if decision == UNDECIDED {
            let (state, config) = (self.shared.read(), &self.shared.config);
            let verdict = if state.unflushed_rows > config.max_unflushed_rows {
                0
            } else if state.unflushed_bytes > config.max_unflushed_bytes {
                1
            } else {
                ADMITTED
            };
            drop(state);
            decision = match self.admission.compare_exchange(
                UNDECIDED,
                verdict,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if let Some((limit, _)) = MEMTABLE_LIMITS.get(usize::from(verdict)) {
                        self.shared.metrics.count_backpressure(limit);
                    }
                    verdict
                }
                Err(decided) => decided,
            };
        }
        match MEMTABLE_LIMITS.get(usize::from(decision)) {
            Some(&(_, reason)) => Err(Error::Backpressure { reason }),
            None => Ok(()),
        }
    }
}

/// A clone of the sender in `slot`; [`Error::Stopped`] once shutdown took it.
fn open_sender<T>(slot: &Mutex<Option<Sender<T>>>) -> Result<Sender<T>> {
    slot.lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .ok_or(Error::Stopped)
}

/// What the WAL held, rebuilt record by record: memtable batches and the
/// keys and inner column names of each (tracker, day), never all the
/// messages at once.
#[derive(Debug, Default)]
struct Recovered {
    pending: Vec<Entry>,
    batches: Vec<Resident>,
    rows: usize,
    partitions: HashMap<PartitionKey, RecoveredPartition>,
}

/// The keys and inner column name keys of one recovered (tracker, day).
type RecoveredPartition = (Vec<(i64, u64)>, HashSet<u64>);

impl Recovered {
    /// Entries replayed in one bounded group: as many as one write of the intake.
    const GROUP: usize = 64 * 1024;

    fn add(&mut self, entries: Vec<Entry>) -> Result<()> {
        self.pending.extend(entries);
        if self.pending.len() >= Self::GROUP {
            self.finish()?;
        }
        Ok(())
    }

    /// Turns the pending entries into batches.
    fn finish(&mut self) -> Result<()> {
        let pending = std::mem::take(&mut self.pending);
        let (batches, name_keys) = recovered_batches(&pending)?;
        // Recovered rows were accepted once: their names count, whatever the limit now.
        for (index, entry) in pending.iter().enumerate() {
            let (keys, names) = self
                .partitions
                .entry((entry.message.tracker_id.0, entry.day()))
                .or_default();
            keys.push((entry.message.message_time_ms, entry.content_hash));
            names.extend(name_keys.of_entry(index));
        }
        self.batches
            .extend(batches.into_iter().map(Resident::counted));
        self.rows += pending.len();
        Ok(())
    }
}

impl Shared {
    /// Puts recovered rows back into the memtable and the dedup index (as
    /// memtable keys: no partition is read from the sink until a message
    /// needs it).
    fn recover(&self, recovered: Recovered) -> Result<()> {
        if recovered.rows == 0 {
            return Ok(());
        }
        let mut dedup = self.dedup.lock();
        let files = self.read().files.clone();
        for (partition, (keys, names)) in recovered.partitions {
            let stored = self.sink.inner_names(&files, partition.0, partition.1)?;
            let all_names = names.into_iter().chain(stored.iter().map(|n| name_key(n)));
            dedup.recover(partition, keys, all_names);
        }
        let mut state = self.write();
        state.unflushed_bytes += recovered.batches.iter().map(|r| r.bytes).sum::<usize>();
        state.unflushed.extend(recovered.batches);
        state.unflushed_rows += recovered.rows;
        state.oldest_unflushed = Some(Instant::now());
        Ok(())
    }
}

impl TelemetrySource for Ingest {
    fn snapshot(&self) -> Arc<TelemetrySnapshot> {
        let state = self.shared.read();
        Arc::new(TelemetrySnapshot {
            root: self.shared.config.data_dir.join("telemetry"),
            files: state.files.clone(),
            unflushed: state.unflushed.iter().map(|r| r.batch.clone()).collect(),
            guard: Some(state.epoch.clone()),
            clickhouse: self.shared.sink.clickhouse(),
        })
    }
}

impl Drop for Ingest {
    fn drop(&mut self) {
        if !self
            .threads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
        {
            if let Err(e) = self.shutdown() {
                tracing::error!(error = %e, "flushing on drop failed; the WAL keeps the rows");
            }
        }
    }
}

#[cfg(test)]
mod tests;
