//! Which messages are already stored: (tracker, message time, content hash)
//! keys, held per (tracker, day) partition, and each tracker's watermark.
//!
//! The watermark of a tracker is the newest message time of any row stored
//! for it (files, or ClickHouse, and the memtable), when known: the Parquet
//! sink knows it from the catalog, so a message newer than its tracker's
//! watermark is new without any look-up. A partition holds the keys of its
//! rows in the memtable, always, and is *complete from* a message time once
//! it also holds the keys of its rows in the sink at or after that time
//! (read from storage: three columns of the files whose span meets those
//! times, or a ClickHouse query of the day). A message at or before the
//! watermark (late, or a retransmission) and before the keys the index
//! holds needs its partition complete from its own time, and every message
//! needs its partition complete from the day's start when the watermark is
//! unknown (ClickHouse). The read brings only the times the index lacks
//! ([`DedupIndex::to_read`]).
//!
//! A partition with rows in the memtable is never evicted (it counts them;
//! the flusher counts them off once they are in the sink). Then an
//! incomplete partition goes at once, its keys being in the sink; complete
//! ones are evicted least recently used first when the index holds too many
//! keys. A complete partition that still has memtable rows (a tracker that
//! is sending) is not evicted but made incomplete then: it drops the keys
//! of its stored rows but those of the recent window, as a flush does of an
//! incomplete one, so that the keys of an active fleet's late messages stay
//! within the bound too (each complete partition would otherwise hold every
//! later key of its tracker's day).
//!
//! A partition also holds the names of the inner columns its tracker has on
//! that day (the sink's, always loaded), so that the number of distinct names
//! per tracker and day can be held to a limit before a message is written.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use crate::batch::DAY_MS;

mod stored;

use stored::StoredKeys;

/// Sets and maps of the index: keyed by content hashes and times, hashed
/// with a seeded fast hasher (SipHash was a tenth of the writer thread).
pub(crate) type Set<T> = HashSet<T, foldhash::quality::RandomState>;
type Map<K, V> = HashMap<K, V, foldhash::quality::RandomState>;

/// A partition key: tracker id and day (days since the epoch, UTC).
pub(crate) type PartitionKey = (i64, i64);

/// A message's key within its partition: the low 32 bits of its message
/// time and its content hash, in 12 bytes rather than 16. A partition's
/// times lie within its day, less than 2^32 ms, so they differ there in
/// their low bits too, and [`Key::time_ms`] gives them back whole. The
/// index holds millions of keys; their sets were its largest part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(C, packed(4))]
struct Key {
    time: u32,
    hash: u64,
}

impl Key {
    fn new(time_ms: i64, hash: u64) -> Self {
        Self {
            // The low bits, on purpose.
            time: time_ms as u32,
            hash,
        }
    }

    /// The message time, the key being of a partition of day `day`.
    fn time_ms(self, day: i64) -> i64 {
        let base = day * DAY_MS;
        base + i64::from(self.time.wrapping_sub(base as u32))
    }
}

/// The keys of a partition's memtable rows. A tracker's messages mostly
/// come in time order, so they are kept in a run sorted by time (and hash)
/// that a new one is appended to, with the few that come out of order in a
/// set beside it. An append writes where the last one did, a cache line
/// likely still cached; an insert into a set of thousands of partitions'
/// keys was a cache miss a message, most of the writer thread's dedup.
/// Looking one up is a binary search, needed only for a message at or
/// before its tracker's newest.
#[derive(Debug, Default)]
struct MemKeys {
    /// In order of [`MemKeys::order`].
    run: Vec<Key>,
    /// The run's last key, kept beside it: the writer's usual insert
    /// compares with it, and it lies with the partition's other fields
    /// rather than at the end of the run's memory, one cache miss a
    /// message fewer (decision 151).
    last: Option<Key>,
    /// Those that came after a later one.
    late: Set<Key>,
}

impl MemKeys {
    /// A key's place in the run of a partition of day `day`: its time
    /// within the day, then its hash.
    #[inline]
    fn order(key: &Key, day: i64) -> (u32, u64) {
        // The low bits of the day's start; a key's time within the day.
        let base = (day * DAY_MS) as u32;
        let Key { time, hash } = *key;
        (time.wrapping_sub(base), hash)
    }

    fn len(&self) -> usize {
        self.run.len() + self.late.len()
    }

    fn iter(&self) -> impl Iterator<Item = &Key> {
        self.run.iter().chain(&self.late)
    }

    /// Where `key` is in the run, if there.
    fn find(&self, key: &Key, day: i64) -> Option<usize> {
        Self::find_in(&self.run, key, day)
    }

    /// Where `key` is in `run` (sorted by [`MemKeys::order`]), if there.
    fn find_in(run: &[Key], key: &Key, day: i64) -> Option<usize> {
        let order = Self::order(key, day);
        run.binary_search_by(|k| Self::order(k, day).cmp(&order))
            .ok()
    }

    fn contains(&self, key: &Key, day: i64) -> bool {
        self.find(key, day).is_some() || (!self.late.is_empty() && self.late.contains(key))
    }

    /// Adds `key`; `false` when it was there.
    #[inline]
    fn insert(&mut self, key: Key, day: i64) -> bool {
        match &self.last {
            Some(last) if Self::order(last, day) >= Self::order(&key, day) => {
                !self.contains(&key, day) && self.late.insert(key)
            }
            // After the run's newest: new unless it came late once, when
            // the run went further (its newer keys have left since).
            _ if !self.late.is_empty() && self.late.contains(&key) => false,
            _ => {
                self.run.push(key);
                self.last = Some(key);
                true
            }
        }
    }

    /// Takes `key` out; `false` when it was not there.
    fn remove(&mut self, key: &Key, day: i64) -> bool {
        match self.find(key, day) {
            Some(at) => {
                self.run.remove(at);
                self.last = self.run.last().copied();
                true
            }
            None => self.late.remove(key),
        }
    }

    /// Takes out those of `gone` it holds (in any order), in one pass over
    /// the run; answers them.
    fn take(&mut self, mut gone: Vec<Key>, day: i64) -> Vec<Key> {
        gone.sort_unstable_by_key(|key| Self::order(key, day));
        let mut taken = Vec::with_capacity(gone.len());
        let mut not_in_run = Vec::new();
        let mut next = gone.iter().peekable();
        self.run.retain(|key| {
            let order = Self::order(key, day);
            while let Some(g) = next.next_if(|g| Self::order(g, day) < order) {
                not_in_run.push(*g);
            }
            let is_gone = next.next_if(|g| Self::order(g, day) == order).is_some();
            if is_gone {
                taken.push(*key);
            }
            !is_gone
        });
        self.last = self.run.last().copied();
        not_in_run.extend(next);
        if !self.late.is_empty() {
            taken.extend(not_in_run.into_iter().filter(|key| self.late.remove(key)));
        }
        taken
    }
}

#[derive(Debug, Default)]
struct Partition {
    /// Keys of its memtable rows.
    keys: MemKeys,
    /// Keys of flushed rows of an incomplete partition still within the
    /// recent window of its tracker's watermark.
    held: Set<Key>,
    /// Keys of its rows in the sink from `complete_from` on.
    stored: StoredKeys,
    /// Keys of the storage names of the partition's inner columns (`batch::name_key`).
    names: Set<u64>,
    /// The [`signature`] of the names of the last message admitted: a
    /// tracker's messages mostly carry the same names, which are then not
    /// looked up one by one (names are only ever added, so it stays true).
    last_names: Option<u64>,
    last_used: u64,
    /// Rows of the partition in the memtable: while any, it stays loaded.
    unflushed: u64,
    /// When set, the partition is complete from this message time (ms) on:
    /// it holds the key of every row of its day in the sink at or after it
    /// (in `stored`, or `held`, or as a memtable row's).
    complete_from: Option<i64>,
}

impl Partition {
    /// Whether it settles a message at `time_ms` by itself.
    fn covers(&self, time_ms: i64) -> bool {
        self.complete_from.is_some_and(|from| from <= time_ms)
    }

    /// The newest message time of its keys; it is of day `day`.
    fn newest_key(&self, day: i64) -> Option<i64> {
        self.keys
            .iter()
            .chain(&self.held)
            .chain(self.stored.newest(day))
            .map(|key| key.time_ms(day))
            .max()
    }

    /// Takes the key of a stored row at `time`, which left the memtable's
    /// or the stored keys: held if within the recent window (at or after
    /// `cutoff`), else dropped, the newest dropped noted in `dropped`.
    fn hold_or_drop(&mut self, key: Key, time: i64, cutoff: i64, dropped: &mut Option<i64>) {
        if time >= cutoff {
            self.held.insert(key);
        } else {
            *dropped = (*dropped).max(Some(time));
        }
    }

    /// Keys it holds, of any kind (a key may be both a memtable row's and
    /// a stored row's for a moment: see [`DedupIndex::load`]).
    fn entries(&self) -> usize {
        self.keys.len() + self.held.len() + self.stored.len()
    }

    /// Whether it holds `key` as a memtable row's or a stored row's; it is
    /// of day `day`.
    #[inline]
    fn holds(&self, key: &Key, day: i64) -> bool {
        self.keys.contains(key, day)
            || (!self.held.is_empty() && self.held.contains(key))
            || (!self.stored.is_empty() && self.stored.contains(key, day))
    }

    /// Records the name keys `names` (distinct: a message's names are) as
    /// its own if that keeps it within `limit` distinct names; else records
    /// nothing and says how many it would have.
    fn admit_names(&mut self, names: &[u64], limit: usize) -> Result<(), usize> {
        if names.is_empty() {
            return Ok(());
        }
        let signature = signature(names);
        if self.last_names == Some(signature) {
            return Ok(());
        }
        let new = names.iter().filter(|n| !self.names.contains(*n)).count();
        let total = self.names.len() + new;
        if new > 0 {
            if total > limit {
                return Err(total);
            }
            self.names.extend(names);
        }
        self.last_names = Some(signature);
        Ok(())
    }
}

/// A message's inner names' keys (in the message's order, which is
/// canonical: its inner maps are sorted) folded into one: two lists alike
/// only by a 2^-64 chance, as their names' keys are (`batch::name_key`).
fn signature(names: &[u64]) -> u64 {
    names
        .iter()
        .fold(0x9E37_79B9_7F4A_7C15, |signature, &name| {
            (signature ^ name)
                .wrapping_mul(0xBF58_476D_1CE4_E5B9)
                .rotate_left(29)
        })
}

/// What must be read from storage before messages can be looked at.
#[derive(Debug, Default)]
pub(crate) struct Needs {
    /// Partitions the index lacks, or needs complete (their inner column
    /// names are read).
    pub(crate) partitions: HashSet<PartitionKey>,
    /// Those of them whose stored keys are read too, each from the earliest
    /// message time it must settle ([`DedupIndex::to_read`] says which
    /// keys that is).
    pub(crate) complete: HashMap<PartitionKey, i64>,
}

impl Needs {
    /// Notes that `partition` must be complete from `time_ms` on.
    pub(crate) fn complete_from(&mut self, partition: PartitionKey, time_ms: i64) {
        self.partitions.insert(partition);
        let from = self.complete.entry(partition).or_insert(time_ms);
        *from = (*from).min(time_ms);
    }

    /// Adds what `other` needs.
    pub(crate) fn extend(&mut self, other: &Needs) {
        self.partitions.extend(&other.partitions);
        for (&partition, &time_ms) in &other.complete {
            self.complete_from(partition, time_ms);
        }
    }
}

/// The keys of a partition's rows in the sink with message times in
/// `times` (ms), read to make it complete from `times.start` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredRead {
    pub(crate) times: Range<i64>,
    pub(crate) keys: Vec<(i64, u64)>,
}

/// A read starts this far before the earliest message that needs it, on a
/// multiple of it (ms): the messages that need a read come in waves (a
/// gateway's backlog, bodies sent again after a refusal), each a little
/// older than the last, and each would otherwise read the few keys before
/// the last read's start.
const READ_ALIGN_MS: i64 = 5 * 60_000;

/// What [`DedupIndex::admit`] did with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admitted {
    /// New: its key is recorded as a memtable row's.
    New,
    /// Stored already, or a copy of a message admitted before.
    Duplicate,
    /// Refused: its tracker would have this many distinct inner names on
    /// its day, beyond the limit. Nothing recorded.
    TooManyNames(usize),
    /// Its partition must be loaded, or completed, first. Nothing recorded.
    Unknown,
}

/// What the index knows of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Known {
    /// Stored already.
    Duplicate,
    /// Not stored.
    New,
    /// Its partition must be loaded, or completed, first.
    Unknown,
}

/// The deduplication index.
#[derive(Debug)]
pub(crate) struct DedupIndex {
    partitions: Map<PartitionKey, Partition>,
    /// Each tracker's marks (absent: nothing stored), when the sink can
    /// say; `None` when it cannot.
    watermarks: Option<Map<i64, Mark>>,
    tick: u64,
    entries: usize,
    /// Keys of memtable rows, among `entries` (they cannot be evicted).
    unflushed: u64,
    max_entries: usize,
    /// How far behind its tracker's watermark a flushed key is kept (ms).
    recent_ms: i64,
    /// Counts the times keys left the index for the sink (flushes,
    /// evictions, retention): keys read from storage before a change of it
    /// may miss rows the index no longer holds (see [`Self::install`]).
    generation: u64,
}

/// What the index knows of a tracker's stored rows.
#[derive(Debug, Clone, Copy)]
struct Mark {
    /// The newest message time stored.
    newest: i64,
    /// The index holds the key of every stored row of the tracker at or
    /// after this time (so a message there needs no look-up): the newest at
    /// start, plus one; raised past every key dropped since.
    held_from: i64,
}

impl Mark {
    /// Nothing stored: every key (none) is held.
    const EMPTY: Self = Self {
        newest: i64::MIN,
        held_from: i64::MIN,
    };
}

impl DedupIndex {
    /// An index of at most `max_entries` keys (beyond those of memtable rows),
    /// with the sink's watermarks (newest stored message time by tracker) if
    /// it knows them. Flushed keys within `recent_ms` of their tracker's
    /// watermark are kept, so that a retransmission of a recent message is
    /// settled without reading storage.
    pub(crate) fn new(
        max_entries: usize,
        watermarks: Option<HashMap<i64, i64>>,
        recent_ms: i64,
    ) -> Self {
        let mark = |newest: i64| Mark {
            newest,
            held_from: newest.saturating_add(1),
        };
        Self {
            partitions: Map::default(),
            watermarks: watermarks.map(|w| w.into_iter().map(|(t, n)| (t, mark(n))).collect()),
            tick: 0,
            entries: 0,
            unflushed: 0,
            max_entries,
            recent_ms: recent_ms.max(0),
            generation: 0,
        }
    }

    /// The current generation, to read partitions from storage outside the
    /// index's lock and [`install`](Self::install) them after.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// [`load`](Self::load)s partitions read from storage without the
    /// index's lock, if no key has left the index since `generation` was
    /// current: the files were listed after it was read, so they hold every
    /// row flushed before, and the index still holds every key flushed
    /// since. Otherwise installs nothing (a flushed key the read missed may
    /// be gone from the index) and answers `false`; the writer then reads
    /// what it needs itself.
    pub(crate) fn install(
        &mut self,
        generation: u64,
        loaded: impl IntoIterator<Item = (PartitionKey, Option<StoredRead>, Vec<u64>)>,
    ) -> bool {
        if generation != self.generation {
            return false;
        }
        for (partition, read, names) in loaded {
            let covered = |read: &StoredRead| self.covers(partition, read.times.start);
            let read = read.filter(|read| !covered(read));
            self.load(partition, read, names);
        }
        true
    }

    /// Whether the partition is in the index (its names are known).
    pub(crate) fn is_loaded(&self, partition: PartitionKey) -> bool {
        self.partitions.contains_key(&partition)
    }

    /// Whether the partition holds any of the sink's keys.
    #[cfg(test)]
    pub(crate) fn is_complete(&self, partition: PartitionKey) -> bool {
        self.partitions
            .get(&partition)
            .is_some_and(|p| p.complete_from.is_some())
    }

    /// Whether the partition is complete from `time_ms` on (it holds every
    /// key of its rows in the sink at or after it).
    pub(crate) fn covers(&self, partition: PartitionKey, time_ms: i64) -> bool {
        self.partitions
            .get(&partition)
            .is_some_and(|p| p.covers(time_ms))
    }

    /// The message times whose keys must be read from the sink for the
    /// partition to be complete from `time_ms` on; `None` when it is.
    ///
    /// Without marks (ClickHouse) that is the whole day. With them, the
    /// index already holds every key of the tracker at or after its
    /// `held_from`, and a partition complete from some time every key of it
    /// from there: the read ends where those begin. It starts a little
    /// before `time_ms` ([`READ_ALIGN_MS`]). So a message minutes behind
    /// its tracker's newest reads minutes of keys, not its whole day (a
    /// gateway's backlog across a fleet made every tracker's partition read
    /// its day, and hold it: decision 142).
    pub(crate) fn to_read(&self, (tracker, day): PartitionKey, time_ms: i64) -> Option<Range<i64>> {
        let day_range = day * DAY_MS..(day + 1) * DAY_MS;
        let part = self.partitions.get(&(tracker, day));
        let complete_from = part.and_then(|p| p.complete_from).unwrap_or(i64::MAX);
        let times = match self.mark(tracker) {
            None => day_range.start..complete_from.min(day_range.end),
            Some(mark) => {
                let start = time_ms - time_ms.rem_euclid(READ_ALIGN_MS);
                let end = mark.held_from.min(complete_from).min(day_range.end);
                start.max(day_range.start)..end
            }
        };
        (times.start <= time_ms && time_ms < times.end).then_some(times)
    }

    /// Whether the message is stored, from what the index holds.
    #[cfg(test)]
    pub(crate) fn known(&self, partition: PartitionKey, time_ms: i64, hash: u64) -> Known {
        self.known_in(self.partitions.get(&partition), partition, time_ms, hash)
    }

    /// [`known`](Self::known), noting in `needs` what must be read from
    /// storage first: the partition if the index lacks it, and its keys
    /// too if the message cannot be settled without them.
    pub(crate) fn known_noting(
        &self,
        partition: PartitionKey,
        time_ms: i64,
        hash: u64,
        needs: &mut Needs,
    ) -> Known {
        let part = self.partitions.get(&partition);
        let known = self.known_in(part, partition, time_ms, hash);
        if part.is_none() {
            needs.partitions.insert(partition);
        }
        if known == Known::Unknown {
            needs.complete_from(partition, time_ms);
        }
        known
    }

    fn known_in(
        &self,
        part: Option<&Partition>,
        (tracker, day): PartitionKey,
        time_ms: i64,
        hash: u64,
    ) -> Known {
        let mark = self.mark(tracker);
        // Newer than every row its tracker has stored: no key can match, and
        // none is looked up (a live fleet's usual message; the look-up was
        // a cache miss into a set of millions, a third of the writer).
        if mark.is_some_and(|mark| time_ms > mark.newest) {
            return Known::New;
        }
        if part.is_some_and(|p| p.holds(&Key::new(time_ms, hash), day)) {
            return Known::Duplicate;
        }
        let held_from = mark.map_or(i64::MAX, |mark| mark.held_from);
        if part.is_some_and(|p| p.covers(time_ms)) || time_ms >= held_from {
            return Known::New;
        }
        Known::Unknown
    }

    /// What the index knows of the tracker's stored rows; `None` when the
    /// sink cannot say (nothing is settled by marks then).
    fn mark(&self, tracker: i64) -> Option<Mark> {
        let marks = self.watermarks.as_ref()?;
        Some(marks.get(&tracker).copied().unwrap_or(Mark::EMPTY))
    }

    /// Notes that keys of the tracker up to `time_ms` left the index.
    fn dropped_through(&mut self, tracker: i64, time_ms: i64) {
        if let Some(w) = &mut self.watermarks {
            let mark = w.entry(tracker).or_insert(Mark::EMPTY);
            mark.held_from = mark.held_from.max(time_ms.saturating_add(1));
        }
    }

    /// Installs a partition with the sink's inner column names and, when
    /// `read` is given, the sink's keys of the times [`to_read`](Self::to_read)
    /// gave (it is complete from their start then). The keys it held stay.
    pub(crate) fn load(
        &mut self,
        partition: PartitionKey,
        read: Option<StoredRead>,
        names: impl IntoIterator<Item = u64>,
    ) {
        self.tick += 1;
        let part = self.partitions.entry(partition).or_default();
        part.last_used = self.tick;
        part.names.extend(names);
        if let Some(StoredRead { times, keys }) = read {
            // The read includes the held keys of its times (a tracker's
            // mark may have passed keys a partition still holds). A row
            // flushed while they were read may be both in them and still
            // counted in the memtable's until its flush is counted off.
            let before = part.entries();
            let day = partition.1;
            part.held.retain(|key| !times.contains(&key.time_ms(day)));
            part.stored.add(
                keys.into_iter()
                    .map(|(time, hash)| Key::new(time, hash))
                    .collect(),
                day,
            );
            part.complete_from = Some(
                part.complete_from
                    .map_or(times.start, |f| f.min(times.start)),
            );
            self.entries = self.entries + part.entries() - before;
        }
    }

    /// Records the keys of rows a restart put back in the memtable (their
    /// partition stays incomplete) and their names.
    pub(crate) fn recover(
        &mut self,
        partition: PartitionKey,
        keys: Vec<(i64, u64)>,
        names: impl IntoIterator<Item = u64>,
    ) {
        for &(time, hash) in &keys {
            self.insert(partition, time, hash);
        }
        self.load(partition, None, names);
    }

    /// Records the key of a row going to the memtable, with no names to
    /// check ([`admit`](Self::admit) as after a read); `false` when the
    /// index held it (a duplicate). An unloaded partition is created empty,
    /// which the caller avoids by loading first.
    pub(crate) fn insert(&mut self, partition: PartitionKey, time_ms: i64, hash: u64) -> bool {
        self.admit(partition, time_ms, hash, &[], usize::MAX, true) == Admitted::New
    }

    /// Settles a message and, if new and within its day's `limit` of
    /// distinct inner names (`names`, as [`Partition::admit_names`] takes
    /// them), records its key as a memtable row's and its names: what
    /// [`known`](Self::known), the names' check and [`insert`](Self::insert)
    /// do, with one look-up of its partition and one of its tracker's mark
    /// (the writer's usual message is new by its mark, in a partition of
    /// thousands whose cache lines are cold). [`Admitted::Unknown`] when its
    /// partition is not loaded, or must be complete to settle it, unless
    /// `read`: its partition was just read complete, so the message is new
    /// unless the index holds it (never `Unknown` then).
    pub(crate) fn admit(
        &mut self,
        partition: PartitionKey,
        time_ms: i64,
        hash: u64,
        names: &[u64],
        limit: usize,
        read: bool,
    ) -> Admitted {
        let part = if read {
            self.partitions.entry(partition).or_default()
        } else {
            match self.partitions.get_mut(&partition) {
                Some(part) => part,
                None => return Admitted::Unknown,
            }
        };
        self.tick += 1;
        part.last_used = self.tick;
        let mut mark = self
            .watermarks
            .as_mut()
            .map(|marks| marks.get_mut(&partition.0));
        let key = Key::new(time_ms, hash);
        // As `known_in`: newer than every row of its tracker, no key can
        // match; else a key held settles it, and only a complete partition
        // or a time within what is held says it is new.
        let newest = match &mark {
            Some(found) => found.as_ref().map_or(Mark::EMPTY, |m| **m),
            None => Mark {
                newest: i64::MAX,
                held_from: i64::MAX,
            },
        };
        if time_ms <= newest.newest {
            if part.holds(&key, partition.1) {
                return Admitted::Duplicate;
            }
            if !(read || part.covers(time_ms) || time_ms >= newest.held_from) {
                return Admitted::Unknown;
            }
        }
        if let Err(total) = part.admit_names(names, limit) {
            return Admitted::TooManyNames(total);
        }
        if !part.keys.insert(key, partition.1) {
            return Admitted::Duplicate;
        }
        self.entries += 1;
        self.unflushed += 1;
        part.unflushed += 1;
        match &mut mark {
            Some(Some(mark)) => mark.newest = mark.newest.max(time_ms),
            Some(None) => {
                if let Some(marks) = &mut self.watermarks {
                    marks.insert(
                        partition.0,
                        Mark {
                            newest: time_ms,
                            ..Mark::EMPTY
                        },
                    );
                }
            }
            None => {}
        }
        Admitted::New
    }

    /// Counts off rows now in the sink, as (partition, message time, content
    /// hash) (any order; grouped by partition is faster). Their keys leave
    /// the memtable's: a complete partition keeps them as stored; in an
    /// incomplete one those within the recent window of the tracker's
    /// watermark are held, the others dropped, as are held keys the window
    /// has moved past, and it goes once it has nothing left. Without
    /// watermarks nothing is held.
    pub(crate) fn flushed(&mut self, rows: &[(PartitionKey, i64, u64)]) {
        self.generation += 1;
        for run in rows.chunk_by(|a, b| a.0 == b.0) {
            self.flushed_partition(run[0].0, run.iter().map(|&(_, time, hash)| (time, hash)));
        }
    }

    /// How far back a flushed key of `tracker` stays held.
    fn cutoff(&self, tracker: i64) -> i64 {
        match &self.watermarks {
            Some(w) => w
                .get(&tracker)
                .map_or(i64::MIN, |m| m.newest.saturating_sub(self.recent_ms)),
            None => i64::MAX,
        }
    }

    fn flushed_partition(
        &mut self,
        partition: PartitionKey,
        keys: impl ExactSizeIterator<Item = (i64, u64)>,
    ) {
        let tracker = partition.0;
        let cutoff = self.cutoff(tracker);
        let Some(part) = self.partitions.get_mut(&partition) else {
            return;
        };
        let rows = (keys.len() as u64).min(part.unflushed);
        part.unflushed -= rows;
        self.unflushed -= rows;
        let before = part.entries();
        let day = partition.1;
        let gone = keys.map(|(time, hash)| Key::new(time, hash)).collect();
        let taken = part.keys.take(gone, day);
        let mut newest_dropped = None;
        if let Some(from) = part.complete_from {
            // Nearly always none: a message before `from` needed the
            // partition read from before it, unless its tracker's mark
            // settled it.
            let before_from = |key: &Key| key.time_ms(day) < from;
            let (before_from, taken): (Vec<Key>, Vec<Key>) = match taken.iter().any(before_from) {
                true => taken.into_iter().partition(before_from),
                false => (Vec::new(), taken),
            };
            part.stored.add(taken, day);
            for key in before_from {
                part.hold_or_drop(key, key.time_ms(day), cutoff, &mut newest_dropped);
            }
            self.entries = self.entries + part.entries() - before;
            if let Some(time) = newest_dropped {
                self.dropped_through(tracker, time);
            }
            return;
        }
        for key in taken {
            part.hold_or_drop(key, key.time_ms(day), cutoff, &mut newest_dropped);
        }
        part.held.retain(|key| {
            let time = key.time_ms(day);
            let keep = time >= cutoff;
            if !keep {
                newest_dropped = newest_dropped.max(Some(time));
            }
            keep
        });
        let after = part.entries();
        self.entries -= before - after;
        if after == 0 && part.unflushed == 0 {
            self.partitions.remove(&partition);
        }
        if let Some(time) = newest_dropped {
            self.dropped_through(tracker, time);
        }
    }

    /// Forgets a key recorded by a write that then failed (its row never
    /// reached the memtable). The watermark may stay beyond it: it is then
    /// too high, which only sends more messages to a complete partition.
    pub(crate) fn remove(&mut self, partition: PartitionKey, time_ms: i64, hash: u64) {
        if let Some(part) = self.partitions.get_mut(&partition) {
            if part.keys.remove(&Key::new(time_ms, hash), partition.1) {
                self.entries -= 1;
                if part.unflushed > 0 {
                    self.unflushed -= 1;
                    part.unflushed -= 1;
                }
            }
        }
    }
    /// The count of uses so far: partitions used after it are those with a
    /// later [`last_used`](Partition::last_used).
    pub(crate) fn tick(&self) -> u64 {
        self.tick
    }

    /// Evicts least recently used partitions, except those used after
    /// [`tick`](Self::tick) was `since` (a group's), until within bounds;
    /// answers how many went. One with rows in the memtable stays, and if
    /// complete is [`demote`](Self::demote)d instead (counted too).
    pub(crate) fn shrink(&mut self, since: u64) -> usize {
        // Mostly memtable keys: little to evict (the next flush frees them).
        let evictable = self.entries.saturating_sub(self.unflushed as usize);
        if self.entries <= self.max_entries || evictable < self.max_entries / 4 {
            return 0;
        }
        let mut evicted = 0;
        let mut by_age: Vec<(u64, PartitionKey)> = self
            .partitions
            .iter()
            .filter(|(_, p)| {
                (p.unflushed == 0 || p.complete_from.is_some()) && p.last_used <= since
            })
            .map(|(key, p)| (p.last_used, *key))
            .collect();
        by_age.sort_unstable();
        for (_, key) in by_age {
            if self.entries <= self.max_entries / 2 {
                break;
            }
            let unflushed = self.partitions.get(&key).map_or(0, |p| p.unflushed);
            if (unflushed == 0 && self.forget(key)) || (unflushed > 0 && self.demote(key)) {
                evicted += 1;
            }
        }
        evicted
    }

    /// Makes a complete partition incomplete, as if its stored rows had
    /// been flushed into an incomplete one: the keys of those within the
    /// recent window are held, the others dropped, and its tracker's mark
    /// raised past them. Its memtable keys stay. `false` when it was not
    /// complete.
    fn demote(&mut self, key: PartitionKey) -> bool {
        let cutoff = self.cutoff(key.0);
        let Some(part) = self.partitions.get_mut(&key) else {
            return false;
        };
        if part.complete_from.is_none() {
            return false;
        }
        self.generation += 1;
        let before = part.entries();
        part.complete_from = None;
        let mut newest_dropped = None;
        for stored in part.stored.take() {
            part.hold_or_drop(stored, stored.time_ms(key.1), cutoff, &mut newest_dropped);
        }
        self.entries -= before - part.entries();
        if let Some(time) = newest_dropped {
            self.dropped_through(key.0, time);
        }
        true
    }

    /// Drops a partition and its keys (the sink holds them): counts them off
    /// and raises its tracker's mark past them. `false` when it was not there.
    fn forget(&mut self, key: PartitionKey) -> bool {
        let Some(old) = self.partitions.remove(&key) else {
            return false;
        };
        self.generation += 1;
        self.entries -= old.entries();
        if let Some(newest) = old.newest_key(key.1) {
            self.dropped_through(key.0, newest);
        }
        true
    }

    /// Keeps only the partitions for which `keep` holds, and those with rows
    /// in the memtable.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&PartitionKey) -> bool) {
        let dropped: Vec<PartitionKey> = self
            .partitions
            .iter()
            .filter(|(key, part)| part.unflushed == 0 && !keep(key))
            .map(|(key, _)| *key)
            .collect();
        for key in dropped {
            self.forget(key);
        }
    }

    pub(crate) fn entries(&self) -> usize {
        self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read of the whole of `partition`'s day.
    fn whole((_, day): PartitionKey, keys: Vec<(i64, u64)>) -> Option<StoredRead> {
        Some(StoredRead {
            times: day * DAY_MS..(day + 1) * DAY_MS,
            keys,
        })
    }

    #[test]
    fn a_days_names_stay_within_the_limit_whatever_was_admitted_before() {
        let mut part = Partition::default();
        assert_eq!(part.admit_names(&[1, 2], 3), Ok(()));
        // The same names again: settled by the last message's signature.
        assert_eq!(part.admit_names(&[1, 2], 3), Ok(()));
        // One name new, one known: still looked up name by name.
        assert_eq!(part.admit_names(&[1, 5], 2), Err(3));
        assert_eq!(part.admit_names(&[1, 2, 3], 3), Ok(()));
        assert_eq!(part.admit_names(&[4], 3), Err(4));
        assert_eq!(part.admit_names(&[1, 2, 3], 3), Ok(()));
        assert_eq!(part.admit_names(&[2, 1], 3), Ok(()), "a known pair");
        assert_eq!(
            part.admit_names(&[], 0),
            Ok(()),
            "no names: nothing to admit"
        );
        assert_eq!(part.admit_names(&[3, 6], 3), Err(4));
    }

    /// Memtable keys hold what a set would, whatever order they come,
    /// go and are taken out in.
    mod mem_keys {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Op {
            Insert(u32, u8),
            Remove(u32, u8),
            Take(Vec<(u32, u8)>),
        }

        fn op() -> impl Strategy<Value = Op> {
            // Few distinct times and hashes, so that keys meet.
            let key = (0..40u32, 0..3u8);
            prop_oneof![
                6 => key.clone().prop_map(|(t, h)| Op::Insert(t, h)),
                1 => key.clone().prop_map(|(t, h)| Op::Remove(t, h)),
                1 => proptest::collection::vec(key, 0..8).prop_map(Op::Take),
            ]
        }

        proptest! {
            #[test]
            fn they_behave_as_a_set(
                day in prop_oneof![Just(-1i64), Just(0), Just(20_000)],
                ops in proptest::collection::vec(op(), 1..120),
            ) {
                let base = day * DAY_MS;
                let key = |t: u32, h: u8| {
                    // Times near both ends of the day.
                    let offset = if t % 2 == 0 { i64::from(t) } else { DAY_MS - 1 - i64::from(t) };
                    Key::new(base + offset, u64::from(h))
                };
                let mut keys = MemKeys::default();
                let mut model: HashSet<(u32, u64)> = HashSet::new();
                let id = |k: Key| MemKeys::order(&k, day);
                for op in ops {
                    match op {
                        Op::Insert(t, h) => {
                            let k = key(t, h);
                            prop_assert_eq!(keys.insert(k, day), model.insert(id(k)));
                        }
                        Op::Remove(t, h) => {
                            let k = key(t, h);
                            prop_assert_eq!(keys.remove(&k, day), model.remove(&id(k)));
                        }
                        Op::Take(gone) => {
                            let gone: Vec<Key> = gone.into_iter().map(|(t, h)| key(t, h)).collect();
                            let mut expected: Vec<(u32, u64)> = gone
                                .iter()
                                .map(|&k| id(k))
                                .collect::<HashSet<_>>()
                                .into_iter()
                                .filter(|k| model.remove(k))
                                .collect();
                            let mut taken: Vec<(u32, u64)> =
                                keys.take(gone, day).into_iter().map(id).collect();
                            expected.sort_unstable();
                            taken.sort_unstable();
                            prop_assert_eq!(taken, expected);
                        }
                    }
                    prop_assert_eq!(keys.len(), model.len());
                    prop_assert!(keys.run.windows(2).all(|w| id(w[0]) < id(w[1])));
                    prop_assert_eq!(keys.last, keys.run.last().copied());
                    for t in 0..40 {
                        for h in 0..3 {
                            let k = key(t, h);
                            prop_assert_eq!(keys.contains(&k, day), model.contains(&id(k)));
                        }
                    }
                }
                let mut all: Vec<(u32, u64)> = keys.iter().map(|&k| id(k)).collect();
                all.sort_unstable();
                let mut expected: Vec<(u32, u64)> = model.into_iter().collect();
                expected.sort_unstable();
                prop_assert_eq!(all, expected);
            }
        }
    }

    /// `admit` settles a message as `known` does, and records it as
    /// `insert` does only when new and within its names' limit.
    #[test]
    fn admit_settles_checks_names_and_records_in_one_go() {
        let (p, q) = ((1, 0), (2, 0));
        let mut index = DedupIndex::new(100, Some(HashMap::from([(1, 1_000)])), 0);
        assert_eq!(
            index.admit(p, 2_000, 1, &[], 5, false),
            Admitted::Unknown,
            "not loaded"
        );
        index.load(p, None, [7]);
        // Newer than the tracker's newest: new, recorded, the mark raised.
        assert_eq!(index.admit(p, 2_000, 1, &[7], 5, false), Admitted::New);
        assert_eq!(index.known(p, 2_000, 1), Known::Duplicate);
        assert_eq!(
            index.admit(p, 2_000, 1, &[7], 5, false),
            Admitted::Duplicate
        );
        assert_eq!(
            index.admit(p, 1_999, 2, &[], 5, false),
            Admitted::New,
            "held since"
        );
        // At or before the newest stored at start: the sink must be read.
        assert_eq!(index.admit(p, 1_000, 3, &[], 5, false), Admitted::Unknown);
        assert_eq!(index.admit(p, 1_000, 3, &[], 5, true), Admitted::New);
        assert_eq!(index.admit(p, 1_000, 3, &[], 5, true), Admitted::Duplicate);
        // Over the names' limit: refused, nothing recorded.
        assert_eq!(
            index.admit(p, 3_000, 4, &[7, 8, 9], 2, false),
            Admitted::TooManyNames(3)
        );
        assert_eq!(index.known(p, 3_000, 4), Known::New);
        assert_eq!(index.admit(p, 3_000, 4, &[7, 8], 2, false), Admitted::New);
        assert_eq!(
            index.admit(p, 3_001, 5, &[9], 2, false),
            Admitted::TooManyNames(3)
        );
        assert_eq!(index.entries(), 4);
        // A tracker with nothing stored: new, and its mark starts there.
        index.load(q, None, []);
        assert_eq!(index.admit(q, 50, 1, &[], 5, false), Admitted::New);
        assert_eq!(index.admit(q, 50, 1, &[], 5, false), Admitted::Duplicate);
        assert_eq!(index.admit(q, 40, 1, &[], 5, false), Admitted::New);
        // Without marks (ClickHouse) only a complete partition settles.
        let mut index = DedupIndex::new(100, None, 0);
        index.load(p, None, []);
        assert_eq!(index.admit(p, 5, 1, &[], 5, false), Admitted::Unknown);
        index.load(p, whole(p, vec![(5, 1)]), []);
        assert_eq!(index.admit(p, 5, 1, &[], 5, false), Admitted::Duplicate);
        assert_eq!(index.admit(p, 5, 2, &[], 5, false), Admitted::New);
        assert_eq!(index.entries(), 2);
        // Just read, a message is settled even if its partition is not
        // there (a read of nothing): never unknown.
        assert_eq!(index.admit(q, 5, 1, &[], 5, true), Admitted::New);
    }

    /// A key keeps 32 bits of its time, yet gives back the whole time of
    /// any instant of its partition's day, before the epoch too; and two
    /// times of one day never share a key.
    #[test]
    fn keys_give_back_whole_times_within_their_day() {
        for day in [-1, 0, 20_000, 2_000_000] {
            let base = day * DAY_MS;
            for time in [base, base + 1, base + DAY_MS / 2, base + DAY_MS - 1] {
                assert_eq!(Key::new(time, 7).time_ms(day), time, "day {day}");
            }
        }
        let day = 20_000;
        let base = day * DAY_MS;
        let mut index = DedupIndex::new(100, Some(HashMap::new()), 0);
        index.load((1, day), whole((1, day), vec![]), []);
        assert!(index.insert((1, day), base + 5, 9));
        assert!(index.insert((1, day), base + DAY_MS - 5, 9));
        assert!(!index.insert((1, day), base + 5, 9));
        assert_eq!(index.known((1, day), base + 6, 9), Known::New);
    }

    /// Over the bound, a complete partition whose tracker has rows in the
    /// memtable gives up its stored keys but the recent window's, and is
    /// read again for a message older than what it kept; its memtable keys
    /// stay.
    #[test]
    fn a_sending_trackers_complete_partition_is_demoted_over_the_bound() {
        let mut index = DedupIndex::new(4, Some(HashMap::new()), 10);
        let p = (1, 0);
        let mut stored: Vec<(i64, u64)> = (0..10).map(|i| (100 + i, i as u64)).collect();
        stored.push((195, 11));
        index.load(p, whole(p, stored), []);
        assert!(index.insert(p, 200, 99));
        assert_eq!(index.entries(), 12);
        assert_eq!(index.shrink(index.tick()), 1);
        assert!(index.is_loaded(p) && !index.is_complete(p));
        assert_eq!(index.entries(), 2, "the memtable key and the recent one");
        assert_eq!(index.known(p, 200, 99), Known::Duplicate);
        assert_eq!(index.known(p, 195, 11), Known::Duplicate);
        assert_eq!(index.known(p, 105, 5), Known::Unknown, "read again");
        assert_eq!(index.known(p, 150, 7), Known::New, "after all dropped");
        // Flushed, its memtable key is held as an incomplete one's.
        index.flushed(&[(p, 200, 99)]);
        assert_eq!(index.known(p, 200, 99), Known::Duplicate);
    }

    #[test]
    fn inserts_report_duplicates_and_eviction_keeps_bounds() {
        let mut index = DedupIndex::new(4, None, 0);
        assert_eq!(index.known((1, 0), 100, 7), Known::Unknown);
        index.load((1, 0), whole((1, 0), vec![(100, 7)]), []);
        assert_eq!(index.known((1, 0), 100, 7), Known::Duplicate);
        assert_eq!(index.known((1, 0), 100, 8), Known::New);
        assert!(index.insert((1, 0), 100, 8), "same second, other content");
        assert!(!index.insert((1, 0), 100, 8));
        // Partitions used after `since` (this group's) stay.
        let since = index.tick();
        index.load((2, 0), whole((2, 0), vec![(1, 1), (2, 2), (3, 3)]), []);
        assert_eq!(index.entries(), 5);
        assert_eq!(index.shrink(since), 1, "demoted");
        assert!(
            index.is_loaded((1, 0)) && !index.is_complete((1, 0)),
            "a partition with a row in the memtable stays, incomplete"
        );
        assert_eq!(index.entries(), 4);
        assert_eq!(index.known((1, 0), 100, 8), Known::Duplicate, "kept");
        assert_eq!(index.known((1, 0), 100, 7), Known::Unknown, "dropped");
        index.flushed(&[((1, 0), 100, 8)]);
        assert!(!index.is_loaded((1, 0)), "incomplete and empty: gone");
        index.load((1, 0), whole((1, 0), vec![(100, 7), (100, 8)]), []);
        index.flushed(&[]);
        assert!(index.is_loaded((1, 0)), "a complete partition stays");
        assert_eq!(index.entries(), 5);
        // (1, 0) was used last, yet not since: the least recently used
        // that is not of the group goes, and only it.
        let since = index.tick();
        index.load((2, 0), None, []);
        assert_eq!(index.shrink(since), 1);
        assert!(!index.is_loaded((1, 0)) && index.is_loaded((2, 0)));
        assert_eq!(index.entries(), 3);
    }

    #[test]
    fn the_watermark_settles_newer_messages_without_loading() {
        let mut index = DedupIndex::new(100, Some(HashMap::from([(1, 1_000)])), 0);
        assert_eq!(index.known((1, 0), 1_001, 5), Known::New);
        assert_eq!(index.known((1, 0), 1_000, 5), Known::Unknown);
        assert_eq!(index.known((2, 0), 5, 5), Known::New, "no rows stored yet");
        index.load((1, 0), None, []);
        assert!(index.insert((1, 0), 2_000, 5));
        assert_eq!(index.known((1, 0), 2_000, 5), Known::Duplicate);
        // Late, but after the watermark at start: every key since is held.
        assert_eq!(index.known((1, 0), 1_500, 5), Known::New);
        assert_eq!(index.known((1, 0), 1_000, 5), Known::Unknown, "late");
        assert_eq!(index.known((1, 0), 2_001, 5), Known::New);
        // Flushed, the incomplete partition keeps only the keys at its
        // tracker's watermark (no recent window here); the rest are in the sink.
        index.flushed(&[((1, 0), 2_000, 5)]);
        assert_eq!(index.known((1, 0), 2_000, 5), Known::Duplicate);
        assert!(index.insert((1, 0), 2_500, 6));
        index.flushed(&[((1, 0), 2_500, 6)]);
        assert_eq!(index.entries(), 1);
        assert_eq!(index.known((1, 0), 2_000, 5), Known::Unknown);
        assert_eq!(index.known((1, 0), 2_200, 7), Known::New);
        index.load((1, 0), whole((1, 0), vec![(2_000, 5)]), []);
        assert_eq!(index.known((1, 0), 2_000, 5), Known::Duplicate);
        assert_eq!(index.known((1, 0), 1_500, 5), Known::New);
    }

    #[test]
    fn a_message_past_the_newest_stored_time_is_new_unless_it_was_just_inserted() {
        // Tracker 1 has rows up to 1,000 in the sink, with that very key held.
        let mut index = DedupIndex::new(100, Some(HashMap::from([(1, 1_000)])), 0);
        index.load((1, 0), whole((1, 0), vec![(1_000, 5)]), []);
        assert_eq!(index.known((1, 0), 1_000, 5), Known::Duplicate);
        assert_eq!(index.known((1, 0), 1_001, 5), Known::New);
        // Each insert raises the newest time: a copy of it is found, in its
        // tracker's partition only.
        assert!(index.insert((1, 0), 1_001, 5));
        assert_eq!(index.known((1, 0), 1_001, 5), Known::Duplicate);
        assert_eq!(index.known((1, 0), 1_001, 6), Known::New);
        assert_eq!(index.known((2, 0), 1_001, 5), Known::New);
        // A failed write takes its key back and leaves the mark high: the
        // message is looked up, and new again.
        index.remove((1, 0), 1_001, 5);
        assert_eq!(index.known((1, 0), 1_001, 5), Known::New);
        // Without marks (ClickHouse) nothing is settled by time.
        let index = DedupIndex::new(100, None, 0);
        assert_eq!(index.known((1, 0), 5_000, 5), Known::Unknown);
    }

    #[test]
    fn recent_keys_settle_retransmissions_after_a_flush_until_dropped() {
        let (p, minute) = ((1, 0), 60_000);
        let mut index = DedupIndex::new(1, Some(HashMap::from([(1, 1_000)])), minute);
        index.load(p, None, []);
        for time in [10_000, 50_000, 100_000] {
            assert!(index.insert(p, time, time as u64));
        }
        index.flushed(&[
            (p, 100_000, 100_000),
            (p, 10_000, 10_000),
            (p, 50_000, 50_000),
        ]);
        // Within a minute of the watermark: held, so settled without a read.
        assert_eq!(index.known(p, 50_000, 50_000), Known::Duplicate);
        assert_eq!(index.known(p, 100_000, 100_000), Known::Duplicate);
        assert_eq!(index.known(p, 60_000, 1), Known::New);
        // Between the newest dropped key and the window: nothing else stored.
        assert_eq!(index.known(p, 40_000, 1), Known::New);
        // At or before the newest dropped key: the sink must be read.
        assert_eq!(index.known(p, 10_000, 10_000), Known::Unknown);
        assert_eq!(index.known(p, 5_000, 1), Known::Unknown);
        assert_eq!(index.entries(), 2);
        // Evicted (over its one key), what was held must be read again.
        assert_eq!(index.shrink(index.tick()), 1);
        assert_eq!(index.known(p, 50_000, 50_000), Known::Unknown);
        assert_eq!(index.known(p, 100_000, 100_000), Known::Unknown);
        assert_eq!(index.known(p, 100_001, 1), Known::New);
        // Retention drops what it holds the same way.
        assert!(index.insert(p, 100_500, 7));
        index.flushed(&[(p, 100_500, 7)]);
        index.retain(|_| false);
        assert_eq!(index.known(p, 100_500, 7), Known::Unknown);
        // Without watermarks (ClickHouse) nothing is held past a flush.
        let mut index = DedupIndex::new(100, None, minute);
        index.load(p, whole(p, vec![]), []);
        index.retain(|_| false);
        index.load(p, None, []);
        assert!(index.insert(p, 5, 5));
        index.flushed(&[(p, 5, 5)]);
        assert!(!index.is_loaded(p));
        assert_eq!(index.known(p, 5, 5), Known::Unknown);
    }

    /// Under steady load a partition always has rows in the memtable: the
    /// flushed ones must leave it all the same, or it grows by every row of
    /// its day.
    #[test]
    fn flushed_keys_leave_a_partition_that_still_has_memtable_rows() {
        let (p, minute) = ((1, 0), 60_000);
        let mut index = DedupIndex::new(1_000, Some(HashMap::new()), minute);
        index.load(p, None, []);
        let mut time = 0;
        for _ in 0..100 {
            let mut flushing = Vec::new();
            for _ in 0..10 {
                time += 1_000;
                assert!(index.insert(p, time, time as u64));
                flushing.push((p, time, time as u64));
            }
            // A row arrives while the flush runs.
            time += 1_000;
            assert!(index.insert(p, time, time as u64));
            index.flushed(&flushing);
            // The next flush takes that row too.
            let (last, hash) = (time, time as u64);
            index.flushed(&[(p, last, hash)]);
            assert_eq!(index.known(p, last, hash), Known::Duplicate, "held");
        }
        assert!(index.entries() <= 61, "{} keys held", index.entries());
        assert_eq!(
            index.known(p, time - 30_000, (time - 30_000) as u64),
            Known::Duplicate
        );
        assert_eq!(
            index.known(p, time - 90_000, (time - 90_000) as u64),
            Known::Unknown
        );
        assert_eq!(index.known(p, time - 90_500, 1), Known::Unknown);
        assert_eq!(index.known(p, time - 30_500, 1), Known::New);
    }

    #[test]
    fn keys_read_before_keys_left_the_index_are_not_installed() {
        let p = (1, 0);
        let mut index = DedupIndex::new(100, Some(HashMap::from([(1, 1_000)])), 0);
        index.load(p, None, []);
        assert!(index.insert(p, 2_000, 2));
        assert!(index.insert(p, 3_000, 3));
        // A read of the sink's keys (through 1,000) starts here...
        let before = index.generation();
        assert!(index.install(before, [((2, 0), None, vec![9])]));
        assert!(index.is_loaded((2, 0)), "nothing left the index: installed");
        // ... a flush moves 2,000 and 3,000 to the sink and drops the key
        // of 2,000 (behind the watermark, no recent window) ...
        index.flushed(&[(p, 2_000, 2), (p, 3_000, 3)]);
        // ... so the read misses it: installing would call it new.
        assert!(!index.install(before, [(p, whole(p, vec![(1_000, 1)]), vec![])]));
        assert_eq!(index.known(p, 2_000, 2), Known::Unknown);
        // Read again after the flush: complete.
        let now = index.generation();
        let stored = vec![(1_000, 1), (2_000, 2), (3_000, 3)];
        assert!(index.install(now, [(p, whole(p, stored), vec![])]));
        assert_eq!(index.known(p, 2_000, 2), Known::Duplicate);
        assert_eq!(index.known(p, 500, 3), Known::New);
        // Eviction and retention drop keys too.
        let before = index.generation();
        index.retain(|_| false);
        assert!(!index.install(before, [(p, whole(p, vec![]), vec![])]));
        assert!(!index.is_loaded(p));
    }

    /// A read brings the keys from (about) the message's time to where the
    /// index holds them; it is complete from there, and counts each key once.
    #[test]
    fn a_read_brings_the_times_the_index_lacks_and_completes_from_their_start() {
        let minute = 60_000;
        let day = 3;
        let start = day * DAY_MS;
        let p = (1, day);
        let newest = start + 60 * minute;
        let mut index = DedupIndex::new(100, Some(HashMap::from([(1, newest)])), 0);
        index.load(p, None, []);
        let late = newest - 2 * minute;
        assert_eq!(index.known(p, late, 9), Known::Unknown);
        // From minute 55 (on 5 minutes) to past the newest (held from there).
        assert_eq!(
            index.to_read(p, late),
            Some(start + 55 * minute..newest + 1)
        );
        let read = |times: Range<i64>, keys: Vec<i64>| StoredRead {
            keys: keys.into_iter().map(|t| (t, 1)).collect(),
            times,
        };
        index.load(
            p,
            Some(read(start + 55 * minute..newest + 1, vec![late, newest])),
            [],
        );
        assert!(index.covers(p, start + 55 * minute) && !index.covers(p, start + 55 * minute - 1));
        assert_eq!(index.known(p, late, 1), Known::Duplicate);
        assert_eq!(index.known(p, late, 9), Known::New);
        assert_eq!(index.to_read(p, late), None);
        // Further back: the read ends where the partition is complete from.
        let older = start + 12 * minute + 5;
        assert_eq!(index.known(p, older, 1), Known::Unknown);
        assert_eq!(
            index.to_read(p, older),
            Some(start + 10 * minute..start + 55 * minute)
        );
        index.load(
            p,
            Some(read(start + 10 * minute..start + 55 * minute, vec![older])),
            [],
        );
        assert_eq!(index.known(p, older, 1), Known::Duplicate);
        assert_eq!(index.entries(), 3);
        // Flushed keys of a complete partition are kept, whatever the window.
        assert!(index.insert(p, newest + 1, 4));
        index.flushed(&[(p, newest + 1, 4)]);
        assert_eq!(index.known(p, newest + 1, 4), Known::Duplicate);
        assert_eq!(index.entries(), 4);
        // One before it (recorded as after a read) is dropped as an
        // incomplete partition's would be: it needs a read again.
        let early = start + 5 * minute;
        assert!(index.insert(p, early, 7));
        index.flushed(&[(p, early, 7)]);
        assert_eq!(index.entries(), 4);
        assert_eq!(index.known(p, early, 7), Known::Unknown);
        // A message the index settles needs no read.
        assert_eq!(
            index.to_read((1, day + 1), (day + 1) * DAY_MS + 5),
            None,
            "held"
        );
        assert_eq!(index.to_read((2, day), start + 1), None, "nothing stored");
        // Without marks (ClickHouse), a read is of the whole day.
        let mut blind = DedupIndex::new(100, None, 0);
        assert_eq!(blind.to_read(p, late), Some(start..start + DAY_MS));
        blind.load(p, Some(read(start..start + DAY_MS, vec![late])), []);
        assert_eq!(blind.to_read(p, start), None);
        assert_eq!(blind.known(p, start, 3), Known::New);
    }

    /// A key a partition holds as a recent one, past its tracker's mark,
    /// is not counted again when a read brings it.
    #[test]
    fn a_read_takes_over_the_held_keys_of_its_times() {
        let p = (1, 0);
        let mut index = DedupIndex::new(100, Some(HashMap::new()), 10);
        index.load(p, None, []);
        assert!(index.insert(p, 100, 1));
        assert!(index.insert(p, 200, 2));
        index.flushed(&[(p, 100, 1), (p, 200, 2)]);
        // The window (10 ms behind 200) holds 200 only.
        assert_eq!(index.entries(), 1);
        // Another day's flush raises the tracker's mark past 200.
        index.load((1, 1), None, []);
        assert!(index.insert((1, 1), DAY_MS + 5_000, 3));
        index.flushed(&[((1, 1), DAY_MS + 5_000, 3)]);
        assert!(index.insert((1, 1), DAY_MS + 9_000, 4));
        index.flushed(&[((1, 1), DAY_MS + 9_000, 4)]);
        assert_eq!(index.known(p, 150, 1), Known::Unknown);
        let times = index.to_read(p, 150).unwrap();
        assert_eq!(times, 0..DAY_MS, "held from the next day");
        let before = index.entries();
        index.load(
            p,
            Some(StoredRead {
                times,
                keys: vec![(100, 1), (200, 2)],
            }),
            [],
        );
        assert_eq!(index.entries(), before + 1, "200 counted once");
        assert_eq!(index.known(p, 200, 2), Known::Duplicate);
    }

    #[test]
    fn a_failed_write_forgets_its_keys() {
        let mut index = DedupIndex::new(100, None, 0);
        index.load((2, 0), whole((2, 0), vec![]), []);
        assert!(index.insert((2, 0), 1, 1));
        index.remove((2, 0), 1, 1);
        assert_eq!(index.known((2, 0), 1, 1), Known::New);
        assert_eq!(index.entries(), 0);
    }

    #[test]
    fn retention_keeps_partitions_with_rows_in_the_memtable() {
        let mut index = DedupIndex::new(100, None, 0);
        index.load((1, 0), whole((1, 0), vec![(5, 5)]), []);
        index.load((2, 0), whole((2, 0), vec![]), []);
        index.insert((2, 0), 6, 6);
        index.retain(|_| false);
        assert!(!index.is_loaded((1, 0)));
        assert!(index.is_loaded((2, 0)));
        assert_eq!(index.known((2, 0), 6, 6), Known::Duplicate);
        index.flushed(&[((2, 0), 6, 6)]);
        index.retain(|_| false);
        assert_eq!(index.entries(), 0);
    }
}
