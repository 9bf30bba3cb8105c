//! After a point: did the server store exactly what it acknowledged? The
//! expected set is computed from the pool (the distinct messages of the
//! bodies answered 200); the stored one is read back from the Parquet files
//! of the stopped server's catalog (tracker id and message time of every
//! row), or counted in ClickHouse.

use std::path::Path;

use anyhow::Context;
use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Int64Type};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::driver::{Outcome, Sent};
use super::workload::{Body, Pool};

/// What the bodies answered 200 carried.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Expected {
    /// Their lines.
    pub lines: u64,
    /// Distinct messages among them: what must be stored once each.
    pub distinct: u64,
    /// Keys (tracker id, message time) of those, sorted.
    pub keys: Vec<(i64, i64)>,
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
    pub fn of(pool: &Pool, bodies: &[Body], sent: &[Sent]) -> Self {
        let mut seen = vec![false; pool.distinct()];
        let mut expected = Self::default();
        for s in sent {
            match s.outcome {
                Outcome::Acked { .. } => {}
                Outcome::Failed {
                    status: 429 | 503, ..
                } => {
                    expected.refused_bodies += 1;
                    continue;
                }
                Outcome::Failed { .. } => {
                    expected.uncertain_bodies += 1;
                    continue;
                }
            }
            let Some(body) = bodies.get(s.body) else {
                continue;
            };
            let lines = body.first_line..body.first_line + body.lines;
            let (_, late, copies) = pool.kind_counts(lines.clone());
            expected.late_lines += late as u64;
            expected.copy_lines += copies as u64;
            expected.lines += body.lines as u64;
            for line in lines {
                let Some(&id) = pool.ids.get(line) else {
                    continue;
                };
                let Some(flag) = seen.get_mut(id as usize) else {
                    continue;
                };
                if !*flag {
                    *flag = true;
                    if let Some(&key) = pool.keys.get(id as usize) {
                        expected.keys.push(key);
                        if key.1 < pool.midnight_ms {
                            expected.before_midnight += 1;
                        } else {
                            expected.after_midnight += 1;
                        }
                    }
                }
            }
        }
        expected.distinct = expected.keys.len() as u64;
        expected.keys.sort_unstable();
        expected
    }
}

/// The rows of a stopped server's Parquet files.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stored {
    /// Files in the catalog.
    pub files: usize,
    /// UTC days (directories) they are in.
    pub days: usize,
    /// Rows in all.
    pub rows: u64,
    /// Every row's (tracker id, message time), sorted.
    pub keys: Vec<(i64, i64)>,
}

/// Reads every file `telemetry/catalog.json` lists under `data_dir`.
pub fn stored_parquet(data_dir: &Path) -> anyhow::Result<Stored> {
    let root = data_dir.join("telemetry");
    let catalog: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root.join("catalog.json")).context("reading telemetry/catalog.json")?,
    )?;
    let files = catalog
        .get("files")
        .and_then(|f| f.as_array())
        .context("the catalog's files")?;
    let mut stored = Stored {
        files: files.len(),
        ..Stored::default()
    };
    let mut days = std::collections::BTreeSet::new();
    for file in files {
        let relative = file
            .get("path")
            .and_then(|p| p.as_str())
            .context("a catalog file's path")?;
        if let Some(day) = Path::new(relative).parent() {
            days.insert(day.to_owned());
        }
        let path = root.join(relative);
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
            stored.rows += batch.num_rows() as u64;
            stored.keys.extend(
                trackers
                    .values()
                    .iter()
                    .copied()
                    .zip(times.values().iter().copied()),
            );
        }
    }
    stored.days = days.len();
    stored.keys.sort_unstable();
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
