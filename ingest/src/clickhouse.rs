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
use arrow::datatypes::{ArrowPrimitiveType, Float64Type, Int32Type, Int64Type, UInt8Type};
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
    let hashes = columns::content_hashes(batch).ok_or_else(|| missing(columns::CONTENT_HASH))?;
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

/// What an INSERT stored and what ClickHouse refused of it.
#[derive(Debug, Default)]
pub struct Inserted {
    /// Rows ClickHouse answered with success.
    pub rows: u64,
    /// Rows ClickHouse refused for what they hold, each alone in a
    /// one-row batch, with ClickHouse's answer: for the dead-letter file.
    pub refused: Vec<RefusedRow>,
}

/// A row ClickHouse refused, alone, after its INSERT was split down to it.
#[derive(Debug)]
pub struct RefusedRow {
    /// The row, as a one-row batch of the stored layout.
    pub row: RecordBatch,
    /// ClickHouse's answer to the INSERT of this row alone.
    pub error: clickhouse::error::Error,
}

/// Inserts every row of `batches` into `table` and says what was stored and
/// what ClickHouse refused: see [`insert_with`], with the official client's
/// RowBinary INSERTs as the attempt.
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
) -> Result<Inserted> {
    insert_with(batches, backoff, |part| {
        insert_once(client, table, part, timeout)
    })
    .await
}

/// Stores every row of `batches` through `attempt` (one INSERT of the
/// batches it is given):
///
/// - one INSERT per UTC month of message time (the table's partition), so
///   an INSERT touches at most two partitions whatever the server's time
///   zone, and never goes beyond `max_partitions_per_insert_block`; within
///   a month, runs of whole batches of up to [`MAX_INSERT_ROWS`] rows;
/// - an attempt ClickHouse refuses for a passing reason ([`Refusal::Temporary`])
///   is retried with `backoff`; once it gives up, the error is returned
///   (the flush fails and is retried whole later; the rows wait in the WAL);
/// - an INSERT refused for what its rows hold ([`Refusal::Rows`]) is split
///   in two halves, each inserted the same way, down to single rows: the
///   rows ClickHouse still refuses alone are returned in
///   [`Inserted::refused`], never dropped, and every other row is stored.
///   A refused row costs about 2·log2(rows of the INSERT) INSERTs.
///
/// A failed INSERT may still have stored some blocks; its retry (or its
/// halves) store them again, and the table's deduplication key (tracker,
/// message time, content hash) folds the repeats, as it does for a WAL
/// replayed after a crash.
pub async fn insert_with<A, F>(
    batches: &[RecordBatch],
    backoff: Backoff,
    mut attempt: A,
) -> Result<Inserted>
where
    A: FnMut(Vec<RecordBatch>) -> F,
    F: std::future::Future<Output = std::result::Result<(), InsertError>>,
{
    let mut inserted = Inserted::default();
    for month in by_month(batches)? {
        for run in runs(month.iter().map(RecordBatch::num_rows), MAX_INSERT_ROWS) {
            let mut pending = vec![month[run].to_vec()];
            while let Some(part) = pending.pop() {
                let rows: usize = part.iter().map(RecordBatch::num_rows).sum();
                match retry_classified(backoff, rows, || attempt(part.clone())).await {
                    Ok(()) => inserted.rows += rows as u64,
                    Err(Failed::Other(error)) => return Err(error),
                    Err(Failed::Rows(error)) if rows <= 1 => {
                        if let Some(row) = part.into_iter().find(|b| b.num_rows() == 1) {
                            inserted.refused.push(RefusedRow { row, error });
                        }
                    }
                    Err(Failed::Rows(error)) => {
                        tracing::warn!(%error, rows, "ClickHouse refused the rows of an INSERT; inserting each half alone");
                        let (first, second) = halves(&part, rows / 2);
                        // The first half is tried first: rows keep their order.
                        pending.push(second);
                        pending.push(first);
                    }
                }
            }
        }
    }
    Ok(inserted)
}

/// The batches' rows grouped by the UTC month of their message time, the
/// months in order: a batch spanning months is sliced (zero-copy) into its
/// runs of one month.
fn by_month(batches: &[RecordBatch]) -> Result<Vec<Vec<RecordBatch>>> {
    use chrono::Datelike;
    let mut months: std::collections::BTreeMap<i32, Vec<RecordBatch>> = Default::default();
    for batch in batches {
        let keys = columns::key_columns(batch)
            .ok_or_else(|| Error::Layout("lacks its key columns".into()))?;
        let times = keys.message_time.values();
        // The month of each row: computed again only when the day changes.
        let (mut day, mut month) = (None, 0);
        let mut month_of = |ms: i64| {
            let today = ms.div_euclid(crate::batch::DAY_MS);
            if day != Some(today) {
                day = Some(today);
                month = chrono::DateTime::from_timestamp_millis(today * crate::batch::DAY_MS)
                    .map_or(i32::MIN, |t| t.year() * 12 + t.month0() as i32);
            }
            month
        };
        let mut start = 0;
        while start < times.len() {
            let current = month_of(times[start]);
            let end = (start + 1..times.len())
                .find(|&i| month_of(times[i]) != current)
                .unwrap_or(times.len());
            months
                .entry(current)
                .or_default()
                .push(batch.slice(start, end - start));
            start = end;
        }
    }
    Ok(months.into_values().collect())
}

/// `part` cut after its first `at` rows (batches sliced, zero-copy).
fn halves(part: &[RecordBatch], at: usize) -> (Vec<RecordBatch>, Vec<RecordBatch>) {
    let (mut first, mut second) = (Vec::new(), Vec::new());
    let mut left = at;
    for batch in part {
        let rows = batch.num_rows();
        if left >= rows {
            first.push(batch.clone());
            left -= rows;
        } else if left == 0 {
            second.push(batch.clone());
        } else {
            first.push(batch.slice(0, left));
            second.push(batch.slice(left, rows - left));
            left = 0;
        }
    }
    (first, second)
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
pub(crate) async fn retry<F, Fut, E>(backoff: Backoff, rows: usize, attempt: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<(), E>>,
    E: Into<InsertError>,
{
    retry_classified(backoff, rows, attempt)
        .await
        .map_err(|failed| match failed {
            Failed::Rows(source) => Error::ClickHouse {
                what: "inserting",
                source,
            },
            Failed::Other(error) => error,
        })
}

/// Why [`retry_classified`] stopped.
#[derive(Debug)]
enum Failed {
    /// ClickHouse refused the rows for what they hold: retrying the same
    /// INSERT would fail the same way.
    Rows(clickhouse::error::Error),
    /// Gave up on a temporary failure, or a batch lacks the stored layout.
    Other(Error),
}

/// Runs `attempt` until it succeeds, retrying [`Refusal::Temporary`]
/// failures with `backoff` until it gives up; stops at once on a refusal
/// of the rows ([`Refusal::Rows`]) or a batch without the stored layout.
async fn retry_classified<F, Fut, E>(
    backoff: Backoff,
    rows: usize,
    mut attempt: F,
) -> std::result::Result<(), Failed>
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
            Err(InsertError::Layout(error)) => return Err(Failed::Other(error)),
            Err(InsertError::ClickHouse(error)) => {
                if classify(&error) == Refusal::Rows {
                    return Err(Failed::Rows(error));
                }
                if backoff
                    .give_up_after
                    .is_some_and(|limit| started.elapsed() + wait > limit)
                {
                    return Err(Failed::Other(Error::ClickHouse {
                        what: "inserting",
                        source: error,
                    }));
                }
                tracing::warn!(%error, rows, retry_in_ms = wait.as_millis() as u64, "ClickHouse insert failed");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(backoff.max);
            }
        }
    }
}

/// What ClickHouse's refusal of an INSERT says about the rows in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// It may pass: the network, a timeout, a server that is starting,
    /// busy, out of memory or disk, read-only, without ZooKeeper, or whose
    /// schema an operator must mend. Retried; the rows wait in the WAL.
    /// Anything ClickHouse says that is not known to be about the rows is
    /// taken as this: rows are set aside only when it is certain they are
    /// the cause.
    Temporary,
    /// The rows cannot be stored as they are: a value ClickHouse cannot
    /// take or that a constraint or a materialized view refuses, or too
    /// many partitions in one block. Retrying the same INSERT would fail the
    /// same way; it is split instead.
    Rows,
}

/// ClickHouse's exception codes that are about an INSERT's rows (from
/// `src/Common/ErrorCodes.cpp`); code 252 only with its "partitions" text,
/// as it also stands for "too many parts", which merges resolve.
const ROW_CODES: &[u32] = &[
    6,   // CANNOT_PARSE_TEXT
    26,  // CANNOT_PARSE_QUOTED_STRING
    27,  // CANNOT_PARSE_INPUT_ASSERTION_FAILED
    38,  // CANNOT_PARSE_DATE
    41,  // CANNOT_PARSE_DATETIME
    53,  // TYPE_MISMATCH
    69,  // ARGUMENT_OUT_OF_BOUND
    70,  // CANNOT_CONVERT_TYPE
    72,  // CANNOT_PARSE_NUMBER
    117, // INCORRECT_DATA
    131, // TOO_LARGE_STRING_SIZE
    190, // SIZES_OF_ARRAYS_DOESNT_MATCH
    395, // FUNCTION_THROW_IF_VALUE_IS_NON_ZERO
    469, // VIOLATED_CONSTRAINT
];

/// The exception code of ClickHouse's answer (`Code: 252, e.displayText() =
/// DB::Exception: ...` on 18.16, `Code: 252. DB::Exception: ...` later).
pub fn exception_code(text: &str) -> Option<u32> {
    let rest = &text[text.find("Code: ")? + "Code: ".len()..];
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..digits].parse().ok()
}

/// Whether an INSERT that failed with `error` may succeed if retried
/// as it is ([`Refusal`]).
pub fn classify(error: &clickhouse::error::Error) -> Refusal {
    let clickhouse::error::Error::BadResponse(text) = error else {
        return Refusal::Temporary;
    };
    match exception_code(text) {
        Some(252) if text.contains("partitions") => Refusal::Rows,
        Some(code) if ROW_CODES.contains(&code) => Refusal::Rows,
        _ => Refusal::Temporary,
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
    batches: Vec<RecordBatch>,
    timeout: Option<std::time::Duration>,
) -> std::result::Result<(), InsertError> {
    let mut insert = client
        .insert::<TelemetryRow<'_>>(table)?
        .with_timeouts(timeout, timeout);
    for batch in &batches {
        for row in rows_of(batch).map_err(InsertError::Layout)? {
            insert.write(&row).await?;
        }
    }
    insert.end().await?;
    Ok(())
}

/// Why an attempt at an INSERT failed: ClickHouse's answer ([`classify`]
/// says whether it is worth retrying) or a batch without the stored layout
/// (a bug; not retried).
#[derive(Debug)]
pub enum InsertError {
    /// What ClickHouse (or the way to it) answered.
    ClickHouse(clickhouse::error::Error),
    /// A batch lacks the stored layout.
    Layout(Error),
}

impl From<clickhouse::error::Error> for InsertError {
    fn from(error: clickhouse::error::Error) -> Self {
        Self::ClickHouse(error)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::time::Duration;

    use arrow::record_batch::RecordBatch;

    use super::{
        Backoff, InsertError, Refusal, classify, cluster_statements, exception_code, insert_with,
        runs, schema_statements,
    };
    use crate::batch::{Entry, to_record_batch};

    const DAY: i64 = 86_400_000;
    /// 2024-06-01T00:00Z.
    const JUNE: i64 = 19_875 * DAY;

    /// One (tracker, day) batch of `times` (ms), `lat` = the row's index.
    fn batch(tracker: i64, times: impl IntoIterator<Item = i64>) -> RecordBatch {
        let entries: Vec<Entry> = times
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                Entry::new(schemas::Message {
                    tracker_id: schemas::TrackerId(tracker),
                    message_time_ms: t,
                    server_time_ms: t,
                    lat: Some(i as f64 / 1000.0),
                    ..schemas::Message::default()
                })
                .unwrap()
            })
            .collect();
        to_record_batch(&entries).unwrap()
    }

    fn times(batches: &[RecordBatch]) -> Vec<i64> {
        batches
            .iter()
            .flat_map(|b| {
                schemas::columns::key_columns(b)
                    .unwrap()
                    .message_time
                    .values()
                    .to_vec()
            })
            .collect()
    }

    fn answer(text: &str) -> clickhouse::error::Error {
        clickhouse::error::Error::BadResponse(text.to_owned())
    }

    const NO_WAIT: Backoff = Backoff {
        first: Duration::from_millis(1),
        max: Duration::from_millis(1),
        give_up_after: Some(Duration::from_millis(50)),
    };

    #[test]
    fn clickhouse_answers_about_the_rows_are_told_from_passing_ones() {
        let partitions = "Code: 252, e.displayText() = DB::Exception: Too many partitions for single INSERT block (more than 100). The limit is controlled by 'max_partitions_per_insert_block' setting. (version 19.17.4.11 (official build))";
        let parts = "Code: 252. DB::Exception: Too many parts (300). Merges are processing significantly slower than inserts. (TOO_MANY_PARTS) (version 23.8.1.1 (official build))";
        let throw = "Code: 395, e.displayText() = DB::Exception: Value passed to 'throwIf' function is non zero, e.what() = DB::Exception (version 18.16.1)";
        assert_eq!(exception_code(partitions), Some(252));
        assert_eq!(exception_code(parts), Some(252));
        assert_eq!(exception_code("502 Bad Gateway"), None);
        assert_eq!(classify(&answer(partitions)), Refusal::Rows);
        assert_eq!(classify(&answer(throw)), Refusal::Rows);
        assert_eq!(classify(&answer(parts)), Refusal::Temporary);
        for passing in [
            "Code: 241, e.displayText() = DB::Exception: Memory limit (for query) exceeded",
            "Code: 60, e.displayText() = DB::Exception: Table fleet.telemetry doesn't exist.",
            "Code: 243. DB::Exception: Cannot reserve 1.00 MiB, not enough space. (NOT_ENOUGH_SPACE)",
            "503 Service Unavailable",
        ] {
            assert_eq!(classify(&answer(passing)), Refusal::Temporary, "{passing}");
        }
        assert_eq!(
            classify(&clickhouse::error::Error::TimedOut),
            Refusal::Temporary
        );
    }

    #[tokio::test]
    async fn an_insert_touches_one_month_and_refused_rows_are_isolated_by_halving() {
        // Three trackers; tracker 2's batch runs over a month's end; rows
        // whose time ends in 7 s are refused whenever they are in an INSERT.
        let month_end = JUNE + 29 * DAY + DAY - 3_000; // 2024-06-30T23:59:57Z
        let batches = vec![
            batch(1, (0..1_000).map(|i| JUNE + i * 1_000)),
            batch(2, (0..6).map(|i| month_end + i * 1_000)),
            batch(3, (0..500).map(|i| JUNE - 40 * DAY + i * 1_000)),
        ];
        let poisoned = |t: i64| t.rem_euclid(10_000) == 7_000;
        let attempts = RefCell::new(Vec::<Vec<i64>>::new());
        let stored = RefCell::new(Vec::<i64>::new());
        let inserted = insert_with(&batches, NO_WAIT, |part| {
            let rows = times(&part);
            attempts.borrow_mut().push(rows.clone());
            // ClickHouse's partitions: toYYYYMM of the time (in UTC here).
            let months: std::collections::BTreeSet<String> = rows
                .iter()
                .map(|&t| {
                    let time = chrono::DateTime::from_timestamp_millis(t).unwrap();
                    time.format("%Y%m").to_string()
                })
                .collect();
            let outcome = if months.len() > 1 {
                Err(InsertError::ClickHouse(answer("Code: 252, e.displayText() = DB::Exception: Too many partitions for single INSERT block (more than 1)")))
            } else if rows.iter().any(|&t| poisoned(t)) {
                Err(InsertError::ClickHouse(answer("Code: 395, e.displayText() = DB::Exception: Value passed to 'throwIf' function is non zero")))
            } else {
                stored.borrow_mut().extend(rows);
                Ok(())
            };
            std::future::ready(outcome)
        })
        .await
        .unwrap();

        let all = times(&batches);
        let bad: Vec<i64> = all.iter().copied().filter(|&t| poisoned(t)).collect();
        assert!(bad.len() > 50, "{}", bad.len());
        let mut refused: Vec<i64> = inserted
            .refused
            .iter()
            .flat_map(|r| times(std::slice::from_ref(&r.row)))
            .collect();
        refused.sort_unstable();
        let mut expected_bad = bad.clone();
        expected_bad.sort_unstable();
        assert_eq!(
            refused, expected_bad,
            "exactly the poisoned rows are set aside"
        );
        assert!(inserted.refused.iter().all(|r| r.row.num_rows() == 1));
        let mut kept = stored.into_inner();
        kept.sort_unstable();
        let mut good: Vec<i64> = all.iter().copied().filter(|&t| !poisoned(t)).collect();
        good.sort_unstable();
        assert_eq!(kept, good, "every other row is stored, once");
        assert_eq!(inserted.rows as usize, good.len());
        let attempts = attempts.into_inner();
        // The month of tracker 3 (April) first, then June's rows, then July's.
        assert_eq!(attempts[0].len(), 500);
        assert!(
            attempts.iter().all(|rows| {
                let first = rows[0].div_euclid(DAY);
                rows.iter()
                    .all(|t| (t.div_euclid(DAY) >= 19_905) == (first >= 19_905))
            }),
            "no INSERT spans June and July"
        );
        // Halving: about 2·log2(n) INSERTs per refused row, far below one per row.
        assert!(
            attempts.len() < 2 * bad.len() * 12,
            "{} attempts",
            attempts.len()
        );
    }

    #[tokio::test]
    async fn a_passing_failure_is_retried_and_then_given_up_on_without_setting_rows_aside() {
        let batches = vec![batch(1, (0..10).map(|i| JUNE + i * 1_000))];
        let calls = RefCell::new(0);
        let inserted = insert_with(&batches, NO_WAIT, |_| {
            *calls.borrow_mut() += 1;
            let outcome = if *calls.borrow() < 3 {
                Err(InsertError::ClickHouse(clickhouse::error::Error::TimedOut))
            } else {
                Ok(())
            };
            std::future::ready(outcome)
        })
        .await
        .unwrap();
        assert_eq!(
            (inserted.rows, inserted.refused.len(), calls.into_inner()),
            (10, 0, 3)
        );

        let calls = RefCell::new(0);
        let outcome = insert_with(&batches, NO_WAIT, |_| {
            *calls.borrow_mut() += 1;
            std::future::ready(Err(InsertError::ClickHouse(answer(
                "Code: 241, e.displayText() = DB::Exception: Memory limit (for query) exceeded",
            ))))
        })
        .await;
        assert!(
            outcome.is_err(),
            "given up: the flush fails, the rows stay in the WAL"
        );
        assert!(calls.into_inner() > 2, "retried, never split");
    }

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
