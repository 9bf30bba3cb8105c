//! Memory of a very large raw data export: one tracker's `--rows` messages
//! (1 Hz, so 100 million rows are 1,158 days) exported as CSV by the real
//! `trackhouse serve` binary, in its own process, over real HTTP, while this
//! program samples the server's resident memory from `/proc/<pid>/status`.
//!
//! The data directory is prepared once (ingest through `Ingest::write`, as
//! the `export` benchmark does) and reused by later runs:
//!
//! ```text
//! cargo build --release -p trackhouse -p benches
//! target/release/export_rss --data-dir /var/tmp/th-100m --rows 100000000
//! ```
#![allow(
    clippy::print_stdout,
    reason = "a measurement program: its report goes to stdout"
)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use benches::export::{self, Prepared, rss};
use clap::Parser;
use serde_json::{Value, json};

/// Exports a very large range from a separately running server and reports its memory.
#[derive(Debug, Parser)]
struct Args {
    /// Data directory; prepared on the first run, reused when it holds `bench.json`.
    #[arg(long)]
    data_dir: PathBuf,
    /// Messages of the tracker (1 Hz, whole days, rounded up).
    #[arg(long, default_value_t = 100_000_000)]
    rows: u64,
    /// The server binary.
    #[arg(long, default_value = "target/release/trackhouse")]
    trackhouse: PathBuf,
    /// Export only `lat`, `lng`, `inputs.lls_level_1` instead of every column.
    #[arg(long)]
    narrow: bool,
    /// The memory bound the export must stay under, MiB.
    #[arg(long, default_value_t = 256)]
    bound_mib: u64,
}

const MIB: f64 = 1_048_576.0;
/// 2021-01-01T00:00:00Z: 1,158 days from here end before today.
const START_MS: i64 = 1_609_459_200_000;

/// What `bench.json` records about a prepared directory.
#[derive(Debug)]
struct Setup {
    key: String,
    tracker: i64,
    span_ms: (i64, i64),
    days: u32,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let days = u32::try_from(args.rows.div_ceil(benches::fleet::MESSAGES_PER_DAY))?;
    let setup = prepare(&args.data_dir, days).await?;
    let port = free_port()?;
    let mut server = Server::spawn(&args.trackhouse, &args.data_dir, port, setup.days + 1)?;
    let base = format!("http://127.0.0.1:{port}");
    server.wait_ready(&base).await?;
    let pid = server.child.id();
    let rss_idle = rss::current_of(pid).unwrap_or(0);
    println!(
        "server pid {pid} ready on {base}; RSS {:.0} MiB",
        rss_idle as f64 / MIB
    );

    let columns: Vec<String> = if args.narrow {
        export::NARROW_COLUMNS.map(str::to_owned).to_vec()
    } else {
        export::full_columns()
    };
    let body = json!({
        "hash": setup.key,
        "tracker_id": setup.tracker,
        "from": export::iso(setup.span_ms.0),
        "to": export::iso(setup.span_ms.1),
        "columns": columns,
        "time_zone": "UTC",
    });
    let started = Instant::now();
    let mut response = reqwest::Client::new()
        .post(format!("{base}/dwh/v1/tracker/raw_data/read"))
        .json(&body)
        .send()
        .await?;
    if !response.status().is_success() {
        let status = response.status();
        bail!("the export answered {status}: {}", response.text().await?);
    }
    let (mut bytes, mut lines, mut first_byte) = (0u64, 0u64, None);
    // (rows so far, server RSS) every 250 ms of the export.
    let mut samples: Vec<(u64, u64)> = Vec::new();
    let mut next_sample = Instant::now();
    while let Some(chunk) = response.chunk().await.context("reading the body")? {
        first_byte.get_or_insert_with(|| started.elapsed());
        bytes += chunk.len() as u64;
        lines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        if Instant::now() >= next_sample {
            samples.extend(rss::current_of(pid).map(|r| (lines.saturating_sub(1), r)));
            next_sample += Duration::from_millis(250);
        }
    }
    let total = started.elapsed();
    let rows = lines.saturating_sub(1);
    let peak = rss::peak_of(pid).unwrap_or(0);
    server.stop()?;

    ensure!(
        rows == u64::from(setup.days) * benches::fleet::MESSAGES_PER_DAY,
        "exported {rows} rows, expected {} days of 1 Hz",
        setup.days
    );
    println!(
        "exported {rows} rows, {:.1} GB in {:.1} s: {:.0} rows/s, {:.1} MB/s, first byte after {:.1} ms",
        bytes as f64 / 1e9,
        total.as_secs_f64(),
        rows as f64 / total.as_secs_f64(),
        bytes as f64 / 1e6 / total.as_secs_f64(),
        first_byte.unwrap_or_default().as_secs_f64() * 1e3
    );
    println!("server RSS by progress (rows exported -> RSS):");
    for decile in 0..=10u64 {
        let target = rows * decile / 10;
        if let Some((done, rss)) = samples.iter().find(|(done, _)| *done >= target) {
            println!(
                "  {:>5.1}%  {done:>11}  {:>6.1} MiB",
                decile as f64 * 10.0,
                *rss as f64 / MIB
            );
        }
    }
    let max_sampled = samples.iter().map(|(_, r)| *r).max().unwrap_or(0);
    println!(
        "server RSS: idle {:.1} MiB, max sampled {:.1} MiB, peak (VmHWM) {:.1} MiB; bound {} MiB: {}",
        rss_idle as f64 / MIB,
        max_sampled as f64 / MIB,
        peak as f64 / MIB,
        args.bound_mib,
        if peak < args.bound_mib * 1_048_576 {
            "within"
        } else {
            "EXCEEDED"
        }
    );
    Ok(())
}

/// Prepares `dir` once (account, tracker, `days` of telemetry) and reads it back after.
async fn prepare(dir: &Path, days: u32) -> anyhow::Result<Setup> {
    let record = dir.join("bench.json");
    if !record.exists() {
        println!(
            "preparing {days} days x 1 Hz = {} messages in {} (once) ...",
            u64::from(days) * benches::fleet::MESSAGES_PER_DAY,
            dir.display()
        );
        std::fs::create_dir_all(dir)?;
        let prepared = Prepared::create(dir, days, 10_000, Some(START_MS)).await?;
        println!(
            "ingest: {} messages in {:.0} s; {} files, {:.0} MiB",
            prepared.ingest.messages,
            prepared.ingest.elapsed.as_secs_f64(),
            prepared.ingest.files,
            prepared.ingest.file_bytes as f64 / MIB
        );
        prepared.store.close().await;
        let text = json!({
            "key": prepared.key,
            "tracker": prepared.tracker.0,
            "from": prepared.span_ms.0,
            "to": prepared.span_ms.1,
            "days": days,
        });
        std::fs::write(&record, serde_json::to_vec_pretty(&text)?)?;
    }
    let value: Value = serde_json::from_slice(&std::fs::read(&record)?)?;
    let field = |name: &str| {
        value
            .get(name)
            .with_context(|| format!("bench.json lacks {name}"))
    };
    let setup = Setup {
        key: field("key")?.as_str().context("key")?.to_owned(),
        tracker: field("tracker")?.as_i64().context("tracker")?,
        span_ms: (
            field("from")?.as_i64().context("from")?,
            field("to")?.as_i64().context("to")?,
        ),
        days: u32::try_from(field("days")?.as_u64().context("days")?)?,
    };
    ensure!(
        setup.days == days,
        "{} holds {} days, not the {days} asked for",
        dir.display(),
        setup.days
    );
    Ok(setup)
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The `trackhouse serve` process.
#[derive(Debug)]
struct Server {
    child: Child,
}

impl Server {
    fn spawn(binary: &Path, data_dir: &Path, port: u16, max_days: u32) -> anyhow::Result<Self> {
        let child = Command::new(binary)
            .arg("serve")
            .arg("--data-dir")
            .arg(data_dir)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--raw-data-max-span-days", &max_days.to_string()])
            .args(["--log", "warn"])
            .stdout(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        Ok(Self { child })
    }

    async fn wait_ready(&mut self, base: &str) -> anyhow::Result<()> {
        let client = reqwest::Client::new();
        for _ in 0..600 {
            if let Some(status) = self.child.try_wait()? {
                bail!("the server exited: {status}");
            }
            if client
                .get(format!("{base}/healthz"))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("the server did not become ready in 60 s")
    }

    /// SIGTERM, then wait.
    fn stop(&mut self) -> anyhow::Result<()> {
        Command::new("kill")
            .arg(self.child.id().to_string())
            .status()?;
        self.child.wait()?;
        Ok(())
    }
}
