//! The HTTP ingest load generator of issue 17 (see `benches::ingest_load`):
//! the real `trackhouse serve` binary, started afresh for every point on a
//! copy of a prepared data directory (10,000 trackers, an ingest token),
//! loaded with NDJSON bodies over N connections (a pool rendered once,
//! repeated in epochs shifted in time; bodies made and compressed ahead on
//! generator threads); then the same rows inserted into ClickHouse as
//! `JSONEachRow` from the same generator.
//! Per point: lines/s acknowledged, acknowledgement latency, 503s, the
//! server's CPU per thread, the machine's CPU split (user, system, iowait,
//! and steal: a noisy neighbour on a VM shows there), the server's peak
//! RSS, WAL bytes and fsyncs per second, and checks that exactly the
//! acknowledged messages were stored.
//!
//! ```sh
//! cargo build --release -p trackhouse && cargo build --release -p benches --bin ingest_load
//! target/release/ingest_load --lines 1000,10000 --encoding identity,zstd --connections 4,16,64 --seconds 60 --rate-of-max 0.5
//! ```
#![allow(
    clippy::print_stdout,
    reason = "a measurement program: its report goes to stdout"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail, ensure};
use benches::ingest_load::clickhouse::ClickHouseSide;
use benches::ingest_load::driver::{FeedSpec, Plan};
use benches::ingest_load::point::{self, Load, PointResult, PointSpec};
use benches::ingest_load::report::{self, group};
use benches::ingest_load::server::{self, ServerOptions, Template};
use benches::ingest_load::workload::{Compression, Format, Pool, StreamConfig};
use benches::ingest_load::{Encoding, System, procfs};
use clap::Parser;

/// Lines a second a closed-loop point is expected to send, for where the
/// midnight falls (`--midnight-at` of the expected stream): about what
/// this 2-core VM's server acknowledged for one tracker (96-115k lines/s,
/// BENCHMARKS.md "Storage backends"). Not a limit: the stream is endless.
const EXPECTED_LINES_PER_S: u64 = 100_000;

#[derive(Debug, Parser)]
#[command(about = "issue 17's HTTP ingest load: trackhouse serve against ClickHouse's JSONEachRow")]
struct Args {
    /// Systems, in order: trackhouse, trackhouse-nosync (needs --nosync-args), clickhouse.
    #[arg(long, value_delimiter = ',', default_value = "trackhouse,clickhouse")]
    systems: Vec<System>,
    /// Lines per body (a list runs each).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    lines: Vec<usize>,
    /// Body encodings: identity, zstd (ClickHouse 18.16 gets gzip for zstd).
    #[arg(long, value_delimiter = ',', default_value = "identity,zstd")]
    encoding: Vec<Encoding>,
    /// Concurrent connections (a list runs each).
    #[arg(long, value_delimiter = ',', default_value = "4,16,64")]
    connections: Vec<usize>,
    /// Seconds of load per point.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Open loop at this many lines a second (every point); closed loop without.
    #[arg(long)]
    rate: Option<f64>,
    /// After the closed-loop points of a system, body size and encoding,
    /// one open-loop point at this share of their best rate, with the best
    /// point's connections (0.5: issue 17's latency target).
    #[arg(long)]
    rate_of_max: Option<f64>,
    /// Trackers of the account, every one reporting once a second.
    #[arg(long, default_value_t = 10_000)]
    trackers: usize,
    /// Lines that are byte-for-byte copies of earlier ones, in percent of all lines.
    #[arg(long, default_value_t = 1.5)]
    duplicate_percent: f64,
    /// Fresh lines followed by a late line of the same tracker, in percent.
    #[arg(long, default_value_t = 0.5)]
    late_percent: f64,
    /// Lines of the pool rendered once (whole seconds of every tracker:
    /// 330,000 is 32 s of 10,000); the stream repeats it in epochs, each
    /// shifted by the pool's seconds, so any point's length fits. About 660
    /// bytes of memory a line for the intake (590 of text; ClickHouse's
    /// rows are longer) and 4 µs of one core to render, after the fleet's
    /// warmup (--warmup-s: about 4.5 s of CPU for 10,000 trackers).
    #[arg(long, default_value_t = 330_000)]
    pool_lines: usize,
    /// Threads that make bodies ahead of the connections (later epochs'
    /// times written in, zstd compressed); default: one per CPU.
    #[arg(long)]
    generator_threads: Option<usize>,
    /// Lines made ahead of the connections at most (whole bodies, at least
    /// two per generator thread).
    #[arg(long, default_value_t = 200_000)]
    ahead_lines: usize,
    /// Where UTC midnight falls in the stream, as a share of it.
    #[arg(long, default_value_t = 0.1)]
    midnight_at: f64,
    /// Each vehicle is simulated for a random time up to this before the
    /// stream (all start parked; about 1.7 µs a simulated second here).
    #[arg(long, default_value_t = 1800)]
    warmup_s: u32,
    /// Seed of the fleet and of every choice.
    #[arg(long, default_value_t = 17)]
    seed: u64,
    /// The server binary (built with `cargo build --release -p trackhouse`).
    #[arg(long, default_value = "target/release/trackhouse")]
    trackhouse_bin: PathBuf,
    /// A flag for `trackhouse serve` (repeat for more): `--trackhouse-arg=--flush-interval-ms=1000`.
    #[arg(long = "trackhouse-arg", allow_hyphen_values = true)]
    trackhouse_args: Vec<String>,
    /// Flags of `trackhouse serve` that switch the WAL's fsync off, for the
    /// `trackhouse-nosync` system (space-separated).
    #[arg(long, allow_hyphen_values = true)]
    nosync_args: Option<String>,
    /// A running ClickHouse's HTTP interface; without it a throwaway one is
    /// started with deploy/clickhouse/local-server.sh.
    #[arg(long)]
    clickhouse_url: Option<String>,
    /// CPUs the servers are pinned to (`taskset -c` list, e.g. `1`).
    #[arg(long)]
    server_cpus: Option<String>,
    /// CPUs this program is pinned to (e.g. `0`).
    #[arg(long)]
    generator_cpus: Option<String>,
    /// Wait before sending a body again after a 503 (the server stored nothing).
    #[arg(long, default_value_t = 50)]
    retry_delay_ms: u64,
    /// After a point's seconds, answers are awaited this long at most (a
    /// body unanswered then fails, and the exact checks become bounds).
    #[arg(long, default_value_t = 120)]
    drain_s: u64,
    /// Trackhouse points: while the load runs, a raw data export of one
    /// tracker (every column; its rows so far) this many milliseconds after
    /// the last one ended; their latencies get a table of their own.
    #[arg(long)]
    read_every_ms: Option<u64>,
    /// Directory for the data directories (default: the temporary directory).
    #[arg(long)]
    data_root: Option<PathBuf>,
    /// Write each point's bodies here as CSV (`<start unix ms>-<point>.csv`:
    /// when each was due and answered, its latency, lines and answer),
    /// to line the slow ones up with the server's flushes.
    #[arg(long)]
    bodies_dir: Option<PathBuf>,
}

/// `taskset -a -p -c cpus pid`: every thread of `pid`.
fn pin(pid: u32, cpus: &str) -> anyhow::Result<()> {
    let output = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &pid.to_string()])
        .output()
        .context("running taskset")?;
    ensure!(
        output.status.success(),
        "taskset -a -p -c {cpus} {pid}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

fn today_midnight_ms() -> anyhow::Result<i64> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64;
    Ok(now - now.rem_euclid(86_400_000))
}

/// The line printed as each point ends.
/// The point's bodies as CSV in `--bodies-dir`, if asked for.
fn write_bodies(args: &Args, r: &PointResult) -> anyhow::Result<()> {
    let Some(dir) = &args.bodies_dir else {
        return Ok(());
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let started_ms = report::unix_ms(r.started_at);
    let slug: String = report::name(r)
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let path = dir.join(format!("{started_ms}-{slug}.csv"));
    std::fs::write(&path, report::bodies_csv(r))
        .with_context(|| format!("writing {}", path.display()))?;
    println!("    bodies: {}", path.display());
    Ok(())
}

fn progress(r: &PointResult) {
    println!(
        "  {}: {:.1} s, {} lines/s acked, p99 {:.1} ms, {} 503s, {} connection errors, {} failed, \
         {} bodies waited for ({:.1} s), checks {}",
        report::name(r),
        r.elapsed.as_secs_f64(),
        group(r.lines_per_s().round() as u64),
        r.totals
            .latency(0.99)
            .map_or(0.0, |d| d.as_secs_f64() * 1e3),
        r.totals.refusals,
        r.totals.connection_errors,
        r.totals.failed,
        r.totals.feeder_waits,
        r.totals.feeder_wait.as_secs_f64(),
        if r.verdict.passed() {
            "ok".to_owned()
        } else {
            format!("FAILED: {}", r.verdict.failures())
        }
    );
    if let Some(refusal) = &r.totals.first_refusal {
        println!("    first refusal (retried): {refusal}");
    }
    if let Some(error) = &r.totals.first_connection_error {
        println!("    first connection error: {error}");
    }
    if let Some((status, detail)) = &r.totals.first_failure {
        println!("    first failure: status {status}: {detail}");
    }
}

/// Closed-loop points of `system` for one body shape, then the open-loop
/// point at `--rate-of-max` of their best, if asked; `run_point` runs one.
async fn points_of<F, Fut>(
    args: &Args,
    system: System,
    lines: usize,
    encoding: Encoding,
    mut run_point: F,
) -> anyhow::Result<Vec<PointResult>>
where
    F: FnMut(PointSpec) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<PointResult>>,
{
    let mut done = Vec::new();
    for &connections in &args.connections {
        let spec = PointSpec {
            system,
            lines,
            encoding,
            connections,
            rate: args.rate,
            duration: Duration::from_secs(args.seconds),
        };
        let result = run_point(spec).await?;
        progress(&result);
        write_bodies(args, &result)?;
        done.push(result);
    }
    let best = done
        .iter()
        .filter(|r| r.spec.rate.is_none())
        .max_by(|a, b| a.lines_per_s().total_cmp(&b.lines_per_s()))
        .map(|r| (r.lines_per_s(), r.spec.connections));
    if let (Some(share), Some((rate, connections))) = (args.rate_of_max, best) {
        let spec = PointSpec {
            system,
            lines,
            encoding,
            connections,
            rate: Some((rate * share).max(1.0)),
            duration: Duration::from_secs(args.seconds),
        };
        let result = run_point(spec).await?;
        progress(&result);
        write_bodies(args, &result)?;
        done.push(result);
    }
    Ok(done)
}

async fn render(
    devices: &[benches::ingest_load::workload::Device],
    format: Format,
    stream: &StreamConfig,
) -> anyhow::Result<Arc<Pool>> {
    let started = Instant::now();
    let (devices, stream) = (devices.to_vec(), stream.clone());
    let pool =
        tokio::task::spawn_blocking(move || Pool::generate(&devices, format, &stream)).await??;
    let lines = pool.pool_lines() as u64;
    let (fresh, late, copies) = pool.kind_counts(0..lines);
    println!(
        "rendered a pool of {} lines ({} fresh, {} late, {} copies; {:.0} MB, {:.0} MB with its indexes) in {:.1} s; \
         each epoch {} s later; first epoch's message times {} → {} (midnight {})",
        group(lines),
        group(fresh as u64),
        group(late as u64),
        group(copies as u64),
        pool.pool_bytes() as f64 / 1e6,
        pool.memory_bytes() as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        pool.epoch_ms / 1000,
        benches::export::iso(pool.start_ms),
        benches::export::iso(pool.time_ms(lines.saturating_sub(1))),
        benches::export::iso(pool.midnight_ms),
    );
    Ok(Arc::new(pool))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(!args.systems.is_empty(), "--systems is empty");
    ensure!(
        args.lines.iter().all(|&l| l >= 1),
        "--lines must be at least 1"
    );
    ensure!(
        args.connections.iter().all(|&c| c >= 1),
        "--connections must be at least 1"
    );
    ensure!(
        args.trackers >= 1 && args.trackers <= 99_999,
        "--trackers must be 1 to 99,999"
    );
    ensure!(
        (0.0..50.0).contains(&args.duplicate_percent),
        "--duplicate-percent must be 0 to 50"
    );
    ensure!(
        (0.0..=100.0).contains(&args.late_percent),
        "--late-percent must be 0 to 100"
    );
    // Said before the Trackhouse points run, not after.
    ensure!(
        !args.systems.contains(&System::ClickHouse)
            || args.clickhouse_url.is_some()
            || ingest::clickhouse::LocalServer::installed(),
        "--systems clickhouse without --clickhouse-url needs Debian's clickhouse-server \
         (./test.sh installs it)"
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if let Some(cpus) = &args.generator_cpus {
        pin(std::process::id(), cpus)?;
    }
    // Children inherit this program's CPUs unless told otherwise.
    let server_cpus = args.server_cpus.clone().or_else(|| {
        args.generator_cpus
            .as_ref()
            .map(|_| format!("0-{}", cpus - 1))
    });
    let ticks = procfs::clock_ticks();
    // Everything on disk goes under one directory, removed at the end, or
    // by the guard if this program is killed.
    let run_root = tempfile::Builder::new()
        .prefix("ingest-load-")
        .tempdir_in(args.data_root.clone().unwrap_or_else(std::env::temp_dir))?;
    let mut run_guard = server::guard(None, Some(run_root.path()))?;
    let root = run_root.path().to_owned();
    let trackhouse_systems: Vec<System> = args
        .systems
        .iter()
        .copied()
        .filter(|s| s.is_trackhouse())
        .collect();

    println!(
        "# ingest_load: {} CPUs ({}); servers on {}, this generator on {}; {} s per point",
        cpus,
        cpu_model(),
        server_cpus.as_deref().unwrap_or("any CPU"),
        args.generator_cpus.as_deref().unwrap_or("any CPU"),
        args.seconds
    );
    let mut notes = vec![
        "Trackhouse answers a body only once its new messages are in the WAL and the WAL is \
         fdatasync'ed (one fdatasync per group of concurrent writes): acknowledged = durable."
            .to_owned(),
    ];
    if !trackhouse_systems.is_empty() {
        let help = server::serve_help(&args.trackhouse_bin)?;
        let sync_flags: Vec<&str> = help
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("--") && l.to_ascii_lowercase().contains("sync"))
            .collect();
        if args.nosync_args.is_none() {
            notes.push(format!(
                "No WAL-fsync-off row: `{} serve --help` lists {} (nothing here adds one).",
                args.trackhouse_bin.display(),
                if sync_flags.is_empty() {
                    "no flag that switches the WAL's fsync off".to_owned()
                } else {
                    format!("{sync_flags:?}; pass them with --nosync-args and --systems trackhouse-nosync")
                }
            ));
        }
        if trackhouse_systems.contains(&System::TrackhouseNoSync) && args.nosync_args.is_none() {
            bail!(
                "--systems trackhouse-nosync needs --nosync-args (the serve flags that switch the WAL's fsync off)"
            );
        }
    }

    let devices = server::planned_devices(args.trackers);
    let expected_lines = match args.rate {
        Some(rate) => (rate * args.seconds as f64) as u64,
        None => EXPECTED_LINES_PER_S * args.seconds,
    };
    let stream = StreamConfig {
        pool_lines: args.pool_lines,
        expected_lines,
        duplicate_share: args.duplicate_percent / 100.0,
        late_share: args.late_percent / 100.0,
        midnight_ms: today_midnight_ms()?,
        midnight_at: args.midnight_at,
        warmup_s: args.warmup_s,
        seed: args.seed,
        threads: cpus,
    };
    let plan_of = |spec: &PointSpec| Plan {
        connections: spec.connections,
        duration: spec.duration,
        rate: spec.rate,
        retry_delay: Duration::from_millis(args.retry_delay_ms),
        retry_grace: Duration::from_secs(30),
        drain: Duration::from_secs(args.drain_s),
    };
    let generator_threads = args.generator_threads.unwrap_or(cpus).max(1);
    let feed_of = |lines: usize| FeedSpec {
        lines_per_body: lines,
        // Each point sets its system's.
        compression: Compression::None,
        from: 0,
        until: None,
        threads: generator_threads,
        ahead_lines: args.ahead_lines,
    };
    let mut results: Vec<PointResult> = Vec::new();

    if !trackhouse_systems.is_empty() {
        let started = Instant::now();
        let template = Template::create(&root, args.trackers).await?;
        println!(
            "data directory template: {} trackers and an ingest token in {:.1} s",
            group(template.devices.len() as u64),
            started.elapsed().as_secs_f64()
        );
        let pool = render(&devices, Format::Intake, &stream).await?;
        for &lines in &args.lines {
            for &encoding in &args.encoding {
                for &system in &trackhouse_systems {
                    let mut extra = args.trackhouse_args.clone();
                    if system == System::TrackhouseNoSync {
                        extra.extend(
                            args.nosync_args
                                .iter()
                                .flat_map(|a| a.split_whitespace().map(str::to_owned)),
                        );
                    }
                    let options = ServerOptions {
                        bin: args.trackhouse_bin.clone(),
                        args: extra,
                        cpus: server_cpus.clone(),
                    };
                    let (template, root, pool, options) = (&template, &root, &pool, &options);
                    let done = points_of(&args, system, lines, encoding, |spec| {
                        let plan = plan_of(&spec);
                        async move {
                            let load = Load {
                                pool,
                                feed: feed_of(lines),
                                plan: &plan,
                                ticks,
                                read_every: args.read_every_ms.map(Duration::from_millis),
                            };
                            point::trackhouse(spec, template, root, options, load).await
                        }
                    })
                    .await?;
                    results.extend(done);
                }
            }
        }
    }

    if args.systems.contains(&System::ClickHouse) {
        let server_time_ms = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64;
        let pool = render(&devices, Format::ClickHouse { server_time_ms }, &stream).await?;
        let side = ClickHouseSide::start(args.clickhouse_url.as_deref(), &root).await?;
        if let (Some(pid), Some(cpus)) = (side.pid, &server_cpus) {
            pin(pid, cpus)?;
        }
        println!(
            "ClickHouse {} at {} (pid {})",
            side.http.version,
            side.http.url,
            side.pid.map_or_else(
                || "unknown: no CPU or memory figures".to_owned(),
                |p| p.to_string()
            )
        );
        let mut previous: Option<String> = None;
        let mut n = 0;
        let outcome: anyhow::Result<()> = async {
            for &lines in &args.lines {
                for &encoding in &args.encoding {
                    let (side, pool, previous, n) = (&side, &pool, &mut previous, &mut n);
                    let done = points_of(&args, System::ClickHouse, lines, encoding, |spec| {
                        *n += 1;
                        let database = format!("ingest_load_{n}");
                        let last = previous.replace(database.clone());
                        let plan = plan_of(&spec);
                        async move {
                            side.fresh_database(last.as_deref(), &database).await?;
                            let load = Load {
                                pool,
                                feed: feed_of(lines),
                                plan: &plan,
                                ticks,
                                read_every: None,
                            };
                            point::clickhouse(spec, side, &database, load).await
                        }
                    })
                    .await?;
                    results.extend(done);
                }
            }
            Ok(())
        }
        .await;
        side.finish(previous.as_deref()).await?;
        outcome?;
        notes.push(
            "ClickHouse answers an INSERT without fsync (the part is in the page cache, not on disk) \
             and without deduplication (every copy is stored; the ReplacingMergeTree of schema.sql \
             folds copies only if their parts happen to merge)."
                .to_owned(),
        );
        if args.encoding.contains(&Encoding::Zstd) {
            notes.push(
                "`gzip*`: ClickHouse 18.16 refuses `Content-Encoding: zstd` (code 89), so its \
                 compressed bodies are the same lines gzip'ed (level 6)."
                    .to_owned(),
            );
        }
        notes.push(
            "ClickHouse rows carry the tracker id, a server_time fixed at rendering and a content \
             hash of the intake line; Trackhouse's lines name the device id and get the server's time."
                .to_owned(),
        );
    }

    notes.push(format!(
        "Latency: a body's first send (open loop: its due time) → its 200 read, retries included (after a \
         503 or a connection closed without an answer, the body is sent again {} ms later). Lines/s: lines of bodies answered 200 over first send → last answer; slowest second: \
         fewest lines answered in one whole second of the point (flush stalls show there). \
         new msgs/s: Σ accepted (duplicates excluded). CPU: % of one core over the point, server \
         from /proc/<pid>/task/*/stat, generator from /proc/self/stat (its {} body-making threads \
         included: later epochs' times written in, compression). Bodies waited for: bodies a \
         connection wanted before the generator had made them (the load was generator-bound then).",
        args.retry_delay_ms,
        generator_threads
    ));
    println!(
        "\n## Throughput, latency, resources\n\n{}",
        report::throughput_table(&results)
    );
    for note in &notes {
        println!("- {note}");
    }
    println!(
        "\n## Server CPU by thread\n\n{}",
        report::cpu_table(&results)
    );
    if results.iter().any(|r| r.ingest.is_some()) {
        println!(
            "## Trackhouse WAL and flushes (/metrics)\n\n{}",
            report::wal_table(&results)
        );
        println!(
            "## Where a body's time goes on the server (/metrics, mean ms per body; group_* per writer group)\n\n{}",
            report::stage_table(&results)
        );
    }
    if results.iter().any(|r| r.reads.is_some()) {
        println!(
            "## Raw data exports during the load (one tracker, every column, one at a time, \
             {} ms apart; request → end of body)\n\n{}",
            args.read_every_ms.unwrap_or_default(),
            report::reads_table(&results)
        );
    }
    println!(
        "## What was sent and stored\n\n{}",
        report::verification_table(&results)
    );
    println!("## Issue 17's targets\n\n{}", report::targets(&results));
    if let Some(peak) = procfs::status_bytes(std::process::id(), "VmHWM") {
        println!(
            "This generator's peak RSS: {:.0} MiB.",
            peak as f64 / 1_048_576.0
        );
    }
    let _ = run_guard.kill();
    let _ = run_guard.wait();
    drop(run_root);
    let failed = results.iter().filter(|r| !r.verdict.passed()).count();
    ensure!(
        failed == 0,
        "{failed} point(s) failed their checks (see the table above)"
    );
    Ok(())
}

/// The processor's model name (`/proc/cpuinfo`): this VM has run on more
/// than one kind, and a run's figures compare only with those of the same.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("model name"))
                .and_then(|rest| rest.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_else(|| "processor unknown".to_owned())
}
