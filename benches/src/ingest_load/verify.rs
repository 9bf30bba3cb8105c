//! After a point: did the server store exactly what it acknowledged? The
//! expected set is computed from the stream (the distinct messages of the
//! bodies answered 200, as a bit set over the stream's message numbers);
//! the stored one is read back from the Parquet files of the stopped
//! server's catalog (tracker id and message time of every row, each mapped
//! back to its message of the stream: a key the stream never had, or one
//! stored twice, is counted), or counted in ClickHouse. Memory: a bit per
//! message of the stream, whatever the rows.

use std::path::Path;

use anyhow::Context;
use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Int64Type};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::driver::{Outcome, Sent};
use super::workload::{LineKind, Pool};

/// A set of the stream's distinct messages (their numbers, [`Pool::message`]).
#[derive(Debug, Clone, Default)]
pub struct MessageSet {
    words: Vec<u64>,
    len: u64,
}

impl PartialEq for MessageSet {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.missing_from(other).0 == 0
    }
}

impl Eq for MessageSet {}

impl MessageSet {
    /// Adds `m`; whether it was not there yet.
    pub fn insert(&mut self, m: u64) -> bool {
        let (word, bit) = ((m / 64) as usize, 1u64 << (m % 64));
        if self.words.len() <= word {
            self.words.resize((word + 1).next_power_of_two(), 0);
        }
        let Some(slot) = self.words.get_mut(word) else {
            return false;
        };
        let new = *slot & bit == 0;
        *slot |= bit;
        self.len += u64::from(new);
        new
    }

    /// Whether `m` is in.
    pub fn contains(&self, m: u64) -> bool {
        self.words
            .get((m / 64) as usize)
            .is_some_and(|w| w & (1u64 << (m % 64)) != 0)
    }

    /// Messages in the set.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Messages of `self` not in `other`, and the first of them.
    pub fn missing_from(&self, other: &Self) -> (u64, Option<u64>) {
        let mut count = 0;
        let mut first = None;
        for (i, &word) in self.words.iter().enumerate() {
            let theirs = other.words.get(i).copied().unwrap_or(0);
            let only = word & !theirs;
            if only != 0 {
                count += u64::from(only.count_ones());
                first = first.or(Some(i as u64 * 64 + u64::from(only.trailing_zeros())));
            }
        }
        (count, first)
    }

    /// Adds every message of `other`.
    pub fn union_with(&mut self, other: &Self) {
        if self.words.len() < other.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (mine, theirs) in self.words.iter_mut().zip(&other.words) {
            *mine |= theirs;
        }
        self.len = self.words.iter().map(|w| u64::from(w.count_ones())).sum();
    }
}

/// What the bodies answered 200 carried.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Expected {
    /// Their lines.
    pub lines: u64,
    /// Distinct messages among them: what must be stored once each.
    pub distinct: u64,
    /// Those messages (emptied once a point is checked).
    pub messages: MessageSet,
    /// The messages of every body sent, answered or not: nothing else may
    /// be stored (emptied once a point is checked).
    pub sent: MessageSet,
    /// Distinct messages before and from the midnight.
    pub before_midnight: u64,
    /// ... from it.
    pub after_midnight: u64,
    /// Late lines among the lines.
    pub late_lines: u64,
    /// Lines that were copies of earlier lines.
    pub copy_lines: u64,
    /// Bodies still refused (503 or 429) when the retries ran out: nothing
    /// of them is stored.
    pub refused_bodies: u64,
    /// Bodies that failed otherwise (no answer in time, another status):
    /// their lines may or may not be stored, so exact checks become bounds.
    pub uncertain_bodies: u64,
}

impl Expected {
    /// The distinct messages of the bodies `sent` answered 200.
    pub fn of(pool: &Pool, sent: &[Sent]) -> Self {
        let mut expected = Self::default();
        for s in sent {
            let lines = s.first_line..s.first_line + s.lines as u64;
            let acked = match s.outcome {
                Outcome::Acked { .. } => true,
                Outcome::Failed {
                    status: 429 | 503, ..
                } => {
                    expected.refused_bodies += 1;
                    false
                }
                Outcome::Failed { .. } => {
                    expected.uncertain_bodies += 1;
                    false
                }
            };
            if !acked {
                for line in lines {
                    expected.sent.insert(pool.message(line));
                }
                continue;
            }
            expected.lines += s.lines as u64;
            for line in lines {
                match pool.kind(line) {
                    LineKind::Fresh => {}
                    LineKind::Late => expected.late_lines += 1,
                    LineKind::Duplicate => expected.copy_lines += 1,
                }
                let m = pool.message(line);
                expected.sent.insert(m);
                if expected.messages.insert(m) {
                    if pool.key(m).1 < pool.midnight_ms {
                        expected.before_midnight += 1;
                    } else {
                        expected.after_midnight += 1;
                    }
                }
            }
        }
        expected.distinct = expected.messages.len();
        expected
    }

    /// Drops the sets (kept by a point's result otherwise).
    pub fn forget_messages(&mut self) {
        self.messages = MessageSet::default();
        self.sent = MessageSet::default();
    }
}

/// The rows of a stopped server's Parquet files, as the stream's messages.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stored {
    /// Files in the catalog.
    pub files: usize,
    /// UTC days (directories) they are in.
    pub days: usize,
    /// Their bytes, as the catalog lists them.
    pub bytes: u64,
    /// Rows in all.
    pub rows: u64,
    /// The messages stored.
    pub messages: MessageSet,
    /// Rows whose (tracker id, message time) another row had already.
    pub twice: u64,
    /// The first such key.
    pub first_twice: Option<(i64, i64)>,
    /// Rows whose key is no message of the stream.
    pub unknown: u64,
    /// The first such key.
    pub first_unknown: Option<(i64, i64)>,
}

impl Stored {
    /// Counts one row of key `key`.
    pub fn add(&mut self, pool: &Pool, key: (i64, i64)) {
        self.rows += 1;
        match pool.message_of(key) {
            Some(m) => {
                if !self.messages.insert(m) {
                    self.twice += 1;
                    self.first_twice = self.first_twice.or(Some(key));
                }
            }
            None => {
                self.unknown += 1;
                self.first_unknown = self.first_unknown.or(Some(key));
            }
        }
    }
}

/// Reads every file the catalog under `data_dir/telemetry` lists (its
/// checkpoint and log), mapping each row to its message of `pool`'s stream.
pub fn stored_parquet(data_dir: &Path, pool: &Pool) -> anyhow::Result<Stored> {
    let root = data_dir.join("telemetry");
    let files = ingest::listed_files(&root).context("reading the catalog of telemetry/")?;
    let mut stored = Stored {
        files: files.len(),
        bytes: files.iter().map(|f| f.bytes).sum(),
        ..Stored::default()
    };
    let mut days = std::collections::BTreeSet::new();
    for file in &files {
        if let Some(day) = file.path.parent() {
            days.insert(day.to_owned());
        }
        let path = root.join(&file.path);
        let reader =
            std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(reader)?;
        let mask = ProjectionMask::columns(
            builder.parquet_schema(),
            [schemas::columns::TRACKER_ID, schemas::columns::MESSAGE_TIME],
        );
        for batch in builder.with_projection(mask).build()? {
            let batch = batch?;
            let column = |name: &str| -> anyhow::Result<std::sync::Arc<dyn Array>> {
                let array = batch
                    .column_by_name(name)
                    .with_context(|| format!("{} has no column {name}", path.display()))?;
                Ok(arrow::compute::cast(array, &DataType::Int64)?)
            };
            let trackers = column(schemas::columns::TRACKER_ID)?;
            let times = column(schemas::columns::MESSAGE_TIME)?;
            let (trackers, times) = (
                trackers.as_primitive::<Int64Type>(),
                times.as_primitive::<Int64Type>(),
            );
            for key in trackers
                .values()
                .iter()
                .copied()
                .zip(times.values().iter().copied())
            {
                stored.add(pool, key);
            }
        }
    }
    stored.days = days.len();
    Ok(stored)
}

/// What a point's checks found; every `false` is printed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdict {
    /// Each check: what, and whether it held.
    pub checks: Vec<(String, bool)>,
}

impl Verdict {
    /// Adds a check.
    pub fn check(&mut self, what: impl Into<String>, held: bool) {
        self.checks.push((what.into(), held));
    }

    /// Checks that no (tracker, msg_time) was stored twice.
    pub fn check_stored_once(&mut self, stored: &Stored) {
        self.check(
            format!(
                "no (tracker, msg_time) stored twice ({} rows{})",
                stored.twice,
                stored
                    .first_twice
                    .map_or_else(String::new, |k| format!(", first {k:?}"))
            ),
            stored.twice == 0,
        );
    }

    /// Whether every check held.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|(_, held)| *held)
    }

    /// The checks that failed, joined.
    pub fn failures(&self) -> String {
        self.checks
            .iter()
            .filter(|(_, held)| !held)
            .map(|(what, _)| what.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::time::Duration;

    use schemas::TrackerId;

    use super::*;
    use crate::ingest_load::driver::Tries;
    use crate::ingest_load::workload::{Device, Format, StreamConfig};

    fn pool() -> Pool {
        let devices: Vec<Device> = (1..=20)
            .map(|i| Device {
                tracker: TrackerId(i),
                device_id: format!("35630704250{i:04}"),
            })
            .collect();
        let config = StreamConfig {
            pool_lines: 2_000,
            expected_lines: 8_000,
            duplicate_share: 0.015,
            late_share: 0.01,
            midnight_ms: 1_717_200_000_000,
            midnight_at: 0.2,
            warmup_s: 60,
            seed: 5,
            threads: 2,
        };
        Pool::generate(&devices, Format::Intake, &config).unwrap()
    }

    fn sent(body: usize, lines: usize, outcome: Outcome) -> Sent {
        Sent {
            body,
            first_line: (body * lines) as u64,
            lines,
            bytes: 0,
            outcome,
            latency: Duration::ZERO,
            tries: Tries::default(),
            answered_at: Duration::ZERO,
        }
    }

    fn acked() -> Outcome {
        Outcome::Acked {
            accepted: 0,
            duplicates: 0,
            rejected: 0,
        }
    }

    #[test]
    fn expected_counts_are_exact_across_epochs() {
        let pool = pool();
        let per_body = 300;
        let bodies = (pool.pool_lines() * 3).div_ceil(per_body);
        let mut all = Vec::new();
        for i in 0..bodies {
            let outcome = match i % 7 {
                3 => Outcome::Failed {
                    status: 503,
                    detail: String::new(),
                },
                5 => Outcome::Failed {
                    status: 0,
                    detail: String::new(),
                },
                _ => acked(),
            };
            all.push(sent(i, per_body, outcome));
        }
        let expected = Expected::of(&pool, &all);
        // By brute force: the keys of the acknowledged lines.
        let mut keys = HashSet::new();
        let mut sent_keys = HashSet::new();
        let (mut lines, mut copies, mut late) = (0, 0, 0);
        for s in &all {
            for n in s.first_line..s.first_line + s.lines as u64 {
                let key = pool.key(pool.message(n));
                sent_keys.insert(key);
                if matches!(s.outcome, Outcome::Acked { .. }) {
                    keys.insert(key);
                    lines += 1;
                    copies += u64::from(pool.kind(n) == LineKind::Duplicate);
                    late += u64::from(pool.kind(n) == LineKind::Late);
                }
            }
        }
        assert_eq!(expected.distinct, keys.len() as u64);
        assert_eq!(expected.lines, lines);
        assert_eq!(expected.copy_lines, copies);
        assert_eq!(expected.late_lines, late);
        assert!(copies > 0 && late > 0);
        assert_eq!(expected.sent.len(), sent_keys.len() as u64);
        assert_eq!(
            expected.before_midnight + expected.after_midnight,
            expected.distinct
        );
        assert!(expected.before_midnight > 0 && expected.after_midnight > 0);
        assert_eq!((expected.refused_bodies, expected.uncertain_bodies), (3, 3));

        // Stored exactly those: no row twice, none unknown, sets equal.
        let mut stored = Stored::default();
        for &key in &keys {
            stored.add(&pool, key);
        }
        assert_eq!(stored.messages, expected.messages);
        assert_eq!((stored.twice, stored.unknown), (0, 0));
        // One row again, one the stream never had, one missing.
        let some = *keys.iter().next().unwrap();
        stored.add(&pool, some);
        stored.add(&pool, (some.0, some.1 + 1));
        assert_eq!((stored.twice, stored.unknown), (1, 1));
        assert_eq!(stored.first_twice, Some(some));
        let mut fewer = Stored::default();
        for &key in keys.iter().skip(1) {
            fewer.add(&pool, key);
        }
        let (missing, first) = expected.messages.missing_from(&fewer.messages);
        assert_eq!(missing, 1);
        assert_eq!(first.map(|m| pool.key(m)), keys.iter().next().copied());
        assert_eq!(fewer.messages.missing_from(&expected.sent).0, 0);
    }

    #[test]
    fn message_sets() {
        let mut a = MessageSet::default();
        assert!(a.is_empty());
        assert!(a.insert(3) && a.insert(700) && !a.insert(3));
        assert_eq!(a.len(), 2);
        assert!(a.contains(700) && !a.contains(701) && !a.contains(1 << 40));
        let mut b = MessageSet::default();
        b.insert(700);
        b.insert(5000);
        assert_eq!(a.missing_from(&b), (1, Some(3)));
        assert_eq!(b.missing_from(&a), (1, Some(5000)));
        a.union_with(&b);
        assert_eq!(a.len(), 3);
        assert_eq!(b.missing_from(&a), (0, None));
    }
}
