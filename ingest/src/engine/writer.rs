//! The writer thread: deduplication, WAL group commit, memtable.
//!
//! It takes every write waiting in its queue as one group: each write's new
//! messages are deduplicated and appended to the WAL, their memtable batches
//! (built on the requests' threads) filtered to the rows kept; then the group
//! is written out and its one fdatasync goes to the sync thread, while the
//! writer deduplicates and appends the next group. Once a group's sync is
//! back, its batches join the memtable and only then is each of its writes
//! answered. One group at most is in flight, and it is settled before the
//! next one is written out: a failed sync fails the group after it too (it
//! was deduplicated against the failed group's keys, and its records follow
//! theirs), and groups join the memtable in the order of the log. The
//! writer never sees a message. Commands other than writes (rotate,
//! release) are handled between groups, once the group in flight is
//! settled, so a sealed segment holds exactly the batches already in the
//! memtable. With `--unsafe-no-wal-fsync` a group is done once written
//! out, on the writer thread.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::{Command, Shared, WriteOutcome};
use crate::batch::{Prepared, Resident};
use crate::dedup::{Admitted, DedupIndex, Needs, PartitionKey};
use crate::line::Limit;
use crate::metrics::Stage;
use crate::wal::{HEAL_PAUSE, SyncPoint, Wal};
use crate::{Error, Result};

/// Most writes committed by one fdatasync.
const MAX_GROUP: usize = 512;

type Reply = tokio::sync::oneshot::Sender<Result<Vec<WriteOutcome>>>;

/// A write waiting for its group.
struct Pending {
    prepared: Vec<Prepared>,
    reply: Reply,
}

/// A group deduplicated and appended, until its sync is answered.
#[derive(Default)]
struct Appended {
    /// Each write's reply, with how many outcomes are its.
    replies: Vec<(Reply, usize)>,
    outcomes: Vec<WriteOutcome>,
    /// The rows kept, for the memtable.
    batches: Vec<Resident>,
    rows: usize,
    /// The keys the group added to the index, taken back if it fails.
    recorded: Vec<(PartitionKey, i64, u64)>,
}

/// The thread that syncs a written-out group while the writer appends the next.
struct Syncer {
    points: Sender<SyncPoint>,
    done: Receiver<std::io::Result<()>>,
    thread: JoinHandle<()>,
}

struct Writer {
    shared: Arc<Shared>,
    wal: Wal,
    syncer: Syncer,
    /// The group whose sync is on the sync thread, with its point.
    in_flight: Option<(Appended, SyncPoint)>,
}

pub(super) fn run(shared: Arc<Shared>, wal: Wal, commands: Receiver<Command>) {
    let (points, point_rx) = crossbeam_channel::bounded::<SyncPoint>(1);
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let thread = {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("ingest-wal-sync".into())
            .spawn(move || sync(&shared, &point_rx, &done_tx))
    };
    let thread = match thread {
        Ok(thread) => thread,
        Err(e) => {
            // Nothing can be made durable: every write waiting is refused.
            tracing::error!(error = %e, "starting the WAL sync thread failed");
            return;
        }
    };
    let mut writer = Writer {
        shared,
        wal,
        syncer: Syncer {
            points,
            done,
            thread,
        },
        in_flight: None,
    };
    writer.run(&commands);
    let Syncer { points, thread, .. } = writer.syncer;
    drop(points);
    if thread.join().is_err() {
        tracing::error!("the WAL sync thread panicked");
    }
}

/// The sync thread: syncs each point it is given, answers the outcome.
fn sync(shared: &Shared, points: &Receiver<SyncPoint>, done: &Sender<std::io::Result<()>>) {
    for point in points {
        let started = Instant::now();
        let outcome = point.sync();
        shared.metrics.wal_fsyncs.inc();
        shared
            .metrics
            .wal_fsync_seconds
            .observe(started.elapsed().as_secs_f64());
        if done.send(outcome).is_err() {
            break;
        }
    }
}

impl Writer {
    fn run(&mut self, commands: &Receiver<Command>) {
        let mut wal_bytes = self.wal.bytes_written();
        while let Some(first) = self.next_command(commands) {
            let mut pending: Vec<Pending> = Vec::new();
            let mut next = Some(first);
            while let Some(command) = next.take() {
                match command {
                    Command::Write { prepared, reply } => pending.push(Pending { prepared, reply }),
                    other => {
                        self.commit(std::mem::take(&mut pending));
                        let _ = self.settle();
                        self.control(other);
                    }
                }
                if pending.len() < MAX_GROUP {
                    next = commands.try_recv().ok();
                }
            }
            self.commit(pending);
            self.report_health();
            let written = self.wal.bytes_written();
            self.shared
                .metrics
                .wal_bytes
                .inc_by(written.saturating_sub(wal_bytes));
            wal_bytes = written;
        }
        // The queue closed: the engine is shutting down. Everything answered is durable.
        let _ = self.settle();
        if let Err(e) = self.wal.sync() {
            tracing::error!(error = %e, "final WAL sync failed");
        }
    }

    /// Waits for the next command (`None` once the queue is closed); the
    /// group in flight is finished as soon as its sync is back, and a
    /// failed log heals by itself, with or without writes to try it.
    fn next_command(&mut self, commands: &Receiver<Command>) -> Option<Command> {
        loop {
            if self.in_flight.is_some() {
                let done = self.syncer.done.clone();
                crossbeam_channel::select! {
                    recv(commands) -> command => return command.ok(),
                    recv(done) -> outcome => {
                        let _ = self.complete(outcome.ok());
                        self.report_health();
                    }
                }
            } else if self.wal.failure().is_some() {
                match commands.recv_timeout(HEAL_PAUSE) {
                    Ok(command) => return Some(command),
                    Err(RecvTimeoutError::Timeout) => {
                        let _ = self.wal.heal();
                        self.report_health();
                    }
                    Err(RecvTimeoutError::Disconnected) => return None,
                }
            } else {
                return commands.recv().ok();
            }
        }
    }

    /// Publishes whether the log takes appends (for `/healthz` and `/metrics`),
    /// logging each change.
    fn report_health(&self) {
        let (shared, wal) = (&self.shared, &self.wal);
        let now = wal.failure().map(|(_, cause)| cause.to_owned());
        let mut known = shared.wal_failure.lock().unwrap_or_else(|p| p.into_inner());
        if *known == now {
            return;
        }
        match &now {
            Some(_) => {
                let reason = wal.failure().map_or("", |(reason, _)| reason);
                shared.metrics.wal_failures.inc();
                tracing::error!(%reason, "the write-ahead log cannot take writes; intake answers 503 until it heals");
            }
            None => tracing::info!("the write-ahead log takes writes again"),
        }
        shared.metrics.wal_unavailable.set(i64::from(now.is_some()));
        *known = now;
    }

    fn control(&mut self, command: Command) {
        match command {
            Command::Rotate { reply } => {
                let sealed = self
                    .wal
                    .rotate()
                    .map_err(Error::Wal)
                    .map(|segment| (segment, self.shared.read().unflushed.len()));
                let _ = reply.send(sealed);
            }
            Command::Release { through, reply } => {
                let _ = reply.send(self.wal.release_through(through));
            }
            #[cfg(test)]
            Command::FailNextSync { pause } => self.wal.fail_next_sync(pause),
            Command::Write { .. } => {}
        }
    }

    /// Deduplicates and appends a group, settles the one in flight, and
    /// writes this one out to the sync thread.
    fn commit(&mut self, writes: Vec<Pending>) {
        if writes.is_empty() {
            return;
        }
        if self.wal.wants_roll() {
            // A group lies in one segment: the roll, at this group's first
            // append, needs the group in flight synced.
            let _ = self.settle();
        }
        let mut group = Appended {
            replies: Vec::with_capacity(writes.len()),
            ..Appended::default()
        };
        let mut prepared = Vec::with_capacity(writes.len());
        for write in writes {
            group.replies.push((write.reply, write.prepared.len()));
            prepared.extend(write.prepared);
        }
        let group_writes = prepared.len();
        if let Err(e) = store(&self.shared, &mut self.wal, prepared, &mut group) {
            // Nothing of this group is acknowledged: its records must not
            // reach the disk with a later group's sync, nor its keys block a
            // retry. The group in flight goes first: its records lie before
            // these, and the cut must not take them.
            let _ = self.settle();
            if let Err(cut) = self.wal.discard_unsynced() {
                tracing::error!(error = %cut, "taking back a failed group's WAL records failed");
            }
            self.fail(group, &e);
            return;
        }
        if let Err(e) = self.settle() {
            // Deduplicated against the failed group's keys, its records
            // after theirs (the log gives them all up): it fails with it.
            self.fail(group, &e);
            return;
        }
        if group.batches.is_empty() {
            self.finish(group);
            return;
        }
        self.shared
            .metrics
            .group_writes
            .observe(group_writes as f64);
        match self.wal.write_out_to_sync() {
            Ok(point) if !self.shared.config.wal_fsync => {
                // Written out is all this mode promises: nothing to wait
                // for. A failure is answered to the group's writes.
                let _ = self.conclude(group, point, Ok(()));
            }
            Ok(point) => {
                let handed = self.syncer.points.send(point.clone()).is_ok();
                self.in_flight = Some((group, point));
                if !handed {
                    let _ = self.complete(None);
                }
            }
            Err(e) => self.fail(group, &Error::Wal(e)),
        }
    }

    /// Waits for the sync of the group in flight, if any, and finishes or
    /// fails it; its error if it failed.
    fn settle(&mut self) -> Result<()> {
        if self.in_flight.is_none() {
            return Ok(());
        }
        let outcome = self.syncer.done.recv().ok();
        self.complete(outcome)
    }

    /// Takes the outcome of the in-flight group's sync (`None`: the sync
    /// thread is gone) and finishes or fails the group.
    fn complete(&mut self, outcome: Option<std::io::Result<()>>) -> Result<()> {
        let Some((group, point)) = self.in_flight.take() else {
            return Ok(());
        };
        let outcome =
            outcome.unwrap_or_else(|| Err(std::io::Error::other("the WAL sync thread stopped")));
        self.conclude(group, point, outcome)
    }

    /// Hands the outcome of `group`'s sync to the log and finishes or fails
    /// the group; its error if it failed.
    fn conclude(
        &mut self,
        group: Appended,
        point: SyncPoint,
        outcome: std::io::Result<()>,
    ) -> Result<()> {
        match self.wal.synced(point, outcome) {
            Ok(()) => {
                self.finish(group);
                Ok(())
            }
            Err(e) => {
                let e = Error::Wal(e);
                self.fail(group, &e);
                Err(e)
            }
        }
    }

    /// A durable group: its batches join the memtable, its writes are answered.
    fn finish(&self, group: Appended) {
        let shared = &self.shared;
        let duplicates: usize = group.outcomes.iter().map(|o| o.duplicates).sum();
        if !group.batches.is_empty() {
            let synced = Instant::now();
            let mut state = shared.write();
            state.unflushed_bytes += group.batches.iter().map(|r| r.bytes).sum::<usize>();
            state.unflushed.extend(group.batches);
            state.unflushed_rows += group.rows;
            state.oldest_unflushed.get_or_insert_with(Instant::now);
            // Published here too, not only on the flusher's tick: while a
            // long flush runs, the rows piling up show.
            let (rows, bytes) = (state.unflushed_rows, state.unflushed_bytes);
            drop(state);
            shared.metrics.set_unflushed(rows, bytes);
            shared.metrics.observe_stage(Stage::GroupMemtable, synced);
        }
        shared.metrics.count("accepted", group.rows);
        shared.metrics.count("duplicate", duplicates);
        let mut outcomes = group.outcomes.into_iter();
        for (reply, writes) in group.replies {
            let _ = reply.send(Ok(outcomes.by_ref().take(writes).collect()));
        }
    }

    /// A group that is not stored: its keys leave the index, its writes get `error`.
    fn fail(&self, group: Appended, error: &Error) {
        {
            let mut dedup = self.shared.dedup.lock();
            for (partition, time, hash) in group.recorded {
                dedup.remove(partition, time, hash);
            }
        }
        let unavailable = matches!(error, Error::Wal(wal) if wal.is_storage_failure());
        if !unavailable {
            tracing::error!(error = %error, writes = group.replies.len(), "a write group failed");
        }
        let message = error.to_string();
        for (reply, _) in group.replies {
            let answer = if unavailable {
                Error::StorageUnavailable {
                    reason: self.wal.failure().map_or_else(
                        || "the write-ahead log failed".to_owned(),
                        |(_, cause)| format!("the write-ahead log's disk: {cause}"),
                    ),
                }
            } else {
                Error::Io {
                    what: "committing a write group",
                    path: self.shared.config.data_dir.join("wal"),
                    source: std::io::Error::other(message.clone()),
                }
            };
            let _ = reply.send(Err(answer));
        }
    }
}

/// Why a message was refused for its day's inner columns.
fn too_many_names(total: usize, limit: usize) -> String {
    format!(
        "inputs: the message would give its tracker {total} distinct inner columns \
         (inputs, states, discrete inputs and outputs) on its UTC day; at most {limit} \
         are kept per tracker and day (--max-inner-names-per-day)"
    )
}

/// Loads, in one go, what the messages of `writes` from message `from` of
/// the first on need: the names of the partitions not in the index, and the
/// keys of those with messages the index cannot settle (late ones,
/// retransmissions of flushed ones). Called at the first message of a
/// group the index cannot settle, so one read serves the rest of it.
fn load_ahead(
    shared: &Shared,
    dedup: &mut DedupIndex,
    writes: &[Prepared],
    from: usize,
) -> Result<()> {
    let mut needs = Needs::default();
    let rest = writes
        .iter()
        .enumerate()
        .flat_map(|(at, write)| write.keys().iter().skip(if at == 0 { from } else { 0 }));
    for &(partition, time, hash) in rest {
        dedup.known_noting(partition, time, hash, &mut needs);
    }
    if needs.partitions.is_empty() {
        return Ok(());
    }
    shared.load_partitions(dedup, &needs.partitions, &needs.complete)
}

/// Deduplicates the group's writes and appends their new messages to the
/// log (buffered), keeping their rows' batches in `group`.
fn store(
    shared: &Shared,
    wal: &mut Wal,
    mut writes: Vec<Prepared>,
    group: &mut Appended,
) -> Result<()> {
    let begun = Instant::now();
    let recorded = &mut group.recorded;
    group.outcomes.reserve(writes.len());
    // The indices of the messages each write keeps.
    let mut kept_at: Vec<Vec<usize>> = Vec::with_capacity(writes.len());
    {
        let mut dedup = shared.dedup.lock();
        // Partitions used from here on are the group's: not evicted after it.
        let since = dedup.tick();
        let mut read_ahead = false;
        let limit = shared.config.max_inner_names_per_day;
        // The head of each write's record (its count, or its compressed
        // form's), one buffer for the group.
        let mut head = Vec::new();
        for (at, write) in writes.iter().enumerate() {
            let mut kept_here = Vec::with_capacity(write.keys().len());
            let mut rejected = Vec::new();
            let sent = write.keys().len();
            for (index, &(partition, time, hash)) in write.keys().iter().enumerate() {
                let names = write.names(index);
                let mut admitted = dedup.admit(partition, time, hash, names, limit, false);
                if admitted == Admitted::Unknown && !read_ahead {
                    // The first message the index cannot settle: one read
                    // for the whole rest of the group.
                    read_ahead = true;
                    load_ahead(shared, &mut dedup, &writes[at..], index)?;
                    admitted = dedup.admit(partition, time, hash, names, limit, false);
                }
                if admitted == Admitted::Unknown {
                    let one = HashSet::from([partition]);
                    let from = HashMap::from([(partition, time)]);
                    shared.load_partitions(&mut dedup, &one, &from)?;
                    admitted = dedup.admit(partition, time, hash, names, limit, true);
                }
                match admitted {
                    Admitted::New => {}
                    // (Never unknown after a read: `read` settles it.)
                    Admitted::Duplicate | Admitted::Unknown => continue,
                    Admitted::TooManyNames(total) => {
                        rejected.push((index, too_many_names(total, limit)));
                        continue;
                    }
                }
                recorded.push((partition, time, hash));
                kept_here.push(index);
            }
            let accepted = kept_here.len();
            shared
                .metrics
                .count_limit(Limit::InnerNamesPerDay, rejected.len());
            group.outcomes.push(WriteOutcome {
                accepted,
                duplicates: sent - accepted - rejected.len(),
                rejected,
            });
            if accepted > 0 {
                let parts = write.record_parts(&kept_here, &mut head);
                wal.append_parts(&parts).map_err(Error::Wal)?;
            }
            kept_at.push(kept_here);
        }
        let evicted = dedup.shrink(since);
        shared.metrics.dedup_evictions.inc_by(evicted as u64);
        shared.metrics.dedup_entries.set(dedup.entries() as i64);
    }
    // Every kept encoding is in the WAL now: the buffers go back for later
    // writes, and the batches are cut to the rows kept while the group
    // before is synced.
    for write in &mut writes {
        shared.encodings.give(write.take_encoded());
    }
    for (write, indices) in writes.into_iter().zip(kept_at) {
        if !indices.is_empty() {
            group.rows += indices.len();
            group.batches.extend(write.into_kept(&indices)?);
        }
    }
    shared.metrics.observe_stage(Stage::GroupDedupAppend, begun);
    Ok(())
}
