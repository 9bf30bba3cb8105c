use std::sync::Arc;

use schemas::TrackerSpan;

use super::*;

fn file(id: u64) -> FileEntry {
    FileEntry {
        id,
        path: format!("day=2024-06-01/f{id:012}.parquet").into(),
        tracker_min: 1,
        tracker_max: 2,
        message_time_min_ms: 0,
        message_time_max_ms: 1,
        server_time_min_ms: 0,
        server_time_max_ms: 1,
        rows: 2,
        bytes: 100,
        inner_columns: vec!["inputs.fuel".to_owned()].into(),
        trackers: vec![
            TrackerSpan {
                tracker_id: 1,
                message_time_min_ms: 0,
                message_time_max_ms: 0,
                rows: 1,
                inner: Arc::from([0]),
            },
            TrackerSpan {
                tracker_id: 2,
                message_time_min_ms: 1,
                message_time_max_ms: 1,
                rows: 1,
                inner: Arc::from([]),
            },
        ]
        .into(),
    }
}

/// Commits `count` flushes of one new file each, the n-th at WAL segment n.
fn flushes(catalog: &mut Catalog, count: u64) -> Vec<u64> {
    (0..count)
        .map(|n| {
            let id = catalog.next_file_id();
            catalog.commit(vec![file(id)], &[], Some(n + 1)).unwrap();
            id
        })
        .collect()
}

fn ids(catalog: &Catalog) -> Vec<u64> {
    catalog.files().iter().map(|f| f.id).collect()
}

#[test]
fn a_commit_appends_to_the_log_and_leaves_the_checkpoint_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut catalog = Catalog::open(dir.path()).unwrap();
    let added = flushes(&mut catalog, 3);
    assert!(
        !dir.path().join("catalog.json").exists(),
        "no checkpoint yet"
    );
    let log = std::fs::metadata(dir.path().join("catalog.log"))
        .unwrap()
        .len();
    assert!(log > 0);
    let removed = catalog.commit(vec![], &[added[0]], None).unwrap();
    assert_eq!(removed, [dir.path().join(&file(added[0]).path)]);
    drop(catalog);

    let reopened = Catalog::open(dir.path()).unwrap();
    assert_eq!(ids(&reopened), &added[1..]);
    assert_eq!(
        reopened.flushed_wal_segment(),
        3,
        "a rewrite keeps the segment"
    );
    let mut reopened = reopened;
    assert_eq!(reopened.next_file_id(), 4, "ids are never reused");
    assert_eq!(listed_files(dir.path()).unwrap(), reopened.files());
}

#[test]
fn a_log_past_the_checkpoint_is_folded_into_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut catalog = Catalog::open_with(dir.path(), 4096).unwrap();
    let added = flushes(&mut catalog, 40);
    let checkpoint = std::fs::read(dir.path().join("catalog.json")).unwrap();
    let log = std::fs::metadata(dir.path().join("catalog.log"))
        .unwrap()
        .len();
    assert!(log <= 4096.max(checkpoint.len() as u64), "{log}");
    assert_eq!(
        catalog.checkpoint_len,
        checkpoint.len() as u64,
        "the streamed checkpoint's length, which sets when the log is next folded"
    );
    let state: serde_json::Value = serde_json::from_slice(&checkpoint).unwrap();
    assert_eq!(state["format"], 2);
    assert!(state["log_seq"].as_u64().unwrap() > 0);
    drop(catalog);
    let reopened = Catalog::open_with(dir.path(), 4096).unwrap();
    assert_eq!(ids(&reopened), added);
    assert_eq!(reopened.flushed_wal_segment(), 40);
}

/// A crash between writing a checkpoint and emptying the log leaves
/// records the checkpoint holds: they are not applied twice.
#[test]
fn records_a_checkpoint_holds_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut catalog = Catalog::open_with(dir.path(), 1).unwrap();
    let added = flushes(&mut catalog, 2);
    let stale_log = std::fs::read(dir.path().join("catalog.log")).unwrap();
    assert!(stale_log.is_empty(), "folded at every commit");
    // The log as it was before the last checkpoint emptied it.
    catalog.min_checkpoint_bytes = u64::MAX;
    let third = flushes(&mut catalog, 1);
    let log = std::fs::read(dir.path().join("catalog.log")).unwrap();
    assert!(!log.is_empty());
    catalog.checkpoint().unwrap();
    drop(catalog);
    std::fs::write(dir.path().join("catalog.log"), &log).unwrap();
    let mut reopened = Catalog::open(dir.path()).unwrap();
    assert_eq!(
        ids(&reopened),
        [added[0], added[1], third[0]],
        "listed once"
    );
    // And the next commit follows on.
    let fourth = flushes(&mut reopened, 1);
    drop(reopened);
    let all = [added[0], added[1], third[0], fourth[0]];
    assert_eq!(ids(&Catalog::open(dir.path()).unwrap()), all);
    assert_eq!(listed_files(dir.path()).unwrap().len(), 4);
}

#[test]
fn a_torn_or_corrupt_last_record_is_dropped_and_the_log_goes_on() {
    for damage in ["cut", "flip"] {
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::open(dir.path()).unwrap();
        flushes(&mut catalog, 2);
        let whole = std::fs::metadata(dir.path().join("catalog.log"))
            .unwrap()
            .len();
        flushes(&mut catalog, 1);
        drop(catalog);
        let path = dir.path().join("catalog.log");
        let mut log = std::fs::read(&path).unwrap();
        match damage {
            "cut" => log.truncate(log.len() - 3),
            _ => *log.last_mut().unwrap() ^= 0x20,
        }
        std::fs::write(&path, &log).unwrap();
        let mut reopened = Catalog::open(dir.path()).unwrap();
        assert_eq!(ids(&reopened), [1, 2], "{damage}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), whole, "{damage}");
        flushes(&mut reopened, 1);
        drop(reopened);
        let ids_after = ids(&Catalog::open(dir.path()).unwrap());
        assert_eq!(ids_after.len(), 3, "{damage}: {ids_after:?}");
    }
}

#[test]
fn a_gap_in_the_log_is_an_error_not_a_guess() {
    let dir = tempfile::tempdir().unwrap();
    let mut catalog = Catalog::open(dir.path()).unwrap();
    flushes(&mut catalog, 1);
    let first = std::fs::read(dir.path().join("catalog.log")).unwrap();
    flushes(&mut catalog, 2);
    drop(catalog);
    let log = std::fs::read(dir.path().join("catalog.log")).unwrap();
    // Records 1 and 3: the second is missing.
    let (_, second_len) = parse_record(&log[first.len()..]).unwrap();
    let mut gapped = first.clone();
    gapped.extend_from_slice(&log[first.len() + second_len..]);
    std::fs::write(dir.path().join("catalog.log"), gapped).unwrap();
    let error = Catalog::open(dir.path()).unwrap_err().to_string();
    assert!(error.contains("record 3 follows 1"), "{error}");
}

/// A data directory of an earlier build (format 1: `catalog.json` only)
/// opens with its files, and the files it lists are not taken for orphans.
#[test]
fn a_format_1_catalog_opens_as_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let old = serde_json::json!({
        "format": 1,
        "flushed_wal_segment": 9,
        "next_file_id": 8,
        "files": [file(7)],
    });
    std::fs::write(dir.path().join("catalog.json"), old.to_string()).unwrap();
    let parquet = dir.path().join(&file(7).path);
    std::fs::create_dir_all(parquet.parent().unwrap()).unwrap();
    std::fs::write(&parquet, b"rows").unwrap();
    let mut catalog = Catalog::open(dir.path()).unwrap();
    assert_eq!((ids(&catalog), catalog.flushed_wal_segment()), (vec![7], 9));
    assert!(parquet.exists());
    assert_eq!(flushes(&mut catalog, 1), [8]);
    drop(catalog);
    assert_eq!(ids(&Catalog::open(dir.path()).unwrap()), [7, 8]);

    let newer = serde_json::json!({
        "format": 3, "flushed_wal_segment": 0, "next_file_id": 1, "files": [],
    });
    std::fs::write(dir.path().join("catalog.json"), newer.to_string()).unwrap();
    let error = Catalog::open(dir.path()).unwrap_err().to_string();
    assert!(error.contains("format 3"), "{error}");
}

/// A file whose spans have equal inner column lists: read back from the
/// checkpoint or the log, the spans share one list (a list per span of a
/// 10,000-tracker file took about 1.4 MB for as long as the file lived),
/// and keep their own values.
#[test]
fn equal_inner_lists_are_shared_once_read_back() {
    let wide = |id: u64| FileEntry {
        inner_columns: vec!["inputs.a".to_owned(), "inputs.b".to_owned()].into(),
        trackers: (1..=3)
            .map(|tracker| TrackerSpan {
                tracker_id: tracker,
                message_time_min_ms: 0,
                message_time_max_ms: 1,
                rows: 1,
                inner: if tracker == 2 {
                    Arc::from([1])
                } else {
                    Arc::from([0, 1])
                },
            })
            .collect::<Vec<_>>()
            .into(),
        ..file(id)
    };
    let dir = tempfile::tempdir().unwrap();
    // Folded at once: the first file is read from the checkpoint, the
    // second from the log.
    let mut catalog = Catalog::open_with(dir.path(), 1).unwrap();
    let first = catalog.next_file_id();
    catalog.commit(vec![wide(first)], &[], Some(1)).unwrap();
    let mut catalog = Catalog::open_with(dir.path(), 1 << 30).unwrap();
    let second = catalog.next_file_id();
    catalog.commit(vec![wide(second)], &[], Some(2)).unwrap();
    drop(catalog);
    assert!(dir.path().join("catalog.json").exists());

    let reopened = Catalog::open_with(dir.path(), 1 << 30).unwrap();
    assert_eq!(ids(&reopened), [first, second]);
    for file in reopened.files() {
        assert_eq!(file.trackers, wide(file.id).trackers, "values kept");
        let spans = &file.trackers;
        assert!(Arc::ptr_eq(&spans[0].inner, &spans[2].inner), "shared");
        assert!(!Arc::ptr_eq(&spans[0].inner, &spans[1].inner));
    }
}
