//! Recovery from damaged segments: torn tails, corruption, bad headers.

use std::fs;

use schemas::{ErrorCode, HasCode};

use super::super::segment::{self, HEADER_LEN, RECORD_HEADER_LEN};
use super::super::{Wal, WalError};
use super::{Replayed, config, five_payloads, one_segment, open, payloads_of};

#[test]
fn torn_tail_at_every_offset_is_dropped_and_truncated() {
    let payloads = five_payloads();
    let (_source, _, bytes) = one_segment(&payloads);
    let last_len = payloads.last().unwrap().len();
    let last_start = bytes.len() - RECORD_HEADER_LEN - last_len;
    let earlier = &payloads[..payloads.len() - 1];

    for cut in last_start..bytes.len() {
        let dir = tempfile::tempdir().unwrap();
        let path = segment::path(dir.path(), 1);
        fs::write(&path, &bytes[..cut]).unwrap();

        let (wal, replayed, report) = open(dir.path(), 0).unwrap();
        assert_eq!(payloads_of(&replayed), earlier, "cut at {cut}");
        assert_eq!(
            report.torn_tails,
            usize::from(cut != last_start),
            "cut at {cut}"
        );
        assert_eq!(report.records, 4);
        assert_eq!(
            fs::metadata(&path).unwrap().len(),
            last_start as u64,
            "cut at {cut}"
        );
        drop(wal);

        let (_, replayed, report) = open(dir.path(), 0).unwrap();
        assert_eq!(payloads_of(&replayed), earlier, "cut at {cut}, second open");
        assert_eq!(report.torn_tails, 0, "cut at {cut}, second open");
    }
}

#[test]
fn cut_inside_the_header_is_an_error_but_empty_and_header_only_files_are_fine() {
    let (_source, _, bytes) = one_segment(&five_payloads());
    for cut in 1..HEADER_LEN {
        let dir = tempfile::tempdir().unwrap();
        fs::write(segment::path(dir.path(), 1), &bytes[..cut]).unwrap();
        let err = open(dir.path(), 0).unwrap_err();
        assert!(
            matches!(err, WalError::BadHeader { segment: 1, .. }),
            "cut at {cut}: {err}"
        );
        assert_eq!(err.code(), ErrorCode::Database);
    }

    let dir = tempfile::tempdir().unwrap();
    fs::write(segment::path(dir.path(), 1), b"").unwrap();
    fs::write(segment::path(dir.path(), 2), segment::encode_header(2)).unwrap();
    let (wal, replayed, report) = open(dir.path(), 0).unwrap();
    assert!(replayed.is_empty());
    assert_eq!(report.segments, 2);
    assert_eq!(report.torn_tails, 0);
    assert_eq!(wal.current_segment(), 3);
}

#[test]
fn a_header_for_another_segment_or_garbage_is_an_error() {
    let (source, path, _) = one_segment(&five_payloads());
    fs::rename(&path, segment::path(source.path(), 5)).unwrap();
    let err = open(source.path(), 0).unwrap_err();
    assert!(
        matches!(err, WalError::BadHeader { segment: 5, .. }),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    fs::write(segment::path(dir.path(), 1), [7; 64]).unwrap();
    let err = open(dir.path(), 0).unwrap_err();
    assert!(
        matches!(err, WalError::BadHeader { segment: 1, .. }),
        "{err}"
    );
}

#[test]
fn flipped_byte_in_the_last_record_is_a_torn_tail() {
    let payloads = five_payloads();
    let (dir, path, mut bytes) = one_segment(&payloads);
    let original_len = bytes.len();
    *bytes.last_mut().unwrap() ^= 0x40;
    fs::write(&path, &bytes).unwrap();

    let (_, replayed, report) = open(dir.path(), 0).unwrap();
    assert_eq!(payloads_of(&replayed), &payloads[..4]);
    assert_eq!(report.torn_tails, 1);
    let last_start = original_len - RECORD_HEADER_LEN - payloads[4].len();
    assert_eq!(fs::metadata(&path).unwrap().len(), last_start as u64);
}

#[test]
fn flipped_byte_in_a_middle_record_is_corruption() {
    let payloads = five_payloads();
    let (dir, path, bytes) = one_segment(&payloads);
    let second = HEADER_LEN + RECORD_HEADER_LEN + payloads[0].len();
    // A payload byte, then a checksum byte, of the second record.
    for flip in [second + RECORD_HEADER_LEN + 3, second + 5] {
        let mut damaged = bytes.clone();
        damaged[flip] ^= 0x01;
        fs::write(&path, &damaged).unwrap();
        let mut replayed = 0;
        let err = Wal::open(config(dir.path()), 0, |_, _| {
            replayed += 1;
            Ok(())
        })
        .unwrap_err();
        let WalError::Corrupt {
            segment, offset, ..
        } = &err
        else {
            panic!("expected corruption, got {err}");
        };
        assert_eq!((*segment, *offset), (1, second as u64));
        assert_eq!(err.code(), ErrorCode::Database);
        assert_eq!(replayed, 1, "records before the damage are replayed");
        assert_eq!(
            fs::read(&path).unwrap(),
            damaged,
            "a corrupt segment is left as it is"
        );
    }
}

#[test]
fn zero_filled_tail_is_a_torn_tail() {
    let payloads = five_payloads();
    let (dir, path, mut bytes) = one_segment(&payloads);
    let good_len = bytes.len();
    bytes.resize(good_len + 4096, 0);
    fs::write(&path, &bytes).unwrap();

    let (_, replayed, report) = open(dir.path(), 0).unwrap();
    assert_eq!(payloads_of(&replayed), payloads);
    assert_eq!(report.torn_tails, 1);
    assert_eq!(fs::metadata(&path).unwrap().len(), good_len as u64);
}

#[test]
fn a_torn_segment_does_not_stop_the_later_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _, _) = open(dir.path(), 0).unwrap();
    for payload in five_payloads() {
        wal.append(&payload).unwrap();
    }
    assert_eq!(wal.rotate().unwrap(), 1);
    wal.append(b"in segment two").unwrap();
    wal.sync().unwrap();
    drop(wal);
    let first = segment::path(dir.path(), 1);
    let len = fs::metadata(&first).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&first)
        .unwrap()
        .set_len(len - 3)
        .unwrap();

    let (_, replayed, report) = open(dir.path(), 0).unwrap();
    let mut expected: Replayed = five_payloads()[..4]
        .iter()
        .map(|p| (1, p.clone()))
        .collect();
    expected.push((2, b"in segment two".to_vec()));
    assert_eq!(replayed, expected);
    // (3 was created ahead, and is replayed empty.)
    assert_eq!((report.segments, report.torn_tails), (3, 1));
}

/// A record length beyond the maximum is damage, not a tear, even when it
/// runs past the end of the file: the records behind it are not truncated.
#[test]
fn a_length_beyond_the_maximum_is_corruption_wherever_it_is() {
    let payloads = five_payloads();
    let (dir, path, bytes) = one_segment(&payloads);
    let second = HEADER_LEN + RECORD_HEADER_LEN + payloads[0].len();
    let last = bytes.len() - RECORD_HEADER_LEN - payloads[4].len();
    for at in [second, last] {
        let mut damaged = bytes.clone();
        // The length's high byte: 2^24 times more than it was, past 256 MiB.
        damaged[at + 3] = 0x7f;
        fs::write(&path, &damaged).unwrap();
        let err = open(dir.path(), 0).unwrap_err();
        assert!(
            matches!(err, WalError::Corrupt { segment: 1, offset, .. } if offset == at as u64),
            "damage at {at}: {err}"
        );
        assert_eq!(fs::read(&path).unwrap(), damaged, "left as it is");
    }
}
