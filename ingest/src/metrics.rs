//! Ingest metrics, registered in the server's Prometheus registry.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::sink::parquet::FooterMetrics;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct Outcome {
    pub(crate) outcome: &'static str,
}

/// A stage of a write's path, for `trackhouse_ingest_stage_seconds`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct StageLabel {
    pub(crate) stage: &'static str,
}

/// Where a write's time goes, stage by stage (see the metric's help).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stage {
    /// A commit waiting for the loader to read what its dedup needs.
    LoaderWait,
    /// A commit from its hand-over to the writer to the writer's answer.
    Writer,
    /// A commit recording its acknowledged points for the live views.
    Live,
    /// A writer group's deduplication, WAL appends and batches cut to the
    /// rows kept (overlapping the sync of the group before).
    GroupDedupAppend,
    /// A writer group's batches joining the memtable (after its sync).
    GroupMemtable,
}

impl Stage {
    const fn label(self) -> &'static str {
        match self {
            Self::LoaderWait => "loader_wait",
            Self::Writer => "writer",
            Self::Live => "live",
            Self::GroupDedupAppend => "group_dedup_append",
            Self::GroupMemtable => "group_memtable",
        }
    }
}

/// A phase of a flush, for `trackhouse_ingest_flush_seconds`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct PhaseLabel {
    pub(crate) phase: &'static str,
}

/// Where a flush's time goes (see the metric's help).
#[derive(Debug, Clone, Copy)]
pub(crate) enum FlushPhase {
    /// The memtable's rows written to the sink (Parquet files written and
    /// synced, or ClickHouse INSERTs answered), and swapped in for them.
    Write,
    /// The flushed rows' keys handed to the deduplication index.
    Index,
    /// The WAL segments that held them released and deleted.
    Release,
}

impl FlushPhase {
    const fn label(self) -> &'static str {
        match self {
            Self::Write => "write",
            Self::Index => "index",
            Self::Release => "release",
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct LimitLabel {
    pub(crate) limit: &'static str,
}

/// Counters and gauges of the ingest path.
#[derive(Debug, Clone)]
pub(crate) struct IngestMetrics {
    pub(crate) messages: Family<Outcome, Counter>,
    pub(crate) limit_refusals: Family<LimitLabel, Counter>,
    pub(crate) backpressure: Family<LimitLabel, Counter>,
    pub(crate) wal_bytes: Counter,
    pub(crate) wal_fsyncs: Counter,
    pub(crate) wal_fsync_seconds: Histogram,
    pub(crate) wal_torn_tails: Counter,
    pub(crate) group_writes: Histogram,
    pub(crate) flush_lag_seconds: Gauge<f64, AtomicU64>,
    pub(crate) unflushed_rows: Gauge,
    pub(crate) unflushed_bytes: Gauge,
    pub(crate) flushes: Counter,
    pub(crate) relaxed_flushes: Counter,
    pub(crate) rows_flushed: Counter,
    pub(crate) dedup_loads: Counter,
    pub(crate) dedup_writer_loads: Counter,
    pub(crate) dedup_prefetch_discarded: Counter,
    pub(crate) dedup_evictions: Counter,
    pub(crate) footers: FooterMetrics,
    pub(crate) flush_errors: Counter,
    pub(crate) files: Gauge,
    pub(crate) file_bytes: Gauge,
    pub(crate) compactions: Counter,
    pub(crate) retention_runs: Counter,
    pub(crate) retention_rewrites: Counter,
    pub(crate) dedup_entries: Gauge,
    pub(crate) dead_letter_rows: Counter,
    pub(crate) wal_failures: Counter,
    pub(crate) wal_unavailable: Gauge,
    pub(crate) live_trackers: Gauge,
    pub(crate) live_points: Gauge,
    pub(crate) stages: Family<StageLabel, Histogram, fn() -> Histogram>,
    pub(crate) flush_phases: Family<PhaseLabel, Histogram, fn() -> Histogram>,
}

/// 50 µs to about 1.6 s.
fn stage_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_05, 2.0, 16))
}

/// 10 ms to about 20 s.
fn flush_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.01, 2.0, 12))
}

impl IngestMetrics {
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let m = Self {
            messages: Family::default(),
            limit_refusals: Family::default(),
            backpressure: Family::default(),
            wal_bytes: Counter::default(),
            wal_fsyncs: Counter::default(),
            wal_fsync_seconds: Histogram::new(exponential_buckets(0.000_05, 2.0, 16)),
            wal_torn_tails: Counter::default(),
            group_writes: Histogram::new(exponential_buckets(1.0, 2.0, 12)),
            flush_lag_seconds: Gauge::default(),
            unflushed_rows: Gauge::default(),
            unflushed_bytes: Gauge::default(),
            flushes: Counter::default(),
            relaxed_flushes: Counter::default(),
            rows_flushed: Counter::default(),
            dedup_loads: Counter::default(),
            dedup_writer_loads: Counter::default(),
            dedup_prefetch_discarded: Counter::default(),
            dedup_evictions: Counter::default(),
            footers: FooterMetrics::default(),
            flush_errors: Counter::default(),
            files: Gauge::default(),
            file_bytes: Gauge::default(),
            compactions: Counter::default(),
            retention_runs: Counter::default(),
            retention_rewrites: Counter::default(),
            dedup_entries: Gauge::default(),
            dead_letter_rows: Counter::default(),
            wal_failures: Counter::default(),
            wal_unavailable: Gauge::default(),
            live_trackers: Gauge::default(),
            live_points: Gauge::default(),
            stages: Family::new_with_constructor(stage_histogram),
            flush_phases: Family::new_with_constructor(flush_histogram),
        };
        let r = registry;
        r.register(
            "trackhouse_ingest_messages",
            "Messages by outcome: accepted, duplicate, rejected",
            m.messages.clone(),
        );
        r.register(
            "trackhouse_limit_refusals",
            "Intake lines refused because they went beyond a configured limit, by limit",
            m.limit_refusals.clone(),
        );
        r.register(
            "trackhouse_ingest_backpressure",
            "Intake writes refused with 503 (code 8) because memory or the writer's queue is full, by limit: unflushed_rows (--max-unflushed-rows), unflushed_bytes (--max-unflushed-bytes), pending_writes",
            m.backpressure.clone(),
        );
        r.register(
            "trackhouse_wal_bytes",
            "Bytes appended to the write-ahead log",
            m.wal_bytes.clone(),
        );
        r.register(
            "trackhouse_wal_fsyncs",
            "fdatasync calls of the write-ahead log (one per group commit)",
            m.wal_fsyncs.clone(),
        );
        r.register(
            "trackhouse_wal_fsync_seconds",
            "Latency of WAL fdatasync",
            m.wal_fsync_seconds.clone(),
        );
        r.register(
            "trackhouse_wal_torn_tails",
            "Torn records found at the end of WAL segments on recovery",
            m.wal_torn_tails.clone(),
        );
        r.register(
            "trackhouse_wal_group_writes",
            "Write requests committed by one fdatasync",
            m.group_writes.clone(),
        );
        r.register(
            "trackhouse_ingest_flush_lag_seconds",
            "Age of the oldest acknowledged row not yet in a Parquet file",
            m.flush_lag_seconds.clone(),
        );
        r.register(
            "trackhouse_ingest_rows_flushed",
            "Rows moved from memory to Parquet files or ClickHouse",
            m.rows_flushed.clone(),
        );
        r.register(
            "trackhouse_dedup_partition_loads",
            "(tracker, day) partitions of the deduplication index read from storage",
            m.dedup_loads.clone(),
        );
        r.register(
            "trackhouse_dedup_writer_loads",
            "Of those, partitions the writer thread read itself (a write reads what it needs before it queues; the writer reads what that missed)",
            m.dedup_writer_loads.clone(),
        );
        r.register(
            "trackhouse_dedup_prefetches_discarded",
            "Partitions read ahead of a write that were not used because keys left the deduplication index meanwhile (a flush, an eviction)",
            m.dedup_prefetch_discarded.clone(),
        );
        r.register(
            "trackhouse_dedup_partition_evictions",
            "(tracker, day) partitions dropped from the deduplication index, or whose stored keys were (a tracker with rows in memory), to keep it within --dedup-max-entries",
            m.dedup_evictions.clone(),
        );
        r.register(
            "trackhouse_dedup_footer_cache_hits",
            "Reads of a Parquet file's stored keys (a late message's or a retransmission's partition) that found its decoded footer kept",
            m.footers.hits.clone(),
        );
        r.register(
            "trackhouse_dedup_footer_cache_misses",
            "Reads of a Parquet file's stored keys that decoded its footer and page index from the file",
            m.footers.misses.clone(),
        );
        r.register(
            "trackhouse_dedup_footer_cache_bytes",
            "Bytes of decoded Parquet footers kept for the deduplication index's reads (at most --dedup-footer-cache-bytes)",
            m.footers.bytes.clone(),
        );
        r.register(
            "trackhouse_ingest_unflushed_bytes",
            "Bytes of the Arrow arrays of acknowledged rows held in memory (a flush starts at --flush-bytes)",
            m.unflushed_bytes.clone(),
        );
        r.register(
            "trackhouse_ingest_unflushed_rows",
            "Acknowledged rows held in memory, not yet in a Parquet file",
            m.unflushed_rows.clone(),
        );
        r.register(
            "trackhouse_ingest_flushes",
            "Flushes of the memtable to Parquet",
            m.flushes.clone(),
        );
        r.register(
            "trackhouse_ingest_relaxed_flushes",
            "Flushes that wrote their files below the request threads' priority (--flush-nice): \
             on time, the flusher idle at least as long as its last flush took",
            m.relaxed_flushes.clone(),
        );
        r.register(
            "trackhouse_ingest_flush_errors",
            "Failed flushes (retried; the WAL keeps the rows)",
            m.flush_errors.clone(),
        );
        r.register(
            "trackhouse_parquet_files",
            "Parquet files in the catalog",
            m.files.clone(),
        );
        r.register(
            "trackhouse_parquet_bytes",
            "Bytes of the Parquet files in the catalog",
            m.file_bytes.clone(),
        );
        r.register(
            "trackhouse_compactions",
            "Compactions of small Parquet files",
            m.compactions.clone(),
        );
        r.register(
            "trackhouse_retention_runs",
            "Retention passes completed (at new cutoffs, and every retention interval)",
            m.retention_runs.clone(),
        );
        r.register(
            "trackhouse_retention_rewrites",
            "Files retention rewrote without their expired rows",
            m.retention_rewrites.clone(),
        );
        r.register(
            "trackhouse_dedup_index_entries",
            "Keys held by the deduplication index",
            m.dedup_entries.clone(),
        );
        r.register(
            "trackhouse_clickhouse_dead_letter_rows",
            "Rows ClickHouse refused for what they hold, set aside in the dead-letter directory",
            m.dead_letter_rows.clone(),
        );
        r.register(
            "trackhouse_wal_failures",
            "Times the write-ahead log stopped taking writes (a full or failing disk)",
            m.wal_failures.clone(),
        );
        r.register(
            "trackhouse_wal_unavailable",
            "1 while the write-ahead log cannot take writes (intake answers 503, /healthz too), else 0",
            m.wal_unavailable.clone(),
        );
        r.register(
            "trackhouse_live_trackers",
            "Trackers whose recent positions are held in memory for live views (geo links)",
            m.live_trackers.clone(),
        );
        r.register(
            "trackhouse_live_points",
            "Recent positions held in memory for live views, over all trackers",
            m.live_points.clone(),
        );
        r.register(
            "trackhouse_ingest_stage_seconds",
            "Time of each stage of a write's way to durable and visible, by stage: \
             loader_wait (a commit waiting for the loader to read what its dedup needs), \
             writer (a commit from its hand-over to the writer thread to its answer: queue, group, sync), \
             live (a commit recording its points for live views), \
             group_dedup_append (a writer group's deduplication, WAL appends and batches cut to the rows kept, \
             while the group before is synced), \
             group_memtable (a writer group's batches joining the memtable, after its fdatasync on the sync thread, \
             trackhouse_wal_fsync_seconds)",
            m.stages.clone(),
        );
        r.register(
            "trackhouse_ingest_flush_seconds",
            "Time of each phase of a flush of the memtable, by phase: \
             write (its rows written to the sink, Parquet files written and synced or ClickHouse \
             INSERTs answered, and swapped in for them), \
             index (the flushed rows' keys handed to the deduplication index), \
             release (the WAL segments that held them released and deleted); \
             rows arriving meanwhile wait in memory (trackhouse_ingest_unflushed_bytes)",
            m.flush_phases.clone(),
        );
        m
    }

    /// Sets the gauges of the rows and bytes waiting in the memtable.
    pub(crate) fn set_unflushed(&self, rows: usize, bytes: usize) {
        self.unflushed_rows
            .set(i64::try_from(rows).unwrap_or(i64::MAX));
        self.unflushed_bytes
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    /// Notes that flush phase `phase` took from `since` until now.
    pub(crate) fn observe_flush(&self, phase: FlushPhase, since: std::time::Instant) {
        self.flush_phases
            .get_or_create(&PhaseLabel {
                phase: phase.label(),
            })
            .observe(since.elapsed().as_secs_f64());
    }

    /// Notes that `stage` took from `since` until now.
    pub(crate) fn observe_stage(&self, stage: Stage, since: std::time::Instant) {
        self.stages
            .get_or_create(&StageLabel {
                stage: stage.label(),
            })
            .observe(since.elapsed().as_secs_f64());
    }

    /// Counts a write refused with 503 because `limit` (`unflushed_rows`,
    /// `unflushed_bytes`, `pending_writes`) is reached.
    pub(crate) fn count_backpressure(&self, limit: &'static str) {
        self.backpressure.get_or_create(&LimitLabel { limit }).inc();
    }

    /// Counts lines refused by a configured limit.
    pub(crate) fn count_limit(&self, limit: crate::line::Limit, n: usize) {
        if n > 0 {
            self.limit_refusals
                .get_or_create(&LimitLabel {
                    limit: limit.name(),
                })
                .inc_by(n as u64);
        }
    }

    pub(crate) fn count(&self, outcome: &'static str, n: usize) {
        self.messages
            .get_or_create(&Outcome { outcome })
            .inc_by(n as u64);
    }
}
