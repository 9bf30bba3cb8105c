//! The keys of a complete partition's rows in the sink, in 12 bytes each.
//!
//! A complete partition holds every key of its tracker's day from the time
//! it is complete from; under a sustained load with late messages for
//! every tracker, these are most of the index (millions of keys). In a hash
//! set a key took 15 to 30 bytes (13 with its control byte, at a load
//! between 7/16 and 7/8): about 20 on average, 320 MB at a bound of 16
//! million keys. Here they are
//! sorted runs, each allocated to its exact size and never changed: a key
//! takes its 12 bytes.
//!
//! Keys arrive in batches: a read of the sink, then each flush's rows of
//! the partition, nearly always later than every key before. Each batch
//! becomes a run of its own; a run then absorbs the runs after it while
//! they hold at least half its keys, so runs shrink geometrically from the
//! first and a partition of `n` keys has at most about log2(n) of them,
//! each key copied about as many times over the partition's life. A
//! look-up, needed only for a message at or before its tracker's newest
//! (late, or sent again: about 2% of a fleet's), tries the runs whose range
//! covers the key, newest first, by binary search.

use super::{Key, MemKeys};

#[derive(Debug, Default)]
pub(super) struct StoredKeys {
    /// Each sorted by [`MemKeys::order`] and distinct; no key is in two.
    runs: Vec<Box<[Key]>>,
    len: usize,
}

impl StoredKeys {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = &Key> {
        self.runs.iter().flat_map(|run| run.iter())
    }

    /// The newest key, by time within the partition's day `day`.
    pub(super) fn newest(&self, day: i64) -> Option<&Key> {
        self.runs
            .iter()
            .filter_map(|run| run.last())
            .max_by_key(|key| MemKeys::order(key, day))
    }

    /// Whether it holds `key`, of a partition of day `day`: a binary
    /// search of each run whose range covers it, newest first.
    pub(super) fn contains(&self, key: &Key, day: i64) -> bool {
        let order = MemKeys::order(key, day);
        self.runs.iter().rev().any(|run| {
            covers(run, (order, order), day) && MemKeys::find_in(run, key, day).is_some()
        })
    }

    /// Adds `keys` (any order; repeats, and keys it holds, are left out).
    pub(super) fn add(&mut self, mut keys: Vec<Key>, day: i64) {
        keys.sort_unstable_by_key(|key| MemKeys::order(key, day));
        keys.dedup_by_key(|key| MemKeys::order(key, day));
        let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
            return;
        };
        let range = (MemKeys::order(first, day), MemKeys::order(last, day));
        // Only a run whose range meets the new keys' can hold one of them
        // (a flush's keys are nearly always past every run).
        if self.runs.iter().any(|run| covers(run, range, day)) {
            keys.retain(|key| !self.contains(key, day));
        }
        if keys.is_empty() {
            return;
        }
        self.len += keys.len();
        self.runs.push(keys.into_boxed_slice());
        while let [.., before, last] = self.runs.as_slice() {
            if last.len() * 2 < before.len() {
                break;
            }
            let (last, before) = (self.runs.pop(), self.runs.pop());
            if let (Some(last), Some(before)) = (last, before) {
                self.runs.push(merge(&before, &last, day));
            }
        }
    }

    /// Takes every key out.
    pub(super) fn take(&mut self) -> impl Iterator<Item = Key> + use<> {
        self.len = 0;
        std::mem::take(&mut self.runs)
            .into_iter()
            .flat_map(|run| run.into_vec())
    }
}

/// Whether the range of `run` meets `range` (both ends included), in
/// [`MemKeys::order`].
fn covers(run: &[Key], range: ((u32, u64), (u32, u64)), day: i64) -> bool {
    run.first().zip(run.last()).is_some_and(|(first, last)| {
        MemKeys::order(first, day) <= range.1 && range.0 <= MemKeys::order(last, day)
    })
}

/// Two sorted runs without a key in common as one, allocated to its size.
fn merge(a: &[Key], b: &[Key], day: i64) -> Box<[Key]> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        if MemKeys::order(x, day) <= MemKeys::order(y, day) {
            out.push(*x);
            i += 1;
        } else {
            out.push(*y);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::*;
    use crate::batch::DAY_MS;

    proptest! {
        /// Whatever batches come, in whatever order, it holds what a set
        /// would, each key once, in runs that stay few and sorted.
        #[test]
        fn it_holds_what_a_set_would(
            day in prop_oneof![Just(-1i64), Just(0), Just(20_000)],
            batches in proptest::collection::vec(
                proptest::collection::vec((0..400u32, 0..3u8), 0..60), 1..40),
        ) {
            let base = day * DAY_MS;
            let key = |t: u32, h: u8| {
                let offset = if t % 2 == 0 { i64::from(t) } else { DAY_MS - 1 - i64::from(t) };
                Key::new(base + offset, u64::from(h))
            };
            let id = |k: &Key| MemKeys::order(k, day);
            let mut stored = StoredKeys::default();
            let mut model: HashSet<(u32, u64)> = HashSet::new();
            for batch in batches {
                let keys: Vec<Key> = batch.iter().map(|&(t, h)| key(t, h)).collect();
                model.extend(keys.iter().map(id));
                stored.add(keys, day);
                prop_assert_eq!(stored.len(), model.len());
                prop_assert_eq!(stored.iter().count(), model.len());
                for run in &stored.runs {
                    prop_assert!(run.windows(2).all(|w| id(&w[0]) < id(&w[1])));
                }
                // Geometric: each run more than twice the one after it.
                prop_assert!(stored.runs.windows(2).all(|w| w[0].len() > 2 * w[1].len()));
                for t in 0..400 {
                    for h in 0..3 {
                        let k = key(t, h);
                        prop_assert_eq!(stored.contains(&k, day), model.contains(&id(&k)));
                    }
                }
                prop_assert_eq!(stored.newest(day).map(id), model.iter().max().copied());
            }
            let mut all: Vec<(u32, u64)> = stored.take().map(|k| id(&k)).collect();
            all.sort_unstable();
            let mut expected: Vec<(u32, u64)> = model.into_iter().collect();
            expected.sort_unstable();
            prop_assert_eq!(all, expected);
            prop_assert!(stored.is_empty());
        }
    }

    /// A day's keys flushed a second at a time: a run per batch would be
    /// thousands, merged they stay within log2 of the count.
    #[test]
    fn a_days_flushes_leave_a_few_runs() {
        let mut stored = StoredKeys::default();
        for second in 0..86_400u32 {
            let time = i64::from(second) * 1_000;
            stored.add(vec![Key::new(time, 1), Key::new(time + 500, 2)], 0);
        }
        assert_eq!(stored.len(), 172_800);
        assert!(stored.runs.len() <= 18, "{} runs", stored.runs.len());
        assert!(stored.contains(&Key::new(1_000, 1), 0));
        assert!(!stored.contains(&Key::new(1_000, 2), 0));
    }
}
