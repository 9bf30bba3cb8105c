//! One measurement point: a server (Trackhouse started afresh, or a fresh
//! ClickHouse database), the load for the point's duration while the
//! server's threads and `/metrics` are sampled, then the checks of what it
//! stored.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use super::clickhouse::ClickHouseSide;
use super::driver::{self, Answer, FeedSpec, Feeder, Plan, Target, Totals};
use super::metrics::{IngestDelta, Scrape};
use super::probe::{self, ReadSpec, Reads};
use super::procfs::{self, CpuUse, CpuWatch};
use super::report::group;
use super::server::{ServerOptions, Template, TrackhouseServer};
use super::verify::{Expected, Verdict, stored_parquet};
use super::workload::Pool;
use super::{Encoding, System};

/// What a point is.
#[derive(Debug, Clone, PartialEq)]
pub struct PointSpec {
    /// The system under load.
    pub system: System,
    /// Lines per body.
    pub lines: usize,
    /// How bodies are encoded.
    pub encoding: Encoding,
    /// Concurrent connections.
    pub connections: usize,
    /// Open loop at this many lines a second; closed loop without.
    pub rate: Option<f64>,
    /// How long bodies are started.
    pub duration: Duration,
}

/// The load of a point: the stream, how it is cut into bodies and how
/// they are sent.
#[derive(Debug, Clone, Copy)]
pub struct Load<'a> {
    /// The lines.
    pub pool: &'a Arc<Pool>,
    /// The bodies: every point starts from the stream's first (the
    /// compression is the point's system's, set by the point).
    pub feed: FeedSpec,
    /// How they are sent.
    pub plan: &'a Plan,
    /// Clock ticks per second of `/proc`.
    pub ticks: u64,
    /// Trackhouse: a raw data export of one tracker this long after the
    /// last one ended, all through the load ([`probe`]).
    pub read_every: Option<Duration>,
}

/// What a point measured and found.
#[derive(Debug, Clone, PartialEq)]
pub struct PointResult {
    /// The point.
    pub spec: PointSpec,
    /// Start → last answer.
    pub elapsed: Duration,
    /// When the load started (wall clock), and each body's timing and
    /// answer: the timeline `--bodies-dir` writes.
    pub started_at: std::time::SystemTime,
    /// Every body sent, in no particular order.
    pub bodies: Vec<driver::Sent>,
    /// The answers summed.
    pub totals: Totals,
    /// The stream ran out before the duration (never: it is endless).
    pub exhausted: bool,
    /// The server's CPU (`None`: its pid is unknown).
    pub server_cpu: Option<CpuUse>,
    /// This program's CPU seconds over the point.
    pub generator_cpu_s: f64,
    /// The server's peak resident memory over the point.
    pub peak_rss: Option<u64>,
    /// Bytes the server caused to be written to storage over the point.
    pub disk_write_bytes: Option<u64>,
    /// The whole machine's CPU over the point (server, generator and
    /// anything else; steal is time the hypervisor gave other guests).
    pub machine_cpu: procfs::MachineCpu,
    /// Trackhouse's `/metrics` moves over the point.
    pub ingest: Option<IngestDelta>,
    /// Largest `trackhouse_ingest_unflushed_rows` sampled (flushes overlapping intake).
    pub max_unflushed_rows: Option<f64>,
    /// Largest `trackhouse_dedup_index_entries` sampled: the keys the
    /// deduplication index held at most (its bound is
    /// `--dedup-max-entries`).
    pub max_dedup_keys: Option<f64>,
    /// The reads made during the load, if asked for.
    pub reads: Option<Reads>,
    /// Trackhouse: SIGTERM → exit, the final flush.
    pub shutdown: Option<Duration>,
    /// What the acknowledged bodies carried (keys dropped once checked).
    pub expected: Expected,
    /// What is stored, in words.
    pub stored: String,
    /// The checks.
    pub verdict: Verdict,
}

impl PointResult {
    /// Lines acknowledged per second.
    pub fn lines_per_s(&self) -> f64 {
        self.totals.acked_lines as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// The largest values of gauges sampled on Trackhouse's `/metrics`.
#[derive(Debug, Clone, Copy, Default)]
struct Peaks {
    unflushed_rows: Option<f64>,
    dedup_keys: Option<f64>,
}

impl Peaks {
    fn note(&mut self, scrape: &Scrape) {
        let most = |peak: &mut Option<f64>, series: &str| {
            let value = scrape.value(series);
            *peak = Some(peak.map_or(value, |m: f64| m.max(value)));
        };
        most(&mut self.unflushed_rows, "trackhouse_ingest_unflushed_rows");
        most(&mut self.dedup_keys, "trackhouse_dedup_index_entries");
    }
}

/// Samples the server's threads (every 500 ms) and, for Trackhouse, the
/// unflushed rows and the dedup index's keys on `/metrics` (every second)
/// until cancelled.
fn sample(
    watch: Option<CpuWatch>,
    metrics_base: Option<String>,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<(Option<CpuWatch>, Peaks)> {
    tokio::spawn(async move {
        let mut watch = watch;
        let client = reqwest::Client::new();
        let mut peaks = Peaks::default();
        let mut tick = 0u64;
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
            if let Some(watch) = watch.as_mut() {
                watch.sample();
            }
            tick += 1;
            if let (Some(base), true) = (&metrics_base, tick % 2 == 0) {
                if let Ok(scrape) = Scrape::fetch(&client, base).await {
                    peaks.note(&scrape);
                }
            }
        }
        (watch, peaks)
    })
}

/// The load and everything sampled around it, for either system.
struct Measured {
    run: driver::Run,
    server_cpu: Option<CpuUse>,
    generator_cpu_s: f64,
    peak_rss: Option<u64>,
    disk_write_bytes: Option<u64>,
    machine_cpu: procfs::MachineCpu,
    peaks: Peaks,
    reads: Option<Reads>,
}

/// How long a point waits for the feeder's queues to fill before it starts.
const FILL_PATIENCE: Duration = Duration::from_secs(30);

async fn measure(
    target: &Target,
    load: &Load<'_>,
    pid: Option<u32>,
    metrics_base: Option<String>,
    reads: Option<ReadSpec>,
) -> anyhow::Result<Measured> {
    let (plan, ticks) = (load.plan, load.ticks);
    let feeder = Arc::new(Feeder::start(load.pool, load.feed, &[])?);
    feeder.fill(FILL_PATIENCE).await;
    let me = std::process::id();
    let generator_start = procfs::process_ticks(me)?;
    let disk_start = pid.and_then(procfs::write_bytes);
    let machine_start = procfs::MachineTicks::now()?;
    let watch = pid.map(|pid| CpuWatch::start(pid, ticks)).transpose()?;
    let stop = CancellationToken::new();
    let sampler = sample(watch, metrics_base, stop.clone());
    let reader = reads.map(|spec| probe::start(spec, stop.clone()));
    let run = driver::run(target, feeder, plan, None).await;
    stop.cancel();
    let (watch, peaks) = sampler.await.context("the sampler")?;
    let reads = match reader {
        Some(reader) => Some(reader.await.context("the reader")?),
        None => None,
    };
    let run = run?;
    let server_cpu = watch.map(CpuWatch::finish).transpose()?;
    let machine_cpu = procfs::MachineTicks::now()?.since(machine_start);
    let generator_cpu_s =
        procfs::process_ticks(me)?.saturating_sub(generator_start) as f64 / ticks.max(1) as f64;
    let peak_rss = pid.and_then(|pid| procfs::status_bytes(pid, "VmHWM"));
    let disk_write_bytes = pid
        .and_then(procfs::write_bytes)
        .zip(disk_start)
        .map(|(end, start)| end.saturating_sub(start));
    Ok(Measured {
        run,
        server_cpu,
        generator_cpu_s,
        peak_rss,
        disk_write_bytes,
        machine_cpu,
        peaks,
        reads,
    })
}

/// One Trackhouse point: a fresh `trackhouse serve` on a copy of the
/// template, the load, SIGTERM (the server flushes), and the checks.
pub async fn trackhouse(
    spec: PointSpec,
    template: &Template,
    root: &Path,
    options: &ServerOptions,
    load: Load<'_>,
) -> anyhow::Result<PointResult> {
    let mut load = load;
    load.feed.compression = spec.encoding.compression(System::Trackhouse);
    let pool = load.pool;
    let server = TrackhouseServer::start(template, root, options).await?;
    let client = reqwest::Client::new();
    let before = Scrape::fetch(&client, &server.base).await?;
    let target = Target {
        url: format!("{}/ingest/v1/messages", server.base),
        bearer: Some(template.token.clone()),
        content_type: "application/x-ndjson",
        content_encoding: spec.encoding.content_encoding(System::Trackhouse),
        answer: Answer::Intake,
    };
    let reads = load.read_every.map(|every| ReadSpec {
        base: server.base.clone(),
        key: template.key.clone(),
        tracker: template.devices.first().map_or(1, |d| d.tracker.0),
        midnight_ms: pool.midnight_ms,
        every,
    });
    let measured = measure(
        &target,
        &load,
        Some(server.pid),
        Some(server.base.clone()),
        reads,
    )
    .await;
    let measured = match measured {
        Ok(m) => m,
        Err(e) => return Err(e.context(server.log_tail())),
    };
    let after = Scrape::fetch(&client, &server.base).await?;
    let ingest = after.ingest_since(&before);
    let stopped = server.stop(Duration::from_secs(900)).await?;
    let totals = Totals::of(&measured.run, spec.duration);
    let mut expected = Expected::of(pool, &measured.run.sent);
    let stored = stored_parquet(stopped.dir.path(), pool)?;

    let mut verdict = Verdict::default();
    verdict.check("no line rejected", totals.rejected == 0);
    verdict.check(
        format!(
            "Σ duplicates {} + Σ accepted = lines answered {}",
            totals.duplicates, expected.lines
        ),
        totals.duplicates + totals.accepted == expected.lines,
    );
    verdict.check_stored_once(&stored);
    verdict.check(
        format!(
            "no row of a message never sent ({} rows{})",
            stored.unknown + stored.messages.missing_from(&expected.sent).0,
            stored
                .first_unknown
                .map_or_else(String::new, |k| format!(", first {k:?}"))
        ),
        stored.unknown == 0 && stored.messages.missing_from(&expected.sent).0 == 0,
    );
    if expected.uncertain_bodies == 0 {
        verdict.check(
            format!(
                "Σ accepted {} = distinct messages answered {}",
                totals.accepted, expected.distinct
            ),
            totals.accepted == expected.distinct,
        );
        verdict.check(
            format!("/metrics accepted {} = Σ accepted", ingest.accepted),
            ingest.accepted as u64 == totals.accepted,
        );
        verdict.check(
            format!("stored rows {} = Σ accepted", group(stored.rows)),
            stored.rows == totals.accepted,
        );
        verdict.check(
            "stored (tracker, msg_time) = those of the distinct messages answered",
            stored.messages == expected.messages,
        );
    } else {
        // Bodies without an answer may have been stored (or not): what was
        // acknowledged must be there, and nothing counted twice.
        verdict.check(
            format!(
                "Σ accepted {} ≤ distinct messages answered {} ({} bodies unanswered)",
                totals.accepted, expected.distinct, expected.uncertain_bodies
            ),
            totals.accepted <= expected.distinct,
        );
        let (missing, first) = expected.messages.missing_from(&stored.messages);
        verdict.check(
            format!(
                "every acknowledged (tracker, msg_time) is stored ({missing} missing{})",
                first.map_or_else(String::new, |m| format!(", first {:?}", pool.key(m)))
            ),
            missing == 0,
        );
    }
    if let Some(reads) = &measured.reads {
        verdict.check(
            format!(
                "every read during the load answered ({} of {} failed)",
                reads.failed,
                reads.failed + reads.latencies.len() as u64
            ),
            reads.failed == 0,
        );
    }
    verdict.check(
        format!("clean exit after SIGTERM ({})", stopped.status),
        stopped.status.success(),
    );
    expected.forget_messages();
    let stored_text = format!(
        "{} rows in {} Parquet files ({:.1} bytes a row), UTC days: {}",
        group(stored.rows),
        stored.files,
        stored.bytes as f64 / stored.rows.max(1) as f64,
        stored.days
    );
    Ok(PointResult {
        spec,
        elapsed: measured.run.elapsed,
        started_at: measured.run.started_at,
        exhausted: measured.run.exhausted,
        totals,
        server_cpu: measured.server_cpu,
        generator_cpu_s: measured.generator_cpu_s,
        peak_rss: measured.peak_rss,
        disk_write_bytes: measured.disk_write_bytes,
        machine_cpu: measured.machine_cpu,
        ingest: Some(ingest),
        max_unflushed_rows: measured.peaks.unflushed_rows,
        max_dedup_keys: measured.peaks.dedup_keys,
        reads: measured.reads,
        shutdown: Some(stopped.shutdown),
        expected,
        stored: stored_text,
        verdict,
        bodies: measured.run.sent,
    })
}

/// One ClickHouse point: a fresh database, the load, and the counts.
pub async fn clickhouse(
    spec: PointSpec,
    side: &ClickHouseSide,
    database: &str,
    load: Load<'_>,
) -> anyhow::Result<PointResult> {
    let mut load = load;
    load.feed.compression = spec.encoding.compression(System::ClickHouse);
    let pool = load.pool;
    let target = side.target(database, spec.encoding.content_encoding(System::ClickHouse))?;
    let mut rss_reset = false;
    if let Some(pid) = side.pid {
        rss_reset = procfs::reset_peak_rss(pid).is_ok();
    }
    let measured = measure(&target, &load, side.pid, None, None).await?;
    let counted = side.count(database).await?;
    let totals = Totals::of(&measured.run, spec.duration);
    let mut expected = Expected::of(pool, &measured.run.sent);
    expected.forget_messages();
    let mut verdict = Verdict::default();
    let exact = expected.uncertain_bodies == 0;
    verdict.check(
        format!(
            "distinct (tracker, msg_time) stored {} {} distinct messages answered {}",
            counted.distinct_keys,
            if exact { "=" } else { "≥" },
            expected.distinct
        ),
        counted.distinct_keys == expected.distinct
            || (!exact && counted.distinct_keys > expected.distinct),
    );
    verdict.check(
        format!(
            "rows with FINAL {} = distinct (tracker, msg_time)",
            counted.rows_final
        ),
        counted.rows_final == counted.distinct_keys,
    );
    if exact {
        verdict.check(
            format!(
                "rows stored {} between distinct and lines answered {}",
                counted.rows, expected.lines
            ),
            (expected.distinct..=expected.lines).contains(&counted.rows),
        );
    }
    Ok(PointResult {
        spec,
        elapsed: measured.run.elapsed,
        started_at: measured.run.started_at,
        exhausted: measured.run.exhausted,
        totals,
        server_cpu: measured.server_cpu,
        generator_cpu_s: measured.generator_cpu_s,
        peak_rss: measured.peak_rss.filter(|_| rss_reset),
        disk_write_bytes: measured.disk_write_bytes,
        machine_cpu: measured.machine_cpu,
        ingest: None,
        max_unflushed_rows: None,
        max_dedup_keys: None,
        reads: None,
        shutdown: None,
        expected,
        stored: format!(
            "{} rows ({} copies not folded yet), {} once folded (FINAL)",
            group(counted.rows),
            group(counted.rows.saturating_sub(counted.rows_final)),
            group(counted.rows_final)
        ),
        verdict,
        bodies: measured.run.sent,
    })
}
