//! Criterion benchmark of the flusher's main stage, per message: the
//! memtable batches of 100 writes of 1,000 of the load generator's lines
//! (`benches::ingest_load`: 10,000 trackers named by `device_id`,
//! interleaved as its bodies interleave them, about 590 bytes a line with
//! their inputs and states, 1.5% copies, some late lines, a UTC midnight
//! crossed) flushed into a new Parquet store (`ingest::stages::flush`: the
//! rows of each (UTC day, tracker) gathered in time order, day files at the
//! engine's defaults, zstd level 3, 64 Ki-row groups, page statistics, and
//! the catalog's commit with its fsyncs).
//!
//! `flush/compact` is the flusher's other stage: the same rows flushed in
//! [`SMALL_FLUSHES`] parts, then their small day files rewritten into as
//! few as the defaults allow (`ingest::stages::compact`: every file read
//! back, its rows gathered again per (day, tracker), written, committed).
//! At a fleet's usual rate, 10,000 trackers each sending a message a
//! second, a flush holds about 50,000 rows, so every flushed file is small
//! and each row is merged a few times on its way to a full day file: this
//! stage, not the first flush, is most of what the flusher spends.
//!
//! What it leaves out of the flusher thread: swapping the files into the
//! state, the dedup index's count-off of the flushed keys, and deleting WAL
//! segments and replaced files.
//!
//! `cargo bench -p benches --bench flush`

use std::collections::HashMap;
use std::hint::black_box;

use arrow::record_batch::RecordBatch;
use benches::ingest_load::server::planned_devices;
use benches::ingest_load::workload::{Format, Pool, StreamConfig};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use ingest::intake::{LineRules, TrackerRef, parse_body_capped};
use schemas::TrackerId;

/// The server's allocator (`trackhouse/src/main.rs`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Trackers of the fleet, as in the issue-17 load.
const TRACKERS: usize = 10_000;
/// Lines of each write.
const LINES: usize = 1_000;
/// Writes in one flush.
const WRITES: usize = 100;
/// Flushes the rows come in before `flush/compact` rewrites their files.
const SMALL_FLUSHES: usize = 4;
/// 2024-06-02T00:00:00Z: the midnight the lines cross.
const MIDNIGHT_MS: i64 = 1_717_286_400_000;

#[expect(
    clippy::expect_used,
    clippy::panic,
    reason = "the benchmark's inputs are generated from constants, valid by construction"
)]
fn memtable() -> Vec<RecordBatch> {
    let devices = planned_devices(TRACKERS);
    let config = StreamConfig {
        pool_lines: WRITES * LINES,
        expected_lines: (WRITES * LINES) as u64,
        duplicate_share: 0.015,
        late_share: 0.005,
        midnight_ms: MIDNIGHT_MS,
        midnight_at: 0.5,
        warmup_s: 900,
        seed: 17,
        threads: 2,
    };
    let pool = Pool::generate(&devices, Format::Intake, &config).expect("the pool");
    let trackers: HashMap<&str, TrackerId> = devices
        .iter()
        .map(|d| (d.device_id.as_str(), d.tracker))
        .collect();
    let rules = LineRules::at(MIDNIGHT_MS + 86_400_000);
    let mut batches = Vec::new();
    let mut body = Vec::new();
    for write in 0..WRITES as u64 {
        body.clear();
        let first = write * LINES as u64;
        pool.render(first..first + LINES as u64, &mut body);
        let (mut parsed, rejected) = parse_body_capped(&body, &rules, 10);
        assert_eq!((parsed.rows.len(), rejected.total()), (LINES, 0));
        for (row, tracker) in parsed.trackers.iter().enumerate() {
            let TrackerRef::DeviceId(device) = tracker else {
                panic!("the generator names devices");
            };
            parsed.rows.set_tracker(row, trackers[device.as_str()]);
        }
        let encoded = ingest::stages::encode(parsed.rows);
        batches.extend(ingest::stages::memtable_batches(encoded).expect("the batches"));
    }
    batches
}

#[expect(
    clippy::expect_used,
    reason = "a temporary directory and a flush of valid batches do not fail here"
)]
fn flush(c: &mut Criterion) {
    let batches = memtable();
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    // What the files take, once: the other side of the flush's CPU.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let files = ingest::stages::flush(dir.path(), &batches).expect("the flush");
    let bytes_a_row = |dir: &std::path::Path| {
        let files = ingest::listed_files(dir).expect("the files");
        files.iter().map(|f| f.bytes).sum::<u64>() as f64 / rows as f64
    };
    eprintln!(
        "flush: {rows} rows of {} batches into {files} files, {:.1} bytes a row",
        batches.len(),
        bytes_a_row(dir.path())
    );
    let mut group = c.benchmark_group("flush");
    group.sample_size(10);
    group.throughput(Throughput::Elements(rows as u64));
    group.bench_function("parquet", |b| {
        b.iter_batched(
            || tempfile::tempdir().expect("a temporary directory"),
            |dir| {
                let files = ingest::stages::flush(dir.path(), &batches).expect("the flush");
                black_box(files);
                dir
            },
            BatchSize::PerIteration,
        );
    });
    let small = |dir: &std::path::Path| {
        for part in batches.chunks(batches.len().div_ceil(SMALL_FLUSHES)) {
            ingest::stages::flush(dir, part).expect("a small flush");
        }
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    small(dir.path());
    let small_files = ingest::listed_files(dir.path()).expect("the files").len();
    let files = ingest::stages::compact(dir.path()).expect("the compaction");
    eprintln!(
        "compact: {small_files} files of {SMALL_FLUSHES} flushes into {files} files, \
         {:.1} bytes a row",
        bytes_a_row(dir.path())
    );
    group.bench_function("compact", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().expect("a temporary directory");
                small(dir.path());
                dir
            },
            |dir| {
                let files = ingest::stages::compact(dir.path()).expect("the compaction");
                black_box(files);
                dir
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, flush);
criterion_main!(benches);
