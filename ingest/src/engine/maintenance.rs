//! Background upkeep of the files: compaction of small files and retention.
//!
//! Both rewrite files through the sink and swap them in one catalog commit.
//! Replaced files are deleted by [`Epoch`]: readers' snapshots hold the epoch
//! they were taken in, each epoch holds the next one, and an epoch deletes the
//! files replaced during it only when it is dropped, so a file goes only once
//! no snapshot that could list it is left.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use schemas::FileEntry;

use super::Shared;
use crate::Result;
use crate::sink::Rewrite;

/// A span of time between two file replacements.
#[derive(Debug, Default)]
pub(crate) struct Epoch {
    obsolete: Mutex<Vec<PathBuf>>,
    next: Mutex<Option<Arc<Epoch>>>,
}

impl Drop for Epoch {
    fn drop(&mut self) {
        let paths = std::mem::take(self.obsolete.get_mut().unwrap_or_else(|p| p.into_inner()));
        for path in paths {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), error = %e, "could not remove a replaced file; removed at the next start");
            }
        }
    }
}

/// Swaps a rewrite's files into the state and opens a new epoch.
pub(super) fn apply(shared: &Shared, rewrite: Rewrite) {
    // Built before the lock (a file's spans make the list a deep copy):
    // only this thread changes the list.
    let current = shared.read().files.clone();
    let mut files: Vec<FileEntry> = current
        .iter()
        .filter(|f| !rewrite.removed.contains(&f.id))
        .cloned()
        .collect();
    files.extend(rewrite.added);
    let mut state = shared.write();
    state.files = Arc::new(files);
    let next = Arc::new(Epoch::default());
    state
        .epoch
        .obsolete
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(rewrite.obsolete);
    *state.epoch.next.lock().unwrap_or_else(|p| p.into_inner()) = Some(next.clone());
    state.epoch = next;
}

/// Merges the small files of one day, if a day has enough of them. At most
/// one merge per call, of at most `compact_max_rows` rows, so each call's work is bounded.
///
/// Files that came out of a merge as more than one file (their columns are
/// too different to share a file, see the Parquet writer) are left alone
/// from then on: merging them again would only write them again.
pub(super) fn compact(shared: &Shared) -> Result<bool> {
    let files = shared.read().files.clone();
    let config = &shared.config;
    let mut unmergeable = shared.unmergeable.lock().unwrap_or_else(|p| p.into_inner());
    unmergeable.retain(|id| files.iter().any(|f| f.id == *id));
    let mut days: BTreeMap<PathBuf, Vec<&FileEntry>> = BTreeMap::new();
    for file in files
        .iter()
        .filter(|f| f.rows < config.compact_small_rows as u64 && !unmergeable.contains(&f.id))
    {
        days.entry(file.path.parent().map(PathBuf::from).unwrap_or_default())
            .or_default()
            .push(file);
    }
    let Some(mut small) = days
        .into_values()
        .find(|day| day.len() >= config.compact_min_files)
    else {
        return Ok(false);
    };
    small.sort_by_key(|f| f.id);
    let mut chosen = Vec::new();
    let mut rows = 0;
    for file in small {
        if !chosen.is_empty() && rows + file.rows > config.compact_max_rows as u64 {
            break;
        }
        rows += file.rows;
        chosen.push(file.clone());
    }
    if chosen.len() < 2 {
        return Ok(false);
    }
    let rewrite = shared.sink.rewrite(&chosen, &|_, _| true)?;
    tracing::debug!(
        merged = chosen.len(),
        rows,
        into = rewrite.added.len(),
        "compacted"
    );
    if rewrite.added.len() > 1 {
        unmergeable.extend(rewrite.added.iter().map(|f| f.id));
    }
    drop(unmergeable);
    apply(shared, rewrite);
    shared.metrics.compactions.inc();
    Ok(true)
}

/// Drops rows older than their tracker's cutoff (the plan's store period):
/// rewrites the files that hold such rows, and forgets their dedup keys.
pub(super) fn retain(shared: &Shared, cutoffs: &BTreeMap<i64, i64>) -> Result<u64> {
    let dropped = match shared.sink.delete_expired(cutoffs)? {
        Some(dropped) => {
            if dropped > 0 {
                tracing::info!(
                    rows_dropped = dropped,
                    "retention removed rows past their store period"
                );
            }
            dropped
        }
        None => rewrite_expired(shared, cutoffs)?,
    };
    let mut dedup = shared.dedup.lock().unwrap_or_else(|p| p.into_inner());
    dedup.retain(|(tracker, day)| {
        cutoffs
            .get(tracker)
            .is_none_or(|cutoff| (day + 1) * 86_400_000 > *cutoff)
    });
    shared.metrics.retention_runs.inc();
    Ok(dropped)
}

/// Rewrites the files holding expired rows without them: only files in which
/// some tracker's own earliest row is older than that tracker's cutoff, so
/// every rewrite drops rows (a file's tracker range and earliest time say
/// nothing of which tracker that earliest row is).
fn rewrite_expired(shared: &Shared, cutoffs: &BTreeMap<i64, i64>) -> Result<u64> {
    let files = shared.read().files.clone();
    let expired: Vec<FileEntry> = files
        .iter()
        .filter(|f| {
            f.trackers.iter().any(|span| {
                cutoffs
                    .get(&span.tracker_id)
                    .is_some_and(|cutoff| span.message_time_min_ms < *cutoff)
            })
        })
        .cloned()
        .collect();
    let mut dropped = 0;
    let mut batch: Vec<FileEntry> = Vec::new();
    let mut rows = 0;
    let keep = |tracker: i64, time: i64| cutoffs.get(&tracker).is_none_or(|cutoff| time >= *cutoff);
    for file in expired {
        rows += file.rows;
        batch.push(file);
        if rows >= shared.config.compact_max_rows as u64 {
            dropped += rewrite_retained(shared, &std::mem::take(&mut batch), &keep)?;
            rows = 0;
        }
    }
    if !batch.is_empty() {
        dropped += rewrite_retained(shared, &batch, &keep)?;
    }
    Ok(dropped)
}

fn rewrite_retained(
    shared: &Shared,
    files: &[FileEntry],
    keep: &dyn Fn(i64, i64) -> bool,
) -> Result<u64> {
    let rewrite = shared.sink.rewrite(files, keep)?;
    shared.metrics.retention_rewrites.inc_by(files.len() as u64);
    let dropped = rewrite.rows_dropped;
    tracing::info!(
        files = files.len(),
        rows_dropped = dropped,
        "retention removed rows past their store period"
    );
    apply(shared, rewrite);
    Ok(dropped)
}
