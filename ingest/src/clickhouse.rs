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
    Array, AsArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray, UInt8Array,
    UInt64Array,
};
use arrow::datatypes::{Float64Type, Int32Type, Int64Type, UInt8Type, UInt64Type};
use clickhouse::Row;
use schemas::columns::{self, InnerKind};
use serde::Serialize;

use crate::{Error, Result};

/// One stored message: a row of `trackhouse.telemetry`.
#[derive(Debug, Clone, PartialEq, Row, Serialize)]
#[allow(missing_docs)] // The fields are the table's columns (schema.sql).
pub struct TelemetryRow {
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
    pub mn_name: Option<String>,
    pub mn_roaming: Option<i32>,
    pub mn_code: Option<i64>,
    pub mn_csq: Option<i32>,
    pub mn_type: Option<u8>,
    #[serde(rename = "discrete_inputs.name")]
    pub discrete_inputs_name: Vec<String>,
    #[serde(rename = "discrete_inputs.value")]
    pub discrete_inputs_value: Vec<u8>,
    #[serde(rename = "discrete_outputs.name")]
    pub discrete_outputs_name: Vec<String>,
    #[serde(rename = "discrete_outputs.value")]
    pub discrete_outputs_value: Vec<u8>,
    #[serde(rename = "inputs.name")]
    pub inputs_name: Vec<String>,
    #[serde(rename = "inputs.value")]
    pub inputs_value: Vec<f64>,
    #[serde(rename = "states.name")]
    pub states_name: Vec<String>,
    #[serde(rename = "states.value")]
    pub states_value: Vec<String>,
}

/// A simple column of a batch, downcast once.
struct Simple<'a, A>(Option<&'a A>);

impl<A: Array> Simple<'_, A> {
    fn get<T>(&self, row: usize, value: impl Fn(&A, usize) -> T) -> Option<T> {
        self.0
            .filter(|column| column.is_valid(row))
            .map(|column| value(column, row))
    }
}

/// The rows of a batch of stored messages (the engine's schema: fixed
/// fields, then whichever inner columns the batch has).
pub fn rows_of(batch: &RecordBatch) -> Result<Vec<TelemetryRow>> {
    let missing = |what: &str| Error::Layout(format!("lacks {what}"));
    let keys = columns::key_columns(batch).ok_or_else(|| missing("its key columns"))?;
    let hashes: &UInt64Array = batch
        .column_by_name(columns::CONTENT_HASH)
        .and_then(|c| c.as_primitive_opt::<UInt64Type>())
        .ok_or_else(|| missing(columns::CONTENT_HASH))?;
    let column = |name: &str| batch.column_by_name(name);
    let i64s = |name: &str| {
        Simple::<Int64Array>(column(name).and_then(|c| c.as_primitive_opt::<Int64Type>()))
    };
    let i32s = |name: &str| {
        Simple::<Int32Array>(column(name).and_then(|c| c.as_primitive_opt::<Int32Type>()))
    };
    let f64s = |name: &str| {
        Simple::<Float64Array>(column(name).and_then(|c| c.as_primitive_opt::<Float64Type>()))
    };
    let u8s = |name: &str| {
        Simple::<UInt8Array>(column(name).and_then(|c| c.as_primitive_opt::<UInt8Type>()))
    };
    let strings =
        |name: &str| Simple::<StringArray>(column(name).and_then(|c| c.as_string_opt::<i32>()));
    let (flags, gps_fix_type, lat, lng, speed) = (
        i64s(columns::FLAGS),
        u8s("gps_fix_type"),
        f64s("lat"),
        f64s("lng"),
        f64s("speed"),
    );
    let (alt, satellites, heading, precision) = (
        i32s("alt"),
        i32s("satellites"),
        i32s("heading"),
        i32s("precision"),
    );
    let (hdop, pdop, event_id, mn_name) = (
        f64s("hdop"),
        f64s("pdop"),
        i64s("event_id"),
        strings("mn_name"),
    );
    let (mn_roaming, mn_code, mn_csq, mn_type) = (
        i32s("mn_roaming"),
        i64s("mn_code"),
        i32s("mn_csq"),
        u8s("mn_type"),
    );

    // The inner columns present, by kind.
    let mut inner: Vec<(InnerKind, &str, &dyn Array)> = Vec::new();
    for (field, array) in batch.schema_ref().fields().iter().zip(batch.columns()) {
        if let Some((kind, name)) = InnerKind::split(field.name()) {
            inner.push((kind, name, array.as_ref()));
        }
    }

    let mut rows = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        let mut out = TelemetryRow {
            tracker_id: keys.tracker.value(row),
            msg_time: keys.message_time.value(row),
            server_time: keys.server_time.value(row),
            content_hash: hashes.value(row),
            flags: flags.get(row, Int64Array::value),
            gps_fix_type: gps_fix_type.get(row, UInt8Array::value),
            lat: lat.get(row, Float64Array::value),
            lng: lng.get(row, Float64Array::value),
            speed: speed.get(row, Float64Array::value),
            alt: alt.get(row, Int32Array::value),
            satellites: satellites.get(row, Int32Array::value),
            heading: heading.get(row, Int32Array::value),
            precision: precision.get(row, Int32Array::value),
            hdop: hdop.get(row, Float64Array::value),
            pdop: pdop.get(row, Float64Array::value),
            event_id: event_id.get(row, Int64Array::value),
            mn_name: mn_name.get(row, |c, r| c.value(r).to_owned()),
            mn_roaming: mn_roaming.get(row, Int32Array::value),
            mn_code: mn_code.get(row, Int64Array::value),
            mn_csq: mn_csq.get(row, Int32Array::value),
            mn_type: mn_type.get(row, UInt8Array::value),
            discrete_inputs_name: Vec::new(),
            discrete_inputs_value: Vec::new(),
            discrete_outputs_name: Vec::new(),
            discrete_outputs_value: Vec::new(),
            inputs_name: Vec::new(),
            inputs_value: Vec::new(),
            states_name: Vec::new(),
            states_value: Vec::new(),
        };
        for (kind, name, array) in &inner {
            if !array.is_valid(row) {
                continue;
            }
            let wrong = || {
                Error::Layout(format!(
                    "has {}.{name} of type {}",
                    kind.prefix(),
                    array.data_type()
                ))
            };
            match kind {
                InnerKind::DiscreteInputs | InnerKind::DiscreteOutputs => {
                    let value = array
                        .as_primitive_opt::<UInt8Type>()
                        .ok_or_else(wrong)?
                        .value(row);
                    let (names, values) = if *kind == InnerKind::DiscreteInputs {
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
                    names.push((*name).to_owned());
                    values.push(value);
                }
                InnerKind::Inputs => {
                    let value = array
                        .as_primitive_opt::<Float64Type>()
                        .ok_or_else(wrong)?
                        .value(row);
                    out.inputs_name.push((*name).to_owned());
                    out.inputs_value.push(value);
                }
                InnerKind::States => {
                    let value = array.as_string_opt::<i32>().ok_or_else(wrong)?.value(row);
                    out.states_name.push((*name).to_owned());
                    out.states_value.push(value.to_owned());
                }
            }
        }
        rows.push(out);
    }
    Ok(rows)
}

/// Rows per INSERT at the least (the last one of a call may have fewer):
/// ClickHouse writes a part per INSERT, and many small parts cost merges.
pub const MIN_INSERT_ROWS: usize = 10_000;

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

/// Inserts every row of `batches` into `table`, in INSERTs of at least
/// [`MIN_INSERT_ROWS`] rows (all of them in one when there are fewer), each
/// retried with `backoff` until ClickHouse answers it with success, which is
/// when its rows are stored. Returns the rows inserted.
///
/// A failed INSERT may still have stored some blocks; its retry stores them
/// again, and the table's deduplication key (tracker, message time, content
/// hash) folds the repeats, as it does for a WAL replayed after a crash.
pub async fn insert(
    client: &clickhouse::Client,
    table: &str,
    batches: &[RecordBatch],
    backoff: Backoff,
) -> Result<u64> {
    let mut pending: Vec<TelemetryRow> = Vec::new();
    let mut inserted = 0;
    for (i, batch) in batches.iter().enumerate() {
        pending.extend(rows_of(batch)?);
        if pending.len() >= MIN_INSERT_ROWS || i + 1 == batches.len() {
            insert_with_retries(client, table, &pending, backoff).await?;
            inserted += pending.len() as u64;
            pending.clear();
        }
    }
    Ok(inserted)
}

async fn insert_with_retries(
    client: &clickhouse::Client,
    table: &str,
    rows: &[TelemetryRow],
    backoff: Backoff,
) -> Result<()> {
    let started = Instant::now();
    let mut wait = backoff.first;
    loop {
        match insert_once(client, table, rows).await {
            Ok(()) => return Ok(()),
            Err(error) => {
                if backoff
                    .give_up_after
                    .is_some_and(|limit| started.elapsed() + wait > limit)
                {
                    return Err(Error::ClickHouse(error));
                }
                tracing::warn!(%error, rows = rows.len(), retry_in_ms = wait.as_millis() as u64, "ClickHouse insert failed");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(backoff.max);
            }
        }
    }
}

async fn insert_once(
    client: &clickhouse::Client,
    table: &str,
    rows: &[TelemetryRow],
) -> std::result::Result<(), clickhouse::error::Error> {
    let mut insert = client.insert::<TelemetryRow>(table)?;
    for row in rows {
        insert.write(row).await?;
    }
    insert.end().await
}
