use std::time::Duration;

use arrow::array::AsArray;
use arrow::datatypes::Int64Type;
use prometheus_client::registry::Registry;
use schemas::{Message, StateValue, TelemetrySource, TrackerId};

use super::*;

const DAY_MS: i64 = 86_400_000;
const NOW_MS: i64 = 1_717_200_000_000; // 2024-06-01

fn config(dir: &std::path::Path) -> IngestConfig {
    IngestConfig {
        flush_interval: Duration::from_secs(3600),
        ..IngestConfig::new(dir)
    }
}

fn open(dir: &std::path::Path) -> Ingest {
    Ingest::open(config(dir), &mut Registry::default()).unwrap()
}

fn message(tracker: i64, time_ms: i64, fuel: f64) -> Message {
    Message {
        tracker_id: TrackerId(tracker),
        message_time_ms: time_ms,
        server_time_ms: NOW_MS,
        lat: Some(43.2),
        inputs: vec![("lls_level_1".into(), fuel)],
        states: vec![("ignition".into(), StateValue::Flag(true))],
        ..Message::default()
    }
}

fn rows(snapshot: &TelemetrySnapshot) -> u64 {
    snapshot.files.iter().map(|f| f.rows).sum::<u64>()
        + snapshot
            .unflushed
            .iter()
            .map(|b| b.num_rows() as u64)
            .sum::<u64>()
}

#[tokio::test]
async fn writes_are_visible_at_once_and_flushed_to_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = open(dir.path());
    let outcome = ingest
        .write(
            (0..100)
                .map(|i| message(1, NOW_MS + i * 1000, i as f64))
                .collect(),
        )
        .await
        .unwrap();
    assert_eq!(
        outcome,
        WriteOutcome {
            accepted: 100,
            duplicates: 0,
            rejected: Vec::new(),
        }
    );
    let before = ingest.snapshot();
    assert_eq!(rows(&before), 100);
    assert!(before.files.is_empty());
    ingest.flush().unwrap();
    let after = ingest.snapshot();
    assert!(after.unflushed.is_empty());
    assert_eq!(after.files.len(), 1);
    let file = &after.files[0];
    assert_eq!((file.rows, file.tracker_min, file.tracker_max), (100, 1, 1));
    assert_eq!(
        (file.message_time_min_ms, file.message_time_max_ms),
        (NOW_MS, NOW_MS + 99_000)
    );
    assert_eq!(
        *file.inner_columns,
        ["inputs.lls_level_1", "states.ignition"]
    );
    assert!(after.root.join(&file.path).exists());
    ingest.shutdown().unwrap();
}

#[tokio::test]
async fn retransmissions_are_stored_once_and_same_second_messages_twice() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = open(dir.path());
    let batch: Vec<Message> = (0..10)
        .map(|i| message(1, NOW_MS + i * 1000, 1.0))
        .collect();
    ingest.write(batch.clone()).await.unwrap();
    // The retry arrives later: another server time, same content.
    let mut retry = batch.clone();
    for m in &mut retry {
        m.server_time_ms += 60_000;
    }
    assert_eq!(
        ingest.write(retry).await.unwrap(),
        WriteOutcome {
            accepted: 0,
            duplicates: 10,
            rejected: Vec::new(),
        }
    );
    // Same tracker and second, other content: kept.
    assert_eq!(
        ingest
            .write(vec![message(1, NOW_MS, 2.0)])
            .await
            .unwrap()
            .accepted,
        1
    );
    // Duplicates inside one request count too.
    let twice = vec![message(2, NOW_MS, 1.0), message(2, NOW_MS, 1.0)];
    assert_eq!(
        ingest.write(twice).await.unwrap(),
        WriteOutcome {
            accepted: 1,
            duplicates: 1,
            rejected: Vec::new(),
        }
    );
    ingest.flush().unwrap();
    assert_eq!(
        ingest.write(batch).await.unwrap().duplicates,
        10,
        "also against flushed files"
    );
    assert_eq!(rows(&ingest.snapshot()), 12);
    ingest.shutdown().unwrap();
}

#[tokio::test]
async fn acknowledged_writes_survive_a_crash_and_stay_deduplicated() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = open(dir.path());
    ingest
        .write((0..50).map(|i| message(3, NOW_MS + i, 1.0)).collect())
        .await
        .unwrap();
    ingest.flush().unwrap();
    ingest
        .write((50..80).map(|i| message(3, NOW_MS + i, 1.0)).collect())
        .await
        .unwrap();
    ingest.crash_for_tests();
    drop(ingest);

    let ingest = open(dir.path());
    let snapshot = ingest.snapshot();
    assert_eq!(
        rows(&snapshot),
        80,
        "30 rows replayed from the WAL, 50 from Parquet"
    );
    assert_eq!(
        snapshot
            .unflushed
            .iter()
            .map(|b| b.num_rows())
            .sum::<usize>(),
        30
    );
    let again = ingest
        .write((0..80).map(|i| message(3, NOW_MS + i, 1.0)).collect())
        .await
        .unwrap();
    assert_eq!(
        again,
        WriteOutcome {
            accepted: 0,
            duplicates: 80,
            rejected: Vec::new(),
        }
    );
    ingest.flush().unwrap();
    ingest.shutdown().unwrap();
    drop(ingest);
    // A clean restart replays nothing: the WAL was truncated after the flush.
    let ingest = open(dir.path());
    assert!(ingest.snapshot().unflushed.is_empty());
    assert_eq!(rows(&ingest.snapshot()), 80);
}

#[tokio::test]
async fn late_messages_land_in_their_message_day_with_todays_server_time() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = open(dir.path());
    ingest.write(vec![message(4, NOW_MS, 1.0)]).await.unwrap();
    ingest
        .write(vec![
            message(4, NOW_MS - 3 * DAY_MS, 1.0),
            message(5, NOW_MS - 3 * DAY_MS + 1, 1.0),
        ])
        .await
        .unwrap();
    ingest.flush().unwrap();
    let snapshot = ingest.snapshot();
    let mut days: Vec<String> = snapshot
        .files
        .iter()
        .map(|f| f.path.parent().unwrap().display().to_string())
        .collect();
    days.sort();
    assert_eq!(days, ["day=2024-05-29", "day=2024-06-01"]);
    let late = snapshot
        .files
        .iter()
        .find(|f| f.message_time_max_ms < NOW_MS)
        .unwrap();
    assert_eq!((late.tracker_min, late.tracker_max), (4, 5));
    assert_eq!(late.server_time_min_ms, NOW_MS);
    assert!(late.may_hold(
        4,
        (NOW_MS - 4 * DAY_MS, NOW_MS - 2 * DAY_MS),
        (NOW_MS, NOW_MS + 1)
    ));
    assert!(!late.may_hold(
        4,
        (NOW_MS - 4 * DAY_MS, NOW_MS - 2 * DAY_MS),
        (NOW_MS - DAY_MS, NOW_MS)
    ));
    // Rows are sorted by tracker, then message time.
    let file = std::fs::File::open(snapshot.root.join(&late.path)).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let trackers: Vec<i64> = reader
        .flat_map(|b| {
            b.unwrap()
                .column_by_name("tracker_id")
                .unwrap()
                .as_primitive::<Int64Type>()
                .values()
                .to_vec()
        })
        .collect();
    assert_eq!(trackers, [4, 5]);
    ingest.shutdown().unwrap();
}

#[tokio::test]
async fn a_full_memtable_refuses_writes_until_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = Ingest::open(
        IngestConfig {
            max_unflushed_rows: 10,
            ..config(dir.path())
        },
        &mut Registry::default(),
    )
    .unwrap();
    ingest
        .write((0..11).map(|i| message(1, NOW_MS + i, 1.0)).collect())
        .await
        .unwrap();
    let refused = ingest
        .write(vec![message(1, NOW_MS + 99, 1.0)])
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::Backpressure { .. }), "{refused:?}");
    assert_eq!(
        schemas::HasCode::code(&refused),
        schemas::ErrorCode::QueueUnavailable
    );
    ingest.flush().unwrap();
    assert_eq!(
        ingest
            .write(vec![message(1, NOW_MS + 99, 1.0)])
            .await
            .unwrap()
            .accepted,
        1
    );
    ingest.shutdown().unwrap();
}

/// A preparer's clones (one request's chunks) are admitted or refused
/// together, by the memtable's state at the first of them: a body admitted
/// is stored whole though the memtable passes its limit halfway through
/// it, and one refused stores nothing, though the memtable has room again
/// when its later chunks are prepared.
#[tokio::test]
async fn the_writes_of_one_preparer_are_admitted_or_refused_together() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = Ingest::open(
        IngestConfig {
            max_unflushed_rows: 10,
            ..config(dir.path())
        },
        &mut Registry::default(),
    )
    .unwrap();
    let rows = |from: i64, n: i64| {
        let messages: Vec<Message> = (from..from + n)
            .map(|i| message(1, NOW_MS + i, 1.0))
            .collect();
        Rows::from_messages(&messages)
    };
    let admitted = ingest.preparer().unwrap();
    let first = admitted.prepare(rows(0, 11)).unwrap();
    let handed = ingest.hand(vec![first], false).await.unwrap();
    assert_eq!(handed.outcomes().await.unwrap()[0].accepted, 11);
    // Past the limit now: a new request is refused, this one's next chunk is not.
    let refused = ingest.preparer().unwrap();
    assert!(matches!(
        refused.prepare(rows(100, 1)),
        Err(Error::Backpressure { .. })
    ));
    let second = admitted.clone().prepare(rows(11, 5)).unwrap();
    let outcomes = ingest.commit_all(vec![second]).await.unwrap();
    assert_eq!(outcomes[0].accepted, 5);
    ingest.flush().unwrap();
    // Room again, but the refused request stays refused, every chunk of it.
    assert!(matches!(
        refused.clone().prepare(rows(100, 1)),
        Err(Error::Backpressure { .. })
    ));
    assert_eq!(
        ingest
            .write(vec![message(1, NOW_MS + 100, 1.0)])
            .await
            .unwrap()
            .accepted,
        1
    );
    // A preparer holds the loader's queue open: the engine stops once they are gone.
    drop((admitted, refused));
    ingest.shutdown().unwrap();
}

/// Past `max_unflushed_bytes` of Arrow arrays in memory, writes are
/// refused (counted by limit) until a flush frees them.
#[tokio::test]
async fn a_memtable_past_its_byte_bound_refuses_writes_until_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let mut registry = Registry::default();
    let config = IngestConfig {
        max_unflushed_bytes: 64 * 1024,
        ..config(dir.path())
    };
    let ingest = Ingest::open(config, &mut registry).unwrap();
    let batch = |from: i64| {
        (from..from + 1_000)
            .map(|i| message(1, NOW_MS + i, 1.0))
            .collect()
    };
    ingest.write(batch(0)).await.unwrap();
    assert!(ingest.shared.read().unflushed_bytes > 64 * 1024);
    let refused = ingest.write(batch(1_000)).await.unwrap_err();
    assert!(
        matches!(refused, Error::Backpressure { reason } if reason.contains("bytes")),
        "{refused:?}"
    );
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains("trackhouse_ingest_backpressure_total{limit=\"unflushed_bytes\"} 1"),
        "{text}"
    );
    ingest.flush().unwrap();
    assert_eq!(ingest.write(batch(1_000)).await.unwrap().accepted, 1_000);
    ingest.shutdown().unwrap();
}

/// Polls until `done` holds, for up to five seconds of background work.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..250 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting until {what}");
}

#[tokio::test]
async fn small_files_of_a_day_are_merged_and_replaced_files_outlive_their_readers() {
    let dir = tempfile::tempdir().unwrap();
    let config = IngestConfig {
        compact_min_files: 4,
        ..config(dir.path())
    };
    let ingest = Ingest::open(config, &mut Registry::default()).unwrap();
    // Four flushes, interleaved trackers, each its own small file of the same day;
    // a reader takes its snapshot after the third, before a merge is due.
    let mut before = None;
    for round in 0..4 {
        let batch = (0..10)
            .map(|i| message(1 + (i % 2), NOW_MS + round * 100 + i, i as f64))
            .collect();
        ingest.write(batch).await.unwrap();
        ingest.flush().unwrap();
        if round == 2 {
            before = Some(ingest.snapshot());
        }
    }
    let before = before.unwrap();
    let old_paths: Vec<_> = before
        .files
        .iter()
        .map(|f| before.root.join(&f.path))
        .collect();
    assert_eq!(old_paths.len(), 3, "{old_paths:?}");
    eventually("the day is compacted", || {
        ingest.snapshot().files.len() == 1
    });
    let after = ingest.snapshot();
    assert_eq!(rows(&after), 40);
    let file = &after.files[0];
    assert_eq!((file.tracker_min, file.tracker_max, file.rows), (1, 2, 40));
    // The reader that took its snapshot before the merge can still open every file it lists.
    assert!(
        old_paths.iter().all(|p| p.exists()),
        "files are kept while a snapshot lists them"
    );
    drop(before);
    eventually("replaced files are deleted", || {
        old_paths.iter().all(|p| !p.exists())
    });
    assert!(after.root.join(&file.path).exists());
    // Merging changes no keys: the same messages are still duplicates.
    let again = ingest
        .write(
            (0..10)
                .map(|i| message(1 + (i % 2), NOW_MS + i, i as f64))
                .collect(),
        )
        .await
        .unwrap();
    assert_eq!(again.duplicates, 10);
    ingest.shutdown().unwrap();
}

#[tokio::test]
async fn retention_removes_rows_older_than_each_trackers_cutoff() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = open(dir.path());
    let old: Vec<Message> = (0..5)
        .map(|i| message(1, NOW_MS - 10 * DAY_MS + i, 1.0))
        .collect();
    ingest.write(old.clone()).await.unwrap();
    ingest
        .write((0..5).map(|i| message(1, NOW_MS + i, 1.0)).collect())
        .await
        .unwrap();
    // Tracker 2 has no cutoff: it keeps everything.
    ingest
        .write(
            (0..5)
                .map(|i| message(2, NOW_MS - 10 * DAY_MS + i, 1.0))
                .collect(),
        )
        .await
        .unwrap();
    ingest.flush().unwrap();
    assert_eq!(rows(&ingest.snapshot()), 15);
    ingest.set_retention(HashMap::from([(1, NOW_MS - 5 * DAY_MS)]));
    eventually("old rows of tracker 1 are gone", || {
        rows(&ingest.snapshot()) == 10
    });
    let snapshot = ingest.snapshot();
    let old_day = snapshot
        .files
        .iter()
        .find(|f| f.message_time_max_ms < NOW_MS)
        .unwrap();
    assert_eq!(
        (old_day.tracker_min, old_day.tracker_max, old_day.rows),
        (2, 2, 5)
    );
    // The removed rows' keys are forgotten with them.
    assert_eq!(ingest.write(old).await.unwrap().accepted, 5);
    ingest.shutdown().unwrap();
}

#[tokio::test]
async fn retention_rewrites_only_files_it_drops_rows_from_and_once_a_day() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = open(dir.path());
    let at = |tracker: i64, day: i64| -> Vec<Message> {
        (0..5)
            .map(|i| message(tracker, NOW_MS + day * DAY_MS + i, 1.0))
            .collect()
    };
    // Ten days ago: trackers 1 and 3; today: trackers 1, 2 and 3.
    for (tracker, day) in [(1, -10), (3, -10), (1, 0), (2, 0), (3, 0)] {
        ingest.write(at(tracker, day)).await.unwrap();
    }
    ingest.flush().unwrap();
    let metrics = &ingest.shared.metrics;
    let runs = || metrics.retention_runs.get();
    let rewrites = || metrics.retention_rewrites.get();
    let keep = |days: i64, extra_ms: i64| {
        let cutoff = NOW_MS - days * DAY_MS + extra_ms;
        HashMap::from([(1, cutoff), (2, cutoff)])
    };

    // Tracker 2 has nothing older than five days: the old day's file, whose
    // tracker range 1..3 takes it in, is left alone.
    ingest.set_retention(HashMap::from([(2, NOW_MS - 5 * DAY_MS)]));
    eventually("a run", || runs() == 1);
    assert_eq!(rewrites(), 0);
    // Tracker 1 keeps five days too: the old file is rewritten once.
    ingest.set_retention(keep(5, 0));
    eventually("a second run", || runs() == 2);
    assert_eq!(rewrites(), 1);
    assert_eq!(rows(&ingest.snapshot()), 20);
    // The cutoffs move on every ten minutes within the day: no run at all.
    for step in 1..=6 {
        ingest.set_retention(keep(5, step * 600_000));
    }
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!((runs(), rewrites()), (2, 1));
    // A day later a run comes, with nothing of tracker 1 or 2 left to drop.
    ingest.set_retention(keep(4, 0));
    eventually("a third run", || runs() == 3);
    assert_eq!(rewrites(), 1);
    assert_eq!(rows(&ingest.snapshot()), 20);
    ingest.shutdown().unwrap();
}

mod limits;

/// Random writes (retransmissions, late messages over three days, same-time
/// messages of other content) through flushes, evictions of a tiny dedup
/// index, crashes and clean restarts: each write accepts exactly the messages
/// a model of what was stored says are new, and the store ends with them all.
#[tokio::test]
async fn exactly_once_through_flushes_evictions_and_restarts_against_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let config = IngestConfig {
        dedup_max_entries: 64,
        ..config(dir.path())
    };
    let mut model: HashSet<(i64, i64, u64)> = HashSet::new();
    let mut sent: Vec<Message> = Vec::new();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut newest = NOW_MS;
    for round in 0..6 {
        let ingest = Ingest::open(config.clone(), &mut Registry::default()).unwrap();
        for step in 0..12 {
            let mut batch = Vec::new();
            for _ in 0..40 {
                let message = match next(10) {
                    0 | 1 if !sent.is_empty() => sent[next(sent.len() as u64) as usize].clone(),
                    2 => message(
                        next(6) as i64,
                        newest - next(3 * DAY_MS as u64) as i64,
                        next(2) as f64,
                    ),
                    _ => {
                        newest += next(3) as i64 * 1000;
                        message(next(6) as i64, newest, next(2) as f64)
                    }
                };
                batch.push(message);
            }
            let expected = batch
                .iter()
                .filter(|m| {
                    model.insert((m.tracker_id.0, m.message_time_ms, m.inputs[0].1.to_bits()))
                })
                .count();
            sent.extend(batch.iter().cloned());
            let outcome = ingest.write(batch).await.unwrap();
            assert_eq!(
                (outcome.accepted, outcome.duplicates),
                (expected, 40 - expected),
                "round {round}, step {step}"
            );
            if step % 4 == 3 {
                ingest.flush().unwrap();
            }
        }
        if round % 2 == 0 {
            ingest.crash_for_tests();
        } else {
            ingest.shutdown().unwrap();
        }
    }
    let ingest = Ingest::open(config, &mut Registry::default()).unwrap();
    assert_eq!(rows(&ingest.snapshot()), model.len() as u64);
    ingest.shutdown().unwrap();
}

/// After a restart, messages newer than everything their tracker has stored
/// are known new from the catalog alone; a late one reads the keys of its time.
#[tokio::test]
async fn newer_messages_need_no_read_of_stored_keys_and_late_ones_do() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = open(dir.path());
    ingest
        .write(
            (0..20)
                .map(|i| message(i % 4, NOW_MS + i * 1000, 1.0))
                .collect(),
        )
        .await
        .unwrap();
    ingest.shutdown().unwrap();
    drop(ingest);

    let ingest = open(dir.path());
    let loads = || ingest.shared.metrics.dedup_loads.get();
    let writer_loads = || ingest.shared.metrics.dedup_writer_loads.get();
    let newer = ingest
        .write(
            (0..20)
                .map(|i| message(i % 4, NOW_MS + 60_000 + i, 1.0))
                .collect(),
        )
        .await
        .unwrap();
    assert_eq!((newer.accepted, loads()), (20, 0));
    let late = ingest
        .write(vec![
            message(1, NOW_MS + 1000, 1.0),
            message(1, NOW_MS + 500, 1.0),
        ])
        .await
        .unwrap();
    assert_eq!((late.accepted, late.duplicates, loads()), (1, 1, 1));
    assert_eq!(
        writer_loads(),
        0,
        "read before the write queued, not on the writer"
    );
    ingest.shutdown().unwrap();
}

/// A message minutes behind its tracker's newest reads the keys of those
/// minutes, not its day's; one further back reads back to it; each then
/// settles retransmissions exactly (decision 142).
#[tokio::test]
async fn a_late_message_reads_the_keys_from_its_time_not_its_day() {
    let dir = tempfile::tempdir().unwrap();
    let config = IngestConfig {
        dedup_recent: Duration::ZERO,
        ..config(dir.path())
    };
    let ingest = Ingest::open(config, &mut Registry::default()).unwrap();
    // An hour of one tracker at 1 Hz (it starts at midnight), in six files.
    let minute = 60_000;
    let at = |second: i64, fuel: f64| message(7, NOW_MS + second * 1000, fuel);
    for file in 0..6 {
        let seconds = file * 600..(file + 1) * 600;
        ingest
            .write(seconds.map(|s| at(s, 1.0)).collect())
            .await
            .unwrap();
        ingest.flush().unwrap();
    }
    let entries = || ingest.shared.dedup.lock().entries();
    // Nothing recent is held (no window), but the newest key.
    assert_eq!(entries(), 1);

    let late = ingest
        .write(vec![at(3_540, 1.0), at(3_541, 2.0)])
        .await
        .unwrap();
    assert_eq!((late.accepted, late.duplicates), (1, 1));
    // Read from minute 55 (on 5 minutes) to the held newest: 299 keys;
    // with it and the new one, 301.
    assert_eq!(entries(), 301);

    let older = ingest
        .write(vec![at(600, 1.0), at(601, 2.0), at(3_500, 1.0)])
        .await
        .unwrap();
    assert_eq!((older.accepted, older.duplicates), (1, 2));
    // Now complete from minute 10: 2,700 more keys and the new one.
    assert_eq!(entries(), 3_002);
    assert!(
        ingest
            .shared
            .dedup
            .lock()
            .covers((7, NOW_MS / DAY_MS), NOW_MS + 10 * minute)
    );
    assert!(
        !ingest
            .shared
            .dedup
            .lock()
            .covers((7, NOW_MS / DAY_MS), NOW_MS + 10 * minute - 1)
    );

    // After a flush, the partition keeps its keys: sent again, all settled
    // without a read.
    ingest.flush().unwrap();
    let loads = ingest.shared.metrics.dedup_loads.get();
    let again = ingest
        .write(vec![at(3_541, 2.0), at(601, 2.0), at(1_000, 1.0)])
        .await
        .unwrap();
    assert_eq!((again.accepted, again.duplicates), (0, 3));
    assert_eq!(ingest.shared.metrics.dedup_loads.get(), loads);
    ingest.shutdown().unwrap();
    drop(ingest);
    let ingest = open(dir.path());
    assert_eq!(rows(&ingest.snapshot()), 3_602);
    ingest.shutdown().unwrap();
}

/// A partition read ahead of a write, before a flush dropped keys from the
/// index, is not installed: it could miss the flushed rows.
#[tokio::test]
async fn keys_read_ahead_of_a_flush_are_not_trusted() {
    let at = |s: i64, fuel: f64| message(1, NOW_MS + s * 1000, fuel);
    // Returns the engine, a stale read ahead of a late message, and a
    // message flushed, and dropped from the index, after the read began.
    async fn overtaken(
        dir: &std::path::Path,
        at: impl Fn(i64, f64) -> Message,
    ) -> (Ingest, u64, Vec<Loaded>, Message) {
        let config = IngestConfig {
            dedup_recent: Duration::ZERO,
            ..config(dir)
        };
        let ingest = Ingest::open(config, &mut Registry::default()).unwrap();
        ingest.write(vec![at(0, 1.0), at(1, 1.0)]).await.unwrap();
        ingest.flush().unwrap();
        ingest.write(vec![at(2, 1.0)]).await.unwrap();
        // Older than a key the flush dropped: its partition's keys from its time must be read.
        let late = Entry::new(at(0, 2.0)).unwrap();
        let needs = ingest
            .shared
            .screen(&[late.dedup_key()])
            .0
            .expect("a late message needs its partition");
        // As the loader reads: the generation, then the files.
        let (generation, times) = {
            let dedup = ingest.shared.dedup.lock();
            (dedup.generation(), key_times(&dedup, &needs.complete))
        };
        let stale = ingest
            .shared
            .read_partitions(&needs.partitions, &times)
            .unwrap();
        // Meanwhile second 2 goes to a file, and (second 3 being newer, no
        // recent window) its key leaves the index.
        ingest.write(vec![at(3, 1.0)]).await.unwrap();
        ingest.flush().unwrap();
        (ingest, generation, stale, at(2, 1.0))
    }

    let dir = tempfile::tempdir().unwrap();
    let (ingest, generation, stale, flushed) = overtaken(dir.path(), at).await;
    {
        let mut dedup = ingest.shared.dedup.lock();
        assert!(
            !dedup.install(generation, stale.clone()),
            "a flush came between"
        );
        // Trusted, the stale read would let a retransmission in again.
        let now = dedup.generation();
        assert!(dedup.install(now, stale));
    }
    let again = ingest.write(vec![flushed]).await.unwrap();
    assert_eq!(
        again.accepted, 1,
        "the hazard the generation guards against"
    );
    ingest.shutdown().unwrap();
    drop(ingest);

    // Through the engine: the read is discarded, the writer reads the
    // partition itself, and the retransmission is a duplicate.
    let dir = tempfile::tempdir().unwrap();
    let (ingest, generation, stale, flushed) = overtaken(dir.path(), at).await;
    let writer_loads = ingest.shared.metrics.dedup_writer_loads.get();
    let installed = ingest.shared.dedup.lock().install(generation, stale);
    assert!(!installed);
    let retransmitted = ingest.write(vec![flushed]).await.unwrap();
    assert_eq!((retransmitted.accepted, retransmitted.duplicates), (0, 1));
    assert_eq!(ingest.shared.metrics.dedup_writer_loads.get(), writer_loads);
    ingest.shutdown().unwrap();
}

/// The memtable is flushed once its arrays take `flush_bytes`, whatever the
/// interval and row count, and the gauge follows.
#[tokio::test]
async fn a_memtable_past_its_bytes_is_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let config = IngestConfig {
        flush_bytes: 1024 * 1024,
        ..config(dir.path())
    };
    let ingest = Ingest::open(config, &mut Registry::default()).unwrap();
    ingest
        .write((0..100).map(|i| message(1, NOW_MS + i, 1.0)).collect())
        .await
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        ingest.snapshot().files.is_empty(),
        "100 rows stay in memory"
    );
    let bytes = ingest.shared.read().unflushed_bytes;
    assert!(bytes > 0 && bytes < 1024 * 1024, "{bytes}");
    ingest
        .write((0..20_000).map(|i| message(2, NOW_MS + i, 1.0)).collect())
        .await
        .unwrap();
    eventually("a flush by bytes", || {
        let snapshot = ingest.snapshot();
        snapshot.unflushed.is_empty() && !snapshot.files.is_empty()
    });
    assert_eq!(ingest.shared.read().unflushed_bytes, 0);
    assert_eq!(rows(&ingest.snapshot()), 20_100);
    ingest.shutdown().unwrap();
}

/// A flush on time writes its files on a thread of lowered priority
/// (counted), and stores what it held as any other flush; a flush with
/// twice its rows waiting is not relaxed (decision 148).
#[tokio::test]
async fn flushes_on_time_are_relaxed_and_store_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut registry = Registry::default();
    let config = IngestConfig {
        flush_rows: 1_000,
        flush_nice: 10,
        ..config(dir.path())
    };
    let ingest = Ingest::open(config, &mut registry).unwrap();
    let relaxed = |registry: &Registry| {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("trackhouse_ingest_relaxed_flushes_total "))
            .unwrap_or_else(|| panic!("no relaxed flush counter in {text}"));
        line.rsplit(' ').next().unwrap().parse::<u64>().unwrap()
    };
    let batch = |tracker: i64, n: i64| (0..n).map(|i| message(tracker, NOW_MS + i, 1.0)).collect();
    let flushed = |ingest: &Ingest, rows: u64| {
        eventually("a flush of every row", || {
            let snapshot = ingest.snapshot();
            snapshot.unflushed.is_empty()
                && snapshot.files.iter().map(|f| f.rows).sum::<u64>() == rows
        })
    };
    // The first flush: nothing says how long one takes, so not relaxed.
    ingest.write(batch(1, 1_000)).await.unwrap();
    flushed(&ingest, 1_000);
    assert_eq!(relaxed(&registry), 0);
    // After idling longer than that flush took (a few ms): relaxed.
    std::thread::sleep(Duration::from_secs(1));
    ingest.write(batch(2, 1_000)).await.unwrap();
    flushed(&ingest, 2_000);
    assert_eq!(relaxed(&registry), 1);
    // Twice a flush's rows waiting: behind, at the engine's priority.
    std::thread::sleep(Duration::from_millis(300));
    ingest.write(batch(3, 2_000)).await.unwrap();
    flushed(&ingest, 4_000);
    assert_eq!(relaxed(&registry), 1);
    assert_eq!(rows(&ingest.snapshot()), 4_000);
    ingest.shutdown().unwrap();
}

#[tokio::test]
async fn writes_encoded_into_reused_buffers_are_logged_and_replayed_as_sent() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = open(dir.path());
    // Writes large enough for a pooled encoding buffer, each with other
    // values than the one before: a later write's record written over an
    // earlier one's bytes must hold only its own.
    let sent = |write: i64| -> Vec<Message> {
        (0..1_000)
            .map(|i| message(5, NOW_MS + write * 10_000 + i, (write * 1_000 + i) as f64))
            .collect()
    };
    for write in 0..4 {
        let outcome = ingest.write(sent(write)).await.unwrap();
        assert_eq!(outcome.accepted, 1_000);
        assert!(
            ingest.shared.encodings.idle() > 0,
            "the writer gave its buffer back"
        );
        assert!(
            ingest.shared.rows.idle() > 0,
            "the preparer gave the write's rows back"
        );
    }
    // A smaller write after them (its encoding in a buffer of its own) and
    // a write that repeats half of the first: only the new half logged.
    let small: Vec<Message> = (0..10).map(|i| message(6, NOW_MS + i, 0.5)).collect();
    assert_eq!(ingest.write(small).await.unwrap().accepted, 10);
    let mut again = sent(0)[500..].to_vec();
    again.extend(sent(4)[..500].iter().cloned());
    let outcome = ingest.write(again).await.unwrap();
    assert_eq!((outcome.accepted, outcome.duplicates), (500, 500));
    ingest.crash_for_tests();
    drop(ingest);

    let ingest = open(dir.path());
    let mut replayed: Vec<(i64, i64, f64)> = Vec::new();
    for batch in &ingest.snapshot().unflushed {
        let trackers = batch
            .column_by_name("tracker_id")
            .unwrap()
            .as_primitive::<Int64Type>();
        let times = batch
            .column_by_name("msg_time")
            .unwrap()
            .as_primitive::<arrow::datatypes::TimestampMillisecondType>();
        let fuel = batch
            .column_by_name("inputs.lls_level_1")
            .unwrap()
            .as_primitive::<arrow::datatypes::Float64Type>();
        for row in 0..batch.num_rows() {
            replayed.push((trackers.value(row), times.value(row), fuel.value(row)));
        }
    }
    replayed.sort_by_key(|&(tracker, time, _)| (tracker, time));
    let mut expected: Vec<(i64, i64, f64)> = (0..4)
        .flat_map(sent)
        .chain(sent(4).into_iter().take(500))
        .chain((0..10).map(|i| message(6, NOW_MS + i, 0.5)))
        .map(|m| (m.tracker_id.0, m.message_time_ms, m.inputs[0].1))
        .collect();
    expected.sort_by_key(|&(tracker, time, _)| (tracker, time));
    assert_eq!(replayed, expected);
}

/// The next group's dedup and appends overlap the sync of the one before;
/// when that sync fails, both fail, and both give their keys back: a retry
/// of either is stored (once), nothing of either was kept.
#[tokio::test]
async fn a_failed_sync_fails_the_group_appended_meanwhile_and_gives_back_both_groups_keys() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = Arc::new(open(dir.path()));
    let first: Vec<Message> = (0..10).map(|i| message(7, NOW_MS + i, 1.0)).collect();
    // The second group repeats the first (duplicates while it is in flight)
    // and adds messages of its own.
    let second: Vec<Message> = (0..15).map(|i| message(7, NOW_MS + i, 1.0)).collect();
    open_sender(&ingest.commands)
        .unwrap()
        .send(Command::FailNextSync {
            pause: Duration::from_millis(400),
        })
        .unwrap();
    let failing = tokio::spawn({
        let (ingest, first) = (ingest.clone(), first.clone());
        async move { ingest.write(first).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let meanwhile = ingest.write(second.clone()).await;
    let failed = failing.await.unwrap();
    for outcome in [&failed, &meanwhile] {
        assert!(
            matches!(outcome, Err(Error::StorageUnavailable { .. })),
            "{outcome:?}"
        );
    }
    assert_eq!(rows(&ingest.snapshot()), 0, "nothing of either was kept");
    // The log heals after its pause; then both are stored, each row once.
    let mut retried = ingest.write(second.clone()).await;
    for _ in 0..50 {
        if retried.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        retried = ingest.write(second.clone()).await;
    }
    assert_eq!(
        retried.unwrap(),
        WriteOutcome {
            accepted: 15,
            duplicates: 0,
            rejected: Vec::new(),
        }
    );
    assert_eq!(ingest.write(first).await.unwrap().duplicates, 10);
    ingest.crash_for_tests();
    drop(ingest);
    let ingest = open(dir.path());
    assert_eq!(rows(&ingest.snapshot()), 15, "replayed once each");
}

/// With the WAL's fsync off (benchmarks), a group is answered once written
/// out to the kernel: what was acknowledged survives the process, and is
/// deduplicated after the restart as ever.
#[tokio::test]
async fn without_fsync_acknowledged_writes_survive_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let config = IngestConfig {
        wal_fsync: false,
        ..config(dir.path())
    };
    let ingest = Ingest::open(config.clone(), &mut Registry::default()).unwrap();
    for part in 0..3 {
        let outcome = ingest
            .write(
                (part * 10..part * 10 + 10)
                    .map(|i| message(9, NOW_MS + i, 1.0))
                    .collect(),
            )
            .await
            .unwrap();
        assert_eq!(outcome.accepted, 10);
    }
    ingest.crash_for_tests();
    drop(ingest);
    let ingest = Ingest::open(config, &mut Registry::default()).unwrap();
    assert_eq!(rows(&ingest.snapshot()), 30);
    let again = ingest
        .write((0..30).map(|i| message(9, NOW_MS + i, 1.0)).collect())
        .await
        .unwrap();
    assert_eq!((again.accepted, again.duplicates), (0, 30));
}

/// Bytes of the WAL's files under `dir`.
fn wal_bytes_on_disk(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir.join("wal"))
        .unwrap()
        .map(|entry| entry.unwrap().metadata().unwrap().len())
        .sum()
}

/// Records written plain (level 0) and compressed (level 1) replay alike,
/// whatever level the log is opened with: a compressed record leaves out
/// the entries its write dropped (repeats inside the write, rows already
/// stored), and one whose write was mostly stored is written plain. And
/// compressing takes the log's bytes well down.
#[tokio::test]
async fn plain_and_compressed_records_replay_alike_at_either_level() {
    let dir = tempfile::tempdir().unwrap();
    let at_level = |level| IngestConfig {
        wal_zstd_level: level,
        ..config(dir.path())
    };
    let sent = |tracker: i64, from: i64, to: i64| -> Vec<Message> {
        (from..to)
            .map(|i| message(tracker, NOW_MS + i * 1_000, (i % 7) as f64))
            .collect()
    };
    let write = async |ingest: &Ingest, messages: Vec<Message>| {
        let outcome = ingest.write(messages).await.unwrap();
        (outcome.accepted, outcome.duplicates)
    };

    let plain = Ingest::open(at_level(0), &mut Registry::default()).unwrap();
    assert_eq!(write(&plain, sent(1, 0, 1_000)).await, (1_000, 0));
    plain.crash_for_tests();
    drop(plain);
    let plain_bytes = wal_bytes_on_disk(dir.path());

    let compressed = Ingest::open(at_level(1), &mut Registry::default()).unwrap();
    assert_eq!(
        rows(&compressed.snapshot()),
        1_000,
        "plain records replayed"
    );
    assert_eq!(write(&compressed, sent(2, 0, 1_000)).await, (1_000, 0));
    let grown = wal_bytes_on_disk(dir.path()) - plain_bytes;
    assert!(
        grown * 3 < plain_bytes,
        "1,000 messages took {grown} bytes compressed, {plain_bytes} plain"
    );
    // Repeats inside one write, and a few rows already stored: a
    // compressed record that names the ones dropped.
    let mut mixed = sent(3, 0, 600);
    mixed.extend(sent(3, 100, 300));
    mixed.extend(sent(2, 0, 100));
    assert_eq!(write(&compressed, mixed).await, (600, 300));
    // A write mostly stored: plain, with only its new rows.
    let mut mostly_stored = sent(2, 0, 900);
    mostly_stored.extend(sent(4, 0, 50));
    assert_eq!(write(&compressed, mostly_stored).await, (50, 900));
    compressed.crash_for_tests();
    drop(compressed);

    for level in [0, 1] {
        let ingest = Ingest::open(at_level(level), &mut Registry::default()).unwrap();
        assert_eq!(rows(&ingest.snapshot()), 2_650, "level {level}");
        let mut fuel_by_row: Vec<(i64, i64, f64)> = Vec::new();
        for batch in &ingest.snapshot().unflushed {
            let column = |name| batch.column_by_name(name).unwrap().clone();
            let trackers = column("tracker_id");
            let times = column("msg_time");
            let fuel = column("inputs.lls_level_1");
            let (trackers, times, fuel) = (
                trackers.as_primitive::<Int64Type>(),
                times.as_primitive::<arrow::datatypes::TimestampMillisecondType>(),
                fuel.as_primitive::<arrow::datatypes::Float64Type>(),
            );
            for row in 0..batch.num_rows() {
                fuel_by_row.push((trackers.value(row), times.value(row), fuel.value(row)));
            }
        }
        fuel_by_row.sort_by_key(|&(tracker, time, _)| (tracker, time));
        let expected: Vec<(i64, i64, f64)> = sent(1, 0, 1_000)
            .into_iter()
            .chain(sent(2, 0, 1_000))
            .chain(sent(3, 0, 600))
            .chain(sent(4, 0, 50))
            .map(|m| (m.tracker_id.0, m.message_time_ms, m.inputs[0].1))
            .collect();
        assert_eq!(fuel_by_row, expected, "level {level}");
        let mut everything = sent(1, 0, 1_000);
        everything.extend(sent(2, 0, 1_000));
        everything.extend(sent(3, 0, 600));
        everything.extend(sent(4, 0, 50));
        assert_eq!(write(&ingest, everything).await, (0, 2_650));
        ingest.crash_for_tests();
    }
}
