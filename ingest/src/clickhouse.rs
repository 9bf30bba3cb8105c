//! Stored messages as rows of the ClickHouse table of
//! `deploy/clickhouse/schema.sql`, for RowBinary inserts through the official
//! `clickhouse` crate. Its 0.13 line inserts plain `RowBinary`, which
//! Debian's 18.16 understands (0.14 and later default to
//! `RowBinaryWithNamesAndTypes`, which 18.16 lacks, and need Rust 1.89).
//!
//! A batch's columns map one to one: the key columns (times as epoch
//! milliseconds), the simple columns as `Option`s, and each inner column
//! (`inputs.lls_level_1`) as one name/value pair of its kind's `Nested`
//! arrays on the rows where it has a value.

use std::time::{Duration, Instant};

use arrow::array::{
    Array, AsArray, Float64Array, PrimitiveArray, RecordBatch, StringArray, UInt8Array,
};
use arrow::datatypes::{
    ArrowPrimitiveType, Float64Type, Int32Type, Int64Type, UInt8Type, UInt64Type,
};
use clickhouse::Row;
use schemas::columns::{self, InnerKind};
use serde::Serialize;

use crate::{Error, Result};

mod local;
pub use local::{LocalCluster, LocalServer};

/// One stored message: a row of `trackhouse.telemetry`. Texts and inner
/// names borrow from the batch, so mapping a row allocates only its arrays.
#[derive(Debug, Clone, PartialEq, Row, Serialize)]
#[allow(missing_docs)] // The fields are the table's columns (schema.sql).
pub struct TelemetryRow<'a> {
    pub tracker_id: i64,
    pub msg_time: i64,
    pub server_time: i64,
    pub content_hash: u64,
    pub flags: Option<i64>,
    pub gps_fix_type: Option<u8>,
    pub lat: Option<f64>,
    pub lng: Option<f64>,
    pub speed: Option<f64>,
    pub alt: Option<i32>,
    pub satellites: Option<i32>,
    pub heading: Option<i32>,
    pub precision: Option<i32>,
    pub hdop: Option<f64>,
    pub pdop: Option<f64>,
    pub event_id: Option<i64>,
    pub mn_name: Option<&'a str>,
    pub mn_roaming: Option<i32>,
    pub mn_code: Option<i64>,
    pub mn_csq: Option<i32>,
    pub mn_type: Option<u8>,
    #[serde(rename = "discrete_inputs.name")]
    pub discrete_inputs_name: Vec<&'a str>,
    #[serde(rename = "discrete_inputs.value")]
    pub discrete_inputs_value: Vec<u8>,
    #[serde(rename = "discrete_outputs.name")]
    pub discrete_outputs_name: Vec<&'a str>,
    #[serde(rename = "discrete_outputs.value")]
    pub discrete_outputs_value: Vec<u8>,
    #[serde(rename = "inputs.name")]
    pub inputs_name: Vec<&'a str>,
    #[serde(rename = "inputs.value")]
    pub inputs_value: Vec<f64>,
    #[serde(rename = "states.name")]
    pub states_name: Vec<&'a str>,
    #[serde(rename = "states.value")]
    pub states_value: Vec<&'a str>,
}

/// A simple column of `batch`, downcast once (`None` when absent).
fn primitive<'a, T: ArrowPrimitiveType>(
    batch: &'a RecordBatch,
    name: &str,
) -> Option<&'a PrimitiveArray<T>> {
    batch.column_by_name(name)?.as_primitive_opt::<T>()
}

/// The value at `row`, `None` when the column is absent or null there.
fn at<T: ArrowPrimitiveType>(column: Option<&PrimitiveArray<T>>, row: usize) -> Option<T::Native> {
    column.filter(|c| c.is_valid(row)).map(|c| c.value(row))
}

/// The rows of a batch of stored messages (the engine's schema: fixed
/// fields, then whichever inner columns the batch has).
pub fn rows_of(batch: &RecordBatch) -> Result<Vec<TelemetryRow<'_>>> {
    let missing = |what: &str| Error::Layout(format!("lacks {what}"));
    let keys = columns::key_columns(batch).ok_or_else(|| missing("its key columns"))?;
    let hashes = primitive::<UInt64Type>(batch, columns::CONTENT_HASH)
        .ok_or_else(|| missing(columns::CONTENT_HASH))?;
    let flags = primitive::<Int64Type>(batch, columns::FLAGS);
    let gps_fix_type = primitive::<UInt8Type>(batch, "gps_fix_type");
    let lat = primitive::<Float64Type>(batch, "lat");
    let lng = primitive::<Float64Type>(batch, "lng");
    let speed = primitive::<Float64Type>(batch, "speed");
    let alt = primitive::<Int32Type>(batch, "alt");
    let satellites = primitive::<Int32Type>(batch, "satellites");
    let heading = primitive::<Int32Type>(batch, "heading");
    let precision = primitive::<Int32Type>(batch, "precision");
    let hdop = primitive::<Float64Type>(batch, "hdop");
    let pdop = primitive::<Float64Type>(batch, "pdop");
    let event_id = primitive::<Int64Type>(batch, "event_id");
    let mn_name = batch
        .column_by_name("mn_name")
        .and_then(|c| c.as_string_opt::<i32>());
    let mn_roaming = primitive::<Int32Type>(batch, "mn_roaming");
    let mn_code = primitive::<Int64Type>(batch, "mn_code");
    let mn_csq = primitive::<Int32Type>(batch, "mn_csq");
    let mn_type = primitive::<UInt8Type>(batch, "mn_type");

    // The inner columns present, downcast once, with their names.
    let mut inner: Vec<(&str, Inner<'_>)> = Vec::new();
    for (field, array) in batch.schema_ref().fields().iter().zip(batch.columns()) {
        let Some((kind, name)) = InnerKind::split(field.name()) else {
            continue;
        };
        let wrong = || {
            Error::Layout(format!(
                "has {} of type {}",
                field.name(),
                array.data_type()
            ))
        };
        let column = match kind {
            InnerKind::DiscreteInputs | InnerKind::DiscreteOutputs => {
                let values = array.as_primitive_opt::<UInt8Type>().ok_or_else(wrong)?;
                Inner::Discrete(kind == InnerKind::DiscreteInputs, values)
            }
            InnerKind::Inputs => {
                Inner::Input(array.as_primitive_opt::<Float64Type>().ok_or_else(wrong)?)
            }
            InnerKind::States => Inner::State(array.as_string_opt::<i32>().ok_or_else(wrong)?),
        };
        inner.push((name, column));
    }

    let mut rows = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        let mut out = TelemetryRow {
            tracker_id: keys.tracker.value(row),
            msg_time: keys.message_time.value(row),
            server_time: keys.server_time.value(row),
            content_hash: hashes.value(row),
            flags: at(flags, row),
            gps_fix_type: at(gps_fix_type, row),
            lat: at(lat, row),
            lng: at(lng, row),
            speed: at(speed, row),
            alt: at(alt, row),
            satellites: at(satellites, row),
            heading: at(heading, row),
            precision: at(precision, row),
            hdop: at(hdop, row),
            pdop: at(pdop, row),
            event_id: at(event_id, row),
            mn_name: mn_name.filter(|c| c.is_valid(row)).map(|c| c.value(row)),
            mn_roaming: at(mn_roaming, row),
            mn_code: at(mn_code, row),
            mn_csq: at(mn_csq, row),
            mn_type: at(mn_type, row),
            discrete_inputs_name: Vec::new(),
            discrete_inputs_value: Vec::new(),
            discrete_outputs_name: Vec::new(),
            discrete_outputs_value: Vec::new(),
            inputs_name: Vec::new(),
            inputs_value: Vec::new(),
            states_name: Vec::new(),
            states_value: Vec::new(),
        };
        for (name, column) in &inner {
            match column {
                Inner::Discrete(inputs, values) if values.is_valid(row) => {
                    let (names, kept) = if *inputs {
                        (
                            &mut out.discrete_inputs_name,
                            &mut out.discrete_inputs_value,
                        )
                    } else {
                        (
                            &mut out.discrete_outputs_name,
                            &mut out.discrete_outputs_value,
                        )
                    };
                    names.push(name);
                    kept.push(values.value(row));
                }
                Inner::Input(values) if values.is_valid(row) => {
                    out.inputs_name.push(name);
                    out.inputs_value.push(values.value(row));
                }
                Inner::State(values) if values.is_valid(row) => {
                    out.states_name.push(name);
                    out.states_value.push(values.value(row));
                }
                _ => {}
            }
        }
        rows.push(out);
    }
    Ok(rows)
}

/// An inner column of a batch, downcast to its kind's type.
#[derive(Debug, Clone, Copy)]
enum Inner<'a> {
    /// A discrete input (`true`) or output (`false`).
    Discrete(bool, &'a UInt8Array),
    Input(&'a Float64Array),
    State(&'a StringArray),
}

/// Rows per INSERT at the least: ClickHouse writes a part per INSERT, and
/// many small parts cost merges. The engine's flusher waits for this many
/// rows before it flushes to ClickHouse (or for its longest delay, see
/// `ClickHouseConfig`).
pub const MIN_INSERT_ROWS: usize = 10_000;

/// Rows per INSERT at the most: ClickHouse's default `max_insert_block_size`,
/// so that an INSERT is one block (one part per partition it touches), and a
/// failed one repeats a bounded amount of work.
pub const MAX_INSERT_ROWS: usize = 1_048_576;

/// Capped exponential backoff between the attempts of one INSERT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after the first failure; it doubles after each further one.
    pub first: Duration,
    /// The longest wait.
    pub max: Duration,
    /// Stop retrying an INSERT after this long (`None`: until it succeeds).
    pub give_up_after: Option<Duration>,
}

/// Inserts every row of `batches` into `table`: one INSERT per run of
/// batches holding up to [`MAX_INSERT_ROWS`] rows (a batch is never split),
/// its rows mapped batch by batch as they are sent, each INSERT retried with
/// `backoff` until ClickHouse answers it with success, which is when its rows
/// are stored. Returns the rows inserted.
///
/// A failed INSERT may still have stored some blocks; its retry stores them
/// again, and the table's deduplication key (tracker, message time, content
/// hash) folds the repeats, as it does for a WAL replayed after a crash.
///
/// With `timeout`, an attempt fails (and is retried) when sending a chunk
/// or waiting for ClickHouse's answer takes longer: a server that accepts
/// connections but never answers does not hold the flush forever.
pub async fn insert(
    client: &clickhouse::Client,
    table: &str,
    batches: &[RecordBatch],
    backoff: Backoff,
    timeout: Option<std::time::Duration>,
) -> Result<u64> {
    let mut inserted = 0;
    for run in runs(batches.iter().map(RecordBatch::num_rows), MAX_INSERT_ROWS) {
        let rows: usize = batches[run.clone()].iter().map(RecordBatch::num_rows).sum();
        retry(backoff, rows, || {
            insert_once(client, table, &batches[run.clone()], timeout)
        })
        .await?;
        inserted += rows as u64;
    }
    Ok(inserted)
}

/// Consecutive runs of items of these sizes, each as large as it can be
/// without exceeding `max` (an item larger than `max` is a run alone).
fn runs(sizes: impl IntoIterator<Item = usize>, max: usize) -> Vec<std::ops::Range<usize>> {
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    let mut rows = 0;
    for (i, size) in sizes.into_iter().enumerate() {
        match runs.last_mut() {
            Some(run) if rows + size <= max => {
                run.end = i + 1;
                rows += size;
            }
            _ => {
                runs.push(i..i + 1);
                rows = size;
            }
        }
    }
    runs
}

/// Runs `attempt` until it succeeds, waiting `backoff` between attempts;
/// an error once `backoff.give_up_after` would pass. `rows` is for the log.
pub(crate) async fn retry<F, Fut, E>(backoff: Backoff, rows: usize, mut attempt: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<(), E>>,
    E: Into<InsertError>,
{
    let started = Instant::now();
    let mut wait = backoff.first;
    loop {
        match attempt().await.map_err(Into::into) {
            Ok(()) => return Ok(()),
            Err(InsertError::Layout(error)) => return Err(error),
            Err(InsertError::ClickHouse(error)) => {
                if backoff
                    .give_up_after
                    .is_some_and(|limit| started.elapsed() + wait > limit)
                {
                    return Err(Error::ClickHouse {
                        what: "inserting",
                        source: error,
                    });
                }
                tracing::warn!(%error, rows, retry_in_ms = wait.as_millis() as u64, "ClickHouse insert failed");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(backoff.max);
            }
        }
    }
}

/// The DDL of one node (`deploy/clickhouse/schema.sql`), for `database`.
const SCHEMA: &str = include_str!("../../deploy/clickhouse/schema.sql");

/// The DDL of a cluster (`deploy/clickhouse/cluster.sql`).
const CLUSTER_SCHEMA: &str = include_str!("../../deploy/clickhouse/cluster.sql");

/// The statements of `deploy/clickhouse/schema.sql` with the database
/// `trackhouse` renamed to `database` (a plain identifier: a letter or `_`,
/// then letters, digits and `_`). Every one is
/// `IF NOT EXISTS`, so applying them to a database that has the tables
/// changes nothing.
pub fn schema_statements(database: &str) -> Vec<String> {
    renamed(SCHEMA, database)
}

/// The statements of `deploy/clickhouse/cluster.sql` for `database` on
/// `cluster` (both plain identifiers), `IF NOT EXISTS` and `ON CLUSTER`.
/// The replicas' ZooKeeper paths name the database, so that two databases
/// on one cluster never share a replication log.
pub fn cluster_statements(database: &str, cluster: &str) -> Vec<String> {
    renamed(
        &CLUSTER_SCHEMA.replace("trackhouse_cluster", cluster),
        database,
    )
}

/// The statements `table` is created with: [`cluster_statements`] on a
/// cluster, [`schema_statements`] otherwise.
pub fn statements_for(table: &schemas::ClickHouseTable) -> Vec<String> {
    match &table.cluster {
        Some(cluster) => cluster_statements(&table.database, cluster),
        None => schema_statements(&table.database),
    }
}

/// Whether `name` is a plain identifier (a letter or `_`, then letters,
/// digits and `_`), which SQL text can hold unquoted.
pub fn is_plain_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The statements of `sql` with every word `trackhouse` (the database, in
/// names, engine arguments and ZooKeeper paths) replaced by `database`.
fn renamed(sql: &str, database: &str) -> Vec<String> {
    const NAME: &str = "trackhouse";
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    statements(sql)
        .into_iter()
        .map(|statement| {
            let mut out = String::with_capacity(statement.len());
            let mut rest = statement.as_str();
            while let Some(at) = rest.find(NAME) {
                let (before, after) = (&rest[..at], &rest[at + NAME.len()..]);
                out.push_str(before);
                let whole = !before.ends_with(word) && !after.starts_with(word);
                out.push_str(if whole { database } else { NAME });
                rest = after;
            }
            out.push_str(rest);
            out
        })
        .collect()
}

/// The statements of an SQL file such as `deploy/clickhouse/*.sql`:
/// `--` comments dropped, split at `;` (the files have neither in texts).
pub fn statements(sql: &str) -> Vec<String> {
    let text: String = sql
        .lines()
        .map(|line| line.split("--").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    text.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

async fn insert_once(
    client: &clickhouse::Client,
    table: &str,
    batches: &[RecordBatch],
    timeout: Option<std::time::Duration>,
) -> std::result::Result<(), InsertError> {
    let mut insert = client
        .insert::<TelemetryRow<'_>>(table)?
        .with_timeouts(timeout, timeout);
    for batch in batches {
        for row in rows_of(batch).map_err(InsertError::Layout)? {
            insert.write(&row).await?;
        }
    }
    insert.end().await?;
    Ok(())
}

/// Why an attempt at an INSERT failed: ClickHouse (worth retrying) or a
/// batch without the stored layout (a bug; not retried).
#[derive(Debug)]
pub(crate) enum InsertError {
    ClickHouse(clickhouse::error::Error),
    Layout(Error),
}

impl From<clickhouse::error::Error> for InsertError {
    fn from(error: clickhouse::error::Error) -> Self {
        Self::ClickHouse(error)
    }
}

#[cfg(test)]
mod tests {
    use super::{cluster_statements, runs, schema_statements};

    #[test]
    fn the_ddl_names_the_configured_database_and_cluster_everywhere() {
        let cluster = cluster_statements("fleet_2", "east").join(";\n");
        for expected in [
            "CREATE DATABASE IF NOT EXISTS fleet_2 ON CLUSTER east",
            "CREATE TABLE IF NOT EXISTS fleet_2.telemetry_local ON CLUSTER east",
            "'/clickhouse/tables/{shard}/fleet_2.telemetry_local'",
            "'/clickhouse/tables/{shard}/fleet_2.inner_columns_local'",
            "AS fleet_2.telemetry_local",
            "Distributed(east, fleet_2, telemetry_local, intHash64(tracker_id))",
            "Distributed(east, fleet_2, inner_columns_local, intHash64(tracker_id))",
        ] {
            assert!(cluster.contains(expected), "{expected} in\n{cluster}");
        }
        let one_node = schema_statements("fleet_2").join(";\n");
        assert!(one_node.contains("CREATE TABLE IF NOT EXISTS fleet_2.telemetry"));
        for ddl in [cluster, one_node] {
            assert!(!ddl.contains("trackhouse"), "{ddl}");
        }
    }

    #[test]
    fn inserts_take_as_many_whole_batches_as_fit() {
        assert!(runs(Vec::new(), 10).is_empty());
        assert_eq!(runs([4, 6, 1, 9, 12, 3], 10), vec![0..2, 2..4, 4..5, 5..6]);
        assert_eq!(runs([10, 10], 10), vec![0..1, 1..2]);
        assert_eq!(runs([3, 3, 3], 10), vec![0..3]);
    }
}
