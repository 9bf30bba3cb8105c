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
//!   keys listed), the rows dropped.
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
    group.finish();
}

criterion_group!(benches, stages);
criterion_main!(benches);
