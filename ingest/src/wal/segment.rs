//! The segment format (names, header, record framing) and the segment writer.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Result, WalError};

/// The first bytes of every segment file.
pub(super) const MAGIC: [u8; 8] = *b"THWAL\0\0\x01";
/// The format version written into new segments (the only one read).
pub(super) const FORMAT_VERSION: u16 = 1;
/// Header bytes: magic, version, sequence number, checksum.
pub(super) const HEADER_LEN: usize = 8 + 2 + 8 + 4;
/// Bytes in front of every record's payload: length, checksum.
pub(super) const RECORD_HEADER_LEN: usize = 4 + 4;
/// The largest payload a record may hold; a longer length is corruption.
pub(super) const MAX_RECORD_BYTES: u32 = 256 << 20;
/// Large enough that a group of small records becomes one `write` call.
const WRITE_BUFFER_BYTES: usize = 1 << 20;

const SEGMENT_SUFFIX: &str = ".wal";
const TEMP_SUFFIX: &str = ".wal.tmp";
const SEQ_DIGITS: usize = 20;

/// The path of segment `seq` in `dir`.
pub(super) fn path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq:020}{SEGMENT_SUFFIX}"))
}

fn temp_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq:020}{TEMP_SUFFIX}"))
}

/// A file of the WAL directory that the log owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Entry {
    /// A segment, by sequence number.
    Segment(u64),
    /// A segment that was never renamed into place (its creation crashed).
    Temp(u64),
}

impl Entry {
    fn parse(name: &OsStr) -> Option<Self> {
        let name = name.to_str()?;
        let (digits, kind): (_, fn(u64) -> Self) = if let Some(d) = name.strip_suffix(TEMP_SUFFIX) {
            (d, Self::Temp)
        } else {
            (name.strip_suffix(SEGMENT_SUFFIX)?, Self::Segment)
        };
        if digits.len() != SEQ_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok().map(kind)
    }
}

/// The log's files in `dir`, by path; other files are left alone.
pub(super) fn list(dir: &Path) -> Result<Vec<(PathBuf, Entry)>> {
    let list_err = |source| WalError::ListDir {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries = Vec::new();
    for dir_entry in fs::read_dir(dir).map_err(list_err)? {
        let dir_entry = dir_entry.map_err(list_err)?;
        match Entry::parse(&dir_entry.file_name()) {
            Some(entry) => entries.push((dir_entry.path(), entry)),
            None => {
                tracing::debug!(path = %dir_entry.path().display(), "ignoring a foreign file in the WAL directory")
            }
        }
    }
    Ok(entries)
}

/// Makes file creations, renames and deletions in `dir` durable.
pub(super) fn sync_dir(dir: &Path) -> Result<()> {
    let sync = || {
        if cfg!(unix) {
            File::open(dir)?.sync_all()
        } else {
            // Elsewhere directories cannot be opened as files; their entries
            // are made durable by the file system itself.
            Ok(())
        }
    };
    sync().map_err(|source| WalError::SyncDir {
        path: dir.to_path_buf(),
        source,
    })
}

/// The header of segment `seq`.
pub(super) fn encode_header(seq: u64) -> [u8; HEADER_LEN] {
    let mut header = [0; HEADER_LEN];
    let (body, crc) = header.split_at_mut(HEADER_LEN - 4);
    let (magic, rest) = body.split_at_mut(MAGIC.len());
    let (version, seq_bytes) = rest.split_at_mut(2);
    magic.copy_from_slice(&MAGIC);
    version.copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    seq_bytes.copy_from_slice(&seq.to_le_bytes());
    crc.copy_from_slice(&crc32c::crc32c(body).to_le_bytes());
    header
}

/// The sequence number a header declares, or why it is not a valid header.
pub(super) fn decode_header(header: &[u8; HEADER_LEN]) -> Result<u64, String> {
    let mut rest = header.as_slice();
    let magic: [u8; 8] = take(&mut rest);
    let version = u16::from_le_bytes(take(&mut rest));
    let seq = u64::from_le_bytes(take(&mut rest));
    let stored_crc = u32::from_le_bytes(take(&mut rest));
    if magic != MAGIC {
        return Err(format!("bad magic {magic:02x?}"));
    }
    let body = header.get(..HEADER_LEN - 4).unwrap_or_default();
    if crc32c::crc32c(body) != stored_crc {
        return Err("header checksum mismatch".to_owned());
    }
    if version != FORMAT_VERSION {
        return Err(format!("unsupported format version {version}"));
    }
    Ok(seq)
}

/// Takes the next `N` bytes off `bytes`, zeros if there are fewer.
fn take<const N: usize>(bytes: &mut &[u8]) -> [u8; N] {
    match bytes.split_first_chunk::<N>() {
        Some((head, rest)) => {
            *bytes = rest;
            *head
        }
        None => [0; N],
    }
}

/// A record's length and checksum, as written in front of its payload.
pub(super) fn encode_record_header(len: u32, crc: u32) -> [u8; RECORD_HEADER_LEN] {
    let mut header = [0; RECORD_HEADER_LEN];
    let (len_bytes, crc_bytes) = header.split_at_mut(4);
    len_bytes.copy_from_slice(&len.to_le_bytes());
    crc_bytes.copy_from_slice(&crc.to_le_bytes());
    header
}

/// A record's length and checksum.
pub(super) fn decode_record_header(header: &[u8; RECORD_HEADER_LEN]) -> (u32, u32) {
    let mut rest = header.as_slice();
    let len = u32::from_le_bytes(take(&mut rest));
    let crc = u32::from_le_bytes(take(&mut rest));
    (len, crc)
}

/// The length field for a payload of `len` bytes, if the format allows it.
pub(super) fn record_len(len: usize) -> Result<u32> {
    match u32::try_from(len) {
        Ok(0) => Err(WalError::EmptyRecord),
        Ok(len) if len <= MAX_RECORD_BYTES => Ok(len),
        _ => Err(WalError::RecordTooLarge {
            len,
            max: MAX_RECORD_BYTES,
        }),
    }
}

/// Bytes a record with a payload of `len` bytes occupies on disk.
pub(super) fn record_bytes(len: u32) -> u64 {
    RECORD_HEADER_LEN as u64 + u64::from(len)
}

/// Appends records to one segment file through a large buffer.
#[derive(Debug)]
pub(super) struct SegmentWriter {
    seq: u64,
    path: PathBuf,
    file: BufWriter<File>,
    /// The same file, to `fdatasync` from another thread while appends go on.
    handle: Arc<File>,
    /// Bytes of the segment, header and buffered records included.
    len: u64,
    records: u64,
    /// Bytes of the segment at its last successful sync (or creation):
    /// everything up to here is on disk.
    synced: u64,
    /// Records up to `synced`.
    synced_records: u64,
}

impl SegmentWriter {
    /// Creates segment `seq` in `dir` with its header, durably.
    ///
    /// The header is written and synced under a temporary name that is then
    /// renamed into place, so a segment file never has a partial header.
    pub(super) fn create(dir: &Path, seq: u64) -> Result<Self> {
        let temp = temp_path(dir, seq);
        let path = path(dir, seq);
        let create = || {
            let mut file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&temp)?;
            file.write_all(&encode_header(seq))?;
            file.sync_data()?;
            fs::rename(&temp, &path)?;
            Ok(file)
        };
        let (file, handle) = create()
            .and_then(|file| Ok((file.try_clone()?, file)))
            .map_err(|source| WalError::CreateSegment {
                path: path.clone(),
                segment: seq,
                source,
            })?;
        sync_dir(dir)?;
        Ok(Self {
            seq,
            path,
            file: BufWriter::with_capacity(WRITE_BUFFER_BYTES, file),
            handle: Arc::new(handle),
            len: HEADER_LEN as u64,
            records: 0,
            synced: HEADER_LEN as u64,
            synced_records: 0,
        })
    }

    /// After a failed write or sync: cuts the file back to its length at
    /// the last successful sync (what follows was never acknowledged, and
    /// may be a partial record), syncs it, and drops the buffered bytes
    /// unwritten. The segment then holds exactly its synced records.
    pub(super) fn cut_to_synced(&mut self) -> Result<()> {
        let cut = |synced: u64| -> std::io::Result<(File, File)> {
            let file = OpenOptions::new().write(true).open(&self.path)?;
            file.set_len(synced)?;
            file.sync_data()?;
            Ok((file.try_clone()?, file))
        };
        let (file, handle) = cut(self.synced).map_err(|source| WalError::Truncate {
            path: self.path.clone(),
            segment: self.seq,
            offset: self.synced,
            source,
        })?;
        let failed = std::mem::replace(
            &mut self.file,
            BufWriter::with_capacity(WRITE_BUFFER_BYTES, file),
        );
        // Its buffer holds bytes of the failed group: they must never reach
        // the file (dropping a `BufWriter` would write them).
        drop(failed.into_parts());
        self.handle = Arc::new(handle);
        self.file
            .seek(SeekFrom::Start(self.synced))
            .map_err(|source| WalError::Write {
                path: self.path.clone(),
                segment: self.seq,
                source,
            })?;
        self.len = self.synced;
        self.records = self.synced_records;
        Ok(())
    }

    /// Buffers one record, the concatenation of `parts`; `len` is their
    /// total length, checked by [`record_len`].
    pub(super) fn append(&mut self, parts: &[&[u8]], len: u32) -> Result<()> {
        let crc = parts
            .iter()
            .fold(0, |crc, part| crc32c::crc32c_append(crc, part));
        let header = encode_record_header(len, crc);
        // The writes only copy into the buffer unless it is full; parts
        // larger than the buffer go straight to the file.
        self.file
            .write_all(&header)
            .and_then(|()| parts.iter().try_for_each(|part| self.file.write_all(part)))
            .map_err(|source| WalError::Write {
                path: self.path.clone(),
                segment: self.seq,
                source,
            })?;
        self.len += record_bytes(len);
        self.records += 1;
        Ok(())
    }

    /// Writes the buffer out and `fdatasync`s the file.
    pub(super) fn sync(&mut self) -> Result<()> {
        let (len, records) = self.flush()?;
        self.handle.sync_data().map_err(|source| WalError::Sync {
            path: self.path.clone(),
            segment: self.seq,
            source,
        })?;
        self.mark_synced(len, records);
        Ok(())
    }

    /// Writes the buffer out to the kernel; answers the segment's length
    /// and records then, which an `fdatasync` started after makes durable.
    pub(super) fn flush(&mut self) -> Result<(u64, u64)> {
        self.file.flush().map_err(|source| WalError::Write {
            path: self.path.clone(),
            segment: self.seq,
            source,
        })?;
        Ok((self.len, self.records))
    }

    /// Records that the segment's first `len` bytes (`records` records)
    /// are on disk. Never moves back, nor past what was appended.
    pub(super) fn mark_synced(&mut self, len: u64, records: u64) {
        if len > self.synced && len <= self.len {
            self.synced = len;
            self.synced_records = records;
        }
    }

    /// The file, for an `fdatasync` on another thread.
    pub(super) fn handle(&self) -> &Arc<File> {
        &self.handle
    }

    /// The segment's sequence number.
    pub(super) fn seq(&self) -> u64 {
        self.seq
    }

    /// Bytes of the segment, buffered ones included.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Records appended to this segment.
    pub(super) fn records(&self) -> u64 {
        self.records
    }

    /// Whether records were appended since the last sync.
    pub(super) fn unsynced(&self) -> bool {
        self.records != self.synced_records
    }
}
