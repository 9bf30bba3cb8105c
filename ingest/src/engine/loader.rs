//! The loader thread: reads from storage what the dedup index will need,
//! before the writes that need it reach the writer thread.
//!
//! A write whose late messages (or retransmissions of flushed ones) need
//! their (tracker, day) partitions complete from their times, or whose
//! partitions the index lacks, asks for them here and waits. The thread
//! takes every request waiting as one round (each partition from the
//! earliest time any of them needs) and reads the union in one pass per
//! file, as the writer did for a group: each request reading its own
//! partitions would decode the same row groups once per request. It installs what it read
//! unless keys left the index meanwhile (see [`DedupIndex::install`]),
//! and then reads again (a flush ends between two reads: two or three
//! reads are enough); whatever it still could not install, or failed to
//! read, the writer reads, holding up every write behind it.
//!
//! [`DedupIndex::install`]: crate::dedup::DedupIndex::install

use std::sync::Arc;

use crossbeam_channel::Receiver;

use super::{Shared, key_times};
use crate::dedup::Needs;

/// What one write needs read, and the channel to say it was (awaited by
/// the write's request task, which holds no thread meanwhile).
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) needs: Needs,
    pub(crate) done: tokio::sync::oneshot::Sender<()>,
}

pub(super) fn run(shared: Arc<Shared>, requests: Receiver<Request>) {
    while let Ok(first) = requests.recv() {
        let round: Vec<Request> = std::iter::once(first).chain(requests.try_iter()).collect();
        let mut needs = Needs::default();
        for request in &round {
            needs.extend(&request.needs);
        }
        load(&shared, needs);
        for request in round {
            let _ = request.done.send(());
        }
    }
}

/// Reads of one round: a read that keys leaving the index (a flush)
/// made stale is read again, this many times in all at most; past them
/// the writer reads what is still missing.
const READS_PER_ROUND: usize = 3;

/// Reads and installs what the index still lacks of `needs`.
fn load(shared: &Shared, mut needs: Needs) {
    for _ in 0..READS_PER_ROUND {
        if load_once(shared, &mut needs) {
            return;
        }
    }
}

/// One read of what the index still lacks of `needs` (which keeps only
/// that); whether nothing is left to read (installed, or nothing to read,
/// or a failed read the writer will redo).
fn load_once(shared: &Shared, needs: &mut Needs) -> bool {
    let Needs {
        partitions,
        complete,
    } = needs;
    let (generation, times) = {
        let dedup = shared.dedup.lock();
        // An earlier round (or the writer) may have read some already.
        complete.retain(|&p, &mut from| !dedup.covers(p, from));
        partitions.retain(|&p| complete.contains_key(&p) || !dedup.is_loaded(p));
        // What to read, as of this generation (what the index holds then
        // bounds it).
        (dedup.generation(), key_times(&dedup, complete))
    };
    if partitions.is_empty() {
        return true;
    }
    let loaded = match shared.read_partitions(partitions, &times) {
        Ok(loaded) => loaded,
        Err(e) => {
            tracing::debug!(error = %e, "reading partitions ahead of writes failed; the writer reads them");
            return true;
        }
    };
    let installed = shared.dedup.lock().install(generation, loaded);
    if !installed {
        // A flush moved keys out of the index while this read: what was
        // read may lack its rows. Read again, at the new generation.
        shared
            .metrics
            .dedup_prefetch_discarded
            .inc_by(partitions.len() as u64);
    }
    installed
}
