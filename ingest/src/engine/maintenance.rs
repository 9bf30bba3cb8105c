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

/// Merges the small files of one day, if a day has enough of them of
/// about one size ([`choose_merge`]). At most one merge per call, of at most
/// `compact_max_rows` rows, so each call's work is bounded.
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
    let Some(chosen) = days.into_values().find_map(|day| {
        choose_merge(
            day,
            config.compact_min_files,
            config.compact_max_rows as u64,
        )
    }) else {
        return Ok(false);
    };
    let chosen: Vec<FileEntry> = chosen.into_iter().cloned().collect();
    let rows: u64 = chosen.iter().map(|f| f.rows).sum();
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

/// The small files of one day to merge, if any: the smallest first, each
/// next one taken only while it holds at most twice the rows of those
/// taken before it together, up to `max_rows`; a merge needs `min_files`
/// of them (and two at least). A file then joins a merge only once the
/// others hold half its rows or more, so files grow geometrically and a
/// row is rewritten a few times at most: merging a day's small files
/// whatever their sizes rewrote its largest again for every few rows that
/// arrived late (the last day's file, under a stream of late messages,
/// every few seconds).
fn choose_merge(
    mut small: Vec<&FileEntry>,
    min_files: usize,
    max_rows: u64,
) -> Option<Vec<&FileEntry>> {
    small.sort_by_key(|f| (f.rows, f.id));
    let mut chosen: Vec<&FileEntry> = Vec::new();
    let mut rows = 0;
    for file in small {
        if !chosen.is_empty() && (file.rows > 2 * rows || rows + file.rows > max_rows) {
            break;
        }
        rows += file.rows;
        chosen.push(file);
    }
    if chosen.len() < min_files.max(2) {
        return None;
    }
    chosen.sort_by_key(|f| f.id);
    Some(chosen)
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
    let mut dedup = shared.dedup.lock();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn file(id: u64, rows: u64) -> FileEntry {
        FileEntry {
            id,
            path: PathBuf::from(format!("day=2024-06-01/f{id:012}.parquet")),
            tracker_min: 1,
            tracker_max: 1,
            message_time_min_ms: 0,
            message_time_max_ms: 0,
            server_time_min_ms: 0,
            server_time_max_ms: 0,
            rows,
            bytes: rows * 50,
            inner_columns: Vec::new().into(),
            trackers: Vec::new().into(),
        }
    }

    fn files(rows: &[u64]) -> Vec<FileEntry> {
        rows.iter()
            .enumerate()
            .map(|(id, &rows)| file(id as u64, rows))
            .collect()
    }

    /// The ids `choose_merge` picks among files of these sizes (ids in order).
    fn chosen(rows: &[u64], max_rows: u64) -> Option<Vec<u64>> {
        let all = files(rows);
        choose_merge(all.iter().collect(), 4, max_rows)
            .map(|chosen| chosen.iter().map(|f| f.id).collect())
    }

    #[test]
    fn a_merge_takes_files_of_about_one_size_smallest_first() {
        // Files of about one size: all of them.
        assert_eq!(chosen(&[100, 100, 100, 100], 1_000), Some(vec![0, 1, 2, 3]));
        assert_eq!(
            chosen(&[2_600, 2_500, 2_900, 2_700], 1_000_000),
            Some(vec![0, 1, 2, 3])
        );
        // One more than twice the others together stays.
        assert_eq!(
            chosen(&[1_000, 1_000, 8_001, 1_000, 1_000], 1_000_000),
            Some(vec![0, 1, 3, 4])
        );
        assert_eq!(
            chosen(&[1_000, 1_000, 8_000, 1_000, 1_000], 1_000_000),
            Some(vec![0, 1, 2, 3, 4])
        );
        // A day's large file is not rewritten for three late ones...
        assert_eq!(chosen(&[200_000, 3_000, 3_000, 3_000], 1_000_000), None);
        // ...the fourth merges the small ones alone...
        assert_eq!(
            chosen(&[200_000, 3_000, 3_000, 3_000, 3_000], 1_000_000),
            Some(vec![1, 2, 3, 4])
        );
        // ...and a file joins once the others hold half its rows.
        assert_eq!(
            chosen(&[12_000, 3_000, 3_000, 3_000, 3_000, 200_000], 1_000_000),
            Some(vec![0, 1, 2, 3, 4])
        );
        // Never past the most rows of one merge.
        assert_eq!(chosen(&[100, 100, 100, 100, 100], 350), None);
        assert_eq!(
            chosen(&[100, 100, 100, 100, 100], 400),
            Some(vec![0, 1, 2, 3])
        );
        // Fewer than the minimum: none.
        assert_eq!(chosen(&[100, 100, 100], 1_000), None);
    }

    /// Late rows arriving a few at a time cost each row a few rewrites,
    /// not one per merge: the rows rewritten stay within a small multiple
    /// (the logarithm of the files' growth) of the rows that arrived.
    #[test]
    fn rows_arriving_in_small_files_are_rewritten_a_few_times_at_most() {
        let (mut day, mut arrived, mut rewritten, mut next_id) = (files(&[200_000]), 0, 0, 1);
        let mut most_files = 0;
        for round in 0..400 {
            // Late files of 2,000 to 2,999 rows, no two alike in a row.
            let rows = 2_000 + (round * 379) % 1_000;
            day.push(file(next_id, rows));
            next_id += 1;
            arrived += rows;
            let small: Vec<&FileEntry> = day.iter().filter(|f| f.rows < 256 * 1024).collect();
            if let Some(merge) = choose_merge(small, 4, 2_000_000) {
                let ids: Vec<u64> = merge.iter().map(|f| f.id).collect();
                let rows: u64 = merge.iter().map(|f| f.rows).sum();
                rewritten += rows;
                day.retain(|f| !ids.contains(&f.id));
                day.push(file(next_id, rows));
                next_id += 1;
            }
            most_files = most_files.max(day.len());
        }
        // Merging any four small files of the day rewrote the large one
        // every third file: 44 times the rows that arrived (about 4 now),
        // and the day never holds more than a few files.
        assert!(
            rewritten <= 10 * arrived,
            "{rewritten} rows rewritten for {arrived}"
        );
        assert!(most_files <= 16, "{most_files} files at once");
    }
}
