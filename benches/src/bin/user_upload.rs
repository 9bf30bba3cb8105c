//! Load generator of `POST /v2/panel/user/upload` (issue 15): the real
//! server in this process on `127.0.0.1:0`; a dealer's 10,000 users as a
//! `;` CSV and as an XLSX, each uploaded to its own fresh dealer over HTTP,
//! timed end to end. The server's split of each call (reading, checking,
//! Argon2 hashing over every core, storing) comes from the `tracing` event
//! `platform` writes for every upload; the time of one hash is measured
//! apart on one thread with the same parameters. After every upload the
//! dealer's users are listed and checked against the file, and three of
//! them log in with their passwords. See `benches::user_upload`.
//!
//! `cargo build --release -p benches --bin user_upload && target/release/user_upload`
#![allow(
    clippy::print_stdout,
    reason = "a measurement program: its report goes to stdout"
)]

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use api::{ApiConfig, Rate, RateLimitConfig};
use argon2::Argon2;
use argon2::password_hash::{PasswordHasher, SaltString};
use benches::export::InProcessServer;
use benches::user_upload::people::{People, Person};
use benches::user_upload::{PanelClient, StageLog, check_created, csv, xlsx};
use benches::vehicle_list::Stats;
use clap::Parser;
use ingest::IngestConfig;
use platform::{ContractType, NewDealer, Store, StoreConfig};
use schemas::SystemClock;
use serde_json::json;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Uploads a dealer's users as CSV and as XLSX and times each upload.
#[derive(Debug, Parser)]
struct Args {
    /// Users in each file.
    #[arg(long, default_value_t = 10_000)]
    rows: usize,
    /// Uploads of each format (each to a fresh dealer, with new logins).
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Single-thread Argon2 hashes timed for the time of one hash.
    #[arg(long, default_value_t = 40)]
    hash_samples: usize,
    /// Seed of the users.
    #[arg(long, default_value_t = 0x7573_6572_7321)]
    seed: u64,
}

const PASSWORD: &str = "bench-panel-1";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let log = StageLog::default();
    // Only the stage events: with every level enabled, sqlx would format
    // each statement it runs for its log, which costs more than the
    // statements (seconds for 10,000 users).
    let stages_only = Targets::new().with_target("platform::user_upload", tracing::Level::INFO);
    tracing_subscriber::registry()
        .with(log.clone().with_filter(stages_only))
        .init();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);

    let (per_hash, allocating) = time_hashes(args.hash_samples)?;
    println!(
        "one Argon2id hash (m=19456 KiB, t=2, p=1, platform's parameters) on one thread, \
         its memory reused as the platform does: p50 {:.1} ms, p90 {:.1} ms over {} hashes \
         (memory allocated for each hash, as the library's hash_password: p50 {:.1} ms, p90 {:.1} ms); \
         {cores} cores",
        ms(per_hash.p50),
        ms(per_hash.p90),
        per_hash.count,
        ms(allocating.p50),
        ms(allocating.p90),
    );

    let dir = tempfile::tempdir()?;
    let store = Store::open(StoreConfig::new(dir.path()), Arc::new(SystemClock)).await?;
    let mut dealers = Vec::new();
    for n in 0..2 * args.rounds {
        dealers.push(
            store
                .create_dealer(NewDealer {
                    id: None,
                    title: format!("Upload dealer {n}"),
                    panel_password: PASSWORD.into(),
                    contract_type: ContractType::Paas,
                    permissions: None,
                    default_user_time_zone: "Asia/Almaty".into(),
                })
                .await?,
        );
    }
    let unlimited = Rate::per_second(NonZeroU32::new(1_000_000).context("a rate")?);
    let api = ApiConfig {
        rate_limits: RateLimitConfig {
            panel_dealer: unlimited,
            anonymous_ip: unlimited,
            ..RateLimitConfig::default()
        },
        ..ApiConfig::default()
    };
    let server = InProcessServer::start_with(IngestConfig::new(dir.path()), store, api).await?;

    println!();
    println!(
        "| format | round | file KB | read alone | upload (HTTP) | read | check | hash | store | read+check+store | hashes/s | users checked |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut results = Vec::new();
    for round in 0..args.rounds {
        for (f, format) in ["csv", "xlsx"].into_iter().enumerate() {
            let n = 2 * round + f;
            let first_serial = (n as u64 + 1) * 1_000_000;
            let people = People::new(args.seed ^ n as u64, first_serial).take(args.rows);
            let file = match format {
                "csv" => csv(&people),
                _ => xlsx(&people)?,
            };
            let read_alone = read_alone(&file)?;
            let client = PanelClient::login(&server.base, dealers[n].0, PASSWORD).await?;
            let (elapsed, total) = client
                .upload(&format!("users.{format}"), file.clone())
                .await?;
            ensure!(total == args.rows as u64, "{total} users created");
            let stages = log.take();
            let stages = *stages.first().context("platform reported no stages")?;
            ensure!(stages.rows == args.rows as u64, "{stages:?}");
            let listed = client.everyone().await?;
            check_created(&listed, &people)?;
            log_in(&server.base, &people).await?;
            println!(
                "| {format} | {} | {} | {:.0} ms | {:.2} s | {:.0} ms | {:.0} ms | {:.1} s | {:.0} ms | **{:.0} ms** | {:.0} | {} |",
                round + 1,
                file.len() / 1000,
                ms(read_alone),
                elapsed.as_secs_f64(),
                stages.read_ms,
                stages.check_ms,
                stages.hash_ms / 1000.0,
                stages.store_ms,
                stages.without_hashing_ms(),
                stages.rows as f64 / (stages.hash_ms / 1000.0).max(1e-9),
                listed.len()
            );
            results.push((format, elapsed, stages));
        }
    }
    println!();
    for (format, elapsed, stages) in &results {
        let serial_s = ms(per_hash.p50) * stages.rows as f64 / 1000.0;
        println!(
            "{format}: {:.2} s in all; Argon2 {:.1} s of wall time for {} hashes \
             ({:.2} ms a hash in effect; {:.1} s on one thread at the p50, so {:.2} of {cores} cores busy); \
             reading, checking and storing {:.0} ms ({:.0} ms outside the platform call: multipart, HTTP)",
            elapsed.as_secs_f64(),
            stages.hash_ms / 1000.0,
            stages.rows,
            stages.hash_ms / stages.rows as f64,
            serial_s,
            serial_s * 1000.0 / stages.hash_ms.max(1e-9),
            stages.without_hashing_ms(),
            ms(*elapsed) - stages.read_ms - stages.check_ms - stages.hash_ms - stages.store_ms
        );
    }
    server.stop().await?;
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The time of one hash with the platform's parameters (`Argon2::default()`),
/// one at a time on this thread: as the platform hashes an upload's
/// passwords, in one working memory reused from hash to hash (first, its
/// own code), and as the library's `hash_password` does, in memory
/// allocated for each hash (second).
fn time_hashes(samples: usize) -> anyhow::Result<(Stats, Stats)> {
    let mut memory = platform::password_hash_memory();
    let mut reused = Vec::with_capacity(samples);
    let mut fresh = Vec::with_capacity(samples);
    for i in 0..samples {
        let salt = SaltString::encode_b64(&(i as u128 + 1).to_le_bytes())
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let password = format!("Password{i}!");
        let started = Instant::now();
        platform::password_hash_in(&mut memory, &password)?;
        reused.push(started.elapsed());
        let started = Instant::now();
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        fresh.push(started.elapsed());
    }
    Ok((Stats::of(&reused), Stats::of(&fresh)))
}

/// `platform::read_file` alone on the file (the server's first stage), the
/// best of three.
fn read_alone(file: &[u8]) -> anyhow::Result<Duration> {
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        let table = platform::read_file("file", file, 20_001, 100 * 1024 * 1024)?;
        best = best.min(started.elapsed());
        ensure!(!table.rows.is_empty());
    }
    Ok(best)
}

/// Three of the users (first, middle, last) log in with their passwords.
async fn log_in(base: &str, people: &[Person]) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    for person in [people.first(), people.get(people.len() / 2), people.last()]
        .into_iter()
        .flatten()
        .filter(|p| p.active)
    {
        let answer: serde_json::Value = http
            .post(format!("{base}/v2/user/auth"))
            .json(&json!({"login": person.login, "password": person.password}))
            .send()
            .await?
            .json()
            .await?;
        ensure!(
            answer["hash"].is_string(),
            "{} could not log in: {answer}",
            person.login
        );
    }
    Ok(())
}
