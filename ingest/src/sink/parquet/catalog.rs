//! The catalog: which files hold what.
//!
//! Persisted as a checkpoint, `catalog.json`, and an append-only log of the
//! commits since, `catalog.log`. A commit appends one record (the files it
//! adds and removes) and fdatasyncs the log: its cost follows the commit,
//! not the catalog (a file of 10,000 trackers lists 10,000 spans, so a day's
//! catalog reaches hundreds of MB, which rewriting at every flush cannot
//! afford). Once the log outgrows the checkpoint, the state is written as a
//! new checkpoint and the log emptied.
//!
//! A log record is its length (u32, little endian), the CRC-32C of its
//! bytes (u32, little endian), then the bytes: a JSON [`Record`]. Records
//! carry consecutive sequence numbers; the checkpoint says through which
//! one it holds them, so a crash between writing a checkpoint and emptying
//! the log replays nothing twice. A record cut short or corrupt at the end
//! of the log is a commit that never returned (a crash during its append):
//! it is dropped at open.

use std::collections::HashSet;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use schemas::FileEntry;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Format 2: checkpoint and log. Format 1 (`catalog.json` only, rewritten
/// at every commit) is read as a checkpoint without a log.
const FORMAT: u32 = 2;

/// Bytes of a record's header: length and CRC-32C.
const HEADER: usize = 8;

/// The log is folded into a new checkpoint once it is larger than the
/// checkpoint and at least this large.
const MIN_CHECKPOINT_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    format: u32,
    /// Every WAL record in segments up to this one is in the files below.
    flushed_wal_segment: u64,
    next_file_id: u64,
    /// The log's records through this sequence number are in this state
    /// (absent in format 1: no log).
    #[serde(default)]
    log_seq: u64,
    files: Vec<FileEntry>,
}

/// One commit, as the log holds it.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    seq: u64,
    add: Vec<FileEntry>,
    remove: Vec<u64>,
    flushed_wal_segment: u64,
    next_file_id: u64,
}

impl State {
    fn empty() -> Self {
        Self {
            format: FORMAT,
            flushed_wal_segment: 0,
            next_file_id: 1,
            log_seq: 0,
            files: Vec::new(),
        }
    }

    fn apply(&mut self, record: Record) {
        self.files.retain(|f| !record.remove.contains(&f.id));
        self.files.extend(record.add);
        self.flushed_wal_segment = self.flushed_wal_segment.max(record.flushed_wal_segment);
        self.next_file_id = self.next_file_id.max(record.next_file_id);
        self.log_seq = record.seq;
    }
}

/// The catalog of one telemetry root.
#[derive(Debug)]
pub(crate) struct Catalog {
    root: PathBuf,
    state: State,
    log: File,
    /// Bytes of whole records in the log; the next one goes here.
    log_len: u64,
    /// Bytes of the last checkpoint written or read.
    checkpoint_len: u64,
    /// The log is folded once it passes this and `checkpoint_len`.
    min_checkpoint_bytes: u64,
}

impl Catalog {
    /// Reads the catalog under `root` (or starts empty) and deletes Parquet
    /// files under `root` it does not list: a crash between writing a file
    /// and committing the catalog leaves such orphans, whose rows are still
    /// in the WAL.
    pub(crate) fn open(root: &Path) -> Result<Self> {
        Self::open_with(root, MIN_CHECKPOINT_BYTES)
    }

    /// [`open`](Self::open), folding the log at `min_checkpoint_bytes` (tests).
    pub(crate) fn open_with(root: &Path, min_checkpoint_bytes: u64) -> Result<Self> {
        std::fs::create_dir_all(root).map_err(Error::io("creating", root))?;
        let (state, checkpoint_len) = read_checkpoint(root)?;
        let log_path = root.join("catalog.log");
        let created = !log_path.exists();
        let log = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&log_path)
            .map_err(Error::io("opening", &log_path))?;
        if created {
            sync_dir(root)?;
        }
        let mut catalog = Self {
            root: root.to_owned(),
            state,
            log,
            log_len: 0,
            checkpoint_len,
            min_checkpoint_bytes,
        };
        catalog.replay()?;
        catalog.remove_orphans()?;
        Ok(catalog)
    }

    /// Applies the log's records newer than the checkpoint; drops a torn
    /// or corrupt tail.
    fn replay(&mut self) -> Result<()> {
        let path = self.root.join("catalog.log");
        let mut bytes = Vec::new();
        (&self.log)
            .read_to_end(&mut bytes)
            .map_err(Error::io("reading", &path))?;
        let whole = apply_log(&mut self.state, &bytes, &path)?;
        if whole < bytes.len() {
            tracing::warn!(
                path = %path.display(),
                bytes = bytes.len() - whole,
                "dropping the end of the catalog log: a commit cut short by a crash"
            );
            self.log
                .set_len(whole as u64)
                .and_then(|()| self.log.sync_data())
                .map_err(Error::io("truncating", &path))?;
        }
        self.log_len = whole as u64;
        Ok(())
    }

    fn remove_orphans(&self) -> Result<()> {
        let listed: HashSet<PathBuf> = self
            .state
            .files
            .iter()
            .map(|f| self.root.join(&f.path))
            .collect();
        let days = std::fs::read_dir(&self.root).map_err(Error::io("listing", &self.root))?;
        for day in days {
            let day = day.map_err(Error::io("listing", &self.root))?.path();
            if !day.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&day).map_err(Error::io("listing", &day))? {
                let file = file.map_err(Error::io("listing", &day))?.path();
                let stray = file
                    .extension()
                    .is_some_and(|e| e == "parquet" || e == "tmp");
                if stray && !listed.contains(&file) {
                    tracing::warn!(path = %file.display(), "removing a file the catalog does not list");
                    std::fs::remove_file(&file).map_err(Error::io("removing", &file))?;
                }
            }
        }
        Ok(())
    }

    pub(crate) fn files(&self) -> &[FileEntry] {
        &self.state.files
    }

    pub(crate) fn flushed_wal_segment(&self) -> u64 {
        self.state.flushed_wal_segment
    }

    /// Reserves a file id.
    pub(crate) fn next_file_id(&mut self) -> u64 {
        let id = self.state.next_file_id;
        self.state.next_file_id += 1;
        id
    }

    /// Adds and removes files (and advances the flushed WAL segment) in one
    /// durable append to the log. Returns the paths of the removed files,
    /// which the caller deletes once no reader holds them.
    pub(crate) fn commit(
        &mut self,
        add: Vec<FileEntry>,
        remove: &[u64],
        flushed_wal_segment: Option<u64>,
    ) -> Result<Vec<PathBuf>> {
        let path = self.root.join("catalog.log");
        let record = Record {
            seq: self.state.log_seq + 1,
            add,
            remove: remove.to_vec(),
            flushed_wal_segment: flushed_wal_segment.unwrap_or(0),
            next_file_id: self.state.next_file_id,
        };
        let json = serde_json::to_vec(&record).map_err(|source| Error::Catalog {
            path: path.clone(),
            source,
        })?;
        let len = u32::try_from(json.len()).map_err(|_| Error::CatalogState {
            path: path.clone(),
            reason: format!("a record of {} bytes", json.len()),
        })?;
        let mut bytes = Vec::with_capacity(HEADER + json.len());
        bytes.extend_from_slice(&len.to_le_bytes());
        bytes.extend_from_slice(&crc32c::crc32c(&json).to_le_bytes());
        bytes.extend_from_slice(&json);
        // Written where the last whole record ends: a failed append leaves
        // nothing the next one does not overwrite.
        self.log
            .write_all_at(&bytes, self.log_len)
            .and_then(|()| self.log.sync_data())
            .map_err(Error::io("appending to", &path))?;
        self.log_len += bytes.len() as u64;
        let removed: Vec<PathBuf> = self
            .state
            .files
            .iter()
            .filter(|f| remove.contains(&f.id))
            .map(|f| self.root.join(&f.path))
            .collect();
        self.state.apply(record);
        if self.log_len > self.checkpoint_len.max(self.min_checkpoint_bytes) {
            // The commit is durable in the log already: a failed checkpoint
            // only leaves the log longer.
            if let Err(e) = self.checkpoint() {
                tracing::warn!(error = %e, "writing a catalog checkpoint failed; the log keeps the commits");
            }
        }
        Ok(removed)
    }

    /// Writes the state as `catalog.json` (atomically), then empties the log.
    ///
    /// Streamed to the file: with a day of 10,000 trackers in a hundred
    /// files (their spans), the JSON is over 100 MB, and made in memory
    /// first it was the server's peak (heaptrack: 134 MB, and the flush
    /// that wrote it took twice as long).
    fn checkpoint(&mut self) -> Result<()> {
        let path = self.root.join("catalog.json");
        let tmp = self.root.join("catalog.json.tmp");
        let len = write_json_durably(&tmp, &self.state)?;
        std::fs::rename(&tmp, &path).map_err(Error::io("renaming", &path))?;
        sync_dir(&self.root)?;
        self.checkpoint_len = len;
        // Its records are in the checkpoint now (and skipped if they stay).
        let log = self.root.join("catalog.log");
        self.log
            .set_len(0)
            .and_then(|()| self.log.sync_data())
            .map_err(Error::io("emptying", &log))?;
        self.log_len = 0;
        Ok(())
    }
}

/// The checkpoint under `root` and its size; empty when there is none.
fn read_checkpoint(root: &Path) -> Result<(State, u64)> {
    let path = root.join("catalog.json");
    match std::fs::read(&path) {
        Ok(bytes) => {
            let state: State = serde_json::from_slice(&bytes).map_err(|source| Error::Catalog {
                path: path.clone(),
                source,
            })?;
            if state.format > FORMAT {
                return Err(Error::CatalogState {
                    path,
                    reason: format!("format {}; this build reads up to {FORMAT}", state.format),
                });
            }
            let len = bytes.len() as u64;
            let mut state = State {
                format: FORMAT,
                ..state
            };
            state
                .files
                .iter_mut()
                .for_each(FileEntry::share_inner_lists);
            Ok((state, len))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((State::empty(), 0)),
        Err(e) => Err(Error::io("reading", &path)(e)),
    }
}

/// Applies the records of the log `bytes` (read from `path`) newer than
/// `state`; answers where its whole records end (a torn or corrupt record
/// ends them).
fn apply_log(state: &mut State, bytes: &[u8], path: &Path) -> Result<usize> {
    let mut at = 0;
    while let Some((record, len)) = parse_record(&bytes[at..]) {
        let mut record: Record =
            serde_json::from_slice(record).map_err(|source| Error::Catalog {
                path: path.to_owned(),
                source,
            })?;
        record.add.iter_mut().for_each(FileEntry::share_inner_lists);
        if record.seq > state.log_seq {
            if record.seq != state.log_seq + 1 {
                return Err(Error::CatalogState {
                    path: path.to_owned(),
                    reason: format!(
                        "record {} follows {}: a commit is missing",
                        record.seq, state.log_seq
                    ),
                });
            }
            state.apply(record);
        }
        at += len;
    }
    Ok(at)
}

/// The first whole record of `bytes` with an intact checksum, and the bytes
/// it takes with its header; `None` at the end or at a torn record.
fn parse_record(bytes: &[u8]) -> Option<(&[u8], usize)> {
    let header = bytes.get(..HEADER)?;
    let len = u32::from_le_bytes(header[..4].try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(header[4..].try_into().ok()?);
    let body = bytes.get(HEADER..HEADER.checked_add(len)?)?;
    (crc32c::crc32c(body) == crc).then_some((body, HEADER + len))
}

/// The files the catalog under the telemetry root `root` lists, read
/// without changing anything there (for tools that inspect a data
/// directory; the engine keeps its own view open).
pub fn listed_files(root: &Path) -> Result<Vec<FileEntry>> {
    let (mut state, _) = read_checkpoint(root)?;
    let path = root.join("catalog.log");
    match std::fs::read(&path) {
        Ok(bytes) => {
            apply_log(&mut state, &bytes, &path)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("reading", &path)(e)),
    }
    Ok(state.files)
}

/// Writes `value` as JSON to a new file at `path` through a small buffer,
/// and fsyncs it; answers its length.
fn write_json_durably(path: &Path, value: &impl serde::Serialize) -> Result<u64> {
    use std::io::Write;
    let file = std::fs::File::create(path).map_err(Error::io("creating", path))?;
    let mut out = std::io::BufWriter::with_capacity(256 * 1024, file);
    serde_json::to_writer(&mut out, value).map_err(|source| match source.io_error_kind() {
        // A full or failing disk is an I/O error, as for every other write.
        Some(_) => Error::io("writing", path)(std::io::Error::from(source)),
        None => Error::Catalog {
            path: path.to_owned(),
            source,
        },
    })?;
    out.flush().map_err(Error::io("writing", path))?;
    let file = out
        .into_inner()
        .map_err(|e| Error::io("writing", path)(e.into_error()))?;
    file.sync_all().map_err(Error::io("syncing", path))?;
    let len = file
        .metadata()
        .map_err(Error::io("reading metadata of", path))?
        .len();
    Ok(len)
}

/// fsyncs a directory, so that a rename or creation in it survives power loss.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::io("syncing directory", dir))
}

#[cfg(test)]
mod tests;
