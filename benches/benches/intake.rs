//! Criterion benchmarks of the stages a write runs on its request's thread,
//! per message, on the load generator's lines (`benches::ingest_load`: 1,000
//! trackers named by `device_id`, about 590 bytes a line with their inputs
//! and states, 1.5% copies, some late lines).
//!
//! - `intake/parse`: a 1,000-line NDJSON body into the validated rows of a
//!   write (`ingest::intake::parse_body_capped`, what `POST /v2/intake` runs
//!   first);
//! - `intake/encode`: each row's WAL encoding and content hash;
//! - `intake/prepare`: the memtable batches (sorted, cut, inner columns'
//!   keys listed), the rows dropped;
//! - `intake/live`: a write's acknowledged points recorded in the live
//!   trails (`ingest::LivePositions`), 1.5% of them copies of earlier
//!   points and 0.5% late. The fleet has 100,000 trackers with a minute
//!   of points each: in the server, 10,000 trackers' rings are out of the
//!   caches by the time their next point comes (the rest of the intake
//!   runs between), and with 10,000 here they stayed in them (58 ns a
//!   point against about 380 in the server's profile; 100,000 take
//!   190-260).
//! - `writer/admit`: the writer thread's dedup of a write whose messages
//!   are all new (`DedupIndex::admit`, through `ingest::stages::DedupFleet`):
//!   100,000 trackers sending a message a second, interleaved, their
//!   partitions loaded; the keys counted off as flushed every million
//!   messages.
//!
//! Throughput is in messages. What these leave out of a request: HTTP,
//! resolving device ids, the writer thread (dedup, WAL, fsync), the flusher.
//!
//! `cargo bench -p benches --bench intake`

use std::collections::HashMap;
use std::hint::black_box;

use benches::ingest_load::server::planned_devices;
use benches::ingest_load::workload::{Format, Pool, StreamConfig};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use ingest::LivePoint;
use ingest::Rows;
use ingest::intake::{LineRules, TrackerRef, parse_body_capped};
use schemas::TrackerId;

/// The server's allocator (`trackhouse/src/main.rs`): the stages allocate
/// per message, and glibc's malloc would cost them differently.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Lines of the body each stage runs on.
const LINES: usize = 1_000;
/// 2024-06-02T00:00:00Z: the midnight the lines cross.
const MIDNIGHT_MS: i64 = 1_717_286_400_000;

/// A body of the load generator's lines and its rows, resolved.
struct Setup {
    body: Vec<u8>,
    rules: LineRules,
    rows: Rows,
}

#[expect(
    clippy::expect_used,
    clippy::panic,
    reason = "the benchmark's inputs are generated from constants, valid by construction"
)]
fn setup() -> Setup {
    // The load generator's own trackers (its template's device ids).
    let devices = planned_devices(1_000);
    let config = StreamConfig {
        pool_lines: 4 * LINES,
        expected_lines: 8 * LINES as u64,
        duplicate_share: 0.015,
        late_share: 0.005,
        midnight_ms: MIDNIGHT_MS,
        midnight_at: 0.1,
        warmup_s: 900,
        seed: 17,
        threads: 2,
    };
    let pool = Pool::generate(&devices, Format::Intake, &config).expect("the pool");
    let mut body = Vec::new();
    // Past the first lines, which are all parked vehicles' first seconds.
    pool.render(LINES as u64..2 * LINES as u64, &mut body);
    let rules = LineRules::at(MIDNIGHT_MS + 86_400_000);
    let (mut parsed, rejected) = parse_body_capped(&body, &rules, 10);
    assert_eq!((parsed.rows.len(), rejected.total()), (LINES, 0));
    let trackers: HashMap<&str, TrackerId> = devices
        .iter()
        .map(|d| (d.device_id.as_str(), d.tracker))
        .collect();
    for (row, tracker) in parsed.trackers.iter().enumerate() {
        let TrackerRef::DeviceId(device) = tracker else {
            panic!("the generator names devices");
        };
        parsed.rows.set_tracker(row, trackers[device.as_str()]);
    }
    Setup {
        body,
        rules,
        rows: parsed.rows,
    }
}

#[expect(
    clippy::expect_used,
    reason = "the rows were parsed and resolved; preparing them cannot fail"
)]
fn stages(c: &mut Criterion) {
    let setup = setup();
    let mut group = c.benchmark_group("intake");
    group.throughput(Throughput::Elements(LINES as u64));
    group.bench_function("parse", |b| {
        b.iter(|| parse_body_capped(black_box(&setup.body), &setup.rules, 100))
    });
    group.bench_function("encode", |b| {
        b.iter_batched(
            || setup.rows.clone(),
            ingest::stages::encode,
            BatchSize::LargeInput,
        )
    });
    group.bench_function("prepare", |b| {
        b.iter_batched(
            || ingest::stages::encode(setup.rows.clone()),
            |encoded| ingest::stages::prepare(encoded).expect("prepared"),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("live", |b| {
        let fleet = Fleet::filled();
        let mut write = fleet.first_write;
        b.iter_batched(
            || {
                write += 1;
                fleet.write(write)
            },
            |points| ingest::stages::record_live(&fleet.live, points),
            BatchSize::LargeInput,
        )
    });
    group.finish();

    // The writer thread's share: each message settled by the dedup index.
    let mut group = c.benchmark_group("writer");
    group.throughput(Throughput::Elements(LINES as u64));
    group.bench_function("admit", |b| {
        let fleet = std::cell::RefCell::new(ingest::stages::DedupFleet::new(DEDUP_FLEET));
        let mut writes = 0_u64;
        b.iter_batched(
            || {
                let mut fleet = fleet.borrow_mut();
                writes += 1;
                // The flusher counts rows off about every million.
                if writes % 1_000 == 0 {
                    fleet.flush();
                }
                fleet.next_write(LINES)
            },
            |keys| fleet.borrow_mut().admit(&keys),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// Trackers of the writer's benchmark: ten times the load generator's, so
/// that their partitions are out of the caches as the server's are (as
/// [`FLEET`]).
const DEDUP_FLEET: u64 = 100_000;

/// Trackers of the live-trails fleet: ten times the load generator's, so
/// that their rings are out of the caches as the server's are.
const FLEET: u64 = 100_000;
/// Seconds of points every tracker has before the measured writes.
const FILLED_SECONDS: u64 = 60;

/// Live trails of [`FLEET`] trackers, each reporting once a second, fed
/// writes of [`LINES`] points of interleaved trackers as bodies bring them.
struct Fleet {
    live: ingest::LivePositions,
    /// The first write not yet recorded.
    first_write: u64,
}

impl Fleet {
    /// Every tracker's first [`FILLED_SECONDS`] seconds, recorded.
    fn filled() -> Self {
        let fleet = Self {
            live: ingest::stages::live_store(
                ingest::IngestConfig::new(".").live_points_per_tracker,
            ),
            first_write: FILLED_SECONDS * FLEET / LINES as u64,
        };
        for write in 0..fleet.first_write {
            ingest::stages::record_live(&fleet.live, fleet.write(write));
        }
        fleet
    }

    /// Write `n`: second `n / (FLEET / LINES)` of a share of the trackers
    /// (in an order that interleaves them), a point in 67 being a copy of
    /// one sent up to 20 s before and one in 200 a point half a second
    /// between two seconds already held.
    fn write(&self, n: u64) -> Vec<(TrackerId, LivePoint)> {
        let writes_a_second = FLEET / LINES as u64;
        let second = n / writes_a_second;
        let first = (n % writes_a_second) * LINES as u64;
        (first..first + LINES as u64)
            .map(|i| {
                // 7,919 is prime to 10,000: every tracker once a second.
                let tracker = (i * 7_919) % FLEET;
                let at_ms = if i % 67 == 0 && second > 20 {
                    (second - 1 - n % 20) * 1_000
                } else if i % 200 == 0 && second > 3 {
                    (second - 3) * 1_000 + 500
                } else {
                    second * 1_000
                };
                (TrackerId(tracker as i64 + 1), point(tracker, at_ms))
            })
            .collect()
    }
}

/// Where `tracker` is at `ms` after the start: moving at about 40 km/h.
fn point(tracker: u64, ms: u64) -> LivePoint {
    let start_ms = 1_717_286_400_000;
    let along = ms as f64 / 1_000.0 * 1e-4;
    LivePoint {
        message_time_ms: start_ms + ms as i64,
        server_time_ms: start_ms + ms as i64 + 700 + (ms % 300) as i64,
        lat: 50.0 + tracker as f64 * 1e-3 + along,
        lng: 10.0 + tracker as f64 * 1e-3 - along / 2.0,
        speed: Some(40.0 + (ms % 7) as f64),
        heading: Some((tracker % 360) as i32),
    }
}

criterion_group!(benches, stages);
criterion_main!(benches);
