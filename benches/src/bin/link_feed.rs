//! Load generator of a geo link's feed, `GET /links/{hash}/positions`
//! (issue 16: a 100-tracker link answered in under 5 ms p99 while 1,000
//! trackers write at 1 Hz).
//!
//! The real server runs in this process on `127.0.0.1:0`, on a runtime of
//! its own, so that its CPU can be told apart from the load generator's.
//! One account holds `--trackers` trackers (1,000), made through `Store` as
//! the other benchmarks do, an ingest token for its user, and one link over
//! `--linked` of them (100, spread over the account), showing speed,
//! address, movement and connection status, with a `--trace-duration-s`
//! (60 s) trail.
//!
//! The writer sends one message per tracker per second through the real
//! intake (`POST /ingest/v1/messages`, NDJSON, the ingest token as bearer),
//! each second's lines split into `--requests-per-second` requests spread
//! evenly over the second, each answered only once its lines are durable.
//! The lines are the simulated fleet's (`benches::fleet`: vehicles around
//! Almaty that park, idle and drive, every column a tracker sends), by
//! `device_id`, with the wall-clock time as `msg_time`. After a warm-up
//! long enough to fill the trails, readers call the feed one request at a
//! time each, over keep-alive, for `--duration-s`: 1 reader, then 4 (the
//! `--readers` list), each polling as the page does (`delta`: `since` the
//! previous answer's `server_time`, so trails carry only new points), then
//! with whole trails every time (`full`: a viewer's first poll). Every
//! answer is checked (200, one object per linked tracker, each with a
//! position, a trail unless a delta brought none, an address and both
//! statuses) before it counts. Then the writer stops and the same readers run for
//! `--baseline-s` each on the same link: the baseline without writes (the
//! trails age meanwhile; the points per object are printed).
//!
//! `cargo build --release -p benches --bin link_feed && target/release/link_feed`
#![allow(
    clippy::print_stdout,
    reason = "a measurement program: its report goes to stdout"
)]

use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, ensure};
use api::{ApiConfig, Rate, RateLimitConfig};
use benches::backends::intake_line;
use benches::export::{Account, InProcessServer};
use benches::fleet::Vehicle;
use benches::vehicle_list::ms;
use clap::Parser;
use ingest::IngestConfig;
use platform::{NewTracker, Store, StoreConfig, StorePeriod};
use schemas::{SystemClock, TrackerId};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Parser)]
#[command(about = "a geo link's feed under 1 Hz writes of a fleet: latency, throughput, CPU")]
struct Args {
    /// Trackers of the account, each writing one message a second.
    #[arg(long, default_value_t = 1000)]
    trackers: usize,
    /// Trackers on the link (at most 100), spread evenly over the account's.
    #[arg(long, default_value_t = 100)]
    linked: usize,
    /// Intake requests a second; the second's lines are split evenly between them.
    #[arg(long, default_value_t = 10)]
    requests_per_second: usize,
    /// The link's `trace_duration`, seconds.
    #[arg(long, default_value_t = 60)]
    trace_duration_s: u64,
    /// Writes before the first reader, seconds (default: the trail plus 5 s, so trails are full).
    #[arg(long)]
    warmup_s: Option<u64>,
    /// Each measured phase with the writer running, seconds.
    #[arg(long, default_value_t = 30)]
    duration_s: u64,
    /// Concurrent readers, one phase each (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,4")]
    readers: Vec<usize>,
    /// Each reader's pause between the starts of two calls, ms (0: back to
    /// back; 2,000 is one viewer of the page).
    #[arg(long, default_value_t = 0)]
    interval_ms: u64,
    /// How readers poll, one phase each: `full` (every answer carries the
    /// whole trails: a viewer's first poll) and `delta` (each call passes the
    /// previous answer's `server_time` as `since`, as the page does, so
    /// trails carry only new points).
    #[arg(long, value_delimiter = ',', default_value = "delta,full")]
    polls: Vec<Poll>,
    /// Each baseline phase (writer stopped), seconds; 0 skips the baseline.
    #[arg(long, default_value_t = 10)]
    baseline_s: u64,
    /// Simulated hours every vehicle lives before the run, from 08:00 local
    /// time, so that some are driving when it starts.
    #[arg(long, default_value_t = 3)]
    preroll_hours: u32,
    /// The engine's flush interval, seconds (the server's default: 5); each
    /// flush writes a file per tracker and day it holds rows of.
    #[arg(long, default_value_t = 5)]
    flush_interval_s: u64,
    /// Seed of the vehicles.
    #[arg(long, default_value_t = 16)]
    seed: u64,
}

/// 2024-06-01T02:00Z, 08:00 in the simulated fleet's zone (UTC+6): where
/// the vehicles' own clocks start (only their motion is used; the lines
/// carry the wall-clock time).
const SIMULATION_START_MS: i64 = 1_717_207_200_000;

/// How a reader polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Poll {
    /// Whole trails every time.
    Full,
    /// Only what arrived since the previous answer.
    Delta,
}

impl Poll {
    fn name(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Delta => "delta",
        }
    }
}

/// The object data the link shows.
const OBJECT_DATA: [&str; 4] = ["speed", "address", "movement_status", "connection_status"];

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(
        (1..=100).contains(&args.linked) && args.linked <= args.trackers,
        "--linked must be 1 to 100 and at most --trackers"
    );
    ensure!(
        args.requests_per_second >= 1,
        "--requests-per-second must be at least 1"
    );
    // The server on runtime threads named `th-server` and the load on
    // `bench-client`: the CPU of the second is the generator's.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .thread_name("th-server")
        .enable_all()
        .build()?;
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .thread_name(CLIENT_THREAD)
        .enable_all()
        .build()?;
    let dir = tempfile::tempdir()?;
    let started = Instant::now();
    let setup = server_rt.block_on(Setup::create(dir.path(), &args))?;
    println!(
        "{} trackers, an ingest token and the server ready in {:.1} s",
        setup.devices.len(),
        started.elapsed().as_secs_f64()
    );
    let result = client_rt.block_on(run(&args, &setup));
    server_rt.block_on(setup.server.stop())?;
    result
}

/// The account, its trackers and the running server.
struct Setup {
    server: InProcessServer,
    key: String,
    token: String,
    /// Each tracker and its device id, in the order of creation.
    devices: Vec<(TrackerId, String)>,
}

impl Setup {
    async fn create(dir: &std::path::Path, args: &Args) -> anyhow::Result<Self> {
        let store = Store::open(StoreConfig::new(dir), Arc::new(SystemClock)).await?;
        let account = Account::create(&store).await?;
        let first = store
            .tracker(account.tracker)
            .await?
            .context("the account's tracker")?;
        let mut devices = vec![(account.tracker, first.device_id.clone())];
        for i in 1..args.trackers {
            let device_id = format!("35630704245{i:04}");
            let tracker = store
                .create_tracker(NewTracker {
                    user_id: first.user_id,
                    label: format!("Van {i:04}"),
                    device_id: device_id.clone(),
                    model: "fmb920".into(),
                    plan_id: None,
                    store_period: Some(StorePeriod::Years(10)),
                    time_zone: None,
                })
                .await?;
            devices.push((tracker, device_id));
        }
        let token = store
            .create_ingest_token_for("bench", false, Some(first.user_id))
            .await?
            .1
            .expose()
            .to_owned();
        let unlimited = Rate::per_second(NonZeroU32::new(1_000_000).context("a rate")?);
        // The readers all come from 127.0.0.1 and the link calls use the
        // account's API key: the default limits would answer them 429.
        let api = ApiConfig {
            rate_limits: RateLimitConfig {
                api_key: unlimited,
                ..RateLimitConfig::default()
            },
            link_rate: unlimited,
            ..ApiConfig::default()
        };
        let server = InProcessServer::start_with(
            IngestConfig {
                flush_interval: Duration::from_secs(args.flush_interval_s),
                ..IngestConfig::new(dir)
            },
            store,
            api,
        )
        .await?;
        Ok(Self {
            server,
            key: account.key,
            token,
            devices,
        })
    }

    /// Creates the link over every `n / linked`-th tracker; answers its hash.
    async fn link(&self, http: &reqwest::Client, args: &Args) -> anyhow::Result<String> {
        let step = self.devices.len() / args.linked;
        let trackers: Vec<Value> = (0..args.linked)
            .map(|i| {
                json!({"tracker_id": self.devices[i * step].0.0, "alias": null,
                       "params": {"object_data": OBJECT_DATA}})
            })
            .collect();
        let body = json!({"hash": self.key, "description": "Bench fleet", "trackers": trackers,
                          "params": {"display_options": {"trace_duration": args.trace_duration_s}}});
        let created = post(
            http,
            &self.server.base,
            "tracker/location/link/create",
            body,
        )
        .await?;
        let id = created["value"].as_i64().context("link/create: no id")?;
        let read = json!({"hash": self.key, "id": id});
        let read = post(http, &self.server.base, "tracker/location/link/read", read).await?;
        Ok(read["value"]["hash"]
            .as_str()
            .context("link/read: no hash")?
            .to_owned())
    }
}

async fn post(
    http: &reqwest::Client,
    base: &str,
    call: &str,
    body: Value,
) -> anyhow::Result<Value> {
    let answer: Value = http
        .post(format!("{base}/v2/{call}"))
        .json(&body)
        .send()
        .await?
        .json()
        .await?;
    ensure!(answer["success"] == true, "{call} answered {answer}");
    Ok(answer)
}

async fn run(args: &Args, setup: &Setup) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let hash = setup.link(&http, args).await?;
    let feed_url = format!("{}/links/{hash}/positions", setup.server.base);

    let started = Instant::now();
    let vehicles = preroll(&setup.devices, args).await?;
    println!(
        "{} vehicles simulated {} h ahead in {:.1} s",
        vehicles.len(),
        args.preroll_hours,
        started.elapsed().as_secs_f64()
    );

    let log = Arc::new(Mutex::new(Vec::<Sent>::new()));
    let stop = CancellationToken::new();
    let mut writer = tokio::spawn(write(
        WriterConfig {
            http: http.clone(),
            url: format!("{}/ingest/v1/messages", setup.server.base),
            token: setup.token.clone(),
            requests_per_second: args.requests_per_second,
        },
        vehicles,
        log.clone(),
        stop.clone(),
    ));
    let warmup = Duration::from_secs(args.warmup_s.unwrap_or(args.trace_duration_s + 5));
    println!(
        "writer: {} lines/s in {} requests/s; warming up {} s",
        setup.devices.len(),
        args.requests_per_second,
        warmup.as_secs()
    );
    tokio::time::sleep(warmup).await;
    // One checked answer before the phases (and the geocoder loaded by now).
    let first = Reader::new(&feed_url, args.linked, Poll::Full)
        .read_one()
        .await?;
    println!(
        "first answer: {} bytes, {} of {} objects moving, addresses e.g. {:?}",
        first.bytes, first.moving, args.linked, first.addresses
    );

    // The phases with the writer running, then (the writer stopped) the baseline.
    let mut rows = Vec::new();
    for (writes, seconds) in [
        ("1 Hz writes", args.duration_s),
        ("no writes", args.baseline_s),
    ] {
        if writes == "no writes" {
            stop.cancel();
            (&mut writer).await??;
        }
        if seconds == 0 {
            continue;
        }
        for &poll in &args.polls {
            for &readers in &args.readers {
                let duration = Duration::from_secs(seconds);
                let row = phase(&feed_url, args, (poll, readers), duration, &log).await?;
                rows.push((writes, row));
            }
        }
    }
    report(&rows, args);
    Ok(())
}

/// The simulated vehicles, each `--preroll-hours` into its day, with their
/// device ids (stepped on the blocking pool, half the fleet a thread).
async fn preroll(
    devices: &[(TrackerId, String)],
    args: &Args,
) -> anyhow::Result<Vec<(Vehicle, String)>> {
    let seconds = u64::from(args.preroll_hours) * 3600;
    let mut halves = JoinSet::new();
    let half = devices.len().div_ceil(2);
    for (part, chunk) in devices.chunks(half).enumerate() {
        let chunk = chunk.to_vec();
        let seed = args.seed;
        halves.spawn_blocking(move || {
            let vehicles: Vec<(Vehicle, String)> = chunk
                .into_iter()
                .map(|(tracker, device)| {
                    let mut vehicle = Vehicle::new(tracker, SIMULATION_START_MS, seed);
                    for _ in 0..seconds {
                        vehicle.next_message();
                    }
                    (vehicle, device)
                })
                .collect();
            (part, vehicles)
        });
    }
    let mut parts = halves.join_all().await;
    parts.sort_by_key(|(part, _)| *part);
    Ok(parts.into_iter().flat_map(|(_, v)| v).collect())
}

/// One intake request, as the writer saw it.
#[derive(Debug, Clone, Copy)]
struct Sent {
    /// When it was answered.
    answered: Instant,
    latency: Duration,
    status: u16,
    lines: usize,
    accepted: usize,
}

#[derive(Debug, Clone)]
struct WriterConfig {
    http: reqwest::Client,
    url: String,
    token: String,
    requests_per_second: usize,
}

/// Every second, one message per vehicle, in `requests_per_second` requests
/// due evenly over the second (each sent when due, even if earlier ones are
/// unanswered); the lines of a request carry its due time as `msg_time`.
async fn write(
    config: WriterConfig,
    mut vehicles: Vec<(Vehicle, String)>,
    log: Arc<Mutex<Vec<Sent>>>,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let per_request = vehicles.len().div_ceil(config.requests_per_second);
    let step_ms = 1000 / config.requests_per_second as u64;
    let origin = Instant::now();
    let origin_ms = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64;
    let mut in_flight = JoinSet::new();
    'seconds: for second in 0u64.. {
        for (k, chunk) in vehicles.chunks_mut(per_request).enumerate() {
            let offset_ms = second * 1000 + k as u64 * step_ms;
            tokio::select! {
                () = stop.cancelled() => break 'seconds,
                () = tokio::time::sleep_until((origin + Duration::from_millis(offset_ms)).into()) => {}
            }
            let message_time_ms = origin_ms + offset_ms as i64;
            let mut body = String::with_capacity(chunk.len() * 800);
            for (vehicle, device) in chunk.iter_mut() {
                body.push_str(&line(vehicle, device, message_time_ms).to_string());
                body.push('\n');
            }
            let lines = chunk.len();
            let request = config
                .http
                .post(&config.url)
                .bearer_auth(&config.token)
                .header("content-type", "application/x-ndjson")
                .body(body);
            let log = log.clone();
            in_flight.spawn(async move {
                let begun = Instant::now();
                let (status, accepted) = match request.send().await {
                    Ok(response) => {
                        let status = response.status().as_u16();
                        let answer: Value = response.json().await.unwrap_or_default();
                        (status, answer["accepted"].as_u64().unwrap_or(0) as usize)
                    }
                    Err(_) => (0, 0),
                };
                let sent = Sent {
                    answered: Instant::now(),
                    latency: begun.elapsed(),
                    status,
                    lines,
                    accepted,
                };
                log.lock().unwrap_or_else(|p| p.into_inner()).push(sent);
            });
            while in_flight.try_join_next().is_some() {}
        }
    }
    in_flight.join_all().await;
    Ok(())
}

/// The vehicle's next message as an intake line of its device, at `message_time_ms`.
fn line(vehicle: &mut Vehicle, device: &str, message_time_ms: i64) -> Value {
    let mut line = intake_line(&vehicle.next_message());
    if let Some(fields) = line.as_object_mut() {
        fields.remove("tracker_id");
        fields.remove("server_time"); // only backfill tokens may send it
        // The simulator reports precision -1 without a fix; the intake wants >= 0.
        if fields
            .get("precision")
            .and_then(Value::as_i64)
            .is_some_and(|p| p < 0)
        {
            fields.remove("precision");
        }
        fields.insert("device_id".into(), json!(device));
        fields.insert(
            "msg_time".into(),
            json!(
                chrono::DateTime::from_timestamp_millis(message_time_ms)
                    .unwrap_or_default()
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
            ),
        );
    }
    line
}

/// The members of the feed the readers check.
#[derive(Deserialize)]
struct Feed {
    server_time: i64,
    objects: Vec<FeedObject>,
}

#[derive(Deserialize)]
struct FeedObject {
    position: Option<FeedPosition>,
    trail: Vec<(f64, f64, i64)>,
    #[serde(default, deserialize_with = "present")]
    speed: Option<Option<f64>>,
    address: Option<String>,
    movement_status: Option<String>,
    connection_status: Option<String>,
}

#[derive(Deserialize)]
struct FeedPosition {
    lat: f64,
    lng: f64,
}

/// A member that is there, null or not: `Some`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<f64>>, D::Error> {
    Option::<f64>::deserialize(d).map(Some)
}

/// One checked answer.
#[derive(Debug, Default)]
struct Answer {
    latency: Duration,
    bytes: usize,
    trail_points: usize,
    moving: usize,
    addresses: Vec<String>,
}

/// One reader: its own connection, one request at a time.
struct Reader {
    http: reqwest::Client,
    url: String,
    linked: usize,
    poll: Poll,
    /// The previous answer's `server_time` (delta polls).
    since: Option<i64>,
}

impl Reader {
    fn new(url: &str, linked: usize, poll: Poll) -> Self {
        Self {
            http: reqwest::Client::new(),
            url: url.to_owned(),
            linked,
            poll,
            since: None,
        }
    }

    /// Calls the feed once, timed to the end of the body, then checks the answer.
    async fn read_one(&mut self) -> anyhow::Result<Answer> {
        let url = match self.since {
            Some(since) => format!("{}?since={since}", self.url),
            None => self.url.clone(),
        };
        let delta = self.since.is_some();
        let begun = Instant::now();
        let response = self.http.get(&url).send().await?;
        let status = response.status();
        let body = response.bytes().await?;
        let latency = begun.elapsed();
        ensure!(
            status == reqwest::StatusCode::OK,
            "the feed answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
        let feed: Feed = serde_json::from_slice(&body).context("the feed's JSON")?;
        if self.poll == Poll::Delta {
            self.since = Some(feed.server_time);
        }
        ensure!(
            feed.objects.len() == self.linked,
            "{} objects, not {}",
            feed.objects.len(),
            self.linked
        );
        let mut answer = Answer {
            latency,
            bytes: body.len(),
            ..Answer::default()
        };
        for (key, object) in feed.objects.iter().enumerate() {
            let position = object
                .position
                .as_ref()
                .with_context(|| format!("object {key}: no position"))?;
            ensure!(
                (40.0..46.0).contains(&position.lat) && (74.0..80.0).contains(&position.lng),
                "object {key}: position {}, {} far from the fleet",
                position.lat,
                position.lng
            );
            // A delta answer may bring no new point of a tracker.
            ensure!(delta || !object.trail.is_empty(), "object {key}: no trail");
            ensure!(object.speed.is_some(), "object {key}: no speed");
            let address = object.address.as_deref().unwrap_or_default();
            ensure!(!address.is_empty(), "object {key}: no address");
            ensure!(
                object.connection_status.is_some(),
                "object {key}: no connection status"
            );
            match object.movement_status.as_deref() {
                Some("moving") => answer.moving += 1,
                Some("stopped") => {}
                other => anyhow::bail!("object {key}: movement status {other:?}"),
            }
            answer.trail_points += object.trail.len();
            if answer.addresses.len() < 3 && !answer.addresses.iter().any(|a| a == address) {
                answer.addresses.push(address.to_owned());
            }
        }
        Ok(answer)
    }
}

/// One measured phase.
struct Phase {
    readers: usize,
    poll: Poll,
    elapsed: Duration,
    latencies: Vec<Duration>,
    bytes: usize,
    trail_points: usize,
    objects: usize,
    moving: usize,
    writes: Vec<Sent>,
    cpu: CpuUse,
}

async fn phase(
    url: &str,
    args: &Args,
    (poll, readers): (Poll, usize),
    duration: Duration,
    log: &Arc<Mutex<Vec<Sent>>>,
) -> anyhow::Result<Phase> {
    let cpu_before = CpuTicks::now()?;
    let begun = Instant::now();
    let until = begun + duration;
    let linked = args.linked;
    let interval = Duration::from_millis(args.interval_ms);
    let mut tasks = JoinSet::new();
    for _ in 0..readers {
        let mut reader = Reader::new(url, linked, poll);
        tasks.spawn(async move {
            let mut answers = Vec::new();
            let mut due = Instant::now();
            while Instant::now() < until {
                answers.push(reader.read_one().await?);
                // A fixed schedule; a late call is not made up for.
                due = (due + interval).max(Instant::now());
                tokio::time::sleep_until(due.into()).await;
            }
            anyhow::Ok(answers)
        });
    }
    let mut answers = Vec::new();
    for result in tasks.join_all().await {
        answers.extend(result?);
    }
    let elapsed = begun.elapsed();
    let cpu = CpuTicks::now()?.since(&cpu_before, elapsed);
    let writes = log
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter(|s| s.answered >= begun && s.answered < begun + elapsed)
        .copied()
        .collect();
    Ok(Phase {
        readers,
        poll,
        elapsed,
        bytes: answers.iter().map(|a| a.bytes).sum(),
        trail_points: answers.iter().map(|a| a.trail_points).sum(),
        moving: answers.iter().map(|a| a.moving).sum(),
        objects: answers.len() * linked,
        latencies: answers.iter().map(|a| a.latency).collect(),
        writes,
        cpu,
    })
}

/// The `q` quantile of sorted samples (nearest rank).
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let i = ((q * sorted.len() as f64).ceil() as usize).max(1) - 1;
    sorted.get(i).copied().unwrap_or_default()
}

fn report(rows: &[(&str, Phase)], args: &Args) {
    if args.interval_ms == 0 {
        println!("\neach reader calls the feed back to back");
    } else {
        println!("\neach reader calls the feed every {} ms", args.interval_ms);
    }
    println!(
        "| writes | polls | readers | feeds | feeds/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | KB/answer | trail points/object | moving |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (writes, p) in rows {
        let mut sorted = p.latencies.clone();
        sorted.sort_unstable();
        let n = sorted.len().max(1);
        println!(
            "| {writes} | {} | {} | {} | {:.0} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.0}% |",
            p.poll.name(),
            p.readers,
            sorted.len(),
            sorted.len() as f64 / p.elapsed.as_secs_f64(),
            ms(quantile(&sorted, 0.50)),
            ms(quantile(&sorted, 0.90)),
            ms(quantile(&sorted, 0.99)),
            ms(quantile(&sorted, 0.999)),
            ms(sorted.last().copied().unwrap_or_default()),
            p.bytes as f64 / n as f64 / 1000.0,
            p.trail_points as f64 / p.objects.max(1) as f64,
            100.0 * p.moving as f64 / p.objects.max(1) as f64,
        );
    }
    println!(
        "\n| writes | polls | readers | intake requests | not 200 | lines acknowledged/s | intake p50 ms | intake p99 ms | server CPU | generator CPU |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (writes, p) in rows {
        let mut latencies: Vec<Duration> = p.writes.iter().map(|s| s.latency).collect();
        latencies.sort_unstable();
        let mut failed = std::collections::BTreeMap::<u16, usize>::new();
        for sent in p.writes.iter().filter(|s| s.status != 200) {
            *failed.entry(sent.status).or_default() += 1;
        }
        let failed = match failed.len() {
            0 => "0".to_owned(),
            _ => failed
                .iter()
                .map(|(status, n)| format!("{n} × {status}"))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let accepted: usize = p.writes.iter().map(|s| s.accepted).sum();
        let lines: usize = p.writes.iter().map(|s| s.lines).sum();
        let (p50, p99) = if latencies.is_empty() {
            ("-".to_owned(), "-".to_owned())
        } else {
            (
                ms(quantile(&latencies, 0.5)),
                ms(quantile(&latencies, 0.99)),
            )
        };
        println!(
            "| {writes} | {} | {} | {} | {failed} | {:.0} (of {lines} sent) | {p50} | {p99} | {:.0}% | {:.0}% |",
            p.poll.name(),
            p.readers,
            p.writes.len(),
            accepted as f64 / p.elapsed.as_secs_f64(),
            p.cpu.server_percent,
            p.cpu.client_percent,
        );
    }
    let worst = rows
        .iter()
        .filter(|(w, _)| *w == "1 Hz writes")
        .map(|(_, p)| {
            let mut sorted = p.latencies.clone();
            sorted.sort_unstable();
            quantile(&sorted, 0.99)
        })
        .max()
        .unwrap_or_default();
    println!(
        "\nCPU: % of one core over the phase (the machine has {}); server = the process less the generator's threads.",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    println!(
        "target: p99 under 5 ms for a {}-tracker link with {} trackers writing at 1 Hz; worst p99 with writes {} ms: {}",
        args.linked,
        args.trackers,
        ms(worst),
        if worst < Duration::from_millis(5) {
            "met"
        } else {
            "not met"
        }
    );
}

/// The name of the load generator's runtime threads.
const CLIENT_THREAD: &str = "bench-client";

/// CPU time of the whole process and of the generator's threads, in clock ticks.
struct CpuTicks {
    process: u64,
    client: u64,
}

/// CPU used over a phase, in % of one core.
struct CpuUse {
    server_percent: f64,
    client_percent: f64,
}

impl CpuTicks {
    /// From `/proc/self/stat` (every thread, exited ones too) and each
    /// thread's own `stat` (the main thread and the client runtime's).
    fn now() -> anyhow::Result<Self> {
        let process = ticks(&std::fs::read_to_string("/proc/self/stat")?)?.1;
        let pid = std::process::id().to_string();
        let mut client = 0;
        for task in std::fs::read_dir("/proc/self/task")? {
            let task = task?;
            // A thread may end between the listing and the read.
            let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
                continue;
            };
            let (name, used) = ticks(&stat)?;
            if name.starts_with(CLIENT_THREAD) || task.file_name().to_str() == Some(pid.as_str()) {
                client += used;
            }
        }
        Ok(Self { process, client })
    }

    fn since(&self, before: &Self, elapsed: Duration) -> CpuUse {
        // USER_HZ is 100 on Linux.
        let percent = |ticks: u64| ticks as f64 / 100.0 / elapsed.as_secs_f64() * 100.0;
        let process = self.process.saturating_sub(before.process);
        let client = self.client.saturating_sub(before.client);
        CpuUse {
            server_percent: percent(process.saturating_sub(client)),
            client_percent: percent(client),
        }
    }
}

/// The name and user + system ticks of a `stat` line.
fn ticks(stat: &str) -> anyhow::Result<(String, u64)> {
    let open = stat.find('(').context("stat: no name")?;
    let close = stat.rfind(')').context("stat: no name")?;
    let name = stat[open + 1..close].to_owned();
    // After the name: state, ppid, ... utime is the 12th, stime the 13th.
    let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
    let field = |i: usize| -> anyhow::Result<u64> {
        Ok(fields.get(i).context("stat: too short")?.parse()?)
    };
    Ok((name, field(11)? + field(12)?))
}
