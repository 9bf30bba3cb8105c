//! Properties: any payload sequence round-trips; no byte pattern panics.

use std::fs;

use proptest::collection::vec;
use proptest::prelude::*;

use super::super::segment;
use super::super::{Wal, WalError};
use super::{Replayed, config, open, open_sized};

proptest! {
    // Every case creates and syncs real files; a few dozen cases cover the
    // framing while keeping the suite fast.
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn payloads_round_trip_across_rotations(
        ops in vec((vec(any::<u8>(), 1..400), any::<bool>()), 0..50),
        segment_bytes in 0u64..4096,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _, _) = open_sized(dir.path(), 0, segment_bytes).unwrap();
        let mut written = Replayed::new();
        for (payload, rotate) in ops {
            wal.append(&payload).unwrap();
            written.push((wal.current_segment(), payload));
            if rotate {
                wal.rotate().unwrap();
            }
        }
        wal.sync().unwrap();
        drop(wal);

        let (_, replayed, report) = open(dir.path(), 0).unwrap();
        prop_assert_eq!(report.torn_tails, 0);
        prop_assert_eq!(replayed, written);
    }

    #[test]
    fn garbage_after_records_never_panics(
        payloads in vec(vec(any::<u8>(), 1..100), 0..8),
        garbage in vec(any::<u8>(), 0..200),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _, _) = open(dir.path(), 0).unwrap();
        for payload in &payloads {
            wal.append(payload).unwrap();
        }
        wal.sync().unwrap();
        drop(wal);
        let path = segment::path(dir.path(), 1);
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(&garbage);
        fs::write(&path, &bytes).unwrap();

        match open(dir.path(), 0) {
            Ok((_, replayed, _)) => {
                // Garbage may, however unlikely, frame a valid record.
                prop_assert!(replayed.len() >= payloads.len());
                let prefix: Vec<Vec<u8>> =
                    replayed.into_iter().take(payloads.len()).map(|(_, p)| p).collect();
                prop_assert_eq!(prefix, payloads);
            }
            Err(WalError::Corrupt { segment: 1, .. }) => {}
            Err(other) => prop_assert!(false, "unexpected error: {other}"),
        }
    }

    #[test]
    fn arbitrary_segment_files_never_panic(
        body in vec(any::<u8>(), 0..300),
        with_header in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = if with_header { segment::encode_header(1).to_vec() } else { Vec::new() };
        bytes.extend_from_slice(&body);
        fs::write(segment::path(dir.path(), 1), &bytes).unwrap();

        let opened = Wal::open(config(dir.path()), 0, |_, _| Ok(()));
        match opened {
            Ok(_) | Err(WalError::Corrupt { .. } | WalError::BadHeader { .. }) => {}
            Err(other) => prop_assert!(false, "unexpected error: {other}"),
        }
    }
}
