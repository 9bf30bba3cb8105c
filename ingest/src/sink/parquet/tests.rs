use std::sync::Arc;

use schemas::{Message, TrackerId};

use super::*;
use crate::batch::{Entry, to_record_batch};

/// Day 0's message times.
const DAY_0: Range<i64> = 0..DAY_MS;

fn entry(tracker: i64, time_ms: i64, input: Option<(&str, f64)>) -> Entry {
    Entry::new(Message {
        tracker_id: TrackerId(tracker),
        message_time_ms: time_ms,
        server_time_ms: time_ms + 1,
        inputs: input.map(|(n, v)| vec![(n.into(), v)]).unwrap_or_default(),
        ..Message::default()
    })
    .unwrap()
}

/// A sink over `root` writing row groups of `row_group_rows`, keeping
/// `footer_cache_bytes` of footers, and its footer cache's metrics.
fn open_sink(
    root: &std::path::Path,
    row_group_rows: usize,
    footer_cache_bytes: usize,
) -> (ParquetSink, FooterMetrics) {
    let metrics = FooterMetrics::default();
    let config = ParquetConfig {
        root: root.to_owned(),
        row_group_rows,
        zstd_level: 3,
        footer_cache_bytes,
    };
    (ParquetSink::open(config, metrics.clone()).unwrap(), metrics)
}

fn sink(root: &std::path::Path) -> ParquetSink {
    open_sink(root, 4, crate::DEFAULT_DEDUP_FOOTER_CACHE_BYTES).0
}

#[test]
fn persists_day_files_with_exact_inner_columns_and_finds_keys() {
    let dir = tempfile::tempdir().unwrap();
    let sink = sink(dir.path());
    let day = 86_400_000;
    let a = to_record_batch(&[entry(2, 10, Some(("a", 1.0))), entry(1, 20, None)]).unwrap();
    let b = to_record_batch(&[entry(1, day + 5, Some(("b", 2.0))), entry(9, 30, None)]).unwrap();
    let files = sink.persist(&[a, b], 7).unwrap();
    assert_eq!(files.len(), 2);
    let first = files.iter().find(|f| f.message_time_min_ms == 10).unwrap();
    assert_eq!(
        (first.rows, first.tracker_min, first.tracker_max),
        (3, 1, 9)
    );
    assert_eq!(
        *first.inner_columns,
        ["inputs.a"],
        "an inner column without values in a file is not listed"
    );
    let spans: Vec<(i64, u64, Vec<&str>)> = first
        .trackers
        .iter()
        .map(|s| (s.tracker_id, s.rows, s.inner_names(first).collect()))
        .collect();
    assert_eq!(
        spans,
        [(1, 1, vec![]), (2, 1, vec!["inputs.a"]), (9, 1, vec![])],
        "columns are known per tracker"
    );
    let list = |tracker: i64| first.span(tracker).unwrap().inner.clone();
    assert!(
        Arc::ptr_eq(&list(1), &list(9)),
        "spans with the same columns share their list"
    );
    assert!(!Arc::ptr_eq(&list(1), &list(2)));
    assert_eq!(
        first
            .span(2)
            .map(|s| (s.message_time_min_ms, s.message_time_max_ms)),
        Some((10, 10))
    );
    assert!(first.span(3).is_none());
    let second = files
        .iter()
        .find(|f| f.message_time_min_ms == day + 5)
        .unwrap();
    assert_eq!(*second.inner_columns, ["inputs.b"]);
    assert_eq!(sink.flushed_wal_segment(), 7);

    let mut keys = sink.keys(&files, 1, DAY_0).unwrap();
    keys.sort();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].0, 20);
    assert!(sink.keys(&files, 3, DAY_0).unwrap().is_empty());
    let marks = sink.watermarks(&files).unwrap();
    assert_eq!(
        (marks.get(&1), marks.get(&9)),
        (Some(&(day + 5)), Some(&30))
    );
    assert_eq!(marks.get(&3), None);

    // A reopened catalog lists the same files; a stray file is removed.
    let stray = dir
        .path()
        .join(first.path.parent().unwrap())
        .join("f999999999999.parquet");
    std::fs::write(&stray, b"junk").unwrap();
    let reopened = self::sink(dir.path());
    assert_eq!(reopened.files(), files);
    assert!(!stray.exists());
}

#[test]
fn a_trackers_span_lists_the_columns_of_all_its_pieces_once() {
    let dir = tempfile::tempdir().unwrap();
    let sink = sink(dir.path());
    // Trackers 1 and 2 share a list of columns in the first batch, as
    // neighbours with the same names do; tracker 1 gains a name in the
    // second batch, and tracker 2 repeats its own.
    let a = to_record_batch(&[
        entry(1, 10, Some(("a", 1.0))),
        entry(2, 11, Some(("a", 2.0))),
        entry(3, 12, Some(("b", 3.0))),
        entry(4, 13, None),
    ])
    .unwrap();
    let b = to_record_batch(&[
        entry(1, 20, Some(("b", 4.0))),
        entry(2, 21, Some(("a", 5.0))),
        entry(3, 22, Some(("b", 6.0))),
    ])
    .unwrap();
    let files = sink.persist(&[a, b], 1).unwrap();
    let [file] = files.as_slice() else {
        panic!("one day, one file: {files:?}")
    };
    let spans: Vec<_> = file
        .trackers
        .iter()
        .map(|s| {
            let names: Vec<&str> = s.inner_names(file).collect();
            let times = (s.message_time_min_ms, s.message_time_max_ms);
            (s.tracker_id, s.rows, times, names)
        })
        .collect();
    assert_eq!(
        spans,
        [
            (1, 2, (10, 20), vec!["inputs.a", "inputs.b"]),
            (2, 2, (11, 21), vec!["inputs.a"]),
            (3, 2, (12, 22), vec!["inputs.b"]),
            (4, 1, (13, 13), vec![]),
        ],
        "each span lists every column of its pieces, once"
    );
}

#[test]
fn key_reads_skip_row_groups_of_other_trackers() {
    let dir = tempfile::tempdir().unwrap();
    let sink = sink(dir.path());
    let entries: Vec<Entry> = (0..40).map(|i| entry(i / 4, i, None)).collect();
    let files = sink
        .persist(&[to_record_batch(&entries).unwrap()], 1)
        .unwrap();
    for tracker in 0..10 {
        let keys = sink.keys(&files, tracker, DAY_0).unwrap();
        assert_eq!(keys.len(), 4, "tracker {tracker}");
        assert!(keys.iter().all(|(t, _)| t / 4 == tracker));
    }
}

/// A flush that fails after writing some of its files deletes them: no
/// catalog names them, and every retry would leave more behind.
#[test]
fn a_failed_flush_leaves_no_file_behind() {
    let dir = tempfile::tempdir().unwrap();
    let sink = sink(dir.path());
    let day = 86_400_000;
    // The second day's directory cannot be made: a file holds its name.
    std::fs::write(dir.path().join("day=1970-01-02"), b"in the way").unwrap();
    let batch = to_record_batch(&[entry(1, 10, None), entry(1, day + 5, None)]).unwrap();
    for _ in 0..3 {
        assert!(sink.persist(std::slice::from_ref(&batch), 1).is_err());
    }
    let first_day: Vec<_> = std::fs::read_dir(dir.path().join("day=1970-01-01"))
        .map(|entries| entries.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert_eq!(first_day, Vec::<std::ffi::OsString>::new());
    assert!(sink.files().is_empty());
    // Once the way is clear, the flush goes through.
    std::fs::remove_file(dir.path().join("day=1970-01-02")).unwrap();
    assert_eq!(sink.persist(&[batch], 1).unwrap().len(), 2);
}

#[test]
fn keys_of_many_partitions_read_together_equal_each_read_alone() {
    let dir = tempfile::tempdir().unwrap();
    let sink = sink(dir.path());
    let day = 86_400_000;
    let first: Vec<Entry> = (0..40).map(|i| entry(i / 4, i * 1000, None)).collect();
    let second: Vec<Entry> = (0..40)
        .map(|i| entry(i % 7, day + i * 1000, None))
        .collect();
    let mut files = sink
        .persist(&[to_record_batch(&first).unwrap()], 1)
        .unwrap();
    files.extend(
        sink.persist(&[to_record_batch(&second).unwrap()], 2)
            .unwrap(),
    );
    // Whole days, and parts of days: only the rows of their times.
    let whole = |d: i64| d * day..(d + 1) * day;
    let wanted: HashMap<(i64, i64), Range<i64>> = [
        ((0, 0), whole(0)),
        ((3, 0), 13_000..15_000),
        ((3, 1), whole(1)),
        ((6, 1), day + 10_000..day + 30_000),
        ((8, 1), whole(1)),
        ((20, 0), whole(0)),
    ]
    .into();
    let mut together = sink.keys_many(&files, &wanted).unwrap();
    for (&(tracker, d), times) in &wanted {
        let mut alone = sink.keys(&files, tracker, times.clone()).unwrap();
        let mut read = together.remove(&(tracker, d)).unwrap_or_default();
        alone.sort_unstable();
        read.sort_unstable();
        assert_eq!(read, alone, "tracker {tracker}, day {d}");
        assert!(read.iter().all(|(time, _)| times.contains(time)));
        let expected = match (tracker, d) {
            (0, 0) => 4,
            // Of its seconds 12 to 15.
            (3, 0) => 2,
            (3, 1) => 6,
            // Of its seconds 6, 13, 20, 27 and 34.
            (6, 1) => 3,
            (8, 1) | (20, 0) => 0,
            _ => unreachable!(),
        };
        assert_eq!(read.len(), expected, "tracker {tracker}, day {d}");
    }
    assert!(together.is_empty(), "only the partitions asked for");
}

/// A tracker's pieces (one per batch) are written in message-time order:
/// taken as they come when they follow each other, merged when they
/// overlap; rows at equal times keep the order they arrived in.
#[test]
fn a_trackers_pieces_come_out_in_time_order_whether_they_follow_or_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let sink = sink(dir.path());
    let x = |v: f64| Some(("x", v));
    let a = to_record_batch(&[
        entry(1, 10, None),
        entry(1, 20, None),
        entry(2, 10, None),
        entry(2, 30, x(1.0)),
        entry(2, 50, None),
        entry(3, 5, x(1.0)),
    ])
    .unwrap();
    let b = to_record_batch(&[
        entry(1, 20, x(2.0)),
        entry(1, 40, None),
        entry(2, 20, None),
        entry(2, 30, x(2.0)),
        entry(3, 5, x(2.0)),
    ])
    .unwrap();
    let files = sink.persist(&[a, b], 1).unwrap();
    assert_eq!(files.len(), 1);
    // Read as written (`read_filtered` would sort).
    let file = std::fs::File::open(dir.path().join(&files[0].path)).unwrap();
    let batches: Vec<RecordBatch> =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
    let mut rows = Vec::new();
    for batch in &batches {
        let keys = schemas::columns::key_columns(batch).unwrap();
        let x = batch.column_by_name("inputs.x").map(|c| {
            arrow::array::AsArray::as_primitive::<arrow::datatypes::Float64Type>(c).clone()
        });
        for i in 0..batch.num_rows() {
            let value = x
                .as_ref()
                .and_then(|x| arrow::array::Array::is_valid(x, i).then(|| x.value(i)));
            rows.push((keys.tracker.value(i), keys.message_time.value(i), value));
        }
    }
    assert_eq!(
        rows,
        [
            // Tracker 1's pieces follow each other (20 then 20: equal
            // times at the seam, the first batch's row first).
            (1, 10, None),
            (1, 20, None),
            (1, 20, Some(2.0)),
            (1, 40, None),
            // Tracker 2's overlap: merged, the first batch's 30 first.
            (2, 10, None),
            (2, 20, None),
            (2, 30, Some(1.0)),
            (2, 30, Some(2.0)),
            (2, 50, None),
            (3, 5, Some(1.0)),
            (3, 5, Some(2.0)),
        ]
    );
}

/// Columns whose values are nearly all distinct or sorted are written
/// without a dictionary (tracker ids as deltas): the flusher skips the
/// hashing and the files come out smaller (BENCHMARKS, issue 17).
#[test]
fn positions_and_tracker_ids_are_written_without_a_dictionary() {
    let dir = tempfile::tempdir().unwrap();
    let sink = sink(dir.path());
    let rows: Vec<Entry> = (0..20)
        .map(|i| {
            Entry::new(Message {
                tracker_id: TrackerId(1 + i / 5),
                message_time_ms: 1_000 * i,
                server_time_ms: 1_000 * i + 1,
                lat: Some(43.2 + i as f64 * 1e-4),
                lng: Some(76.9 - i as f64 * 1e-4),
                satellites: Some(7 + (i % 2) as i32),
                ..Message::default()
            })
            .unwrap()
        })
        .collect();
    let files = sink.persist(&[to_record_batch(&rows).unwrap()], 1).unwrap();
    let file = std::fs::File::open(dir.path().join(&files[0].path)).unwrap();
    let reader = parquet::file::serialized_reader::SerializedFileReader::new(file).unwrap();
    let metadata = parquet::file::reader::FileReader::metadata(&reader);
    let chunk = |name: &str| {
        let group = metadata.row_group(0);
        (0..group.num_columns())
            .map(|i| group.column(i))
            .find(|c| c.column_path().string() == name)
            .unwrap()
    };
    use parquet::basic::Encoding;
    for name in ["tracker_id", "lat", "lng", "msg_time", "_content_hash"] {
        assert!(
            chunk(name).dictionary_page_offset().is_none(),
            "{name} has no dictionary"
        );
    }
    assert!(
        chunk("tracker_id")
            .encodings()
            .any(|e| e == Encoding::DELTA_BINARY_PACKED)
    );
    // Columns of few values keep theirs.
    assert!(chunk("satellites").dictionary_page_offset().is_some());
}

/// A tracker's keys are read from the pages that may hold it, not the
/// whole row group, and come out the same.
#[test]
fn key_reads_skip_pages_of_other_trackers() {
    let dir = tempfile::tempdir().unwrap();
    let (sink, _) = open_sink(
        dir.path(),
        64 * 1024,
        crate::DEFAULT_DEDUP_FOOTER_CACHE_BYTES,
    );
    // 300 trackers × 200 rows in one row group: several pages.
    let rows: Vec<Entry> = (1..=300)
        .flat_map(|tracker| (0..200).map(move |i| entry(tracker, 1_000 * i, None)))
        .collect();
    let files = sink.persist(&[to_record_batch(&rows).unwrap()], 1).unwrap();
    assert_eq!(files.len(), 1);
    for tracker in [1, 150, 300] {
        let mut keys = sink.keys(&files, tracker, DAY_0).unwrap();
        keys.sort_unstable();
        let times: Vec<i64> = keys.iter().map(|&(time, _)| time).collect();
        assert_eq!(times, (0..200).map(|i| 1_000 * i).collect::<Vec<_>>());
    }
    let file = std::fs::File::open(dir.path().join(&files[0].path)).unwrap();
    let builder =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new_with_options(
            file,
            footers::read_options(),
        )
        .unwrap();
    assert_eq!(builder.metadata().num_row_groups(), 1);
    let selection = writer::tracker_pages(builder.metadata(), &[0], 0, |min, max| {
        (min..=max).contains(&150)
    });
    let selected = selection.row_count();
    assert!(
        (200..60_000).contains(&selected),
        "{selected} of 60,000 rows read for one tracker"
    );
}

#[test]
fn a_rewrite_keeps_each_trackers_own_columns_and_only_the_rows_kept() {
    let dir = tempfile::tempdir().unwrap();
    let sink = sink(dir.path());
    // Two small files of one day; tracker 3 alone has `c`, and loses its
    // rows to the rewrite.
    let a = to_record_batch(&[
        entry(1, 10, Some(("a", 1.0))),
        entry(2, 11, Some(("b", 2.0))),
        entry(3, 12, Some(("c", 3.0))),
    ])
    .unwrap();
    let b = to_record_batch(&[
        entry(1, 20, Some(("a", 4.0))),
        entry(2, 21, None),
        entry(3, 22, Some(("c", 6.0))),
    ])
    .unwrap();
    let mut small = sink.persist(&[a], 1).unwrap();
    small.extend(sink.persist(&[b], 2).unwrap());
    assert_eq!(small.len(), 2);
    let rewrite = sink.rewrite(&small, &|tracker, _| tracker != 3).unwrap();
    assert_eq!((rewrite.rows_read, rewrite.rows_dropped), (6, 2));
    assert_eq!(rewrite.removed.len(), 2);
    let [file] = rewrite.added.as_slice() else {
        panic!("one day, one file: {:?}", rewrite.added)
    };
    assert_eq!(
        *file.inner_columns,
        ["inputs.a", "inputs.b"],
        "a column left without values is not written"
    );
    let spans: Vec<_> = file
        .trackers
        .iter()
        .map(|s| {
            let names: Vec<&str> = s.inner_names(file).collect();
            (s.tracker_id, s.rows, names)
        })
        .collect();
    assert_eq!(
        spans,
        [(1, 2, vec!["inputs.a"]), (2, 2, vec!["inputs.b"])],
        "each tracker keeps its own columns, not the file's"
    );
}

/// A file's footer is decoded at its first key read and kept for the next
/// ones, within the cache's budget, and dropped once a rewrite removes the
/// file; the keys read are the same whether it was kept or not.
#[test]
fn key_reads_keep_footers_within_their_budget() {
    let dir = tempfile::tempdir().unwrap();
    let open = |budget| open_sink(dir.path(), 4, budget);
    let counts = |m: &FooterMetrics| (m.misses.get(), m.hits.get());
    let times = |sink: &ParquetSink, files: &[FileEntry]| {
        let mut keys = sink.keys(files, 1, DAY_0).unwrap();
        keys.sort_unstable();
        keys.iter().map(|&(time, _)| time).collect::<Vec<_>>()
    };
    let (sink, metrics) = open(crate::DEFAULT_DEDUP_FOOTER_CACHE_BYTES);
    let mut files = sink
        .persist(
            &[to_record_batch(&[entry(1, 10, None), entry(2, 11, None)]).unwrap()],
            1,
        )
        .unwrap();
    files.extend(
        sink.persist(
            &[to_record_batch(&[entry(1, 20, None), entry(2, 21, None)]).unwrap()],
            2,
        )
        .unwrap(),
    );
    assert_eq!(times(&sink, &files[..1]), [10]);
    let (first, _) = sink.footers.held_now();
    assert_eq!(times(&sink, &files), [10, 20]);
    assert_eq!(counts(&metrics), (2, 1));
    assert_eq!(times(&sink, &files), [10, 20]);
    assert_eq!(counts(&metrics), (2, 3));
    let (both, held) = sink.footers.held_now();
    assert_eq!(held, 2);
    assert_eq!(metrics.bytes.get(), i64::try_from(both).unwrap());
    // A budget of one footer holds one, the last read; none holds none.
    let largest = first.max(both - first);
    let (one, one_metrics) = open(largest);
    assert_eq!(times(&one, &files), [10, 20]);
    assert_eq!(times(&one, &files[1..]), [20]);
    assert_eq!(counts(&one_metrics), (2, 1));
    let (bytes, held) = one.footers.held_now();
    assert!(
        held == 1 && bytes <= largest,
        "{held} footers, {bytes} bytes"
    );
    let (none, none_metrics) = open(0);
    assert_eq!(times(&none, &files), [10, 20]);
    assert_eq!(times(&none, &files), [10, 20]);
    assert_eq!(counts(&none_metrics), (4, 0));
    assert_eq!(none.footers.held_now(), (0, 0));
    // A rewrite's removed files leave the cache; the new file's is read.
    let rewrite = sink.rewrite(&files, &|_, _| true).unwrap();
    assert_eq!(sink.footers.held_now(), (0, 0));
    assert_eq!(times(&sink, &rewrite.added), [10, 20]);
    assert_eq!(counts(&metrics), (3, 3));
}
