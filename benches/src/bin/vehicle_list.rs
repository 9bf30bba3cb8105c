//! Load generator of `POST /v2/vehicle/list` (issue 14): the real server in
//! this process on `127.0.0.1:0`, its platform store holding 1,000 accounts
//! and one account of 100,000 vehicles; pages of 100 with two sort items
//! and a filter, requested one after the other (latency) and by several
//! clients at once. Every scenario's page is checked against the same
//! list sorted and filtered in memory before it is timed. See
//! `benches::vehicle_list`.
//!
//! `cargo build --release -p benches --bin vehicle_list && target/release/vehicle_list`
//!
//! Populating takes minutes; `--data-dir DIR` keeps the store in `DIR` and
//! reuses it on the next run with the same sizes.
#![allow(
    clippy::print_stdout,
    reason = "a measurement program: its report goes to stdout"
)]

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use api::{ApiConfig, Rate, RateLimitConfig};
use benches::export::InProcessServer;
use benches::vehicle_list::populate::{Population, PopulationConfig, populate};
use benches::vehicle_list::{ListClient, Listed, Scenario, Stats, ms, shuffled};
use clap::Parser;
use ingest::IngestConfig;
use platform::{Store, StoreConfig};
use schemas::SystemClock;

/// Lists an account's vehicles a page at a time with two sort items and a filter.
#[derive(Debug, Parser)]
struct Args {
    /// Accounts besides the big one.
    #[arg(long, default_value_t = 1000)]
    accounts: usize,
    /// Vehicles of each of those accounts.
    #[arg(long, default_value_t = 5)]
    vehicles_per_account: usize,
    /// Vehicles of the big account.
    #[arg(long, default_value_t = 100_000)]
    vehicles: usize,
    /// Rows per page (`limit`).
    #[arg(long, default_value_t = 100)]
    limit: i64,
    /// Sequential rounds: each round calls every scenario once, in a new order.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// Concurrent clients of the second measurement (0: none).
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Rounds of every scenario per concurrent client.
    #[arg(long, default_value_t = 5)]
    concurrent_rounds: usize,
    /// Keep the store here and reuse it when it was populated with the same
    /// sizes (a fresh temporary directory otherwise).
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

/// Written next to a populated store: what it holds.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Marker {
    config: PopulationConfig,
    population: Population,
}

const MARKER: &str = "vehicle-list-bench.json";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let config = PopulationConfig {
        accounts: args.accounts,
        vehicles_per_account: args.vehicles_per_account,
        vehicles: args.vehicles,
        ..PopulationConfig::default()
    };
    let temporary = tempfile::tempdir()?;
    let dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| temporary.path().to_owned());
    let store = Store::open(StoreConfig::new(&dir), Arc::new(SystemClock)).await?;
    let population = prepare(&store, &config, &dir).await?;
    println!(
        "store: {} MB in {} (platform.sqlite with its WAL)",
        store_bytes(&dir) / 1_000_000,
        dir.display()
    );

    let api = ApiConfig {
        // The default 50/s per session would answer 429 to the benchmark itself.
        rate_limits: RateLimitConfig {
            user_session: Rate::per_second(NonZeroU32::new(1_000_000).context("a rate")?),
            ..RateLimitConfig::default()
        },
        ..ApiConfig::default()
    };
    let server = InProcessServer::start_with(IngestConfig::new(&dir), store, api).await?;
    let client = ListClient::login(&server.base, &population.login, &population.password).await?;
    let started = Instant::now();
    let rows = client.everything().await?;
    println!(
        "the big account lists {} vehicles ({:.1} s for all of them, 10,000 a call)",
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    anyhow::ensure!(
        rows.len() == config.vehicles,
        "expected {} vehicles",
        config.vehicles
    );

    let scenarios = Scenario::all(&rows, args.limit);
    let mut sizes = Vec::with_capacity(scenarios.len());
    for scenario in &scenarios {
        sizes.push(client.verify(scenario, &rows).await?);
    }
    println!(
        "{} scenarios, each page checked against the list sorted and filtered in memory",
        scenarios.len()
    );

    let sequential = sequential(&client, &scenarios, args.rounds).await?;
    report_sequential(&scenarios, &sizes, &sequential, args.rounds);
    if args.clients > 0 {
        concurrent(&client, &scenarios, args.clients, args.concurrent_rounds).await?;
    }
    server.stop().await?;
    check_rows(&rows)?;
    Ok(())
}

/// Populates the store unless `dir` holds one populated with `config`.
async fn prepare(
    store: &Store,
    config: &PopulationConfig,
    dir: &Path,
) -> anyhow::Result<Population> {
    let marker = dir.join(MARKER);
    if let Ok(text) = std::fs::read_to_string(&marker) {
        let found: Marker = serde_json::from_str(&text)?;
        anyhow::ensure!(
            found.config == *config,
            "{} was populated with {:?}; use another --data-dir",
            dir.display(),
            found.config
        );
        println!(
            "reusing the store in {} (populated in {:.0} s)",
            dir.display(),
            found.population.elapsed.as_secs_f64()
        );
        return Ok(found.population);
    }
    println!(
        "populating: {} accounts of {} vehicles and one of {} ...",
        config.accounts, config.vehicles_per_account, config.vehicles
    );
    let population = populate(store, config).await?;
    println!(
        "populated {} vehicles and {} trackers in {:.1} s",
        population.vehicles,
        population.trackers,
        population.elapsed.as_secs_f64()
    );
    let text = serde_json::to_string_pretty(&Marker {
        config: config.clone(),
        population: population.clone(),
    })?;
    std::fs::write(&marker, text).with_context(|| marker.display().to_string())?;
    Ok(population)
}

fn store_bytes(dir: &Path) -> u64 {
    ["platform.sqlite", "platform.sqlite-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

/// Calls every scenario once per round, one call at a time; the latencies of each.
async fn sequential(
    client: &ListClient,
    scenarios: &[Scenario],
    rounds: usize,
) -> anyhow::Result<Vec<Vec<Duration>>> {
    let mut samples = vec![Vec::with_capacity(rounds); scenarios.len()];
    for round in 0..rounds {
        for i in shuffled(scenarios.len(), round as u64) {
            let (elapsed, _) = client.scenario(&scenarios[i]).await?;
            samples[i].push(elapsed);
        }
    }
    Ok(samples)
}

fn report_sequential(
    scenarios: &[Scenario],
    sizes: &[usize],
    samples: &[Vec<Duration>],
    rounds: usize,
) {
    println!();
    println!("## One client, {rounds} rounds (ms; per scenario, p99 of {rounds} samples)");
    println!();
    println!("| sort | filter (matches) | page (offset) | KB | p50 | p90 | p99 | max |");
    println!("|---|---|---|---:|---:|---:|---:|---:|");
    for ((scenario, size), samples) in scenarios.iter().zip(sizes).zip(samples) {
        let stats = Stats::of(samples);
        println!(
            "| {} | {} \"{}\" ({}) | {} ({}) | {} | {} | {} | {} | {} |",
            scenario.sort.join(", "),
            scenario.filter.name,
            scenario.filter.text.as_deref().unwrap_or(""),
            scenario.matches,
            scenario.page.name(),
            scenario.offset,
            size / 1000,
            ms(stats.p50),
            ms(stats.p90),
            ms(stats.p99),
            ms(stats.max)
        );
    }
    let mut groups: BTreeMap<String, Vec<Duration>> = BTreeMap::new();
    for (scenario, samples) in scenarios.iter().zip(samples) {
        for key in [
            format!("sort {}", scenario.sort.join(", ")),
            format!("filter {}", scenario.filter.name),
            format!("page {}", scenario.page.name()),
            "all".to_owned(),
        ] {
            groups.entry(key).or_default().extend(samples);
        }
    }
    println!();
    println!("| group | calls | p50 | p90 | p99 | max |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (group, samples) in &groups {
        let stats = Stats::of(samples);
        println!(
            "| {group} | {} | {} | {} | {} | {} |",
            stats.count,
            ms(stats.p50),
            ms(stats.p90),
            ms(stats.p99),
            ms(stats.max)
        );
    }
}

/// `clients` clients calling every scenario `rounds` times each, in their own orders.
async fn concurrent(
    client: &ListClient,
    scenarios: &[Scenario],
    clients: usize,
    rounds: usize,
) -> anyhow::Result<()> {
    let scenarios = Arc::new(scenarios.to_vec());
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(clients);
    for c in 0..clients {
        let client = client.clone();
        let scenarios = scenarios.clone();
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            for round in 0..rounds {
                let seed = 1_000 + (c * rounds + round) as u64;
                for i in shuffled(scenarios.len(), seed) {
                    let (elapsed, _) = client.scenario(&scenarios[i]).await?;
                    samples.push((i, elapsed));
                }
            }
            anyhow::Ok(samples)
        }));
    }
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await??);
    }
    let wall = started.elapsed();
    let all: Vec<Duration> = samples.iter().map(|(_, d)| *d).collect();
    let stats = Stats::of(&all);
    println!();
    println!(
        "## {clients} clients at once, {rounds} rounds each: {} calls in {:.1} s, {:.0} calls/s",
        stats.count,
        wall.as_secs_f64(),
        stats.count as f64 / wall.as_secs_f64().max(1e-9)
    );
    println!();
    println!("| group | calls | p50 | p90 | p99 | max |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut groups: BTreeMap<String, Vec<Duration>> = BTreeMap::new();
    for (i, elapsed) in &samples {
        let scenario = &scenarios[*i];
        for key in [
            format!("filter {}", scenario.filter.name),
            format!("page {}", scenario.page.name()),
            "all".to_owned(),
        ] {
            groups.entry(key).or_default().push(*elapsed);
        }
    }
    for (group, samples) in &groups {
        let stats = Stats::of(samples);
        println!(
            "| {group} | {} | {} | {} | {} | {} |",
            stats.count,
            ms(stats.p50),
            ms(stats.p90),
            ms(stats.p99),
            ms(stats.max)
        );
    }
    Ok(())
}

/// Prints what the account holds, to show the data is what it claims.
fn check_rows(rows: &[Listed]) -> anyhow::Result<()> {
    let trackers = rows.iter().filter(|r| r.tracker_label.is_some()).count();
    let garages = rows
        .iter()
        .filter(|r| r.garage_organization_name.is_some())
        .count();
    let first = rows.first().context("no vehicles")?;
    println!();
    println!(
        "the account: {} vehicles, {trackers} with a tracker, {garages} in a garage; the first: {:?} {:?} {:?} {:?}",
        rows.len(),
        first.label,
        first.reg_number,
        first.vin,
        first.model
    );
    Ok(())
}
