//! Load generator of `POST /v2/panel/user/list` (issue 15): the real
//! server in this process on `127.0.0.1:0`, its platform store holding a
//! dealer of 100,000 users and four dealers of 5,000; pages of 100 in every
//! order the call offers, with and without a filter, requested one after
//! the other (latency) and by several clients at once. Every scenario's
//! page and count are checked against the dealer's users sorted and
//! filtered in memory before they are timed. See `benches::panel_user_list`.
//!
//! `cargo build --release -p benches --bin panel_user_list && target/release/panel_user_list`
//!
//! Populating takes a few minutes; `--data-dir DIR` keeps the store in
//! `DIR` and reuses it on the next run with the same sizes.
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
use benches::panel_user_list::populate::{Population, PopulationConfig, populate};
use benches::panel_user_list::{Listed, Scenario, call, everyone, ordered_query, verify};
use benches::user_upload::PanelClient;
use benches::vehicle_list::{Stats, ms, shuffled};
use clap::Parser;
use ingest::IngestConfig;
use platform::{PanelScope, Store, StoreConfig};
use schemas::SystemClock;

/// Lists a dealer's users a page at a time in every order, with filters.
#[derive(Debug, Parser)]
struct Args {
    /// Users of the big dealer.
    #[arg(long, default_value_t = 100_000)]
    users: usize,
    /// Other dealers.
    #[arg(long, default_value_t = 4)]
    dealers: usize,
    /// Users of each other dealer.
    #[arg(long, default_value_t = 5_000)]
    users_per_dealer: usize,
    /// Rows per page (`limit`).
    #[arg(long, default_value_t = 100)]
    limit: i64,
    /// Sequential rounds: each round calls every scenario once, in a new order.
    #[arg(long, default_value_t = 10)]
    rounds: usize,
    /// Concurrent clients of the second measurement (0: none).
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Rounds of every scenario per concurrent client.
    #[arg(long, default_value_t = 3)]
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

const MARKER: &str = "panel-user-list-bench.json";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let config = PopulationConfig {
        users: args.users,
        dealers: args.dealers,
        users_per_dealer: args.users_per_dealer,
        ..PopulationConfig::default()
    };
    let temporary = tempfile::tempdir()?;
    let dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| temporary.path().to_owned());
    std::fs::create_dir_all(&dir)?;
    let store = Store::open(StoreConfig::new(&dir), Arc::new(SystemClock)).await?;
    let population = prepare(&store, &config, &dir).await?;

    let unlimited = Rate::per_second(NonZeroU32::new(1_000_000).context("a rate")?);
    let api = ApiConfig {
        // The default 10/s per dealer would answer 429 to the benchmark itself.
        rate_limits: RateLimitConfig {
            panel_dealer: unlimited,
            anonymous_ip: unlimited,
            ..RateLimitConfig::default()
        },
        ..ApiConfig::default()
    };
    let direct = store.clone();
    let server = InProcessServer::start_with(IngestConfig::new(&dir), store, api).await?;
    let client = PanelClient::login(&server.base, population.dealer, &population.password).await?;
    let started = Instant::now();
    let rows = everyone(&client).await?;
    println!(
        "the big dealer lists {} users ({:.1} s for all of them, 10,000 a call)",
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    anyhow::ensure!(
        rows.len() == config.users,
        "expected {} users",
        config.users
    );

    let scenarios = Scenario::all(&rows, args.limit);
    let mut sizes = Vec::with_capacity(scenarios.len());
    for scenario in &scenarios {
        sizes.push(verify(&client, scenario, &rows).await?);
    }
    println!(
        "{} scenarios, each page and count checked against the users sorted and filtered in memory",
        scenarios.len()
    );

    let sequential = sequential(&client, &scenarios, args.rounds).await?;
    // The dealer has every permission, `users: global` among them, as its
    // panel session does.
    let scope = PanelScope {
        dealer: schemas::DealerId(population.dealer),
        global: true,
    };
    let store_times = store_alone(&direct, scope, &scenarios, args.rounds.min(5)).await?;
    report_sequential(&scenarios, &sizes, &sequential, &store_times, args.rounds);
    if args.clients > 0 {
        concurrent(&client, &scenarios, args.clients, args.concurrent_rounds).await?;
    }
    server.stop().await?;
    describe(&rows)?;
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
        "populating: a dealer of {} users and {} of {} ...",
        config.users, config.dealers, config.users_per_dealer
    );
    let population = populate(store, dir, config).await?;
    println!(
        "populated {} users and {} trackers in {:.1} s",
        population.users,
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

/// Calls every scenario once per round, one call at a time; the latencies of each.
async fn sequential(
    client: &PanelClient,
    scenarios: &[Scenario],
    rounds: usize,
) -> anyhow::Result<Vec<Vec<Duration>>> {
    let mut samples = vec![Vec::with_capacity(rounds); scenarios.len()];
    for round in 0..rounds {
        for i in shuffled(scenarios.len(), round as u64) {
            let (elapsed, _) = call(client, &scenarios[i]).await?;
            samples[i].push(elapsed);
        }
    }
    Ok(samples)
}

/// Each scenario's median time in `Store::list_panel_users` alone (no
/// HTTP, no JSON), over `rounds` calls.
async fn store_alone(
    store: &Store,
    scope: PanelScope,
    scenarios: &[Scenario],
    rounds: usize,
) -> anyhow::Result<Vec<Duration>> {
    let mut samples = vec![Vec::with_capacity(rounds); scenarios.len()];
    for round in 0..rounds {
        for i in shuffled(scenarios.len(), 500 + round as u64) {
            let query = ordered_query(&scenarios[i]);
            let started = Instant::now();
            store.list_panel_users(scope, &query).await?;
            samples[i].push(started.elapsed());
        }
    }
    Ok(samples.iter().map(|s| Stats::of(s).p50).collect())
}

fn print_groups(groups: &BTreeMap<String, Vec<Duration>>) {
    println!();
    println!("| group | calls | p50 | p90 | p99 | max |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (group, samples) in groups {
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

fn report_sequential(
    scenarios: &[Scenario],
    sizes: &[usize],
    samples: &[Vec<Duration>],
    store_times: &[Duration],
    rounds: usize,
) {
    println!();
    println!(
        "## One client, {rounds} rounds (ms; per scenario, p99 of {rounds} samples; \
         store: the median of `Store::list_panel_users` alone)"
    );
    println!();
    println!("| order | filter (matches) | page (offset) | KB | store | p50 | p90 | p99 | max |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|");
    for (((scenario, size), samples), store) in
        scenarios.iter().zip(sizes).zip(samples).zip(store_times)
    {
        let stats = Stats::of(samples);
        println!(
            "| {} | {} \"{}\" ({}) | {} ({}) | {} | {} | {} | {} | {} | {} |",
            scenario.order_name(),
            scenario.filter.name,
            scenario.filter.text.as_deref().unwrap_or(""),
            scenario.matches,
            scenario.page.name(),
            scenario.offset,
            size / 1000,
            ms(*store),
            ms(stats.p50),
            ms(stats.p90),
            ms(stats.p99),
            ms(stats.max)
        );
    }
    let mut groups: BTreeMap<String, Vec<Duration>> = BTreeMap::new();
    for (scenario, samples) in scenarios.iter().zip(samples) {
        for key in [
            format!("order {}", scenario.order_name()),
            format!("filter {}", scenario.filter.name),
            format!("page {}", scenario.page.name()),
            "all".to_owned(),
        ] {
            groups.entry(key).or_default().extend(samples);
        }
    }
    print_groups(&groups);
}

/// `clients` clients calling every scenario `rounds` times each, in their own orders.
async fn concurrent(
    client: &PanelClient,
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
                    let (elapsed, _) = call(&client, &scenarios[i]).await?;
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
    let count = samples.len();
    println!();
    println!(
        "## {clients} clients at once, {rounds} rounds each: {count} calls in {:.1} s, {:.0} calls/s",
        wall.as_secs_f64(),
        count as f64 / wall.as_secs_f64().max(1e-9)
    );
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
    print_groups(&groups);
    Ok(())
}

/// Prints what the dealer holds, to show the data is what it claims.
fn describe(rows: &[Listed]) -> anyhow::Result<()> {
    let active = rows.iter().filter(|r| r.activated).count();
    let companies = rows.iter().filter(|r| !r.legal_name.is_empty()).count();
    let first = rows.first().context("no users")?;
    println!();
    println!(
        "the dealer: {} users, {active} active, {companies} with a legal name; the first: {:?} {:?} {:?}",
        rows.len(),
        first.login,
        first.first_name,
        first.last_name
    );
    Ok(())
}
