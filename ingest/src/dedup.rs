//! Which messages are already stored: (tracker, message time, content hash)
//! keys, held per (tracker, day) partition.
//!
//! A partition is either absent or complete (every key of its files and of
//! the memtable), so a lookup in a loaded partition is authoritative. Loading
//! reads three columns of the day's files; partitions are evicted least
//! recently used first when the index holds too many keys.
//!
//! A partition also holds the names of the inner columns its tracker has on
//! that day, so that the number of distinct names per tracker and day can be
//! held to a limit before a message is written.

use std::collections::{HashMap, HashSet};

/// A partition key: tracker id and day (days since the epoch, UTC).
pub(crate) type PartitionKey = (i64, i64);

#[derive(Debug, Default)]
struct Partition {
    keys: HashSet<(i64, u64)>,
    /// Keys of the storage names of the partition's inner columns (`batch::name_key`).
    names: HashSet<u64>,
    last_used: u64,
}

/// The deduplication index.
#[derive(Debug)]
pub(crate) struct DedupIndex {
    partitions: HashMap<PartitionKey, Partition>,
    tick: u64,
    entries: usize,
    max_entries: usize,
}

impl DedupIndex {
    pub(crate) fn new(max_entries: usize) -> Self {
        Self {
            partitions: HashMap::new(),
            tick: 0,
            entries: 0,
            max_entries,
        }
    }

    pub(crate) fn is_loaded(&self, partition: PartitionKey) -> bool {
        self.partitions.contains_key(&partition)
    }

    /// Installs a complete partition: its keys and its inner column names.
    pub(crate) fn load(
        &mut self,
        partition: PartitionKey,
        keys: impl IntoIterator<Item = (i64, u64)>,
        names: impl IntoIterator<Item = u64>,
    ) {
        self.tick += 1;
        let loaded = Partition {
            keys: keys.into_iter().collect(),
            names: names.into_iter().collect(),
            last_used: self.tick,
        };
        self.entries += loaded.keys.len();
        if let Some(old) = self.partitions.insert(partition, loaded) {
            self.entries -= old.keys.len();
        }
    }

    /// Records a key; `false` when it was already there (a duplicate). The
    /// partition must be loaded; an unloaded one is created empty, which the
    /// caller avoids by loading first.
    pub(crate) fn insert(&mut self, partition: PartitionKey, time_ms: i64, hash: u64) -> bool {
        self.tick += 1;
        let tick = self.tick;
        let part = self.partitions.entry(partition).or_default();
        part.last_used = tick;
        let new = part.keys.insert((time_ms, hash));
        if new {
            self.entries += 1;
        }
        new
    }

    /// Whether a key is recorded (the message is a duplicate).
    pub(crate) fn contains(&self, partition: PartitionKey, time_ms: i64, hash: u64) -> bool {
        self.partitions
            .get(&partition)
            .is_some_and(|part| part.keys.contains(&(time_ms, hash)))
    }

    /// Records the name keys `names` (distinct: a message's names are) as
    /// the partition's if that keeps it within `limit` distinct names; else
    /// records nothing and says how many it would have.
    pub(crate) fn admit_names(
        &mut self,
        partition: PartitionKey,
        names: &[u64],
        limit: usize,
    ) -> Result<(), usize> {
        let part = self.partitions.entry(partition).or_default();
        let new = names.iter().filter(|n| !part.names.contains(*n)).count();
        let total = part.names.len() + new;
        if new > 0 && total > limit {
            return Err(total);
        }
        part.names.extend(names);
        Ok(())
    }

    /// Forgets a key recorded by a write that then failed.
    pub(crate) fn remove(&mut self, partition: PartitionKey, time_ms: i64, hash: u64) {
        if let Some(part) = self.partitions.get_mut(&partition) {
            if part.keys.remove(&(time_ms, hash)) {
                self.entries -= 1;
            }
        }
    }

    /// Evicts least recently used partitions, except `keep`, until within bounds.
    pub(crate) fn shrink(&mut self, keep: &HashSet<PartitionKey>) {
        if self.entries <= self.max_entries {
            return;
        }
        let mut by_age: Vec<(u64, PartitionKey)> = self
            .partitions
            .iter()
            .filter(|(key, _)| !keep.contains(key))
            .map(|(key, p)| (p.last_used, *key))
            .collect();
        by_age.sort_unstable();
        for (_, key) in by_age {
            if self.entries <= self.max_entries / 2 {
                break;
            }
            if let Some(old) = self.partitions.remove(&key) {
                self.entries -= old.keys.len();
            }
        }
    }

    /// Keeps only the partitions for which `keep` holds.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&PartitionKey) -> bool) {
        let mut entries = self.entries;
        self.partitions.retain(|key, part| {
            let kept = keep(key);
            if !kept {
                entries -= part.keys.len();
            }
            kept
        });
        self.entries = entries;
    }

    pub(crate) fn entries(&self) -> usize {
        self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_report_duplicates_and_eviction_keeps_bounds() {
        let mut index = DedupIndex::new(4);
        index.load((1, 10), [(100, 7)], []);
        assert!(!index.insert((1, 10), 100, 7));
        assert!(index.insert((1, 10), 100, 8), "same second, other content");
        index.load((2, 10), [(1, 1), (2, 2), (3, 3)], []);
        assert_eq!(index.entries(), 5);
        index.shrink(&HashSet::from([(2, 10)]));
        assert!(!index.is_loaded((1, 10)) && index.is_loaded((2, 10)));
        assert_eq!(index.entries(), 3);
        index.remove((2, 10), 1, 1);
        assert!(index.insert((2, 10), 1, 1));
    }
}
