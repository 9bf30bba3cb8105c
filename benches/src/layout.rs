//! The storage-layout measurement: the bytes of stored Parquet a read of one
//! inner value touches, against a read of every column.
//!
//! A simulated [`Fleet`] is written through [`Ingest::write`] (batches of
//! about 10k messages, a flush after every `flush_hours` of data) into a data
//! directory. Then one tracker's files over the whole span are read twice
//! with the `parquet` crate, as a reader would: files chosen from the
//! catalog, row groups pruned by their `tracker_id` and `msg_time`
//! statistics, the chosen columns decoded to Arrow. Every read goes through a
//! byte-counting [`ChunkReader`](parquet::file::reader::ChunkReader), so
//! footers, metadata, page headers and pages are all counted.
//!
//! "Every column" is every column a user can ask for: all but
//! `_content_hash`, which is internal (keeping it out makes the ratio larger,
//! not smaller).

mod counting;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use arrow::array::AsArray;
use arrow::datatypes::{Int64Type, TimestampMillisecondType};
use ingest::{Ingest, IngestConfig};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};
use parquet::file::statistics::Statistics;
use prometheus_client::registry::Registry;
use schemas::columns::{CONTENT_HASH, MESSAGE_TIME, TRACKER_ID};
use schemas::{FileEntry, Message, TelemetrySource, TrackerId};

use crate::fleet::{Fleet, FleetConfig};
use counting::{CountingFile, IoCounter};

/// The columns of the narrow read: the key columns and one fuel level.
pub const PROJECTION: [&str; 3] = [TRACKER_ID, MESSAGE_TIME, "inputs.lls_level_1"];

/// Settings of one layout measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutConfig {
    /// Days of data, from the fleet's start.
    pub days: u32,
    /// The simulated fleet (its first tracker is the one read back).
    pub fleet: FleetConfig,
    /// Hours of data between flushes: 24 gives one file per day holding
    /// every tracker, the layout the sink is designed for.
    pub flush_hours: u32,
    /// Messages per `Ingest::write` call (rounded to whole seconds of the fleet).
    pub batch_messages: usize,
}

impl LayoutConfig {
    /// `days` of `trackers` vehicles, flushed daily, written 10k messages at a time.
    pub fn new(days: u32, trackers: usize) -> Self {
        Self {
            days,
            fleet: FleetConfig {
                trackers,
                ..FleetConfig::default()
            },
            flush_hours: 24,
            batch_messages: 10_000,
        }
    }

    /// The message-time span measured, `[from, to)` in ms.
    pub fn span_ms(&self) -> (i64, i64) {
        let from = self.fleet.start_ms;
        (from, from + i64::from(self.days) * 86_400_000)
    }
}

/// What ingesting the fleet produced.
#[derive(Debug, Clone, PartialEq)]
pub struct IngestSummary {
    /// Messages written (and accepted).
    pub messages: u64,
    /// Time spent in `Ingest::write` and `Ingest::flush` (generation excluded).
    pub elapsed: Duration,
    /// Parquet files in the catalog.
    pub files: usize,
    /// Their total size.
    pub file_bytes: u64,
    /// The telemetry root the files' paths are relative to.
    pub root: PathBuf,
    /// The catalog's files.
    pub catalog: Vec<FileEntry>,
}

/// What one read touched.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ReadStats {
    /// Files opened.
    pub files: usize,
    /// Row groups decoded (after pruning).
    pub row_groups: usize,
    /// Column chunks decoded.
    pub column_chunks: usize,
    /// Rows of the tracker in the span.
    pub rows: u64,
    /// Bytes read: footers, metadata, page headers and pages.
    pub bytes: u64,
    /// Of `bytes`, those of footers and metadata.
    pub metadata_bytes: u64,
    /// Range or stream requests made of the files.
    pub requests: u64,
    /// Wall time of the read (files in the page cache: they were just written).
    pub elapsed: Duration,
}

/// A narrow read against a read of every column, with one reader setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// Whether the reader loaded the page index (column and offset indexes),
    /// as DataFusion does by default.
    pub page_index: bool,
    /// The read of [`PROJECTION`].
    pub projection: ReadStats,
    /// The read of every column.
    pub everything: ReadStats,
}

impl Comparison {
    /// Bytes of the narrow read over bytes of the full one.
    pub fn ratio(&self) -> f64 {
        self.projection.bytes as f64 / self.everything.bytes.max(1) as f64
    }
}

/// The result of [`run`].
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutReport {
    /// The settings.
    pub config: LayoutConfig,
    /// The ingest.
    pub ingest: IngestSummary,
    /// The tracker read back.
    pub tracker: TrackerId,
    /// Without the page index (the `parquet` crate's default), then with it.
    pub comparisons: [Comparison; 2],
    /// Compressed bytes per column in the tracker's files, largest first.
    pub column_bytes: Vec<(String, u64)>,
}

/// Ingests the fleet into `data_dir`, then measures the reads of its first tracker.
pub async fn run(config: &LayoutConfig, data_dir: &Path) -> anyhow::Result<LayoutReport> {
    let ingest = ingest_fleet(config, data_dir).await?;
    let tracker = TrackerId(config.fleet.first_tracker_id);
    let span = config.span_ms();
    let (root, catalog) = (ingest.root.clone(), ingest.catalog.clone());
    let (comparisons, column_bytes) = tokio::task::spawn_blocking(move || {
        let files = files_of(&catalog, tracker, span);
        let compare = |page_index| -> anyhow::Result<Comparison> {
            let projection = measure(&root, &files, tracker, span, Some(&PROJECTION), page_index)?;
            let everything = measure(&root, &files, tracker, span, None, page_index)?;
            Ok(Comparison {
                page_index,
                projection,
                everything,
            })
        };
        anyhow::Ok((
            [compare(false)?, compare(true)?],
            column_bytes(&root, &files)?,
        ))
    })
    .await??;
    for comparison in &comparisons {
        ensure!(
            comparison.projection.rows == comparison.everything.rows,
            "the two reads found {} and {} rows",
            comparison.projection.rows,
            comparison.everything.rows
        );
    }
    Ok(LayoutReport {
        config: *config,
        ingest,
        tracker,
        comparisons,
        column_bytes,
    })
}

/// Writes `config.days` of the fleet through [`Ingest::write`], flushing
/// every `config.flush_hours` of data, lets compaction settle, then shuts
/// the engine down.
pub async fn ingest_fleet(config: &LayoutConfig, data_dir: &Path) -> anyhow::Result<IngestSummary> {
    ensure!(config.days > 0, "`--days` must be at least 1");
    ensure!(config.fleet.trackers > 0, "`--trackers` must be at least 1");
    ensure!(config.flush_hours > 0, "`--flush-hours` must be at least 1");
    // Flushes happen where the measurement says, not when a timer fires, so
    // that the files (and the numbers) are the same on every run.
    let ingest_config = IngestConfig {
        flush_interval: Duration::from_secs(366 * 86_400),
        flush_rows: usize::MAX,
        max_unflushed_rows: usize::MAX,
        ..IngestConfig::new(data_dir)
    };
    let ingest = Arc::new(Ingest::open(ingest_config, &mut Registry::default())?);
    let mut fleet = Fleet::new(&config.fleet);
    let total_s = u64::from(config.days) * 86_400;
    let period_s = u64::from(config.flush_hours) * 3_600;
    let window_s = (config.batch_messages / config.fleet.trackers).max(1) as u64;
    let (mut done_s, mut messages, mut elapsed) = (0u64, 0u64, Duration::ZERO);
    while done_s < total_s {
        let period_end = (done_s + period_s).min(total_s);
        while done_s < period_end {
            let seconds = window_s.min(period_end - done_s);
            let batch = fleet.next_seconds(seconds as u32);
            let started = Instant::now();
            write(&ingest, batch).await?;
            elapsed += started.elapsed();
            done_s += seconds;
            messages += seconds * config.fleet.trackers as u64;
        }
        let started = Instant::now();
        let flushing = ingest.clone();
        tokio::task::spawn_blocking(move || flushing.flush()).await??;
        elapsed += started.elapsed();
    }
    settle(&ingest).await;
    let stopping = ingest.clone();
    tokio::task::spawn_blocking(move || stopping.shutdown()).await??;
    // The threads are stopped: no compaction can replace these files any more.
    let snapshot = ingest.snapshot();
    ensure!(
        snapshot.unflushed.is_empty(),
        "rows were left unflushed after the last flush"
    );
    Ok(IngestSummary {
        messages,
        elapsed,
        files: snapshot.files.len(),
        file_bytes: snapshot.files.iter().map(|f| f.bytes).sum(),
        root: snapshot.root.clone(),
        catalog: snapshot.files.as_ref().clone(),
    })
}

/// Waits until background compaction has left the catalog unchanged for a
/// second (it merges one day's small files per tick), so that the files
/// measured are those a reader would find once the engine is idle.
async fn settle(ingest: &Ingest) {
    let ids = || -> Vec<u64> { ingest.snapshot().files.iter().map(|f| f.id).collect() };
    let mut seen = ids();
    for _ in 0..600 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = ids();
        if now == seen {
            return;
        }
        seen = now;
    }
}

async fn write(ingest: &Ingest, batch: Vec<Message>) -> anyhow::Result<()> {
    let sent = batch.len();
    let outcome = ingest.write(batch).await?;
    ensure!(
        outcome.accepted == sent,
        "{} of {sent} messages were accepted ({} duplicates)",
        outcome.accepted,
        outcome.duplicates
    );
    Ok(())
}

/// The paths of the catalog's files that may hold `tracker` in `span`, as a planner picks them.
pub fn files_of(catalog: &[FileEntry], tracker: TrackerId, span: (i64, i64)) -> Vec<PathBuf> {
    catalog
        .iter()
        .filter(|f| f.may_hold(tracker.0, span, (i64::MIN, i64::MAX)))
        .map(|f| f.path.clone())
        .collect()
}

/// Reads `tracker`'s rows in `span` from `files` (relative to `root`),
/// decoding `columns` (every column a user can ask for when `None`), and
/// counts what the reader touched.
pub fn measure(
    root: &Path,
    files: &[PathBuf],
    tracker: TrackerId,
    span: (i64, i64),
    columns: Option<&[&str]>,
    page_index: bool,
) -> anyhow::Result<ReadStats> {
    let counter = Arc::new(IoCounter::default());
    let mut stats = ReadStats::default();
    let started = Instant::now();
    for file in files {
        let path = root.join(file);
        read_file(
            &path, &counter, tracker, span, columns, page_index, &mut stats,
        )
        .with_context(|| format!("reading {}", path.display()))?;
        stats.files += 1;
    }
    stats.elapsed = started.elapsed();
    stats.bytes = counter.bytes();
    stats.requests = counter.requests();
    Ok(stats)
}

fn read_file(
    path: &Path,
    counter: &Arc<IoCounter>,
    tracker: TrackerId,
    (from, to): (i64, i64),
    columns: Option<&[&str]>,
    page_index: bool,
    stats: &mut ReadStats,
) -> anyhow::Result<()> {
    let before = counter.bytes();
    let file = CountingFile::open(path, counter.clone())?;
    let policy = if page_index {
        PageIndexPolicy::Required
    } else {
        PageIndexPolicy::Skip
    };
    let options = ArrowReaderOptions::new().with_page_index_policy(policy);
    let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(file, options)?;
    stats.metadata_bytes += counter.bytes() - before;

    let schema = builder.parquet_schema();
    let name = |i: usize| schema.column(i).name().to_owned();
    let leaf = |wanted: &str| (0..schema.num_columns()).find(|&i| name(i) == wanted);
    let (Some(tracker_leaf), Some(time_leaf)) = (leaf(TRACKER_ID), leaf(MESSAGE_TIME)) else {
        bail!("the file lacks {TRACKER_ID} or {MESSAGE_TIME}");
    };
    // An inner column absent from a file is all nulls there: nothing to read.
    let leaves: Vec<usize> = (0..schema.num_columns())
        .filter(|&i| match columns {
            Some(columns) => columns.contains(&name(i).as_str()),
            None => name(i) != CONTENT_HASH,
        })
        .collect();
    let groups = prune_row_groups(
        builder.metadata(),
        tracker_leaf,
        time_leaf,
        tracker,
        (from, to),
    );
    if groups.is_empty() {
        return Ok(());
    }
    stats.row_groups += groups.len();
    stats.column_chunks += groups.len() * leaves.len();
    let mask = ProjectionMask::leaves(schema, leaves);
    let reader = builder
        .with_projection(mask)
        .with_row_groups(groups)
        .build()?;
    for batch in reader {
        let batch = batch?;
        let (Some(trackers), Some(times)) = (
            batch
                .column_by_name(TRACKER_ID)
                .and_then(|c| c.as_primitive_opt::<Int64Type>()),
            batch
                .column_by_name(MESSAGE_TIME)
                .and_then(|c| c.as_primitive_opt::<TimestampMillisecondType>()),
        ) else {
            bail!("the file's key columns have unexpected types");
        };
        stats.rows += trackers
            .values()
            .iter()
            .zip(times.values().iter())
            .filter(|&(&t, &m)| t == tracker.0 && (from..to).contains(&m))
            .count() as u64;
    }
    Ok(())
}

/// Row groups whose statistics may hold `tracker` in `[from, to)`.
fn prune_row_groups(
    metadata: &ParquetMetaData,
    tracker_leaf: usize,
    time_leaf: usize,
    tracker: TrackerId,
    (from, to): (i64, i64),
) -> Vec<usize> {
    let overlaps = |stats: Option<&Statistics>, low: i64, high: i64| match stats {
        Some(Statistics::Int64(s)) => {
            s.min_opt().is_none_or(|min| *min <= high) && s.max_opt().is_none_or(|max| *max >= low)
        }
        _ => true,
    };
    metadata
        .row_groups()
        .iter()
        .enumerate()
        .filter(|(_, group)| {
            overlaps(
                group.column(tracker_leaf).statistics(),
                tracker.0,
                tracker.0,
            ) && overlaps(group.column(time_leaf).statistics(), from, to - 1)
        })
        .map(|(i, _)| i)
        .collect()
}

/// Compressed bytes per column over `files`, read from their metadata, largest first.
pub fn column_bytes(root: &Path, files: &[PathBuf]) -> anyhow::Result<Vec<(String, u64)>> {
    let mut sizes: std::collections::BTreeMap<String, u64> = Default::default();
    for file in files {
        let path = root.join(file);
        let reader =
            std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(reader)?;
        for group in builder.metadata().row_groups() {
            for column in group.columns() {
                *sizes.entry(column.column_path().string()).or_default() +=
                    column.compressed_size() as u64;
            }
        }
    }
    let mut sizes: Vec<(String, u64)> = sizes.into_iter().collect();
    sizes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(sizes)
}

#[cfg(test)]
mod tests;
