//! The WAL against real files in temporary directories.

mod prop;
mod recovery;

use std::fs;
use std::path::{Path, PathBuf};

use schemas::{ErrorCode, HasCode};

use super::segment::{self, HEADER_LEN, RECORD_HEADER_LEN};
use super::*;

/// `(segment, payload)` pairs, in replay order.
type Replayed = Vec<(u64, Vec<u8>)>;

/// The engine's segment size.
const SEGMENT_BYTES: u64 = 64 << 20;

fn config(dir: &Path) -> WalConfig {
    WalConfig {
        dir: dir.to_path_buf(),
        segment_bytes: SEGMENT_BYTES,
    }
}

fn open_sized(
    dir: &Path,
    after: u64,
    segment_bytes: u64,
) -> Result<(Wal, Replayed, RecoveryReport)> {
    let mut replayed = Vec::new();
    let config = WalConfig {
        dir: dir.to_path_buf(),
        segment_bytes,
    };
    let (wal, report) = Wal::open(config, after, |seq, payload| {
        replayed.push((seq, payload.to_vec()));
        Ok(())
    })?;
    Ok((wal, replayed, report))
}

fn open(dir: &Path, after: u64) -> Result<(Wal, Replayed, RecoveryReport)> {
    open_sized(dir, after, SEGMENT_BYTES)
}

/// The sequence numbers of the segment files in `dir`, ascending.
fn segment_files(dir: &Path) -> Vec<u64> {
    let mut seqs: Vec<u64> = fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".wal")?.parse().ok()
        })
        .collect();
    seqs.sort_unstable();
    seqs
}

/// A small deterministic generator (xorshift64*), for payload sizes and bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn payload(&mut self, max_len: u64) -> Vec<u8> {
        let len = 1 + self.next() % max_len;
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Writes `payloads` into segment 1 of a fresh directory and returns the
/// directory and the segment's bytes.
fn one_segment(payloads: &[Vec<u8>]) -> (tempfile::TempDir, PathBuf, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _, _) = open(dir.path(), 0).unwrap();
    for payload in payloads {
        wal.append(payload).unwrap();
    }
    wal.sync().unwrap();
    assert_eq!(wal.current_segment(), 1);
    drop(wal);
    let path = segment::path(dir.path(), 1);
    let bytes = fs::read(&path).unwrap();
    (dir, path, bytes)
}

fn five_payloads() -> Vec<Vec<u8>> {
    [20, 33, 7, 50, 41]
        .iter()
        .enumerate()
        .map(|(i, &len)| vec![i as u8 + 1; len])
        .collect()
}

fn payloads_of(replayed: &Replayed) -> Vec<Vec<u8>> {
    replayed
        .iter()
        .map(|(_, payload)| payload.clone())
        .collect()
}

#[test]
fn round_trip_across_rotations_and_rollovers() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, replayed, report) = open_sized(dir.path(), 0, 16 << 10).unwrap();
    assert!(replayed.is_empty());
    assert_eq!(report, RecoveryReport::default());
    assert_eq!(wal.current_segment(), 1);

    let mut rng = Rng(0x5EED);
    let mut written = Vec::new();
    let mut rotated = Vec::new();
    for i in 0..600 {
        let payload = rng.payload(1500);
        wal.append(&payload).unwrap();
        written.push((wal.current_segment(), payload));
        if i % 50 == 49 {
            wal.sync().unwrap();
        }
        if i % 150 == 149 {
            rotated.push(wal.rotate().unwrap());
        }
    }
    wal.sync().unwrap();
    let record_bytes: u64 = written
        .iter()
        .map(|(_, p)| (RECORD_HEADER_LEN + p.len()) as u64)
        .sum();
    assert_eq!(wal.bytes_written(), record_bytes);
    let last = wal.current_segment();
    drop(wal);
    assert!(
        last > 10,
        "segments rolled over by size, not only by rotation"
    );
    // The segment after the last one was created ahead: header only.
    assert_eq!(
        segment_files(dir.path()),
        (1..=last + 1).collect::<Vec<_>>()
    );

    let (wal, replayed, report) = open(dir.path(), 0).unwrap();
    assert_eq!(replayed, written);
    let payload_bytes: u64 = written.iter().map(|(_, p)| p.len() as u64).sum();
    let expected = RecoveryReport {
        segments: last as usize + 1,
        records: 600,
        bytes: payload_bytes,
        torn_tails: 0,
    };
    assert_eq!(report, expected);
    assert_eq!(
        wal.current_segment(),
        last + 2,
        "never appends into a recovered file"
    );
    drop(wal);

    let after = rotated[1];
    let (mut wal, replayed, _) = open(dir.path(), after).unwrap();
    let later: Replayed = written
        .into_iter()
        .filter(|(seq, _)| *seq > after)
        .collect();
    assert!(!later.is_empty());
    assert_eq!(replayed, later);
    assert_eq!(wal.current_segment(), last + 4);
    wal.settle_preparer();
    assert_eq!(
        segment_files(dir.path()),
        (after + 1..=last + 5).collect::<Vec<_>>()
    );
}

#[test]
fn a_group_discarded_before_its_sync_never_reaches_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    // Segments of 4 KiB; the failed group is larger than the write buffer
    // and than a segment, so part of it is in the file already.
    let (mut wal, _, _) = open_sized(dir.path(), 0, 4 << 10).unwrap();
    wal.append(b"acknowledged").unwrap();
    wal.sync().unwrap();
    let segment = wal.current_segment();
    for i in 0..400_u32 {
        wal.append(&[i as u8; 4096]).unwrap();
    }
    assert_eq!(
        wal.current_segment(),
        segment,
        "a group is never split across segments"
    );
    wal.discard_unsynced().unwrap();
    assert!(wal.failure().is_none(), "the log still takes appends");
    wal.discard_unsynced().unwrap();
    wal.append(b"next group").unwrap();
    wal.sync().unwrap();
    drop(wal);

    let (_, replayed, report) = open_sized(dir.path(), 0, 4 << 10).unwrap();
    assert_eq!(
        payloads_of(&replayed),
        vec![b"acknowledged".to_vec(), b"next group".to_vec()]
    );
    assert_eq!(report.torn_tails, 0);
}

#[test]
fn a_group_synced_on_another_thread_is_durable_and_the_next_one_is_not_yet() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _, _) = open_sized(dir.path(), 0, 1 << 10).unwrap();
    wal.append(&[1; 2000]).unwrap();
    let point = wal.write_out_to_sync().unwrap();
    let syncing = std::thread::spawn({
        let point = point.clone();
        move || point.sync()
    });
    // The next group is appended while the first is synced; the segment,
    // full, does not roll over while a record of it is unsynced.
    wal.append(&[2; 100]).unwrap();
    assert_eq!(wal.current_segment(), 1);
    assert!(wal.wants_roll());
    wal.synced(point, syncing.join().unwrap()).unwrap();
    // The second group fails on its own: the cut takes it, not the first.
    wal.discard_unsynced().unwrap();
    wal.append(&[3; 10]).unwrap();
    assert_eq!(wal.current_segment(), 2, "rolled over once all was synced");
    let point = wal.write_out_to_sync().unwrap();
    let outcome = point.sync();
    wal.synced(point, outcome).unwrap();
    drop(wal);

    let (_, replayed, _) = open_sized(dir.path(), 0, 1 << 10).unwrap();
    assert_eq!(payloads_of(&replayed), vec![vec![1; 2000], vec![3; 10]]);
}

#[test]
fn a_failed_sync_on_another_thread_gives_up_its_group_and_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _, _) = open(dir.path(), 0).unwrap();
    wal.append(b"acknowledged").unwrap();
    wal.sync().unwrap();
    wal.append(b"failed group").unwrap();
    wal.fail_next_sync(Duration::ZERO);
    let point = wal.write_out_to_sync().unwrap();
    wal.append(b"appended meanwhile").unwrap();
    let outcome = point.sync();
    assert!(outcome.is_err());
    let failed = wal.synced(point, outcome).unwrap_err();
    assert!(failed.is_storage_failure(), "{failed}");
    assert!(wal.failure().is_some(), "a failed sync fails the log");
    assert!(wal.append(b"refused").is_err());
    std::thread::sleep(HEAL_PAUSE);
    wal.heal().unwrap();
    wal.append(b"after healing").unwrap();
    wal.sync().unwrap();
    drop(wal);

    let (_, replayed, report) = open(dir.path(), 0).unwrap();
    assert_eq!(
        payloads_of(&replayed),
        vec![b"acknowledged".to_vec(), b"after healing".to_vec()]
    );
    assert_eq!(report.torn_tails, 0);
}

#[test]
fn a_full_segment_rolls_over_at_the_next_group() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _, _) = open_sized(dir.path(), 0, 1 << 10).unwrap();
    for _ in 0..3 {
        wal.append(&[7; 1000]).unwrap();
    }
    assert_eq!(wal.current_segment(), 1);
    wal.sync().unwrap();
    wal.append(&[8; 10]).unwrap();
    assert_eq!(
        wal.current_segment(),
        2,
        "the first record after a sync rolls over"
    );
    wal.sync().unwrap();
}

/// A roll-over after a group commit has nothing to sync; one with records
/// appended since syncs them before it seals the segment.
#[test]
fn a_roll_syncs_only_what_no_group_commit_synced() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _, _) = open(dir.path(), 0).unwrap();
    wal.append(b"committed").unwrap();
    wal.sync().unwrap();
    assert_eq!(wal.rotate().unwrap(), 1);
    assert_eq!(wal.rolls_synced, 0, "nothing left to sync");
    wal.append(b"appended").unwrap();
    assert_eq!(wal.rotate().unwrap(), 2);
    assert_eq!(wal.rolls_synced, 1);
    drop(wal);
    let (_, replayed, _) = open(dir.path(), 0).unwrap();
    assert_eq!(
        replayed,
        vec![(1, b"committed".to_vec()), (2, b"appended".to_vec())]
    );
}

#[test]
fn open_numbers_past_after_segment_and_cleans_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _, _) = open(dir.path(), 10).unwrap();
    assert_eq!(wal.current_segment(), 11);
    drop(wal);
    assert_eq!(segment_files(dir.path()), vec![11, 12], "12 created ahead");

    let temp = dir.path().join(format!("{:020}.wal.tmp", 13));
    let foreign = dir.path().join("notes.txt");
    fs::write(&temp, b"half-created").unwrap();
    fs::write(&foreign, b"not ours").unwrap();
    let (mut wal, _, report) = open(dir.path(), 20).unwrap();
    assert_eq!(report.segments, 0);
    assert_eq!(wal.current_segment(), 21);
    wal.settle_preparer();
    assert_eq!(segment_files(dir.path()), vec![21, 22]);
    assert!(!temp.exists());
    assert!(foreign.exists());
}

#[test]
fn release_through_never_releases_the_current_segment() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _, _) = open(dir.path(), 0).unwrap();
    wal.append(b"one").unwrap();
    assert_eq!(wal.rotate().unwrap(), 1);
    wal.append(b"two").unwrap();
    assert_eq!(wal.rotate().unwrap(), 2);
    wal.append(b"three").unwrap();
    assert_eq!(wal.current_segment(), 3);
    wal.settle_preparer();

    assert_eq!(wal.release_through(0).delete().unwrap(), 0);
    assert_eq!(wal.release_through(u64::MAX).delete().unwrap(), 2);
    assert_eq!(segment_files(dir.path()), vec![3, 4]);
    assert_eq!(wal.release_through(u64::MAX).delete().unwrap(), 0);
    wal.append(b"four").unwrap();
    wal.sync().unwrap();
    drop(wal);

    let (mut wal, replayed, report) = open(dir.path(), 0).unwrap();
    assert_eq!(
        replayed,
        vec![(3, b"three".to_vec()), (3, b"four".to_vec())]
    );
    assert_eq!(report.segments, 2, "3, and 4 created ahead");
    assert_eq!(wal.current_segment(), 5);
    assert_eq!(
        wal.release_through(4).delete().unwrap(),
        2,
        "recovered segments are sealed"
    );
    wal.settle_preparer();
    assert_eq!(segment_files(dir.path()), vec![5, 6]);
}

#[test]
fn a_failed_deletion_of_released_segments_is_finished_by_a_later_one() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _, _) = open(dir.path(), 0).unwrap();
    for payload in [b"one", b"two"] {
        wal.append(payload).unwrap();
        wal.rotate().unwrap();
    }
    wal.settle_preparer();
    let mut released = wal.release_through(1);
    // Segment 1 cannot be removed while a directory stands in its place.
    let one = segment::path(dir.path(), 1);
    fs::remove_file(&one).unwrap();
    fs::create_dir(&one).unwrap();
    fs::write(one.join("keep"), b"x").unwrap();
    assert!(released.delete().is_err());
    assert_eq!(segment_files(dir.path()), vec![1, 2, 3, 4]);

    released.absorb(wal.release_through(2));
    fs::remove_dir_all(&one).unwrap();
    assert_eq!(
        released.delete().unwrap(),
        2,
        "segment 1 (gone) and segment 2"
    );
    assert_eq!(segment_files(dir.path()), vec![3, 4]);
    assert_eq!(released.delete().unwrap(), 0);
}

#[test]
fn segments_released_but_not_deleted_before_a_crash_are_deleted_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _, _) = open(dir.path(), 0).unwrap();
    wal.append(b"persisted").unwrap();
    assert_eq!(wal.rotate().unwrap(), 1);
    wal.append(b"not yet").unwrap();
    wal.sync().unwrap();
    let released = wal.release_through(1);
    drop((wal, released));

    // The sink had persisted segment 1: open is told so, and replays only
    // 2 (and 3, created ahead, empty).
    let (mut wal, replayed, _) = open(dir.path(), 1).unwrap();
    assert_eq!(replayed, vec![(2, b"not yet".to_vec())]);
    wal.settle_preparer();
    assert_eq!(segment_files(dir.path()), vec![2, 3, 4, 5]);
}

#[test]
fn replay_errors_stop_open_with_their_position() {
    let (dir, _, _) = one_segment(&five_payloads());
    let err = Wal::open(config(dir.path()), 0, |_, payload| {
        if payload.len() == 33 {
            return Err(WalError::rejected("does not decode"));
        }
        Ok(())
    })
    .unwrap_err();
    let WalError::Replay {
        segment,
        offset,
        source,
    } = &err
    else {
        panic!("expected a replay error, got {err}");
    };
    assert_eq!(
        (*segment, *offset),
        (1, (HEADER_LEN + RECORD_HEADER_LEN + 20) as u64)
    );
    assert!(matches!(**source, WalError::Rejected(_)));
    assert_eq!(err.code(), ErrorCode::Database);
}

#[test]
fn invalid_payloads_are_refused_without_harm() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _, _) = open(dir.path(), 0).unwrap();
    let err = wal.append(b"").unwrap_err();
    assert!(matches!(err, WalError::EmptyRecord));
    let too_large = usize::try_from(segment::MAX_RECORD_BYTES).unwrap() + 1;
    let err = segment::record_len(too_large).unwrap_err();
    assert!(matches!(err, WalError::RecordTooLarge { .. }));
    assert_eq!(err.code(), ErrorCode::TooLargeRequest);
    assert_eq!(
        segment::record_len(too_large - 1).unwrap(),
        segment::MAX_RECORD_BYTES
    );

    wal.append(b"still usable").unwrap();
    wal.sync().unwrap();
    drop(wal);
    let (_, replayed, _) = open(dir.path(), 0).unwrap();
    assert_eq!(replayed, vec![(1, b"still usable".to_vec())]);
}

#[test]
fn header_round_trips_and_wal_is_send() {
    let header = segment::encode_header(42);
    assert_eq!(header.get(..8), Some(&segment::MAGIC[..]));
    assert_eq!(segment::decode_header(&header), Ok(42));
    let mut other_version = header;
    other_version[8] = 2;
    assert!(segment::decode_header(&other_version).is_err());

    fn assert_send<T: Send>() {}
    assert_send::<Wal>();
}
