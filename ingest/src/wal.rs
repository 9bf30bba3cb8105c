//! The write-ahead log: opaque byte payloads made durable before they are
//! acknowledged, and replayed after a restart until another store has them.
//!
//! One writer thread owns a [`Wal`]. It [`append`](Wal::append)s records
//! (buffered) and calls [`sync`](Wal::sync) once per group of records: when
//! `sync` returns, every record appended before it is on disk (group commit
//! is the caller's loop). Or it writes a group out with
//! [`write_out_to_sync`](Wal::write_out_to_sync) and has another thread
//! [`SyncPoint::sync`] it while it appends the next group, then hands the
//! outcome back with [`synced`](Wal::synced). [`rotate`](Wal::rotate)
//! seals the current segment; once the records of sealed segments are persisted elsewhere,
//! [`release_through`](Wal::release_through) hands them over for another
//! thread to delete ([`Released::delete`]). [`Wal::open`]
//! replays the segments that are not yet persisted elsewhere.
//!
//! # On-disk format (version 1)
//!
//! The directory holds segment files named `{seq:020}.wal` (for example
//! `00000000000000000007.wal`). Sequence numbers start at 1 and only grow: a
//! newly opened log appends to a new segment numbered one past the highest
//! existing or already persisted one, never to a recovered file. All integers
//! are little-endian.
//!
//! ```text
//! segment  = header record*
//! header   = magic "THWAL\0\0\x01" (8 bytes) | version: u16 = 1 | seq: u64
//!            | crc32c(magic, version, seq): u32                    (22 bytes)
//! record   = len: u32 (1 ..= 256 MiB) | crc32c(payload): u32 | payload (len bytes)
//! ```
//!
//! A segment is created as `{seq:020}.wal.tmp`, gets its header, is synced
//! and only then renamed into place (and the directory synced), so a `.wal`
//! file always starts with a complete header; leftover `.tmp` files are
//! deleted on open. A thread of the log (`ingest-wal-prep`) creates the
//! next segment while the current one fills: a roll-over, which every
//! write behind it waits for, only takes it, and the directory may hold
//! one header-only segment past the current one (replayed, empty, after a
//! restart). A segment rolls over to the next one once it holds more than
//! [`WalConfig::segment_bytes`]; a record is never split. A roll-over
//! syncs the segment it seals only if records of it are not yet synced:
//! after a group commit there is nothing left to write.
//!
//! # Recovery
//!
//! Every complete record is replayed, segment by segment, in order. A crash
//! can only damage the tail that was not yet synced, so the *last* record of
//! a segment may be torn: cut short (a valid length, at most 256 MiB, that
//! runs past the end of the file: nothing can follow it), or failing its
//! checksum (or being empty) with nothing but zero bytes after it (file
//! systems may zero-fill a tail whose data never reached the disk). A length
//! beyond the maximum is never a tear but damage, wherever it is. A torn
//! tail ends the segment's replay:
//! it is logged, counted in [`RecoveryReport::torn_tails`] and truncated away,
//! so the next open does not see it again. A bad record followed by anything
//! else is [`WalError::Corrupt`], never a panic and never a silent
//! truncation: cutting there could drop acknowledged records that follow
//! the damage, so an operator decides. A bad header on a non-empty
//! file is [`WalError::BadHeader`]; an empty or header-only file holds no
//! records.
//!
//! Files and the directory are synced on creation, truncation and deletion,
//! so that the set of segments survives a crash as well as their contents.
//!
//! # Failures
//!
//! A write, sync or roll-over that fails (a full disk, an I/O error) leaves
//! the current segment's tail unknown: the records appended since the last
//! successful sync were never acknowledged and are given up. The log then
//! refuses appends until [`Wal::heal`] (tried by every call, at most once
//! per [`HEAL_PAUSE`]) cuts the segment back to its synced length, seals
//! it, and starts a fresh segment; a sealed segment so cut holds exactly
//! its acknowledged records. Linux may report a failed writeback once
//! only, so a failed sync is never retried on the same tail.

mod error;
mod recover;
mod segment;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::fs;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

pub(crate) use error::WalError;
use segment::{Entry, SegmentWriter};

type Result<T, E = WalError> = std::result::Result<T, E>;

/// Where a [`Wal`] lives and how large its segments grow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WalConfig {
    /// The directory holding the segment files (created if missing).
    pub(crate) dir: PathBuf,
    /// Roll over to a new segment once the current one holds more than this
    /// many bytes (64 MiB is the usual size: few files, cheap deletion).
    pub(crate) segment_bytes: u64,
}

/// What [`Wal::open`] found and replayed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RecoveryReport {
    /// Segments replayed (those after `after_segment`, empty ones included).
    pub(crate) segments: usize,
    /// Records replayed.
    pub(crate) records: u64,
    /// Payload bytes replayed.
    pub(crate) bytes: u64,
    /// Segments whose torn last record was dropped and truncated away.
    pub(crate) torn_tails: usize,
}

/// The write-ahead log, owned by one writer thread.
#[derive(Debug)]
pub(crate) struct Wal {
    dir: PathBuf,
    segment_bytes: u64,
    /// The segment being appended to.
    current: SegmentWriter,
    /// Creates the next segment while this one fills.
    preparer: Preparer,
    /// Complete segments, recovered or rotated, awaiting `release_through`.
    sealed: BTreeSet<u64>,
    bytes_written: u64,
    /// Set when a write, sync or roll-over failed (with when to try again and
    /// what failed): the current segment's tail is then unknown, so nothing
    /// is appended until [`heal`](Self::heal) has cut it back and started a
    /// fresh segment.
    failed: Option<Failure>,
    /// The next [`SyncPoint`] fails after this pause, as a failing disk's
    /// `fdatasync` would.
    #[cfg(test)]
    fail_next_sync: Option<Duration>,
    /// Roll-overs that synced the segment they sealed.
    #[cfg(test)]
    rolls_synced: usize,
}

/// Records written out to the kernel, not yet known to be on disk: one
/// `fdatasync` ([`SyncPoint::sync`], on any thread) makes them durable,
/// and [`Wal::synced`] learns the outcome. Until then they count as
/// unsynced: the segment does not roll over, and a failure gives them up.
#[derive(Debug, Clone)]
pub(crate) struct SyncPoint {
    segment: u64,
    /// The segment's bytes and records when written out.
    len: u64,
    records: u64,
    file: Arc<File>,
    #[cfg(test)]
    fault: Option<Duration>,
}

impl SyncPoint {
    /// `fdatasync`s the segment: every record written out before is then
    /// on disk. (Without it, with `IngestConfig::wal_fsync` off for
    /// benchmarks, the records are in the kernel: they survive the process
    /// being killed, not the machine failing.)
    pub(crate) fn sync(&self) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(pause) = self.fault {
            std::thread::sleep(pause);
            return Err(std::io::Error::other("an injected fdatasync failure"));
        }
        self.file.sync_data()
    }
}

/// A failure of the log that [`Wal::heal`] has not yet recovered from.
#[derive(Debug, Clone)]
struct Failure {
    /// No attempt to heal before this.
    retry_at: Instant,
    /// What failed, with the file, for the log.
    reason: String,
    /// The innermost cause only (`No space left on device`), without
    /// paths: for callers and `/healthz`.
    cause: String,
}

/// How long after a failure (or a failed attempt to heal) the log tries
/// again: a full disk costs a file creation per pause, not per write.
pub(crate) const HEAL_PAUSE: Duration = Duration::from_millis(200);

impl Wal {
    /// Opens (creating) the directory, replays and starts a new segment.
    ///
    /// Segments numbered `<= after_segment` are already persisted elsewhere
    /// and are deleted. Every complete record of the later segments is passed,
    /// in order, to `replay(segment_seq, payload)`; an error from `replay`
    /// stops the open and is returned wrapped in [`WalError::Replay`]. The
    /// recovered segments stay on disk, sealed, until
    /// [`release_through`](Self::release_through) hands them over; appends go to a
    /// new segment numbered `max(highest existing, after_segment) + 1`.
    pub(crate) fn open(
        config: WalConfig,
        after_segment: u64,
        mut replay: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<(Wal, RecoveryReport)> {
        let WalConfig { dir, segment_bytes } = config;
        create_dir(&dir)?;

        let mut segments = BTreeSet::new();
        let mut doomed = Vec::new();
        for (path, entry) in segment::list(&dir)? {
            match entry {
                Entry::Segment(seq) if seq > after_segment => {
                    segments.insert(seq);
                }
                Entry::Segment(seq) | Entry::Temp(seq) => doomed.push((path, seq)),
            }
        }
        for (path, seq) in &doomed {
            remove_file(path, *seq)?;
        }
        if !doomed.is_empty() {
            segment::sync_dir(&dir)?;
        }

        let mut report = RecoveryReport::default();
        for &seq in &segments {
            let scan = recover::replay_segment(&segment::path(&dir, seq), seq, &mut replay)?;
            report.segments += 1;
            report.records += scan.records;
            report.bytes += scan.bytes;
            report.torn_tails += usize::from(scan.torn);
        }

        // Deleted segments are all <= after_segment (and deleted temporaries
        // never held a record), so `next` is past every segment written here.
        let highest = segments.last().copied().unwrap_or(0);
        let next = next_seq(highest.max(after_segment))?;
        let mut preparer = Preparer::start(&dir)?;
        let current = preparer.segment(next)?;
        let wal = Wal {
            dir,
            segment_bytes,
            current,
            preparer,
            sealed: segments,
            bytes_written: 0,
            failed: None,
            #[cfg(test)]
            fail_next_sync: None,
            #[cfg(test)]
            rolls_synced: 0,
        };
        Ok((wal, report))
    }

    /// Appends one record; it is buffered, not durable until [`sync`](Self::sync).
    ///
    /// Rolls over to a new segment first if the current one holds more than
    /// `segment_bytes` and every record before is synced: a group of records
    /// (those appended between two syncs) lies in one segment, so
    /// [`discard_unsynced`](Self::discard_unsynced) can always take it
    /// back. A payload holds from 1 byte to 256 MiB.
    #[cfg(test)]
    pub(crate) fn append(&mut self, payload: &[u8]) -> Result<()> {
        self.append_parts(&[payload])
    }

    /// [`append`](Self::append) of the record that `parts` make one after
    /// the other (written as they are, never copied into one buffer first).
    pub(crate) fn append_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        let len = segment::record_len(parts.iter().map(|part| part.len()).sum())?;
        self.ensure_usable()?;
        if self.wants_roll() && !self.current.unsynced() {
            self.roll()?;
        }
        let appended = self.current.append(parts, len);
        self.poison_on_err(appended)?;
        self.bytes_written += segment::record_bytes(len);
        Ok(())
    }

    /// Takes back every record appended since the last sync, whose group
    /// failed before its sync for a reason of its own (a storage read, an
    /// encoding) and is answered with an error: the segment is cut back to
    /// its synced length, so no later sync can make them durable (a
    /// restart would otherwise store messages never acknowledged). If the
    /// cut fails, the log fails as after a failed write, and heals the same
    /// way. Nothing to do after a failure of the log itself: healing cuts.
    pub(crate) fn discard_unsynced(&mut self) -> Result<()> {
        if self.failed.is_some() || !self.current.unsynced() {
            return Ok(());
        }
        let cut = self.current.cut_to_synced();
        self.poison_on_err(cut)
    }

    /// Makes every appended record durable: flushes the buffer and
    /// `fdatasync`s the segment. When this returns Ok, the records survive a
    /// crash. When a write, sync or roll-over fails, the records appended
    /// since the last successful sync are lost to the log (their writes are
    /// to be refused) and it takes no appends until [`heal`](Self::heal)
    /// succeeds, which every later call tries.
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.ensure_usable()?;
        let synced = self.current.sync();
        self.poison_on_err(synced)
    }

    /// Whether the current segment is full: the next append rolls over to
    /// a new one, once every record before it is synced.
    pub(crate) fn wants_roll(&self) -> bool {
        self.current.len() > self.segment_bytes && self.current.records() > 0
    }

    /// Writes out every appended record and answers the point whose
    /// [`SyncPoint::sync`] makes them durable, for another thread while
    /// appends go on; [`synced`](Self::synced) takes its outcome. A
    /// failure is the log's, as for [`sync`](Self::sync).
    pub(crate) fn write_out_to_sync(&mut self) -> Result<SyncPoint> {
        self.ensure_usable()?;
        let flushed = self.current.flush();
        let (len, records) = self.poison_on_err(flushed)?;
        Ok(SyncPoint {
            segment: self.current.seq(),
            len,
            records,
            file: self.current.handle().clone(),
            #[cfg(test)]
            fault: self.fail_next_sync.take(),
        })
    }

    /// Takes the outcome of `point`'s sync: on success its records are
    /// durable (later ones, appended meanwhile, are not); on failure the
    /// log fails as after a failed [`sync`](Self::sync), giving up every
    /// record since the last successful one. Points are answered in the
    /// order they were taken, before any other call that may heal.
    pub(crate) fn synced(&mut self, point: SyncPoint, outcome: std::io::Result<()>) -> Result<()> {
        match outcome {
            Ok(()) if point.segment == self.current.seq() => {
                self.current.mark_synced(point.len, point.records);
                Ok(())
            }
            // A roll syncs everything before it.
            Ok(()) => Ok(()),
            Err(source) => self.poison_on_err(Err(WalError::Sync {
                path: segment::path(&self.dir, point.segment),
                segment: point.segment,
                source,
            })),
        }
    }

    /// Waits until the next segment is created (its file is in place).
    #[cfg(test)]
    pub(crate) fn settle_preparer(&mut self) {
        self.preparer.settle();
    }

    /// Makes the next [`SyncPoint`] fail after `pause`.
    #[cfg(test)]
    pub(crate) fn fail_next_sync(&mut self, pause: Duration) {
        self.fail_next_sync = Some(pause);
    }

    /// Syncs and seals the current segment and starts a new one; returns the
    /// sealed segment's sequence number.
    pub(crate) fn rotate(&mut self) -> Result<u64> {
        self.ensure_usable()?;
        self.roll()
    }

    /// The sequence number of the segment being appended to.
    #[cfg_attr(
        not(test),
        allow(
            dead_code,
            reason = "part of the log's contract; the engine learns segment numbers from `rotate`"
        )
    )]
    pub(crate) fn current_segment(&self) -> u64 {
        self.current.seq()
    }

    /// Stops tracking the sealed segments numbered `<= seq`, whose records
    /// are persisted elsewhere (never the current one), and answers them for
    /// [`Released::delete`]. Deleting a file and syncing the directory wait
    /// for the file system's journal, tens of ms while Parquet files are
    /// written: that is left to a thread no acknowledgement waits for.
    pub(crate) fn release_through(&mut self, seq: u64) -> Released {
        let later = match seq.checked_add(1) {
            Some(next) => self.sealed.split_off(&next),
            None => BTreeSet::new(),
        };
        Released {
            dir: self.dir.clone(),
            segments: std::mem::replace(&mut self.sealed, later),
        }
    }

    /// Bytes of records (headers included) appended since open.
    pub(crate) fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// Syncs and seals the current segment and switches to the next one.
    fn roll(&mut self) -> Result<u64> {
        let rolled = self.try_roll();
        self.poison_on_err(rolled)
    }

    fn try_roll(&mut self) -> Result<u64> {
        // After a group commit every record is synced: another fdatasync
        // would only wait for the device (a cache flush, and the inode
        // written again). (Without fsync, the engine counts its groups
        // synced once written out: the kernel writes them back.)
        if self.current.unsynced() {
            self.current.sync()?;
            #[cfg(test)]
            {
                self.rolls_synced += 1;
            }
        }
        let sealed = self.current.seq();
        let next = self.preparer.segment(next_seq(sealed)?)?;
        // The old writer's buffer is empty (its records are all synced):
        // dropping it only closes the file.
        drop(std::mem::replace(&mut self.current, next));
        self.sealed.insert(sealed);
        Ok(sealed)
    }

    /// What failed, while the log cannot take appends: the whole chain
    /// (with the file's path, for the log) and its innermost cause (for
    /// callers).
    pub(crate) fn failure(&self) -> Option<(&str, &str)> {
        self.failed
            .as_ref()
            .map(|f| (f.reason.as_str(), f.cause.as_str()))
    }

    /// After a failure, once [`HEAL_PAUSE`] has passed: cuts the failed
    /// segment back to its last synced length (its acknowledged records;
    /// the failed group's were never acknowledged), seals it, and starts a
    /// fresh segment. Fails, and stays failed, while that cannot be done
    /// (the disk is still full); Ok when the log takes appends.
    pub(crate) fn heal(&mut self) -> Result<()> {
        let Some(failure) = &self.failed else {
            return Ok(());
        };
        if Instant::now() < failure.retry_at {
            return Err(WalError::Poisoned {
                segment: self.current.seq(),
            });
        }
        let healed = self.current.cut_to_synced().and_then(|()| {
            let sealed = self.current.seq();
            let next = self.preparer.segment(next_seq(sealed)?)?;
            drop(std::mem::replace(&mut self.current, next));
            self.sealed.insert(sealed);
            Ok(sealed)
        });
        match healed {
            Ok(sealed) => {
                tracing::info!(
                    sealed,
                    segment = self.current.seq(),
                    "the write-ahead log takes appends again, in a fresh segment"
                );
                self.failed = None;
                Ok(())
            }
            Err(error) => self.poison_on_err(Err(error)),
        }
    }

    fn ensure_usable(&mut self) -> Result<()> {
        self.heal()
    }

    fn poison_on_err<T>(&mut self, result: Result<T>) -> Result<T> {
        if let Err(error) = &result {
            let mut reason = error.to_string();
            let mut innermost = reason.clone();
            let mut cause = std::error::Error::source(error);
            while let Some(c) = cause {
                innermost = c.to_string();
                reason.push_str(": ");
                reason.push_str(&innermost);
                cause = c.source();
            }
            // A heal that finds the log still failing keeps the first cause.
            let first = self.failed.take();
            self.failed = Some(Failure {
                retry_at: Instant::now() + HEAL_PAUSE,
                reason: first.as_ref().map_or(reason, |f| f.reason.clone()),
                cause: first.map_or(innermost, |f| f.cause),
            });
        }
        result
    }
}

fn next_seq(seq: u64) -> Result<u64> {
    seq.checked_add(1)
        .ok_or(WalError::SequenceOverflow { segment: seq })
}

/// Creates `dir` if missing, syncing its parent so the new entry survives a
/// crash together with the segments that will be synced inside it.
fn create_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::create_dir_all(dir).map_err(|source| WalError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })?;
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => segment::sync_dir(parent),
        _ => Ok(()),
    }
}

/// Sealed segments the log no longer tracks ([`Wal::release_through`]),
/// to be deleted. Files left behind by a crash before [`Released::delete`]
/// are deleted by the next [`Wal::open`]: they are numbered at or below
/// the segment persisted elsewhere.
#[derive(Debug)]
pub(crate) struct Released {
    dir: PathBuf,
    segments: BTreeSet<u64>,
}

impl Released {
    /// Deletes the segments' files, then syncs the directory so that a
    /// crash cannot bring them back (that would be harmless: the next open
    /// deletes them, as it deletes any left). After a failure the segments not
    /// deleted stay, for the next call. Answers how many were deleted.
    pub(crate) fn delete(&mut self) -> Result<usize> {
        let mut removed = 0;
        let mut outcome = Ok(());
        while let Some(&seq) = self.segments.first() {
            if let Err(err) = remove_file(&segment::path(&self.dir, seq), seq) {
                outcome = Err(err);
                break;
            }
            self.segments.remove(&seq);
            removed += 1;
        }
        // Synced even after a failure, for those removed.
        if removed > 0 {
            segment::sync_dir(&self.dir)?;
        }
        outcome.map(|()| removed)
    }

    /// Takes on `later`'s segments too (a failed deletion is tried again with the next).
    pub(crate) fn absorb(&mut self, later: Self) {
        self.segments.extend(later.segments);
    }
}

/// The thread that creates the next segment (a file created, its header
/// written and synced, renamed into place, the directory synced: three
/// waits for the device, each 1 ms quiet and up to tens of ms while
/// Parquet files are written) while the current one fills, so that a
/// roll-over only takes it.
#[derive(Debug)]
struct Preparer {
    /// The log's directory.
    dir: PathBuf,
    asks: Option<Sender<u64>>,
    ready: Receiver<Result<SegmentWriter>>,
    /// The segment asked for, not yet taken.
    asked: Option<u64>,
    /// Its outcome, once received and before it is taken.
    made: Option<Result<SegmentWriter>>,
    thread: Option<JoinHandle<()>>,
}

impl Preparer {
    fn start(dir: &Path) -> Result<Self> {
        let (asks, ask_rx) = crossbeam_channel::bounded::<u64>(1);
        let (ready_tx, ready) = crossbeam_channel::bounded(1);
        let thread_dir = dir.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("ingest-wal-prep".into())
            .spawn(move || {
                for seq in ask_rx {
                    if ready_tx
                        .send(SegmentWriter::create(&thread_dir, seq))
                        .is_err()
                    {
                        break;
                    }
                }
            })
            .map_err(WalError::StartThread)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            asks: Some(asks),
            ready,
            asked: None,
            made: None,
            thread: Some(thread),
        })
    }

    /// Waits until the segment asked for is created (or failed).
    fn settle(&mut self) {
        if self.asked.is_some() && self.made.is_none() {
            self.made = self.ready.recv().ok();
        }
    }

    /// Segment `seq`: the one created ahead if it was asked for (waiting
    /// for it if it is not there yet), else created here (as after a
    /// failed creation: a full disk). Then asks for the one after it.
    fn segment(&mut self, seq: u64) -> Result<SegmentWriter> {
        self.settle();
        let asked = self.asked.take();
        let ahead = match self.made.take() {
            Some(Ok(segment)) if asked == Some(seq) => Some(segment),
            Some(Ok(other)) => {
                // Never happens (segments follow one another); an empty
                // segment left ahead is replayed as such.
                tracing::warn!(
                    created = other.seq(),
                    wanted = seq,
                    "the WAL segment created ahead is not the next one"
                );
                None
            }
            Some(Err(error)) => {
                tracing::warn!(%error, "creating the next WAL segment ahead failed; trying again");
                None
            }
            None => None,
        };
        let segment = match ahead {
            Some(segment) => segment,
            None => SegmentWriter::create(&self.dir, seq)?,
        };
        if let Some(next) = seq.checked_add(1)
            && let Some(asks) = &self.asks
            && asks.send(next).is_ok()
        {
            self.asked = Some(next);
        }
        Ok(segment)
    }
}

impl Drop for Preparer {
    fn drop(&mut self) {
        // The thread ends with its queue; a segment created ahead and not
        // taken stays on disk, header only, and is replayed as such.
        drop(self.asks.take());
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("the WAL preparer thread panicked");
        }
    }
}

/// Removes a segment (or leftover temporary) file; one already gone counts
/// as removed.
fn remove_file(path: &Path, segment: u64) -> Result<()> {
    match fs::remove_file(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(WalError::Remove {
            path: path.to_path_buf(),
            segment,
            source: err,
        }),
        _ => Ok(()),
    }
}
