//! The writer thread: deduplication, WAL group commit, memtable.
//!
//! It takes every write waiting in its queue as one group: each write's new
//! messages are appended to the WAL, then one fdatasync makes the whole group
//! durable, then each write's batches (built on its request's thread) join
//! the memtable, filtered to the rows kept, and only then is every write of
//! the group answered. The writer never sees a message. Commands other than
//! writes (rotate, truncate) are handled between groups, so a sealed segment
//! holds exactly the batches already in the memtable.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::{Command, Shared, WriteOutcome};
use crate::batch::Prepared;
use crate::dedup::{Admitted, DedupIndex, Needs, PartitionKey};
use crate::line::Limit;
use crate::metrics::Stage;
use crate::wal::{HEAL_PAUSE, Wal};
use crate::{Error, Result};

/// Most writes committed by one fdatasync.
const MAX_GROUP: usize = 512;

type Reply = tokio::sync::oneshot::Sender<Result<Vec<WriteOutcome>>>;

/// Writes committed together, waiting for their group.
struct Pending {
    prepared: Vec<Prepared>,
    reply: Reply,
}

pub(super) fn run(shared: Arc<Shared>, mut wal: Wal, commands: Receiver<Command>) {
    let mut wal_bytes = wal.bytes_written();
    loop {
        // A failed log heals by itself, with or without writes to try it.
        let first = if wal.failure().is_some() {
            match commands.recv_timeout(HEAL_PAUSE) {
                Ok(command) => command,
                Err(RecvTimeoutError::Timeout) => {
                    let _ = wal.heal();
                    report_health(&shared, &wal);
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
        } else {
            match commands.recv() {
                Ok(command) => command,
                Err(_) => break,
            }
        };
        let mut pending: Vec<Pending> = Vec::new();
        let mut next = Some(first);
        while let Some(command) = next.take() {
            match command {
                Command::Write { prepared, reply } => pending.push(Pending { prepared, reply }),
                other => {
                    commit(&shared, &mut wal, std::mem::take(&mut pending));
                    control(&shared, &mut wal, other);
                }
            }
            if pending.len() < MAX_GROUP {
                next = commands.try_recv().ok();
            }
        }
        commit(&shared, &mut wal, pending);
        report_health(&shared, &wal);
        let written = wal.bytes_written();
        shared
            .metrics
            .wal_bytes
            .inc_by(written.saturating_sub(wal_bytes));
        wal_bytes = written;
    }
    // The queue closed: the engine is shutting down. Everything answered is durable.
    if let Err(e) = wal.sync() {
        tracing::error!(error = %e, "final WAL sync failed");
    }
}

/// Publishes whether the log takes appends (for `/healthz` and `/metrics`),
/// logging each change.
fn report_health(shared: &Shared, wal: &Wal) {
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

fn control(shared: &Shared, wal: &mut Wal, command: Command) {
    match command {
        Command::Rotate { reply } => {
            let sealed = wal
                .rotate()
                .map_err(Error::Wal)
                .map(|segment| (segment, shared.read().unflushed.len()));
            let _ = reply.send(sealed);
        }
        Command::Release { through, reply } => {
            let _ = reply.send(wal.release_through(through));
        }
        Command::Write { .. } => {}
    }
}

fn commit(shared: &Shared, wal: &mut Wal, writes: Vec<Pending>) {
    if writes.is_empty() {
        return;
    }
    let mut recorded: Vec<(PartitionKey, i64, u64)> = Vec::new();
    let mut groups = Vec::with_capacity(writes.len());
    let mut replies = Vec::with_capacity(writes.len());
    for write in writes {
        replies.push((write.reply, write.prepared.len()));
        groups.extend(write.prepared);
    }
    match store(shared, wal, groups, &mut recorded) {
        Ok(outcomes) => {
            let mut outcomes = outcomes.into_iter();
            for (reply, writes) in replies {
                let _ = reply.send(Ok(outcomes.by_ref().take(writes).collect()));
            }
        }
        Err(e) => {
            // Nothing of this group is acknowledged: its records must not
            // reach the disk with a later group's sync, nor its keys block
            // a retry.
            if let Err(cut) = wal.discard_unsynced() {
                tracing::error!(error = %cut, "taking back a failed group's WAL records failed");
            }
            let mut dedup = shared.dedup.lock();
            for (partition, time, hash) in recorded {
                dedup.remove(partition, time, hash);
            }
            let unavailable = matches!(&e, Error::Wal(wal) if wal.is_storage_failure());
            if !unavailable {
                tracing::error!(error = %e, writes = replies.len(), "a write group failed");
            }
            let message = e.to_string();
            for (reply, _) in replies {
                let answer = if unavailable {
                    Error::StorageUnavailable {
                        reason: wal.failure().map_or_else(
                            || "the write-ahead log failed".to_owned(),
                            |(_, cause)| format!("the write-ahead log's disk: {cause}"),
                        ),
                    }
                } else {
                    Error::Io {
                        what: "committing a write group",
                        path: shared.config.data_dir.join("wal"),
                        source: std::io::Error::other(message.clone()),
                    }
                };
                let _ = reply.send(Err(answer));
            }
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

/// Deduplicates, appends and syncs the group, adds it to the memtable.
fn store(
    shared: &Shared,
    wal: &mut Wal,
    mut writes: Vec<Prepared>,
    recorded: &mut Vec<(PartitionKey, i64, u64)>,
) -> Result<Vec<WriteOutcome>> {
    let group = writes.len();
    let begun = Instant::now();
    let mut outcomes = Vec::with_capacity(writes.len());
    // The indices of the messages each write keeps.
    let mut kept_at: Vec<Vec<usize>> = Vec::with_capacity(writes.len());
    {
        let mut dedup = shared.dedup.lock();
        // Partitions used from here on are the group's: not evicted after it.
        let since = dedup.tick();
        let mut read_ahead = false;
        let limit = shared.config.max_inner_names_per_day;
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
                    shared.load_partitions(&mut dedup, &one, &one)?;
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
            outcomes.push(WriteOutcome {
                accepted,
                duplicates: sent - accepted - rejected.len(),
                rejected,
            });
            if accepted > 0 {
                let mut head = [0; 10];
                let parts = write.record_parts(&kept_here, &mut head)?;
                wal.append_parts(&parts).map_err(Error::Wal)?;
            }
            kept_at.push(kept_here);
        }
        let evicted = dedup.shrink(since);
        shared.metrics.dedup_evictions.inc_by(evicted as u64);
        shared.metrics.dedup_entries.set(dedup.entries() as i64);
    }
    // Every kept encoding is in the WAL now: the buffers go back for later writes.
    for write in &mut writes {
        shared.encodings.give(write.take_encoded());
    }
    shared.metrics.observe_stage(Stage::GroupDedupAppend, begun);
    // Each write that keeps messages, with their indices.
    let kept: Vec<(Prepared, Vec<usize>)> = writes
        .into_iter()
        .zip(kept_at)
        .filter(|(_, indices)| !indices.is_empty())
        .collect();
    let duplicates: usize = outcomes.iter().map(|o| o.duplicates).sum();
    let rows = kept.iter().map(|(_, indices)| indices.len()).sum::<usize>();
    if !kept.is_empty() {
        if shared.config.wal_fsync {
            let started = Instant::now();
            wal.sync().map_err(Error::Wal)?;
            shared.metrics.wal_fsyncs.inc();
            shared
                .metrics
                .wal_fsync_seconds
                .observe(started.elapsed().as_secs_f64());
        } else {
            wal.write_out().map_err(Error::Wal)?;
        }
        shared.metrics.group_writes.observe(group as f64);
        let synced = Instant::now();
        let mut batches = Vec::with_capacity(kept.len());
        for (write, indices) in kept {
            batches.extend(write.into_kept(&indices)?);
        }
        let mut state = shared.write();
        state.unflushed_bytes += batches.iter().map(|r| r.bytes).sum::<usize>();
        state.unflushed.extend(batches);
        state.unflushed_rows += rows;
        state.oldest_unflushed.get_or_insert_with(Instant::now);
        drop(state);
        shared.metrics.observe_stage(Stage::GroupMemtable, synced);
    }
    shared.metrics.count("accepted", rows);
    shared.metrics.count("duplicate", duplicates);
    Ok(outcomes)
}
