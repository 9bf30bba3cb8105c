//! The payload of a WAL record: a write's kept entries, plain or compressed.
//!
//! Two forms (decisions.md 150), told apart by the first byte:
//! - **plain**: the postcard of a `Vec<Entry>` (its count's varint, then
//!   each entry's encoding). The writer never appends an empty record, so
//!   a plain payload never starts with 0.
//! - **compressed**: `0`, a codec byte (1: zstd), then as varints the count
//!   of entries the write sent, the bytes of their encodings side by side,
//!   and the count of those the writer dropped followed by the dropped
//!   indices (ascending, each as its difference from the one before, the
//!   first from 0); then one zstd frame of every entry's encoding. The
//!   request thread compresses a write's entries before the writer knows
//!   which it keeps, so the record names those it left out, and replay
//!   skips them.
//!
//! A record with most entries dropped is written plain (its kept entries'
//! encodings only): `Encoded::record_parts` chooses.

use std::cell::RefCell;

use crate::batch::Entry;

/// The first byte of a compressed payload.
const COMPRESSED: u8 = 0;
/// The codec byte after it: one zstd frame.
const CODEC_ZSTD: u8 = 1;
/// The most bytes a compressed payload's entries may take once
/// decompressed: a plain payload's bound (`wal::MAX_RECORD_BYTES`), since a
/// write's entries compressed or not come from the same capped body.
const MAX_DECOMPRESSED_BYTES: u64 = 256 << 20;

thread_local! {
    /// Each request thread's zstd context, with the level it was made for
    /// (making one allocates its tables).
    static COMPRESSOR: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> =
        const { RefCell::new(None) };
}

/// Whether a record keeping `kept` of a write's `sent` entries is worth
/// its compressed form (the whole write's frame plus the dropped indices):
/// when it keeps at least half. The request's thread compresses a write
/// only if the dedup screen leaves it so; the writer, which knows what it
/// keeps, asks again.
pub(crate) fn keeps_enough(kept: usize, sent: usize) -> bool {
    kept * 2 >= sent
}

/// `bytes` compressed at zstd `level` into one frame (no checksum: the
/// record's CRC covers it), with a context kept by the calling thread.
pub(crate) fn compress(bytes: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        let compressor = match &mut *cell {
            Some((made_for, compressor)) if *made_for == level => compressor,
            slot => {
                let compressor = zstd::bulk::Compressor::new(level)?;
                &mut slot.insert((level, compressor)).1
            }
        };
        let mut block = compressor.compress(bytes)?;
        // `compress` sized the frame's buffer for the worst case, 1.25 to
        // 5 times what it took: this memory waits for the writer.
        block.shrink_to_fit();
        Ok(block)
    })
}

/// Writes into `head` (emptied first) what comes before the frame in a
/// compressed payload: of `sent` entries whose encodings take `bytes`,
/// those at `kept` (ascending) are kept.
pub(crate) fn compressed_head(head: &mut Vec<u8>, sent: usize, bytes: usize, kept: &[usize]) {
    head.clear();
    head.extend([COMPRESSED, CODEC_ZSTD]);
    crate::rows::varint(head, sent as u64);
    crate::rows::varint(head, bytes as u64);
    crate::rows::varint(head, (sent - kept.len()) as u64);
    let mut previous = 0;
    let mut next = 0;
    let dropped = kept.iter().copied().chain([sent]).flat_map(|index| {
        let run = next..index;
        next = index + 1;
        run
    });
    for index in dropped {
        crate::rows::varint(head, (index - previous) as u64);
        previous = index;
    }
}

/// Why a payload could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RecordError {
    /// An entry, or the plain payload, does not decode.
    #[error("a WAL record's entries do not decode")]
    Decode(#[from] postcard::Error),
    /// The compressed form's head is inconsistent.
    #[error("a compressed WAL record is malformed: {0}")]
    Malformed(&'static str),
    /// The frame does not decompress.
    #[error("a compressed WAL record does not decompress")]
    Decompress(#[source] std::io::Error),
}

/// The entries a payload keeps, in the order written.
pub(crate) fn decode(payload: &[u8]) -> Result<Vec<Entry>, RecordError> {
    let Some((&COMPRESSED, rest)) = payload.split_first() else {
        return Ok(postcard::from_bytes(payload)?);
    };
    let Some((&CODEC_ZSTD, rest)) = rest.split_first() else {
        return Err(RecordError::Malformed("unknown codec"));
    };
    let (sent, rest) = postcard::take_from_bytes::<u64>(rest)?;
    let (bytes, rest) = postcard::take_from_bytes::<u64>(rest)?;
    let (dropped, mut rest) = postcard::take_from_bytes::<u64>(rest)?;
    // Every entry takes at least a byte.
    if bytes > MAX_DECOMPRESSED_BYTES || sent > bytes || dropped > sent {
        return Err(RecordError::Malformed("counts out of bounds"));
    }
    let mut skip = Vec::with_capacity(dropped as usize);
    let mut index = 0u64;
    for nth in 0..dropped {
        let (step, after) = postcard::take_from_bytes::<u64>(rest)?;
        rest = after;
        index = match index.checked_add(step) {
            Some(at) if at < sent && (nth == 0 || step > 0) => at,
            _ => return Err(RecordError::Malformed("dropped indices out of order")),
        };
        skip.push(index);
    }
    let plain = zstd::bulk::decompress(rest, bytes as usize).map_err(RecordError::Decompress)?;
    if plain.len() as u64 != bytes {
        return Err(RecordError::Malformed("decompressed length differs"));
    }
    let mut entries = Vec::with_capacity((sent - dropped) as usize);
    let mut skip = skip.into_iter().peekable();
    let mut left: &[u8] = &plain;
    for index in 0..sent {
        let (entry, after) = postcard::take_from_bytes::<Entry>(left)?;
        left = after;
        if skip.next_if_eq(&index).is_none() {
            entries.push(entry);
        }
    }
    if !left.is_empty() {
        return Err(RecordError::Malformed("bytes after the last entry"));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compressed payload of `count` one-byte "entries" (not decodable
    /// as entries: enough to reach the head's checks), with `head` given.
    fn payload(head: &[u8], frame_of: &[u8]) -> Vec<u8> {
        let mut payload = head.to_vec();
        payload.extend(compress(frame_of, 1).unwrap());
        payload
    }

    #[test]
    fn the_head_names_the_dropped_indices_as_steps() {
        let mut head = Vec::new();
        compressed_head(&mut head, 10, 500, &[0, 1, 4, 5, 6, 8]);
        // Tag, codec, 10 sent, 500 bytes (two bytes), 4 dropped: 2, 3, 7, 9.
        assert_eq!(head, [0, 1, 10, 0xF4, 0x03, 4, 2, 1, 4, 2]);
        compressed_head(&mut head, 3, 9, &[0, 1, 2]);
        assert_eq!(head, [0, 1, 3, 9, 0]);
        compressed_head(&mut head, 3, 9, &[2]);
        assert_eq!(head, [0, 1, 3, 9, 2, 0, 1]);
    }

    #[test]
    fn malformed_compressed_payloads_are_refused_not_trusted() {
        let malformed = |payload: &[u8]| match decode(payload) {
            Err(RecordError::Malformed(why)) => why,
            other => panic!("{other:?}"),
        };
        assert_eq!(malformed(&payload(&[0, 2, 1, 1, 0], &[1])), "unknown codec");
        assert_eq!(malformed(&[0]), "unknown codec");
        // More entries than bytes; more dropped than sent; a length over
        // the bound.
        assert_eq!(
            malformed(&payload(&[0, 1, 5, 4, 0], &[1; 4])),
            "counts out of bounds"
        );
        assert_eq!(
            malformed(&payload(&[0, 1, 2, 4, 3], &[1; 4])),
            "counts out of bounds"
        );
        let mut huge = vec![0, 1, 1];
        crate::rows::varint(&mut huge, MAX_DECOMPRESSED_BYTES + 1);
        huge.push(0);
        assert_eq!(malformed(&payload(&huge, &[1])), "counts out of bounds");
        // Dropped indices repeated, or past the last entry.
        assert_eq!(
            malformed(&payload(&[0, 1, 4, 4, 2, 1, 0], &[1; 4])),
            "dropped indices out of order"
        );
        assert_eq!(
            malformed(&payload(&[0, 1, 4, 4, 1, 4], &[1; 4])),
            "dropped indices out of order"
        );
        // The frame holds another length than the head says.
        assert_eq!(
            malformed(&payload(&[0, 1, 2, 3, 0], &[1; 2])),
            "decompressed length differs"
        );
        // Not a zstd frame.
        assert!(matches!(
            decode(&[0, 1, 1, 4, 0, 9, 9, 9, 9]),
            Err(RecordError::Decompress(_))
        ));
        // A head cut short.
        assert!(matches!(decode(&[0, 1, 3]), Err(RecordError::Decode(_))));
    }
}
