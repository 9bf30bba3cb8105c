//! Load generator of `POST /v2/geocoder/search_address` (issue 16: p99
//! under 5 ms): the real server in this process on `127.0.0.1:0`, one
//! client calling one request at a time over keep-alive HTTP. The texts are
//! drawn from the bundled places themselves (SplitMix64, fixed seed), in
//! six kinds: a place's whole name, its first 3 to 5 letters, the name with
//! one letter changed, the name and its country code (`Almaty, KZ`),
//! coordinates within about 30 km of a place, and text nothing matches.
//! Every answer is checked (a match answers its place, coordinates one
//! result, nothing 210) before it counts.
//!
//! `cargo build --release -p benches --bin geocoder_search && target/release/geocoder_search`
#![allow(
    clippy::print_stdout,
    reason = "a measurement program: its report goes to stdout"
)]

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use api::{ApiConfig, Rate, RateLimitConfig};
use benches::export::{Account, InProcessServer};
use benches::fleet::SplitMix64;
use benches::vehicle_list::{Stats, ms};
use clap::Parser;
use ingest::IngestConfig;
use platform::{Store, StoreConfig};
use schemas::SystemClock;
use serde_json::{Value, json};

#[derive(Debug, Parser)]
#[command(about = "geocoder/search_address over HTTP: latency by kind of text")]
struct Args {
    /// Calls of each kind.
    #[arg(long, default_value_t = 2000)]
    calls: usize,
    /// Seed of the texts.
    #[arg(long, default_value_t = 16)]
    seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Name,
    Prefix,
    Typo,
    Qualified,
    Coordinates,
    Nothing,
}

const KINDS: [(Kind, &str); 6] = [
    (Kind::Name, "whole name"),
    (Kind::Prefix, "first 3-5 letters"),
    (Kind::Typo, "one letter changed"),
    (Kind::Qualified, "name, country code"),
    (Kind::Coordinates, "coordinates near a place"),
    (Kind::Nothing, "nothing matches"),
];

/// One call's text and the place it was drawn from.
fn text(kind: Kind, rng: &mut SplitMix64) -> (String, geocoder::Place<'static>) {
    let places = geocoder::bundled();
    // 25 names hold a comma, which the search reads as a qualifier; not
    // drawn, so that every kind means what it says.
    let place = loop {
        let place = places.place(rng.between(0, places.len() as u32) as usize);
        if !place.name.contains(',') {
            break place;
        }
    };
    let name: Vec<char> = place.name.chars().collect();
    let text = match kind {
        Kind::Name => place.name.to_owned(),
        Kind::Prefix => {
            let n = (rng.between(3, 6) as usize).min(name.len());
            name[..n].iter().collect()
        }
        Kind::Typo => {
            let mut typo = name.clone();
            if typo.len() >= 5 {
                let at = rng.between(1, typo.len() as u32) as usize;
                typo[at] = if typo[at] == 'x' { 'q' } else { 'x' };
            }
            typo.into_iter().collect()
        }
        Kind::Qualified => format!("{}, {}", place.name, place.country_code),
        Kind::Coordinates => {
            let off = |rng: &mut SplitMix64| (rng.between(0, 6001) as f64 - 3000.0) / 10_000.0;
            let lat = (place.lat + off(rng)).clamp(-90.0, 90.0);
            let lng = (place.lng + off(rng)).clamp(-180.0, 180.0);
            format!("{lat:.5},{lng:.5}")
        }
        Kind::Nothing => format!("Qzx{}vvq", rng.between(0, 1_000_000)),
    };
    (text, place)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let started = Instant::now();
    let places = geocoder::bundled();
    println!(
        "{} places loaded and indexed in {:.0} ms",
        places.len(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    let dir = tempfile::tempdir()?;
    let store = Store::open(
        StoreConfig::new(dir.path()),
        std::sync::Arc::new(SystemClock),
    )
    .await?;
    let account = Account::create(&store).await?;
    // The calls use the account's API key; its default rate would answer
    // the benchmark 429.
    let api = ApiConfig {
        rate_limits: RateLimitConfig {
            api_key: Rate::per_second(NonZeroU32::new(1_000_000).context("a rate")?),
            ..RateLimitConfig::default()
        },
        ..ApiConfig::default()
    };
    let server = InProcessServer::start_with(IngestConfig::new(dir.path()), store, api).await?;
    let http = reqwest::Client::new();
    let url = format!("{}/v2/geocoder/search_address", server.base);
    let mut rng = SplitMix64::new(args.seed);
    let mut calls: Vec<(Kind, String, geocoder::Place<'static>)> = Vec::new();
    for _ in 0..args.calls {
        for (kind, _) in KINDS {
            let (text, place) = text(kind, &mut rng);
            calls.push((kind, text, place));
        }
    }
    // Interleaved: the kinds take turns, as callers would mix them.
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); KINDS.len()];
    let mut all = Vec::with_capacity(calls.len());
    let mut found_itself = 0usize;
    for (kind, text, place) in &calls {
        let body = json!({"hash": account.key, "q": text});
        let begun = Instant::now();
        let response = http.post(&url).json(&body).send().await?;
        let status = response.status();
        let answer: Value = response.json().await?;
        let elapsed = begun.elapsed();
        match kind {
            Kind::Nothing => ensure!(
                answer["status"]["code"] == 210,
                "`{text}` answered {status} {answer}"
            ),
            _ => {
                let locations = answer["locations"]
                    .as_array()
                    .with_context(|| format!("`{text}` answered {status} {answer}"))?;
                ensure!(!locations.is_empty(), "`{text}`: no location");
                if *kind == Kind::Coordinates {
                    ensure!(
                        locations.len() == 1,
                        "`{text}`: {} results",
                        locations.len()
                    );
                }
                if *kind == Kind::Name || *kind == Kind::Qualified {
                    // The first result has the name, folded (a name shared by more
                    // places than the answer holds may leave this one out).
                    let first = locations[0]["address"].as_str().unwrap_or("");
                    let first_name = first.split(',').next().unwrap_or("");
                    ensure!(
                        geocoder::fold(first_name) == geocoder::fold(place.name),
                        "`{text}` answered another name first: {answer}"
                    );
                }
                if (*kind == Kind::Name || *kind == Kind::Qualified)
                    && locations
                        .iter()
                        .any(|l| l["lat"] == place.lat && l["lng"] == place.lng)
                {
                    found_itself += 1;
                }
            }
        }
        let at = KINDS.iter().position(|(k, _)| k == kind).unwrap_or(0);
        samples[at].push(elapsed);
        all.push(elapsed);
    }
    println!(
        "{} calls, each answer checked; a whole name or a qualified one listed the very place it was drawn from in {} of {}",
        calls.len(),
        found_itself,
        2 * args.calls
    );
    println!(
        "\n| text | calls | p50 ms | p90 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|---:|"
    );
    let row = |name: &str, s: Stats| {
        println!(
            "| {name} | {} | {} | {} | {} | {} |",
            s.count,
            ms(s.p50),
            ms(s.p90),
            ms(s.p99),
            ms(s.max)
        );
    };
    for (i, (_, name)) in KINDS.iter().enumerate() {
        row(name, Stats::of(&samples[i]));
    }
    row("all", Stats::of(&all));
    server.stop().await?;
    Ok(())
}
