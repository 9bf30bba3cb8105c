//! Issue 17's crash test: `kill -9` of `trackhouse serve` under full load
//! from the load generator, round after round on the same data directory,
//! then proof that every acknowledged message is stored exactly once.
//!
//! ```sh
//! cargo build --release -p trackhouse && cargo build --release -p benches --bin ingest_crash
//! target/release/ingest_crash --rounds 20 --connections 16 --lines 1000
//! ```
//!
//! Each round starts the real binary on the one data directory (what the
//! rounds before left there: its WAL is recovered before it listens, and
//! the time until `/healthz` answers is reported), sends the stream of
//! `benches::ingest_load::workload` closed loop over the connections (first
//! the bodies the previous round left unanswered, as a device retransmits,
//! then the stream where it stopped), and after a random 1-5 s sends it
//! SIGKILL with requests in flight. A body answered 200 is acknowledged
//! (its `accepted` and `duplicates` recorded); one that was not is sent
//! again the next round. After the last round the server is started once
//! more, sent the last unanswered bodies, and stopped with SIGTERM (it
//! flushes); then its Parquet files are read back and checked:
//!
//! - every (tracker, msg_time) of every line ever acknowledged is stored,
//!   and once: no key is stored twice;
//! - nothing is stored that no body carried;
//! - since every body was acknowledged in the end, the stored keys are
//!   exactly those of the stream's messages sent;
//! - Σ accepted + Σ duplicates = lines acknowledged, nothing rejected, and
//!   Σ accepted is within what exactly-once allows: at most the distinct
//!   messages acknowledged, at least that minus those also carried by an
//!   unanswered body no later than their first acknowledgement (which the
//!   server may have stored then, and so counts as a duplicate later): a
//!   message acknowledged, lost in a crash and accepted again falls out.
//!
//! The program exits non-zero on any violation, keeping the data
//! directory for inspection.
#![allow(
    clippy::print_stdout,
    reason = "a measurement program: its report goes to stdout"
)]

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, ensure};
use benches::fleet::SplitMix64;
use benches::ingest_load::driver::{
    self, Answer, FeedSpec, Feeder, Outcome, Plan, Run, Sent, Target,
};
use benches::ingest_load::metrics::Scrape;
use benches::ingest_load::report::group;
use benches::ingest_load::server::{self, DataDir, ServerOptions, Template, TrackhouseServer};
use benches::ingest_load::verify::{Expected, MessageSet, Verdict, stored_parquet};
use benches::ingest_load::workload::{Format, Pool, StreamConfig};
use benches::ingest_load::{Encoding, System};
use clap::Parser;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Parser)]
#[command(
    about = "issue 17's crash test: kill -9 of trackhouse serve under load, then exactly-once"
)]
struct Args {
    /// Rounds that end with SIGKILL (issue 17: at least 20).
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// Concurrent connections, closed loop.
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// Lines per body.
    #[arg(long, default_value_t = 1000)]
    lines: usize,
    /// Body encoding: identity or zstd.
    #[arg(long, default_value = "identity")]
    encoding: Encoding,
    /// SIGKILL comes at a random time between this …
    #[arg(long, default_value_t = 1.0)]
    kill_min_s: f64,
    /// … and this after a round's load starts.
    #[arg(long, default_value_t = 5.0)]
    kill_max_s: f64,
    /// Trackers of the account, every one reporting once a second.
    #[arg(long, default_value_t = 10_000)]
    trackers: usize,
    /// Lines that are byte-for-byte copies of earlier ones, in percent of all lines.
    #[arg(long, default_value_t = 1.5)]
    duplicate_percent: f64,
    /// Fresh lines followed by a late line of the same tracker, in percent.
    #[arg(long, default_value_t = 0.5)]
    late_percent: f64,
    /// Lines of the pool rendered once (the stream repeats it in epochs).
    #[arg(long, default_value_t = 330_000)]
    pool_lines: usize,
    /// Where UTC midnight falls in the stream (a share of about 100,000
    /// lines a second over the rounds' mean load time).
    #[arg(long, default_value_t = 0.3)]
    midnight_at: f64,
    /// Each vehicle is simulated for a random time up to this before the stream.
    #[arg(long, default_value_t = 1800)]
    warmup_s: u32,
    /// Seed of the fleet, of every choice and of the kill times.
    #[arg(long, default_value_t = 17)]
    seed: u64,
    /// Threads that make bodies ahead of the connections (default: one per CPU).
    #[arg(long)]
    generator_threads: Option<usize>,
    /// Lines made ahead of the connections at most.
    #[arg(long, default_value_t = 100_000)]
    ahead_lines: usize,
    /// The server binary (built with `cargo build --release -p trackhouse`).
    #[arg(long, default_value = "target/release/trackhouse")]
    trackhouse_bin: PathBuf,
    /// A flag for `trackhouse serve` (repeat for more).
    #[arg(long = "trackhouse-arg", allow_hyphen_values = true)]
    trackhouse_args: Vec<String>,
    /// CPUs the server is pinned to (`taskset -c` list).
    #[arg(long)]
    server_cpus: Option<String>,
    /// Wait before sending a body again after a 503 or a failed connection.
    #[arg(long, default_value_t = 50)]
    retry_delay_ms: u64,
    /// A restart (WAL recovery) may take this long before `/healthz` answers.
    #[arg(long, default_value_t = 600)]
    recovery_patience_s: u64,
    /// Directory for the data directory (default: the temporary directory).
    #[arg(long)]
    data_root: Option<PathBuf>,
    /// Keep the data directory even when every check holds.
    #[arg(long)]
    keep: bool,
}

/// One round as it went.
#[derive(Debug, Clone, Default)]
struct Round {
    /// Start → `/healthz` 200 (after a kill: the WAL's recovery).
    ready_after: Duration,
    /// What `/metrics` said once it answered.
    recovered: String,
    /// Load start → SIGKILL (`None`: the last, graceful round).
    killed_after: Option<Duration>,
    /// Bodies re-sent first (left unanswered by the round before).
    resent: usize,
    /// Bodies answered 200, their lines, Σ accepted, Σ duplicates, Σ rejected.
    acked_bodies: u64,
    acked_lines: u64,
    accepted: u64,
    duplicates: u64,
    rejected: u64,
    /// Bodies left without a 200: in flight at the kill, or taken and not sent.
    unanswered: u64,
    in_flight: u64,
    /// 503/429 and failed connections retried.
    refusals: u64,
    connection_errors: u64,
    /// Other failures (status, detail) of bodies: a 4xx or 5xx not retried.
    other_failures: Vec<(u16, String)>,
    /// Bodies a connection had to wait for.
    feeder_waits: u64,
    /// The first 503/429 (status: answer) and connection error.
    first_refusal: Option<String>,
    first_connection_error: Option<String>,
}

fn today_midnight_ms() -> anyhow::Result<i64> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64;
    Ok(now - now.rem_euclid(86_400_000))
}

/// The answers of a run summed into `round`.
fn tally(round: &mut Round, run: &Run) {
    for s in &run.sent {
        round.refusals += u64::from(s.tries.refusals);
        round.connection_errors += u64::from(s.tries.connection_errors);
        if round.first_refusal.is_none() {
            round.first_refusal.clone_from(&s.tries.first_refusal);
        }
        if round.first_connection_error.is_none() {
            round
                .first_connection_error
                .clone_from(&s.tries.first_connection_error);
        }
        match &s.outcome {
            Outcome::Acked {
                accepted,
                duplicates,
                rejected,
            } => {
                round.acked_bodies += 1;
                round.acked_lines += s.lines as u64;
                round.accepted += accepted;
                round.duplicates += duplicates;
                round.rejected += rejected;
            }
            Outcome::Failed { status, detail } => {
                round.unanswered += 1;
                if !detail.starts_with("not sent") {
                    round.in_flight += 1;
                }
                if !matches!(status, 0 | 429 | 503) {
                    round.other_failures.push((*status, detail.clone()));
                }
            }
        }
    }
    round.feeder_waits = run.feeder_waits;
}

/// A few of `/metrics`'s figures after a restart: what recovery found.
async fn recovered(base: &str) -> String {
    let client = reqwest::Client::new();
    match Scrape::fetch(&client, base).await {
        Ok(scrape) => format!(
            "{} unflushed rows, {} torn WAL tails, {} Parquet files",
            group(scrape.value("trackhouse_ingest_unflushed_rows") as u64),
            scrape.value("trackhouse_wal_torn_tails_total"),
            scrape.value("trackhouse_parquet_files"),
        ),
        Err(e) => format!("/metrics: {e:#}"),
    }
}

/// `line` without its terminal colours.
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters final-byte.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The lines of the server's log at WARN or ERROR, or about a panic, and
/// those that report a WAL recovery.
fn log_lines(log: &str) -> (Vec<String>, Vec<String>) {
    let mut problems = Vec::new();
    let mut recoveries = Vec::new();
    for line in log.lines().map(plain) {
        if line.contains(" WARN ") || line.contains(" ERROR ") || line.contains("panicked") {
            problems.push(line.chars().take(400).collect());
        } else if line.contains("recovered the write-ahead log") {
            recoveries.push(line.chars().take(400).collect());
        }
    }
    (problems, recoveries)
}

/// Keeps the data directory (the cleanup guard stopped first) and says where.
fn keep(run_root: tempfile::TempDir, data: tempfile::TempDir, guard: &mut std::process::Child) {
    let _ = guard.kill();
    let _ = guard.wait();
    let _ = run_root.keep();
    println!(
        "\nThe data directory is kept: {} (server.log in it).",
        data.keep().display()
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(args.connections >= 1, "--connections must be at least 1");
    ensure!(args.lines >= 1, "--lines must be at least 1");
    ensure!(
        args.kill_min_s > 0.0 && args.kill_max_s >= args.kill_min_s,
        "--kill-min-s must be positive and at most --kill-max-s"
    );
    ensure!(
        (1..=99_999).contains(&args.trackers),
        "--trackers must be 1 to 99,999"
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let run_root = tempfile::Builder::new()
        .prefix("ingest-crash-")
        .tempdir_in(args.data_root.clone().unwrap_or_else(std::env::temp_dir))?;
    let mut run_guard = server::guard(None, Some(run_root.path()))?;
    let root = run_root.path().to_owned();
    println!(
        "# ingest_crash: {} rounds of SIGKILL after {}-{} s of closed-loop load over {} connections, \
         {} lines a body ({}), {} trackers; {} CPUs",
        args.rounds,
        args.kill_min_s,
        args.kill_max_s,
        args.connections,
        group(args.lines as u64),
        args.encoding.label(System::Trackhouse),
        group(args.trackers as u64),
        cpus
    );

    let started = Instant::now();
    let template = Template::create(&root, args.trackers).await?;
    let data = template.copy(&root)?;
    println!(
        "data directory {}: {} trackers and an ingest token in {:.1} s",
        data.path().display(),
        group(template.devices.len() as u64),
        started.elapsed().as_secs_f64()
    );

    let mean_load_s = (args.kill_min_s + args.kill_max_s) / 2.0;
    let stream = StreamConfig {
        pool_lines: args.pool_lines,
        expected_lines: (100_000.0 * mean_load_s * args.rounds.max(1) as f64) as u64,
        duplicate_share: args.duplicate_percent / 100.0,
        late_share: args.late_percent / 100.0,
        midnight_ms: today_midnight_ms()?,
        midnight_at: args.midnight_at,
        warmup_s: args.warmup_s,
        seed: args.seed,
        threads: cpus,
    };
    let started = Instant::now();
    let devices = template.devices.clone();
    let pool = Arc::new(
        tokio::task::spawn_blocking(move || Pool::generate(&devices, Format::Intake, &stream))
            .await??,
    );
    println!(
        "rendered a pool of {} lines ({:.0} MB) in {:.1} s; each epoch {} s later",
        group(pool.pool_lines() as u64),
        pool.pool_bytes() as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        pool.epoch_ms / 1000
    );

    let options = ServerOptions {
        bin: args.trackhouse_bin.clone(),
        args: args.trackhouse_args.clone(),
        cpus: args.server_cpus.clone(),
    };
    let patience = Duration::from_secs(args.recovery_patience_s);
    let feed = FeedSpec {
        lines_per_body: args.lines,
        compression: args.encoding.compression(System::Trackhouse),
        from: 0,
        until: None,
        threads: args.generator_threads.unwrap_or(cpus).max(1),
        ahead_lines: args.ahead_lines,
    };
    let plan = Plan {
        connections: args.connections,
        // The kill or the end of the bodies ends a round, not the clock.
        duration: Duration::from_secs_f64(args.kill_max_s + 60.0),
        rate: None,
        retry_delay: Duration::from_millis(args.retry_delay_ms),
        retry_grace: Duration::from_secs(300),
        drain: Duration::from_secs(300),
    };
    let mut kill_times = SplitMix64::new(args.seed ^ 0x6b69_6c6c); // "kill"
    let mut next_fresh = 0usize;
    let mut again: Vec<usize> = Vec::new();
    let mut rounds: Vec<Round> = Vec::new();
    let mut all_sent: Vec<Sent> = Vec::new();
    // For the bounds on Σ accepted: messages acknowledged in earlier
    // rounds, and messages of every unanswered body so far.
    let mut acked_before = MessageSet::default();
    let mut unanswered_messages = MessageSet::default();
    let mut may_be_duplicates = 0u64;
    let mut stopped = None;

    for number in 1..=args.rounds + 1 {
        let last = number > args.rounds;
        let mut round = Round {
            resent: again.len(),
            ..Round::default()
        };
        let mut server = match TrackhouseServer::start_in(
            DataDir::Kept(data.path().to_owned()),
            &options,
            patience,
        )
        .await
        {
            Ok(server) => server,
            Err(e) => {
                println!("round {number}: the server did not start: {e:#}");
                keep(run_root, data, &mut run_guard);
                return Err(e.context(format!("round {number}: restarting the server")));
            }
        };
        round.ready_after = server.ready_after;
        round.recovered = recovered(&server.base).await;
        let target = Target {
            url: format!("{}/ingest/v1/messages", server.base),
            bearer: Some(template.token.clone()),
            content_type: "application/x-ndjson",
            content_encoding: args.encoding.content_encoding(System::Trackhouse),
            answer: Answer::Intake,
        };
        let feeder = Arc::new(Feeder::start(
            &pool,
            FeedSpec {
                from: next_fresh,
                // The last round only retransmits.
                until: last.then_some(next_fresh),
                ..feed
            },
            &again,
        )?);
        feeder.fill(Duration::from_secs(10)).await;
        let run = if last {
            let run = driver::run(&target, feeder.clone(), &plan, None).await?;
            stopped = Some(server.stop(Duration::from_secs(900)).await?);
            run
        } else {
            let stop = CancellationToken::new();
            let load = tokio::spawn({
                let (target, feeder, stop) = (target.clone(), feeder.clone(), stop.clone());
                async move { driver::run(&target, feeder, &plan, Some(stop)).await }
            });
            let kill_after = Duration::from_secs_f64(
                kill_times.range(args.kill_min_s, args.kill_max_s.max(args.kill_min_s)),
            );
            let load_started = Instant::now();
            tokio::time::sleep(kill_after).await;
            if load.is_finished() {
                let ended = load.await.context("the load task")?;
                anyhow::bail!(
                    "round {number}: the load ended before the kill ({:?})",
                    ended.map(|run| run.sent.len())
                );
            }
            round.killed_after = Some(load_started.elapsed());
            if let Some(status) = server.exited()? {
                let tail = server.log_tail();
                keep(run_root, data, &mut run_guard);
                anyhow::bail!(
                    "round {number}: the server exited by itself ({status}) under load: {tail}"
                );
            }
            let status = server.kill().await?;
            stop.cancel();
            let run = load.await.context("the load task")??;
            ensure!(
                !status.success(),
                "round {number}: the server exited {status} before SIGKILL"
            );
            run
        };
        next_fresh = feeder.next_fresh().await;
        tally(&mut round, &run);
        again = run
            .sent
            .iter()
            .filter(|s| !matches!(s.outcome, Outcome::Acked { .. }))
            .map(|s| s.body)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();

        // Messages first acknowledged this round that an unanswered body
        // (this round's or an earlier one's) also carried: the server may
        // have stored them from that body and counted them as duplicates.
        for s in &run.sent {
            if !matches!(s.outcome, Outcome::Acked { .. }) {
                for n in s.first_line..s.first_line + s.lines as u64 {
                    unanswered_messages.insert(pool.message(n));
                }
            }
        }
        let mut first_acked = MessageSet::default();
        for s in &run.sent {
            if matches!(s.outcome, Outcome::Acked { .. }) {
                for n in s.first_line..s.first_line + s.lines as u64 {
                    let m = pool.message(n);
                    if !acked_before.contains(m)
                        && first_acked.insert(m)
                        && unanswered_messages.contains(m)
                    {
                        may_be_duplicates += 1;
                    }
                }
            }
        }
        acked_before.union_with(&first_acked);
        all_sent.extend(run.sent);

        println!(
            "round {number:>2}: ready after {:.2} s ({}); {}{} bodies answered ({} lines: {} accepted, {} duplicates), \
             {} unanswered ({} in flight){}{}{}",
            round.ready_after.as_secs_f64(),
            round.recovered,
            if round.resent > 0 {
                format!("{} re-sent first; ", round.resent)
            } else {
                String::new()
            },
            group(round.acked_bodies),
            group(round.acked_lines),
            group(round.accepted),
            group(round.duplicates),
            round.unanswered,
            round.in_flight,
            round.killed_after.map_or_else(
                || "; stopped with SIGTERM".to_owned(),
                |d| format!("; SIGKILL after {:.2} s", d.as_secs_f64())
            ),
            if round.refusals + round.connection_errors > 0 {
                format!(
                    "; {} 503s, {} connection errors retried",
                    round.refusals, round.connection_errors
                )
            } else {
                String::new()
            },
            match round.feeder_waits {
                0 => String::new(),
                n => format!("; {n} bodies waited for"),
            },
        );
        for (status, detail) in round.other_failures.iter().take(3) {
            println!("    failed body: status {status}: {detail}");
        }
        if let Some(refusal) = &round.first_refusal {
            println!("    first refusal (retried): {refusal}");
        }
        if round.killed_after.is_none() {
            if let Some(error) = &round.first_connection_error {
                println!("    first connection error (retried): {error}");
            }
        }
        if round.killed_after.is_some() && round.acked_bodies == 0 {
            println!(
                "    (nothing was answered before the kill: this round tried only the recovery of unanswered writes)"
            );
        }
        rounds.push(round);
    }

    let stopped = stopped.context("the last round did not stop the server")?;
    let started = Instant::now();
    let stored = stored_parquet(stopped.dir.path(), &pool)?;
    let expected = Expected::of(&pool, &all_sent);
    let read_s = started.elapsed().as_secs_f64();
    let sum = |f: fn(&Round) -> u64| rounds.iter().map(f).sum::<u64>();
    let (accepted, duplicates, rejected, acked_lines) = (
        sum(|r| r.accepted),
        sum(|r| r.duplicates),
        sum(|r| r.rejected),
        sum(|r| r.acked_lines),
    );
    let killed: Vec<&Round> = rounds.iter().filter(|r| r.killed_after.is_some()).collect();
    let recovery: Vec<f64> = rounds
        .iter()
        .skip(1)
        .map(|r| r.ready_after.as_secs_f64())
        .collect();

    let mut verdict = Verdict::default();
    verdict.check(
        format!(
            "{} rounds ended with SIGKILL under load (bodies in flight: min {})",
            killed.len(),
            killed.iter().map(|r| r.in_flight).min().unwrap_or(0)
        ),
        killed.len() == args.rounds && killed.iter().all(|r| r.in_flight > 0),
    );
    verdict.check(
        format!(
            "every body left unanswered by a kill was answered 200 when sent again ({} left)",
            again.len()
        ),
        again.is_empty(),
    );
    let other_failures: usize = rounds.iter().map(|r| r.other_failures.len()).sum();
    verdict.check(
        format!("no body failed with another status ({other_failures})"),
        other_failures == 0,
    );
    verdict.check(format!("no line rejected ({rejected})"), rejected == 0);
    verdict.check(
        format!(
            "Σ accepted {} + Σ duplicates {} = lines answered {}",
            group(accepted),
            group(duplicates),
            group(acked_lines)
        ),
        accepted + duplicates == acked_lines,
    );
    verdict.check_stored_once(&stored);
    let (never_sent, first_never_sent) = stored.messages.missing_from(&expected.sent);
    verdict.check(
        format!(
            "nothing stored that was never sent ({} rows of no message of the stream{}, {} of messages no body carried{})",
            stored.unknown,
            stored
                .first_unknown
                .map_or_else(String::new, |k| format!(", first {k:?}")),
            never_sent,
            first_never_sent.map_or_else(String::new, |m| format!(", first {:?}", pool.key(m)))
        ),
        stored.unknown == 0 && never_sent == 0,
    );
    let (lost, first_lost) = expected.messages.missing_from(&stored.messages);
    verdict.check(
        format!(
            "every acknowledged (tracker, msg_time) is stored ({} of {} missing{})",
            group(lost),
            group(expected.distinct),
            first_lost.map_or_else(String::new, |m| format!(", first {:?}", pool.key(m)))
        ),
        lost == 0,
    );
    let (extra, _) = stored.messages.missing_from(&expected.messages);
    verdict.check(
        format!(
            "stored keys = those of the messages acknowledged ({} stored, {} acknowledged, {} stored unacknowledged)",
            group(stored.messages.len()),
            group(expected.distinct),
            group(extra)
        ),
        stored.messages == expected.messages,
    );
    let floor = expected.distinct.saturating_sub(may_be_duplicates);
    verdict.check(
        format!(
            "Σ accepted {} within [{}, {}]: distinct messages acknowledged, less the {} an unanswered body \
             carried no later than their first acknowledgement",
            group(accepted),
            group(floor),
            group(expected.distinct),
            group(may_be_duplicates)
        ),
        (floor..=expected.distinct).contains(&accepted),
    );
    verdict.check(
        format!(
            "clean exit after SIGTERM ({}, {:.1} s)",
            stopped.status,
            stopped.shutdown.as_secs_f64()
        ),
        stopped.status.success(),
    );

    let mut table = String::from(
        "| round | ready after s | recovered | re-sent | bodies 200 | lines acked | accepted | duplicates | \
         unanswered (in flight) | SIGKILL after s |\n|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (i, r) in rounds.iter().enumerate() {
        let _ = writeln!(
            table,
            "| {} | {:.2} | {} | {} | {} | {} | {} | {} | {} ({}) | {} |",
            i + 1,
            r.ready_after.as_secs_f64(),
            r.recovered,
            r.resent,
            group(r.acked_bodies),
            group(r.acked_lines),
            group(r.accepted),
            group(r.duplicates),
            r.unanswered,
            r.in_flight,
            r.killed_after.map_or_else(
                || "SIGTERM".to_owned(),
                |d| format!("{:.2}", d.as_secs_f64())
            ),
        );
    }
    println!("\n## Rounds\n\n{table}");
    let mut sorted = recovery.clone();
    sorted.sort_by(f64::total_cmp);
    println!(
        "Restarts after SIGKILL: {} s median, {} s longest (start → /healthz 200, the WAL recovered first).",
        sorted
            .get(sorted.len() / 2)
            .map_or_else(|| "-".to_owned(), |s| format!("{s:.2}")),
        sorted
            .last()
            .map_or_else(|| "-".to_owned(), |s| format!("{s:.2}")),
    );
    println!(
        "Stored: {} rows in {} Parquet files over {} UTC days (read in {read_s:.1} s); stream: {} lines in {} bodies sent (re-sends included) \
         ({} distinct messages, {} copies, {} late lines acknowledged; {} / {} messages before / after midnight).",
        group(stored.rows),
        stored.files,
        stored.days,
        group(all_sent.iter().map(|s| s.lines as u64).sum()),
        group(all_sent.len() as u64),
        group(expected.distinct),
        group(expected.copy_lines),
        group(expected.late_lines),
        group(expected.before_midnight),
        group(expected.after_midnight),
    );
    let log = std::fs::read_to_string(stopped.dir.path().join("server.log")).unwrap_or_default();
    let (problems, recoveries) = log_lines(&log);
    println!("\nThe server's log on each recovery:");
    for line in &recoveries {
        println!("    {line}");
    }
    if recoveries.is_empty() {
        println!("    (no recovery logged)");
    }
    if !problems.is_empty() {
        println!(
            "\nThe server's log has {} lines at WARN or ERROR or about a panic; the first:",
            problems.len()
        );
        for line in problems.iter().take(10) {
            println!("    {line}");
        }
    }
    println!("\n## Checks\n");
    for (what, held) in &verdict.checks {
        println!("- {} {what}", if *held { "ok:" } else { "**FAILED**:" });
    }
    drop(stopped);
    if !verdict.passed() || args.keep {
        keep(run_root, data, &mut run_guard);
    } else {
        let _ = run_guard.kill();
        let _ = run_guard.wait();
    }
    ensure!(
        verdict.passed(),
        "the crash test failed: {}",
        verdict.failures()
    );
    Ok(())
}
