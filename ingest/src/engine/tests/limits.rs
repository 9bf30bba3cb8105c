//! Inner columns stay bounded: per tracker and day, in the memtable, in the
//! files, and when a WAL written before the limits replays.

use arrow::array::Array;
use prometheus_client::registry::Registry;
use schemas::columns::InnerKind;
use schemas::{Message, Name, StateValue, TelemetrySource, TrackerId};

use super::{DAY_MS, NOW_MS, config, rows};
use crate::{Ingest, IngestConfig, WriteOutcome};

fn with_inputs(tracker: i64, time_ms: i64, names: impl IntoIterator<Item = String>) -> Message {
    let mut inputs: Vec<(Name, f64)> = names.into_iter().map(|n| (n.into(), 1.0)).collect();
    inputs.sort_by(|a, b| a.0.cmp(&b.0));
    Message {
        tracker_id: TrackerId(tracker),
        message_time_ms: time_ms,
        server_time_ms: NOW_MS,
        inputs,
        ..Message::default()
    }
}

fn names(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{prefix}{i:05}")).collect()
}

fn open_with(dir: &std::path::Path, limit: usize) -> Ingest {
    let config = IngestConfig {
        max_inner_names_per_day: limit,
        ..config(dir)
    };
    Ingest::open(config, &mut Registry::default()).unwrap()
}

#[tokio::test]
async fn a_trackers_day_holds_at_most_the_limit_of_inner_columns() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = open_with(dir.path(), 5);
    let first = ingest
        .write(vec![
            with_inputs(1, NOW_MS, names("a", 0..3)),
            with_inputs(1, NOW_MS + 1, names("a", 3..5)),
            // A sixth name: refused, the rest of the write is stored.
            with_inputs(1, NOW_MS + 2, names("a", 5..6)),
            with_inputs(1, NOW_MS + 3, names("a", 0..1)),
            // Another day and another tracker have limits of their own.
            with_inputs(1, NOW_MS + DAY_MS, names("b", 0..5)),
            with_inputs(2, NOW_MS, names("c", 0..5)),
        ])
        .await
        .unwrap();
    assert_eq!((first.accepted, first.duplicates), (5, 0));
    let [(index, reason)] = first.rejected.as_slice() else {
        panic!("{first:?}");
    };
    assert_eq!(*index, 2);
    assert!(
        reason.contains("6 distinct inner columns") && reason.contains("at most 5"),
        "{reason}"
    );
    // The refused message's column is not in the memtable (its write's
    // batches were built before the writer refused it), nor its row.
    let refused = InnerKind::Inputs.column(&names("a", 5..6)[0]);
    let snapshot = ingest.snapshot();
    assert!(
        snapshot
            .unflushed
            .iter()
            .all(|batch| batch.schema_ref().field_with_name(&refused).is_err()),
        "{refused} is in the memtable"
    );
    let stored: usize = snapshot.unflushed.iter().map(|b| b.num_rows()).sum();
    assert_eq!(stored, 5);
    // A message with a state counts it as a column too; a duplicate is a duplicate.
    let mut with_state = with_inputs(1, NOW_MS + 4, names("a", 0..1));
    with_state.states = vec![("ignition".into(), StateValue::Flag(true))];
    let second = ingest
        .write(vec![with_state, with_inputs(1, NOW_MS, names("a", 0..3))])
        .await
        .unwrap();
    assert_eq!(
        (second.accepted, second.duplicates, second.rejected.len()),
        (0, 1, 1)
    );

    // The names survive a flush (the catalog) and a crash (the WAL).
    ingest.flush().unwrap();
    ingest
        .write(vec![with_inputs(3, NOW_MS, names("d", 0..5))])
        .await
        .unwrap();
    ingest.crash_for_tests();
    drop(ingest);
    let ingest = open_with(dir.path(), 5);
    for (tracker, prefix) in [(1, "a"), (3, "d")] {
        let again = ingest
            .write(vec![with_inputs(
                tracker,
                NOW_MS + 10,
                names(prefix, 9..10),
            )])
            .await
            .unwrap();
        assert_eq!(again.rejected.len(), 1, "tracker {tracker}: {again:?}");
        let known = ingest
            .write(vec![with_inputs(tracker, NOW_MS + 11, names(prefix, 0..2))])
            .await
            .unwrap();
        assert_eq!(known.accepted, 1, "tracker {tracker}: {known:?}");
    }
}

/// Inner cells (values and nulls) the memtable holds for `values` values.
fn inner_cells(ingest: &Ingest) -> (usize, usize, usize) {
    let snapshot = ingest.snapshot();
    let (mut cells, mut values) = (0, 0);
    for batch in &snapshot.unflushed {
        for (field, column) in batch.schema_ref().fields().iter().zip(batch.columns()) {
            if InnerKind::split(field.name()).is_some() {
                cells += column.len();
                values += column.len() - column.null_count();
            }
        }
    }
    (cells, values, snapshot.unflushed.len())
}

#[tokio::test]
async fn one_wide_message_does_not_widen_the_batch_of_its_write() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = open_with(dir.path(), 2_000);
    let mut messages: Vec<Message> = (0..20_000)
        .map(|i| with_inputs(1, NOW_MS + i, names("n", 0..2)))
        .collect();
    messages.insert(
        10_000,
        with_inputs(1, NOW_MS + 10_000 * 2, names("w", 0..1_000)),
    );
    let outcome = ingest.write(messages).await.unwrap();
    assert_eq!(outcome.accepted, 20_001);
    let (cells, values, batches) = inner_cells(&ingest);
    assert_eq!(values, 40_000 + 1_000);
    // One batch the whole write would have been 20,001 rows x 1,002 columns.
    assert!(
        cells <= 5 * values + batches * 64 * 1024,
        "{cells} cells for {values} values in {batches} batches"
    );
    assert!(cells < 2 * values, "{cells} cells for {values} values");

    // The flush gives the wide row a file of its own rather than 1,000 null
    // columns to the 20,000 others; the tracker's day is both files.
    ingest.flush().unwrap();
    let snapshot = ingest.snapshot();
    let mut files: Vec<(u64, usize)> = snapshot
        .files
        .iter()
        .map(|f| (f.span(1).map_or(0, |s| s.rows), f.inner_columns.len()))
        .collect();
    files.sort_unstable();
    assert_eq!(files, [(1, 1_000), (20_000, 2)]);
}

#[tokio::test]
async fn a_day_with_more_columns_than_a_file_takes_is_split_by_tracker() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = open_with(dir.path(), 1_500);
    // Three trackers with 1,500 names of their own: 4,500 columns in one day.
    for tracker in 1..=3 {
        let prefix = format!("t{tracker}_");
        ingest
            .write(vec![
                with_inputs(tracker, NOW_MS, names(&prefix, 0..1_500)),
                with_inputs(tracker, NOW_MS + 1, names(&prefix, 0..1)),
            ])
            .await
            .unwrap();
    }
    ingest.flush().unwrap();
    let snapshot = ingest.snapshot();
    assert_eq!(
        snapshot.files.len(),
        2,
        "{:?}",
        snapshot
            .files
            .iter()
            .map(|f| f.inner_columns.len())
            .collect::<Vec<_>>()
    );
    assert!(
        snapshot
            .files
            .iter()
            .all(|f| f.inner_columns.len() <= 4_096)
    );
    for tracker in 1..=3 {
        let (file, span) = snapshot
            .files
            .iter()
            .find_map(|f| Some((f, f.span(tracker)?)))
            .unwrap();
        assert_eq!(span.rows, 2);
        let own: Vec<&str> = span.inner_names(file).collect();
        assert_eq!(own.len(), 1_500);
        assert!(
            own.iter()
                .all(|n| n.starts_with(&format!("inputs.t{tracker}_")))
        );
    }
    assert_eq!(rows(&snapshot), 6);
}

/// A WAL written before the limits existed holds a message with 65,535 inputs
/// among ordinary ones: the server comes up, keeps every row, flushes it.
#[tokio::test]
async fn a_wal_from_before_the_limits_replays_and_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let ingest = open_with(dir.path(), usize::MAX);
    let mut messages: Vec<Message> = (0..20_000)
        .map(|i| with_inputs(7, NOW_MS + i, names("n", 0..2)))
        .collect();
    messages.push(with_inputs(7, NOW_MS + 30_000, names("x", 1..65_536)));
    assert_eq!(ingest.write(messages).await.unwrap().accepted, 20_001);
    ingest.crash_for_tests();
    drop(ingest);

    let ingest = open_with(dir.path(), crate::DEFAULT_MAX_INNER_NAMES_PER_DAY);
    assert_eq!(rows(&ingest.snapshot()), 20_001);
    let (cells, values, _) = inner_cells(&ingest);
    assert_eq!(values, 40_000 + 65_535);
    assert!(cells < 2 * values, "{cells} cells for {values} values");
    // New names on that day are refused now; known ones are taken.
    let refused = ingest
        .write(vec![with_inputs(7, NOW_MS + 40_000, names("y", 0..1))])
        .await
        .unwrap();
    assert_eq!(refused.rejected.len(), 1);
    let taken = ingest
        .write(vec![with_inputs(7, NOW_MS + 40_001, names("n", 0..2))])
        .await
        .unwrap();
    assert_eq!(
        taken,
        WriteOutcome {
            accepted: 1,
            duplicates: 0,
            rejected: Vec::new()
        }
    );
    ingest.flush().unwrap();
    let snapshot = ingest.snapshot();
    assert!(snapshot.unflushed.is_empty());
    assert_eq!(rows(&snapshot), 20_002);
    // The wide row is a (lean) file of its own; the others share one.
    let mut files: Vec<(u64, usize)> = snapshot
        .files
        .iter()
        .map(|f| (f.span(7).map_or(0, |s| s.rows), f.inner_columns.len()))
        .collect();
    files.sort_unstable();
    assert_eq!(files, [(1, 65_535), (20_001, 2)]);
}
