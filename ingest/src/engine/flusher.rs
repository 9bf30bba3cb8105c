//! The flusher thread: memtable to the sink (Parquet files or ClickHouse),
//! then the WAL segments that held it deleted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::{Command, Shared};
use crate::metrics::FlushPhase;
use crate::wal::Released;
use crate::{Error, Result};

/// Requests to the flusher.
#[derive(Debug)]
pub(crate) enum Request {
    /// Flush now and answer when done.
    Flush { reply: Sender<Result<()>> },
    /// Stop after the current flush.
    Stop,
}

/// How often the flusher looks at the memtable's size and age.
const TICK: Duration = Duration::from_millis(200);

/// Flushed keys handed to the dedup index per hold of its lock.
const FLUSHED_KEYS_PER_LOCK: usize = 16 * 1024;

pub(super) fn run(shared: Arc<Shared>, commands: Sender<Command>, requests: Receiver<Request>) {
    let mut last_flush = Instant::now();
    // How long the last flush took: none yet, so the first is not relaxed.
    let mut last_took: Option<Duration> = None;
    let mut last_retention = Instant::now();
    // WAL segments whose deletion failed, tried again after the next flush.
    let mut released = None;
    loop {
        upkeep(&shared, &mut last_retention);
        let request = match requests.recv_timeout(TICK) {
            Ok(Request::Stop) | Err(RecvTimeoutError::Disconnected) => break,
            Ok(Request::Flush { reply }) => Some(reply),
            Err(RecvTimeoutError::Timeout) => None,
        };
        shared.publish_gauges();
        let (due, on_time) = {
            let state = shared.read();
            // ClickHouse wants large INSERTs: at the interval, only once
            // enough rows wait or the oldest has waited long enough.
            let (min_rows, max_delay) = match &shared.config.clickhouse {
                Some(c) => (c.min_insert_rows, c.max_insert_delay),
                None => (1, Duration::ZERO),
            };
            let large_or_old = state.unflushed_rows >= min_rows
                || state
                    .oldest_unflushed
                    .is_some_and(|t| t.elapsed() >= max_delay);
            let config = &shared.config;
            let idle = last_flush.elapsed();
            let due = state.unflushed_rows >= config.flush_rows
                || state.unflushed_bytes >= config.flush_bytes
                || (state.unflushed_rows > 0 && idle >= config.flush_interval && large_or_old);
            let on_time = on_time(
                last_took,
                idle,
                (state.unflushed_rows, state.unflushed_bytes),
                config,
            );
            (due, on_time)
        };
        if request.is_none() && !due {
            continue;
        }
        // A flush asked for (a shutdown, a test) is waited for: never relaxed.
        let relaxed = request.is_none() && on_time && shared.config.flush_nice > 0;
        let started = Instant::now();
        let outcome = flush_once(&shared, &commands, &mut released, relaxed);
        last_flush = Instant::now();
        last_took = Some(last_flush - started);
        if let Err(e) = &outcome {
            shared.metrics.flush_errors.inc();
            tracing::error!(error = %e, "flushing failed; the rows stay in the WAL and memory, retrying");
        }
        shared.publish_gauges();
        if let Some(reply) = request {
            let _ = reply.send(outcome);
        }
    }
}

/// Whether a flush is on time, and so may be relaxed (decision 148): the
/// flusher has been idle (`idle`, since the last flush ended) at least as
/// long as that flush took, so intake leaves it the CPU; and the memtable
/// holds less than twice the rows and bytes that start a flush, so a flush
/// stretched by a busier intake is followed by one at the engine's
/// priority. Never the first flush: nothing says yet how long one takes.
fn on_time(
    last_took: Option<Duration>,
    idle: Duration,
    (rows, bytes): (usize, usize),
    config: &crate::IngestConfig,
) -> bool {
    last_took.is_some_and(|took| idle >= took)
        && rows < config.flush_rows.saturating_mul(2)
        && bytes < config.flush_bytes.saturating_mul(2)
}

/// Compaction (one merge per tick) and retention (when cutoffs changed or are due).
fn upkeep(shared: &Shared, last_retention: &mut Instant) {
    if let Err(e) = super::maintenance::compact(shared) {
        tracing::error!(error = %e, "compaction failed; the files stay as they are");
    }
    let cutoffs = {
        let mut retention = shared.retention.lock().unwrap_or_else(|p| p.into_inner());
        let due = retention.changed || last_retention.elapsed() >= shared.config.retention_interval;
        retention.changed = false;
        retention.cutoffs.clone().filter(|_| due)
    };
    if let Some(cutoffs) = cutoffs {
        *last_retention = Instant::now();
        if let Err(e) = super::maintenance::retain(shared, &cutoffs) {
            tracing::error!(error = %e, "retention failed; retried at the next run");
        }
    }
}

/// Seals the WAL segment, writes the memtable's batches up to it to Parquet
/// (`relaxed`: on a thread of its own, [`IngestConfig::flush_nice`] steps
/// below the engine's priority), swaps them for the new files, and deletes
/// the segments.
///
/// [`IngestConfig::flush_nice`]: crate::IngestConfig::flush_nice
fn flush_once(
    shared: &Shared,
    commands: &Sender<Command>,
    released: &mut Option<Released>,
    relaxed: bool,
) -> Result<()> {
    let (reply, sealed) = crossbeam_channel::bounded(1);
    commands
        .send(Command::Rotate { reply })
        .map_err(|_| Error::Stopped)?;
    let (segment, count) = sealed.recv().map_err(|_| Error::Stopped)??;
    let (batches, bytes): (Vec<_>, usize) = {
        let state = shared.read();
        let flushed = state.unflushed.get(..count).unwrap_or_default();
        let batches = flushed.iter().map(|r| r.batch.clone()).collect();
        (batches, flushed.iter().map(|r| r.bytes).sum())
    };
    if !batches.is_empty() {
        let started = Instant::now();
        let written = if relaxed {
            shared.metrics.relaxed_flushes.inc();
            persist_relaxed(shared, &batches, segment)?
        } else {
            shared.sink.persist(&batches, segment)?
        };
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        // The new list is built before the lock that readers and the
        // writer wait for (a file's spans make it a deep copy): only this
        // thread changes it.
        let mut files = shared.read().files.as_ref().clone();
        files.extend(written.iter().cloned());
        let mut state = shared.write();
        state.files = Arc::new(files);
        state.unflushed.drain(..count);
        state.unflushed_rows -= rows;
        state.unflushed_bytes = state.unflushed_bytes.saturating_sub(bytes);
        state.oldest_unflushed = if state.unflushed.is_empty() {
            None
        } else {
            Some(Instant::now())
        };
        drop(state);
        shared.metrics.observe_flush(FlushPhase::Write, started);
        let indexing = Instant::now();
        // The flushed rows' partitions may be evicted from the dedup index
        // now: the sink holds their keys.
        let mut flushed = Vec::with_capacity(rows);
        for batch in &batches {
            super::flushed_keys(batch, &mut flushed);
        }
        flushed.sort_unstable_by_key(|&(partition, _, _)| partition);
        // Some thousands of keys at a time, whole partitions: the writer
        // thread waits for the index a few ms at most, not for a whole flush.
        let mut start = 0;
        while start < flushed.len() {
            let mut end = (start + FLUSHED_KEYS_PER_LOCK).min(flushed.len());
            while end < flushed.len() && flushed[end].0 == flushed[end - 1].0 {
                end += 1;
            }
            let mut dedup = shared.dedup.lock();
            dedup.flushed(&flushed[start..end]);
            // A waiting writer or intake task takes the index next: with an
            // unfair unlock this loop can take it back at once, chunk after
            // chunk, while they wait.
            parking_lot::MutexGuard::unlock_fair(dedup);
            start = end;
        }
        shared.metrics.observe_flush(FlushPhase::Index, indexing);
        shared.metrics.flushes.inc();
        shared.metrics.rows_flushed.inc_by(rows as u64);
        tracing::debug!(
            rows,
            files = written.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "flushed"
        );
    }
    // Segments up to the sealed one are in the sink (or held nothing).
    let releasing = Instant::now();
    release_segments(commands, segment, released);
    shared.metrics.observe_flush(FlushPhase::Release, releasing);
    Ok(())
}

/// [`Sink::persist`] on a scoped thread whose priority is lowered by
/// [`IngestConfig::flush_nice`] steps: the flusher's own thread keeps the
/// engine's priority for the flushes that are behind (Linux lets a thread
/// lower its priority, not raise it again). If the thread cannot be
/// started the flush runs here; if its priority cannot be lowered it runs
/// at the engine's.
///
/// [`Sink::persist`]: crate::sink::Sink::persist
/// [`IngestConfig::flush_nice`]: crate::IngestConfig::flush_nice
fn persist_relaxed(
    shared: &Shared,
    batches: &[arrow::record_batch::RecordBatch],
    segment: u64,
) -> Result<Vec<schemas::FileEntry>> {
    let steps = shared.config.flush_nice;
    std::thread::scope(|scope| {
        let relaxed = std::thread::Builder::new()
            .name("ingest-flush-low".into())
            .spawn_scoped(scope, || {
                if let Err(e) = crate::priority::lower_this_thread(steps) {
                    tracing::debug!(error = %e, "a relaxed flush runs at the engine's priority");
                }
                shared.sink.persist(batches, segment)
            });
        match relaxed {
            Ok(thread) => match thread.join() {
                Ok(written) => written,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            Err(e) => {
                tracing::warn!(error = %e, "no thread for a relaxed flush; flushing at the engine's priority");
                shared.sink.persist(batches, segment)
            }
        }
    })
}

/// Has the writer release the WAL segments through `through` and deletes
/// them here, with those an earlier failure left: deleting waits for the
/// file system's journal (50-80 ms under load, measured), which the writer,
/// and every write queued behind it, waited for when it deleted them.
fn release_segments(commands: &Sender<Command>, through: u64, pending: &mut Option<Released>) {
    let (reply, answer) = crossbeam_channel::bounded(1);
    if commands.send(Command::Release { through, reply }).is_ok()
        && let Ok(more) = answer.recv()
    {
        match pending {
            Some(earlier) => earlier.absorb(more),
            None => *pending = Some(more),
        }
    }
    let Some(segments) = pending.as_mut() else {
        return;
    };
    match segments.delete() {
        Ok(_) => *pending = None,
        Err(e) => {
            tracing::warn!(error = %e, "removing flushed WAL segments failed; retried after the next flush");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flush_is_on_time_after_idling_as_long_as_the_last_took_with_under_two_flushes_waiting() {
        let config = crate::IngestConfig {
            flush_rows: 1_000,
            flush_bytes: 1_000_000,
            ..crate::IngestConfig::new("unused")
        };
        let s = Duration::from_secs;
        let waiting = (1_000, 1_000_000);
        assert!(on_time(Some(s(1)), s(1), waiting, &config));
        assert!(on_time(Some(s(1)), s(3), (1_999, 1_999_999), &config));
        // The first flush, a flusher busy for longer than it idled, twice
        // the rows or the bytes waiting: at the engine's priority.
        assert!(!on_time(None, s(60), waiting, &config));
        assert!(!on_time(Some(s(2)), s(1), waiting, &config));
        assert!(!on_time(Some(s(1)), s(3), (2_000, 1), &config));
        assert!(!on_time(Some(s(1)), s(3), (1, 2_000_000), &config));
    }
}
