//! What the intake asks the store on every request — is the ingest token
//! live, and what are the trackers its lines name — answered from memory
//! while nothing such an answer depends on has changed in the database.
//!
//! # Invalidation
//!
//! The table `intake_generation` (migration 0022) holds one number that
//! triggers add 1 to in the transaction of every change an answer could
//! depend on: any write of `ingest_tokens`, a write of the columns of
//! `trackers` a verdict reads (id, owner, device id, plan, block, deletion,
//! clone source), and deletions of `users` and `plans` (the rows a tracker
//! is joined with). Triggers fire whatever statement and whichever process
//! makes the change: an HTTP call of this server, or `trackhouse admin` on
//! the same file.
//!
//! The cache holds the answers of one generation. Each look-up first reads
//! the generation (one primary-key read, in place of a token query and up
//! to two per tracker); a generation other than the cache's empties the
//! cache, which then takes the new one. The look-up answers what the cache
//! holds, reads what it lacks in bulk, and offers what it read back to the
//! cache, tagged with the generation it read *before* reading the answers;
//! the cache keeps them only if it is still at that generation.
//!
//! Why no request sees an answer older than a change that committed
//! before it began: the change and its bump commit together, so such a
//! request reads a generation newer than any the cache held before the
//! change, and empties it before looking anything up. Every entry the cache
//! holds at generation `g` was read by a statement that began after a read
//! of `g`, so after every change up to `g`; an entry read before a later
//! change is either refused (the cache moved on before it was offered) or
//! dropped by the first request that reads the later generation. Requests
//! running across a change may empty the cache once more each (one reads
//! the older generation after another read the newer); that costs reads,
//! never a stale answer.
//!
//! # Bound
//!
//! At most `max_entries` answers are kept (tokens, tracker ids and device
//! ids together); an answer offered to a full cache first drops about half
//! of the entries, whichever the maps yield first. With `max_entries` 0
//! nothing is kept and the generation is not read. Unknown or revoked
//! tokens are never kept (only a caller holding a live token can fill the
//! cache); unknown trackers are, as "no such tracker".

use std::collections::{HashMap, HashSet};

/// Maps and sets of the look-up, hashed with a seeded fast hasher: a
/// 1,000-line body of as many trackers hashes its keys about four times
/// each, which SipHash made a percent or two of the intake's CPU.
pub type LookupMap<K, V> = HashMap<K, V, foldhash::quality::RandomState>;
type LookupSet<T> = HashSet<T, foldhash::quality::RandomState>;
use std::sync::{Mutex, MutexGuard};

use schemas::{TrackerId, UserId};
use sqlx::Row;

use crate::{Error, IngestToken, Result, Secret, Store};

#[cfg(test)]
mod tests;

/// Most values one statement binds: SQLite's `SQLITE_MAX_VARIABLE_NUMBER`
/// (32,766 since 3.32); larger look-ups run one statement per chunk.
const MAX_BOUND_VALUES: usize = 32_766;

/// The columns of a tracker a verdict needs, found as `Store::tracker`
/// finds one: joined with its plan and its owner.
const SELECT_TRACKERS: &str = "SELECT t.id, t.user_id, t.device_id, t.deleted, t.blocked, \
     t.clone_of FROM trackers t JOIN plans p ON p.id = t.plan_id JOIN users u ON u.id = t.user_id";

/// How an intake line names its tracker.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TrackerKey {
    /// By id (`tracker_id`), whatever the tracker's state.
    Id(TrackerId),
    /// By device id (`device_id`, the IMEI): the live tracker that is not
    /// a clone holding it, as [`Store::tracker_by_device_id`] answers.
    DeviceId(String),
}

/// [`TrackerKey`], borrowed from a parsed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrackerKeyRef<'k> {
    /// By id.
    Id(TrackerId),
    /// By device id.
    DeviceId(&'k str),
}

impl TrackerKeyRef<'_> {
    /// The owned key.
    pub fn to_key(self) -> TrackerKey {
        match self {
            Self::Id(id) => TrackerKey::Id(id),
            Self::DeviceId(device) => TrackerKey::DeviceId(device.to_owned()),
        }
    }
}

impl<'k> From<&'k TrackerKey> for TrackerKeyRef<'k> {
    fn from(key: &'k TrackerKey) -> Self {
        match key {
            TrackerKey::Id(id) => Self::Id(*id),
            TrackerKey::DeviceId(device) => Self::DeviceId(device),
        }
    }
}

/// What the intake needs to know of a tracker to take or refuse its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntakeTracker {
    /// Id.
    pub id: TrackerId,
    /// Owner (a master user).
    pub user_id: UserId,
    /// Deleted.
    pub deleted: bool,
    /// Blocked.
    pub blocked: bool,
    /// The source tracker when this is a clone.
    pub clone_of: Option<TrackerId>,
}

/// What one look-up did, for the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LookupStats {
    /// Answers taken from memory.
    pub hits: usize,
    /// Answers read from the database.
    pub misses: usize,
    /// Statements run, the read of the generation included.
    pub queries: usize,
    /// Whether the look-up emptied the cache because the database had changed.
    pub invalidated: bool,
    /// Entries dropped to keep within the bound.
    pub evicted: usize,
    /// The database's generation the look-up read (`None`: nothing is
    /// cached), which [`IntakeLookup::held_trackers`] answers at.
    pub generation: Option<i64>,
}

/// The intake's answers about ingest tokens and trackers, shared by all
/// requests, bounded, and never older than the last change to what they
/// depend on (see the module's documentation).
#[derive(Debug)]
pub struct IntakeLookup {
    max_entries: usize,
    cache: Mutex<Cache>,
}

impl IntakeLookup {
    /// Keeps at most `max_entries` answers; 0 keeps none.
    pub fn new(max_entries: usize) -> Self {
        Self {
            max_entries,
            cache: Mutex::new(Cache::default()),
        }
    }

    /// Answers held now.
    pub fn entries(&self) -> usize {
        self.lock().len()
    }

    /// The live (not revoked) ingest token `secret` is, if any.
    pub async fn ingest_token(
        &self,
        store: &Store,
        secret: &Secret,
    ) -> Result<(Option<IngestToken>, LookupStats)> {
        let mut stats = LookupStats::default();
        let generation = self.generation(store, &mut stats).await?;
        stats.generation = generation;
        let digest = secret.digest();
        if let Some(generation) = generation {
            let mut cache = self.lock();
            stats.invalidated = cache.adopt(generation);
            if let Some(token) = cache.tokens.get(&digest) {
                stats.hits = 1;
                return Ok((Some(*token), stats));
            }
        }
        stats.misses = 1;
        stats.queries += 1;
        let token = match store.authenticate_ingest(secret).await {
            Ok(token) => token,
            Err(Error::CredentialNotFound) => return Ok((None, stats)),
            Err(other) => return Err(other),
        };
        if let Some(generation) = generation {
            stats.evicted = self.lock().offer(generation, self.max_entries, |cache| {
                cache.tokens.insert(digest, token);
            });
        }
        Ok((Some(token), stats))
    }

    /// The trackers `keys` name, each answered once: `None` when there is
    /// no such tracker (by device id: no live tracker that is not a clone
    /// holds it). What memory lacks is read with one statement for all the
    /// ids and one for all the device ids (per 32,766 of them).
    pub async fn trackers(
        &self,
        store: &Store,
        keys: impl IntoIterator<Item = TrackerKey>,
    ) -> Result<(LookupMap<TrackerKey, Option<IntakeTracker>>, LookupStats)> {
        let keys: LookupSet<TrackerKey> = keys.into_iter().collect();
        let mut stats = LookupStats::default();
        let mut answers = LookupMap::with_capacity_and_hasher(keys.len(), Default::default());
        let generation = self.generation(store, &mut stats).await?;
        stats.generation = generation;
        let (mut ids, mut devices) = (Vec::new(), Vec::new());
        {
            let mut cache = self.lock();
            if let Some(generation) = generation {
                stats.invalidated = cache.adopt(generation);
            }
            for key in keys {
                let held = match (&key, generation) {
                    (_, None) => None,
                    (TrackerKey::Id(id), Some(_)) => cache.ids.get(id).copied(),
                    (TrackerKey::DeviceId(device), Some(_)) => {
                        cache.devices.get(device.as_str()).copied()
                    }
                };
                match (held, key) {
                    (Some(answer), key) => {
                        stats.hits += 1;
                        answers.insert(key, answer);
                    }
                    (None, TrackerKey::Id(id)) => ids.push(id),
                    (None, TrackerKey::DeviceId(device)) => devices.push(device),
                }
            }
        }
        stats.misses = ids.len() + devices.len();
        let by_id = read_by_id(store, &ids, &mut stats).await?;
        let by_device = read_by_device(store, &devices, &mut stats).await?;
        let mut cache = generation.map(|generation| (generation, self.lock()));
        for id in ids {
            let answer = by_id.get(&id.0).copied();
            if let Some((generation, cache)) = &mut cache {
                stats.evicted += cache.offer(*generation, self.max_entries, |cache| {
                    cache.ids.insert(id, answer);
                });
            }
            answers.insert(TrackerKey::Id(id), answer);
        }
        for device in devices {
            let answer = by_device.get(&device).copied();
            if let Some((generation, cache)) = &mut cache {
                stats.evicted += cache.offer(*generation, self.max_entries, |cache| {
                    cache.devices.insert(device.as_str().into(), answer);
                });
            }
            answers.insert(TrackerKey::DeviceId(device), answer);
        }
        Ok((answers, stats))
    }

    /// The trackers `keys` name, one answer per key in order, from memory
    /// alone and without waiting on the database: `None` unless the cache
    /// is at `generation` (read by this request's [`Self::ingest_token`])
    /// and holds every one of them (the caller then asks
    /// [`Self::trackers`]). Answers are as fresh as that read: every entry
    /// held at a generation was read after every change up to it. For the
    /// thread that parsed the lines, so that nothing is copied per line.
    pub fn held_trackers<'k>(
        &self,
        generation: Option<i64>,
        keys: impl IntoIterator<Item = TrackerKeyRef<'k>>,
    ) -> Option<(Vec<Option<IntakeTracker>>, LookupStats)> {
        let generation = generation?;
        let cache = self.lock();
        if cache.generation != Some(generation) {
            return None;
        }
        let keys = keys.into_iter();
        let mut answers = Vec::with_capacity(keys.size_hint().0);
        for key in keys {
            let held = match key {
                TrackerKeyRef::Id(id) => cache.ids.get(&id),
                TrackerKeyRef::DeviceId(device) => cache.devices.get(device),
            };
            answers.push(*held?);
        }
        let stats = LookupStats {
            hits: answers.len(),
            generation: Some(generation),
            ..LookupStats::default()
        };
        Some((answers, stats))
    }

    /// Reads the live trackers that are not clones (those device lines
    /// name) into memory, by id and by device id, up to a quarter of the
    /// bound: after a start, the first request of each tracker then needs
    /// no statement of its own (10,000 trackers: one statement instead of
    /// one per body for their first seconds). Answers how many it read.
    /// Like every answer, they go with the next change to the database.
    pub async fn warm(&self, store: &Store) -> Result<usize> {
        let mut stats = LookupStats::default();
        let Some(generation) = self.generation(store, &mut stats).await? else {
            return Ok(0);
        };
        let limit = self.max_entries / 4;
        let sql = format!(
            "{SELECT_TRACKERS} WHERE t.deleted = FALSE AND t.clone_of IS NULL ORDER BY t.id LIMIT {limit}"
        );
        let rows = sqlx::query(&sql).fetch_all(&store.pool).await?;
        let mut cache = self.lock();
        if cache.generation.is_none() {
            cache.adopt(generation);
        }
        for row in &rows {
            let tracker = tracker_from_row(row)?;
            let device: Box<str> = row.try_get::<String, _>("device_id")?.into();
            cache.offer(generation, self.max_entries, |cache| {
                cache.ids.insert(tracker.id, Some(tracker));
                cache.devices.insert(device, Some(tracker));
            });
        }
        Ok(rows.len())
    }

    /// The database's generation; `None` when nothing is to be cached (no
    /// bound, or a database whose row was deleted by hand: then every
    /// look-up reads the store).
    async fn generation(&self, store: &Store, stats: &mut LookupStats) -> Result<Option<i64>> {
        if self.max_entries == 0 {
            return Ok(None);
        }
        stats.queries += 1;
        Ok(
            sqlx::query_scalar("SELECT value FROM intake_generation WHERE id = 1")
                .fetch_optional(&store.pool)
                .await?,
        )
    }

    fn lock(&self) -> MutexGuard<'_, Cache> {
        // A panic while the lock was held left whole maps behind (each step
        // is one map operation), so the cache is still sound.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The answers of one generation.
#[derive(Debug, Default)]
struct Cache {
    /// The generation every entry was read at or after; `None` before the first look-up.
    generation: Option<i64>,
    /// Live ingest tokens by digest (never the secret itself).
    tokens: LookupMap<String, IngestToken>,
    ids: LookupMap<TrackerId, Option<IntakeTracker>>,
    devices: LookupMap<Box<str>, Option<IntakeTracker>>,
}

impl Cache {
    fn len(&self) -> usize {
        self.tokens.len() + self.ids.len() + self.devices.len()
    }

    /// Takes `generation`, emptying the cache if it held another; whether
    /// that dropped the answers of an earlier generation.
    fn adopt(&mut self, generation: i64) -> bool {
        if self.generation == Some(generation) {
            return false;
        }
        let invalidated = self.generation.is_some();
        self.tokens.clear();
        self.ids.clear();
        self.devices.clear();
        self.generation = Some(generation);
        invalidated
    }

    /// Keeps an answer read after a read of `generation` (`keep` inserts
    /// it) if the cache is still at that generation, making room first;
    /// the entries dropped for room.
    fn offer(
        &mut self,
        generation: i64,
        max_entries: usize,
        keep: impl FnOnce(&mut Self),
    ) -> usize {
        if max_entries == 0 || self.generation != Some(generation) {
            return 0;
        }
        let evicted = self.make_room(max_entries);
        keep(self);
        evicted
    }

    /// Drops about half of the entries when the cache is full; how many.
    fn make_room(&mut self, max_entries: usize) -> usize {
        if self.len() < max_entries {
            return 0;
        }
        let before = self.len();
        drop_half(&mut self.tokens);
        drop_half(&mut self.ids);
        drop_half(&mut self.devices);
        before - self.len()
    }
}

/// Drops the first half (rounded up) of the entries `map` iterates over.
fn drop_half<K, V>(map: &mut LookupMap<K, V>) {
    let mut to_drop = map.len().div_ceil(2);
    map.retain(|_, _| {
        if to_drop == 0 {
            return true;
        }
        to_drop -= 1;
        false
    });
}

/// `$1, $2, … $n`.
fn placeholders(n: usize) -> String {
    (1..=n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn tracker_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<IntakeTracker> {
    Ok(IntakeTracker {
        id: TrackerId(row.try_get("id")?),
        user_id: UserId(row.try_get("user_id")?),
        deleted: row.try_get("deleted")?,
        blocked: row.try_get("blocked")?,
        clone_of: row.try_get::<Option<i64>, _>("clone_of")?.map(TrackerId),
    })
}

/// The trackers of `ids`, by id.
async fn read_by_id(
    store: &Store,
    ids: &[TrackerId],
    stats: &mut LookupStats,
) -> Result<LookupMap<i64, IntakeTracker>> {
    let mut found = LookupMap::with_capacity_and_hasher(ids.len(), Default::default());
    for chunk in ids.chunks(MAX_BOUND_VALUES) {
        let sql = format!(
            "{SELECT_TRACKERS} WHERE t.id IN ({})",
            placeholders(chunk.len())
        );
        // Not prepared for reuse: each chunk length is a statement of its own.
        let mut query = sqlx::query(&sql).persistent(false);
        for id in chunk {
            query = query.bind(id.0);
        }
        stats.queries += 1;
        for row in query.fetch_all(&store.pool).await? {
            let tracker = tracker_from_row(&row)?;
            found.insert(tracker.id.0, tracker);
        }
    }
    Ok(found)
}

/// The live trackers that are not clones holding `devices`, by device id
/// (the terms of the partial unique index `trackers_device`).
async fn read_by_device(
    store: &Store,
    devices: &[String],
    stats: &mut LookupStats,
) -> Result<LookupMap<String, IntakeTracker>> {
    let mut found = LookupMap::with_capacity_and_hasher(devices.len(), Default::default());
    for chunk in devices.chunks(MAX_BOUND_VALUES) {
        let sql = format!(
            "{SELECT_TRACKERS} WHERE t.device_id IN ({}) AND t.deleted = FALSE AND t.clone_of IS NULL",
            placeholders(chunk.len())
        );
        let mut query = sqlx::query(&sql).persistent(false);
        for device in chunk {
            query = query.bind(device.as_str());
        }
        stats.queries += 1;
        for row in query.fetch_all(&store.pool).await? {
            found.insert(row.try_get("device_id")?, tracker_from_row(&row)?);
        }
    }
    Ok(found)
}
