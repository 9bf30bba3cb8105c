//! Replaying one segment, and cutting off its torn tail.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use super::segment::{self, HEADER_LEN, MAX_RECORD_BYTES, RECORD_HEADER_LEN};
use super::{Result, WalError};

/// Large enough to read records in few system calls.
const READ_BUFFER_BYTES: usize = 1 << 20;

/// What replaying one segment found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct SegmentScan {
    /// Records replayed.
    pub(super) records: u64,
    /// Payload bytes replayed.
    pub(super) bytes: u64,
    /// Whether a torn last record was dropped (and truncated away).
    pub(super) torn: bool,
}

/// How the scan of a segment's records ended.
enum End {
    /// At the end of the file, on a record boundary.
    Clean,
    /// At a torn last record starting at `offset`.
    Torn { offset: u64, reason: String },
}

/// Passes every complete record of segment `seq` at `path` to `replay`, in
/// order; truncates a torn tail (see the module docs for what is torn and
/// what is corrupt).
pub(super) fn replay_segment(
    path: &Path,
    seq: u64,
    replay: &mut impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<SegmentScan> {
    let read_err = |offset| {
        move |source| WalError::Read {
            path: path.to_path_buf(),
            segment: seq,
            offset,
            source,
        }
    };
    let file = File::open(path).map_err(read_err(0))?;
    let file_len = file.metadata().map_err(read_err(0))?.len();
    if file_len == 0 {
        return Ok(SegmentScan::default());
    }
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, file);
    check_header(&mut reader, path, seq, file_len)?;

    let mut scanner = Scanner {
        path,
        seq,
        file_len,
        offset: HEADER_LEN as u64,
        payload: Vec::new(),
        scan: SegmentScan::default(),
    };
    let end = scanner.run(&mut reader, replay)?;
    drop(reader);
    if let End::Torn { offset, reason } = end {
        tracing::warn!(
            segment = seq,
            offset,
            dropped_bytes = file_len.saturating_sub(offset),
            reason,
            path = %path.display(),
            "WAL segment ends in a torn record; truncating it"
        );
        truncate(path, seq, offset)?;
        scanner.scan.torn = true;
    }
    Ok(scanner.scan)
}

fn check_header(reader: &mut impl Read, path: &Path, seq: u64, file_len: u64) -> Result<()> {
    let bad = |reason: String| WalError::BadHeader {
        path: path.to_path_buf(),
        segment: seq,
        reason,
    };
    if file_len < HEADER_LEN as u64 {
        return Err(bad(format!(
            "the file has {file_len} bytes, fewer than a header"
        )));
    }
    let mut header = [0; HEADER_LEN];
    reader
        .read_exact(&mut header)
        .map_err(|source| WalError::Read {
            path: path.to_path_buf(),
            segment: seq,
            offset: 0,
            source,
        })?;
    match segment::decode_header(&header) {
        Ok(declared) if declared == seq => Ok(()),
        Ok(declared) => Err(bad(format!("it declares sequence number {declared}"))),
        Err(reason) => Err(bad(reason)),
    }
}

/// Cuts the file to `len` bytes, durably.
fn truncate(path: &Path, seq: u64, len: u64) -> Result<()> {
    let cut = || {
        let file = OpenOptions::new().write(true).open(path)?;
        file.set_len(len)?;
        file.sync_all()
    };
    cut().map_err(|source| WalError::Truncate {
        path: path.to_path_buf(),
        segment: seq,
        offset: len,
        source,
    })
}

/// Walks the records of one segment after its header.
struct Scanner<'a> {
    path: &'a Path,
    seq: u64,
    file_len: u64,
    /// Where the next record starts: the end of the last good one.
    offset: u64,
    /// The current record's payload (reused).
    payload: Vec<u8>,
    scan: SegmentScan,
}

impl Scanner<'_> {
    fn run(
        &mut self,
        reader: &mut impl BufRead,
        replay: &mut impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<End> {
        loop {
            let remaining = self.file_len.saturating_sub(self.offset);
            if remaining == 0 {
                return Ok(End::Clean);
            }
            if remaining < RECORD_HEADER_LEN as u64 {
                return Ok(self.torn(format!(
                    "{remaining} bytes are left, fewer than a record header"
                )));
            }
            let mut header = [0; RECORD_HEADER_LEN];
            reader.read_exact(&mut header).map_err(|e| self.io(e))?;
            let (len, crc) = segment::decode_record_header(&header);
            // A length no writer writes is damage, wherever it is: a tear
            // leaves a record cut short, never a length past the maximum.
            if len > MAX_RECORD_BYTES {
                return Err(self.corrupt(format!(
                    "record length {len} exceeds the maximum of {MAX_RECORD_BYTES}"
                )));
            }
            let available = remaining - RECORD_HEADER_LEN as u64;
            if u64::from(len) > available {
                return Ok(self.torn(format!(
                    "the record claims {len} bytes but {available} are left"
                )));
            }
            self.payload.clear();
            reader
                .by_ref()
                .take(u64::from(len))
                .read_to_end(&mut self.payload)
                .map_err(|e| self.io(e))?;
            if self.payload.len() as u64 != u64::from(len) {
                let short = io::Error::from(io::ErrorKind::UnexpectedEof);
                return Err(self.io(short));
            }
            let problem = if len == 0 {
                Some("empty record".to_owned())
            } else if crc32c::crc32c(&self.payload) != crc {
                Some("payload checksum mismatch".to_owned())
            } else {
                None
            };
            if let Some(reason) = problem {
                // Only zero bytes after a bad record: a tail that never
                // reached the disk. Anything else may hold acknowledged
                // records, which a truncation would lose.
                return if rest_is_zero(reader).map_err(|e| self.io(e))? {
                    Ok(self.torn(reason))
                } else {
                    Err(self.corrupt(format!("{reason}, and more data follows")))
                };
            }
            replay(self.seq, &self.payload).map_err(|source| WalError::Replay {
                segment: self.seq,
                offset: self.offset,
                source: Box::new(source),
            })?;
            self.scan.records += 1;
            self.scan.bytes += u64::from(len);
            self.offset += segment::record_bytes(len);
        }
    }

    fn torn(&self, reason: String) -> End {
        End::Torn {
            offset: self.offset,
            reason,
        }
    }

    fn corrupt(&self, reason: String) -> WalError {
        WalError::Corrupt {
            segment: self.seq,
            offset: self.offset,
            reason,
        }
    }

    fn io(&self, source: io::Error) -> WalError {
        WalError::Read {
            path: self.path.to_path_buf(),
            segment: self.seq,
            offset: self.offset,
            source,
        }
    }
}

/// Whether everything left in `reader` is zero bytes.
fn rest_is_zero(reader: &mut impl BufRead) -> io::Result<bool> {
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(true);
        }
        if chunk.iter().any(|&b| b != 0) {
            return Ok(false);
        }
        let consumed = chunk.len();
        reader.consume(consumed);
    }
}
