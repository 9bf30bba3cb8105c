//! Reading telemetry stored in ClickHouse (`deploy/clickhouse/schema.sql`).
//!
//! A scan becomes one SQL query per piece of its range (up to a day) with
//! the tracker, the piece and the column list pushed down, answered in
//! `RowBinary` and decoded here into Arrow batches of the scan's schema as
//! the bytes arrive; each piece is then sorted by message time and
//! deduplicated here (the earliest arrival
//! of each message kept, as ClickHouse's merges keep it), and the
//! server-time filter applied. An inner column
//! (`inputs.lls_level_1`) is picked out of its kind's `Nested` arrays in
//! the query, so only the requested values travel.
//!
//! The names of a tracker's inner columns come from the small
//! `inner_columns` table (tracker, day, name), not from the messages.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use datafusion::arrow::array::{
    ArrayRef, Float64Builder, Int32Builder, Int64Builder, RecordBatch, StringBuilder,
    StringViewBuilder, TimestampMillisecondBuilder, UInt8Builder, UInt64Builder,
};
use datafusion::arrow::datatypes::{DataType, Field, SchemaRef, TimeUnit};
use futures::{Stream, StreamExt};
use schemas::ClickHouseTable;
use schemas::columns::{self, InnerKind};

use crate::scan::ScanRequest;
use crate::{Error, Result};

const DAY_MS: i64 = 86_400_000;

/// The query of a scan, its values bound in order: the tracker's rows in
/// both ranges, deduplicated, in message-time order, the columns of
/// `schema` (whose last field is the content hash, which the caller needs
/// to drop copies still in the memtable).
fn scan_sql(
    table: &ClickHouseTable,
    schema: &SchemaRef,
    request: &ScanRequest,
) -> Result<(String, Vec<Bind>)> {
    let mut binds = Vec::new();
    let mut select = Vec::new();
    for (index, field) in schema.fields().iter().enumerate() {
        let name = field.name().as_str();
        let expression = match name {
            columns::TRACKER_ID | columns::MESSAGE_TIME | columns::SERVER_TIME | columns::FLAGS => {
                name.to_owned()
            }
            columns::CONTENT_HASH => "content_hash".to_owned(),
            _ => match InnerKind::split(name) {
                Some((kind, inner)) => {
                    binds.push(Bind::Text(inner.to_owned()));
                    binds.push(Bind::Text(inner.to_owned()));
                    let prefix = kind.prefix();
                    format!(
                        "if(has({prefix}.name, ?), {prefix}.value[indexOf({prefix}.name, ?)], NULL)"
                    )
                }
                None if columns::SIMPLE_COLUMNS.iter().any(|(n, _)| *n == name) => name.to_owned(),
                None => {
                    return Err(Error::UnknownColumn {
                        column: name.to_owned(),
                    });
                }
            },
        };
        // RowBinary is read by position: the alias is positional too, so no
        // name (an inner name is a bound parameter above) ever enters the SQL text.
        select.push(format!("{expression} AS c{index}"));
    }
    binds.push(Bind::Int(request.tracker));
    binds.push(Bind::Int(request.message.0));
    binds.push(Bind::Int(request.message.1));
    let telemetry = table.qualified(ClickHouseTable::TELEMETRY);
    // Unordered: ClickHouse 18.16 would sort the whole answer before its
    // first row, costing as much as picking the columns; `sort_day` orders
    // and deduplicates a day here in a few milliseconds.
    let mut sql = format!(
        "SELECT {} FROM {telemetry} WHERE tracker_id = ? AND msg_time >= ? AND msg_time < ?",
        select.join(", ")
    );
    // Only the server-time filter's end goes down: copies of a message
    // arriving at or after it are all later than its first arrival, so
    // dropping them changes nothing; its start is applied after the
    // deduplication, to the first arrival alone.
    if let Some((_, to)) = request.server {
        sql.push_str(" AND server_time < ?");
        binds.push(Bind::Int(to));
    }
    Ok((sql, binds))
}

/// A value bound to a `?` of a query.
#[derive(Debug, Clone)]
enum Bind {
    Int(i64),
    Text(String),
}

fn bound(mut query: clickhouse::query::Query, binds: Vec<Bind>) -> clickhouse::query::Query {
    for bind in binds {
        query = match bind {
            Bind::Int(value) => query.bind(value),
            Bind::Text(value) => query.bind(value),
        };
    }
    query
}

/// Streams the rows of `request` in `schema` (the scan's schema plus the
/// content hash last), `batch_size` rows per batch.
///
/// One query per piece of the tracker's stored span in the range (an hour,
/// then doubling up to a day: [`pieces`]), each piece ordered and
/// deduplicated here ([`sort_day`]) and sent while the next one is read.
/// A read holds at most two pieces' rows, whatever its range.
pub(crate) fn scan(
    table: &ClickHouseTable,
    schema: SchemaRef,
    request: &ScanRequest,
) -> Result<impl Stream<Item = Result<RecordBatch>> + Send + 'static> {
    // Checks the columns once, before any query is sent.
    scan_sql(table, &schema, request)?;
    let batch_size = request.batch_size.max(1);
    let client = table.client();
    let (table, request) = (table.clone(), request.clone());
    let server = request.server;
    // First the span the tracker has rows in, so that a wide range costs
    // no query per empty day.
    let span_sql = format!(
        "SELECT min(msg_time), max(msg_time), count() FROM {} \
         WHERE tracker_id = ? AND msg_time >= ? AND msg_time < ?",
        table.qualified(ClickHouseTable::TELEMETRY)
    );
    let span = client
        .query(&span_sql)
        .bind(request.tracker)
        .bind(request.message.0)
        .bind(request.message.1);
    let queries = futures::stream::once(async move {
        let (first, last, rows) = span
            .fetch_one::<(i64, i64, u64)>()
            .await
            .map_err(Error::clickhouse("reading the span of telemetry"))?;
        let stored = if rows == 0 {
            (0, 0)
        } else {
            (first, last.saturating_add(1))
        };
        pieces(stored)
            .into_iter()
            .map(|message| {
                scan_sql(
                    &table,
                    &schema,
                    &ScanRequest {
                        message,
                        ..request.clone()
                    },
                )
                .map(|query| (query, schema.clone()))
            })
            .collect::<Result<Vec<_>>>()
    })
    .map(|queries| match queries {
        Ok(queries) => futures::stream::iter(queries.into_iter().map(Ok)).boxed(),
        Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
    })
    .flatten();
    let days = queries
        .map(move |query: Result<((String, Vec<Bind>), SchemaRef)>| {
            let client = client.clone();
            async move {
                let ((sql, binds), schema) = query?;
                let mut cursor = bound(client.query(&sql), binds)
                    .fetch_bytes("RowBinary")
                    .map_err(Error::clickhouse("reading telemetry"))?;
                let mut decoder = Decoder::new(schema.clone(), batch_size)?;
                let mut batches = Vec::new();
                loop {
                    let chunk = cursor
                        .next()
                        .await
                        .map_err(Error::clickhouse("reading telemetry"))?;
                    let ended = chunk.is_none();
                    if let Some(chunk) = chunk {
                        decoder.push(chunk);
                    }
                    while let Some(batch) = decoder.ready(ended) {
                        batches.push(batch?);
                    }
                    if ended {
                        break;
                    }
                }
                sort_day(&schema, &batches, server, batch_size)
            }
        })
        .buffered(2);
    Ok(days
        .map(|day| match day {
            Ok(batches) => futures::stream::iter(batches.into_iter().map(Ok)).boxed(),
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
        })
        .flatten())
}

/// A day's rows as ClickHouse gave them (its parts' rows, unmerged) in
/// message-time order, each message once, then the server-time filter;
/// in batches of `batch_size`. Of the copies of a message (equal message
/// time and content hash: a retried INSERT, a replayed WAL), the earliest
/// arrival is kept, as ClickHouse's merges keep it, and the filter applies
/// to it, so a later copy never stands in for a filtered-out first one.
fn sort_day(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    server: Option<(i64, i64)>,
    batch_size: usize,
) -> Result<Vec<RecordBatch>> {
    use datafusion::arrow::array::{AsArray, BooleanArray};
    use datafusion::arrow::compute::{
        SortColumn, concat_batches, filter_record_batch, lexsort_to_indices, take_record_batch,
    };
    use datafusion::arrow::datatypes::{TimestampMillisecondType, UInt64Type};
    let all = concat_batches(schema, batches).map_err(Error::Arrow)?;
    if all.num_rows() == 0 {
        return Ok(Vec::new());
    }
    let column = |name: &str| {
        all.column_by_name(name)
            .cloned()
            .ok_or_else(|| Error::Internal(format!("a ClickHouse day lacks {name}")))
    };
    let mut keys = vec![
        SortColumn {
            values: column(columns::MESSAGE_TIME)?,
            options: None,
        },
        SortColumn {
            values: column(columns::CONTENT_HASH)?,
            options: None,
        },
    ];
    // Without server_time (a series read) the copies are equal in every
    // column read, so any of them does.
    if let Ok(arrival) = column(columns::SERVER_TIME) {
        keys.push(SortColumn {
            values: arrival,
            options: None,
        });
    }
    let order = lexsort_to_indices(&keys, None).map_err(Error::Arrow)?;
    let sorted = take_record_batch(&all, &order).map_err(Error::Arrow)?;
    let times = sorted
        .column_by_name(columns::MESSAGE_TIME)
        .map(|c| c.as_primitive::<TimestampMillisecondType>().clone())
        .ok_or_else(|| Error::Internal("a ClickHouse day lacks msg_time".into()))?;
    let hashes = sorted
        .column_by_name(columns::CONTENT_HASH)
        .map(|c| c.as_primitive::<UInt64Type>().clone())
        .ok_or_else(|| Error::Internal("a ClickHouse day lacks its hash".into()))?;
    let arrivals = sorted
        .column_by_name(columns::SERVER_TIME)
        .map(|c| c.as_primitive::<TimestampMillisecondType>().clone());
    let (from, to) = server.unwrap_or((i64::MIN, i64::MAX));
    let keep: BooleanArray = (0..sorted.num_rows())
        .map(|i| {
            let first = i == 0
                || times.value(i) != times.value(i - 1)
                || hashes.value(i) != hashes.value(i - 1);
            let arrived = arrivals
                .as_ref()
                .is_none_or(|a| (from..to).contains(&a.value(i)));
            Some(first && arrived)
        })
        .collect();
    let kept = if keep.true_count() == sorted.num_rows() {
        sorted
    } else {
        filter_record_batch(&sorted, &keep).map_err(Error::Arrow)?
    };
    Ok((0..kept.num_rows())
        .step_by(batch_size)
        .map(|start| kept.slice(start, batch_size.min(kept.num_rows() - start)))
        .collect())
}

/// The pieces a scan of `[from, to)` asks for, in order: an hour first,
/// then each twice the last up to a day, so that the first rows come after
/// an hour's query and a long read costs a query per day.
fn pieces((from, to): (i64, i64)) -> Vec<(i64, i64)> {
    const HOUR_MS: i64 = 3_600_000;
    let mut pieces = Vec::new();
    let (mut start, mut span) = (from, HOUR_MS);
    while start < to {
        let end = start.saturating_add(span).min(to);
        pieces.push((start, end));
        start = end;
        span = (span * 2).min(DAY_MS);
    }
    pieces
}

/// The inner columns `inner_columns` lists for the tracker on the days the
/// message range touches, and whether that is exact: the range is whole
/// days and there is no server-time filter.
pub(crate) async fn inner_columns(
    table: &ClickHouseTable,
    tracker: i64,
    message: (i64, i64),
    server: Option<(i64, i64)>,
) -> Result<(BTreeSet<String>, bool)> {
    if message.0 >= message.1 {
        return Ok((BTreeSet::new(), true));
    }
    let day = |ms: i64| {
        ms.div_euclid(DAY_MS)
            .clamp(i32::MIN.into(), i32::MAX.into())
    };
    let sql = format!(
        "SELECT DISTINCT name FROM {} WHERE tracker_id = ? AND day >= ? AND day <= ?",
        table.qualified(ClickHouseTable::INNER_COLUMNS)
    );
    let names: Vec<String> = table
        .client()
        .query(&sql)
        .bind(tracker)
        .bind(day(message.0))
        .bind(day(message.1 - 1))
        .fetch_all()
        .await
        .map_err(Error::clickhouse("reading inner column names"))?;
    let exact = server.is_none() && message.0 % DAY_MS == 0 && message.1 % DAY_MS == 0;
    Ok((names.into_iter().collect(), exact))
}

/// Decodes `RowBinary` rows of a schema into Arrow batches.
struct Decoder {
    schema: SchemaRef,
    columns: Vec<Column>,
    pending: BytesMut,
    rows: usize,
    batch_size: usize,
    failed: bool,
}

/// One column being decoded: how it is encoded, and its builder.
enum Column {
    Int64(Int64Builder),
    Time(TimestampMillisecondBuilder),
    UInt64(UInt64Builder),
    NullableUInt8(UInt8Builder),
    NullableInt32(Int32Builder),
    NullableInt64(Int64Builder),
    NullableFloat64(Float64Builder),
    NullableText(StringBuilder),
    NullableTextView(StringViewBuilder),
}

impl Column {
    fn new(index: usize, field: &Field, capacity: usize) -> Result<Self> {
        let n = capacity;
        Ok(match (index, field.data_type()) {
            (0, DataType::Int64) => Self::Int64(Int64Builder::with_capacity(n)),
            (_, DataType::Timestamp(TimeUnit::Millisecond, _)) => {
                Self::Time(TimestampMillisecondBuilder::with_capacity(n).with_timezone("UTC"))
            }
            (_, DataType::UInt64) if field.name() == columns::CONTENT_HASH => {
                Self::UInt64(UInt64Builder::with_capacity(n))
            }
            (_, DataType::UInt8) => Self::NullableUInt8(UInt8Builder::with_capacity(n)),
            (_, DataType::Int32) => Self::NullableInt32(Int32Builder::with_capacity(n)),
            (_, DataType::Int64) => Self::NullableInt64(Int64Builder::with_capacity(n)),
            (_, DataType::Float64) => Self::NullableFloat64(Float64Builder::with_capacity(n)),
            (_, DataType::Utf8) => Self::NullableText(StringBuilder::with_capacity(n, n * 8)),
            (_, DataType::Utf8View) => Self::NullableTextView(StringViewBuilder::with_capacity(n)),
            (_, other) => {
                return Err(Error::Internal(format!(
                    "no ClickHouse decoding for {} of type {other}",
                    field.name()
                )));
            }
        })
    }

    /// Whether a value is preceded by a null byte (`Nullable(T)`).
    const fn nullable(&self) -> bool {
        !matches!(self, Self::Int64(_) | Self::Time(_) | Self::UInt64(_))
    }

    /// Bytes of a value, after its null byte: `None` for a length-prefixed text.
    const fn width(&self) -> Option<usize> {
        match self {
            Self::Int64(_)
            | Self::Time(_)
            | Self::UInt64(_)
            | Self::NullableInt64(_)
            | Self::NullableFloat64(_) => Some(8),
            Self::NullableInt32(_) => Some(4),
            Self::NullableUInt8(_) => Some(1),
            Self::NullableText(_) | Self::NullableTextView(_) => None,
        }
    }

    /// Appends the value at the front of `row` (complete: checked by
    /// [`row_len`]) and consumes it.
    fn append(&mut self, row: &mut Bytes) {
        if self.nullable() && row.get_u8() == 1 {
            match self {
                Self::Int64(b) | Self::NullableInt64(b) => b.append_null(),
                Self::Time(b) => b.append_null(),
                Self::UInt64(b) => b.append_null(),
                Self::NullableUInt8(b) => b.append_null(),
                Self::NullableInt32(b) => b.append_null(),
                Self::NullableFloat64(b) => b.append_null(),
                Self::NullableText(b) => b.append_null(),
                Self::NullableTextView(b) => b.append_null(),
            }
            return;
        }
        match self {
            Self::Int64(b) | Self::NullableInt64(b) => b.append_value(row.get_i64_le()),
            Self::Time(b) => b.append_value(row.get_i64_le()),
            Self::UInt64(b) => b.append_value(row.get_u64_le()),
            Self::NullableUInt8(b) => b.append_value(row.get_u8()),
            Self::NullableInt32(b) => b.append_value(row.get_i32_le()),
            Self::NullableFloat64(b) => b.append_value(row.get_f64_le()),
            Self::NullableText(_) | Self::NullableTextView(_) => {
                let (len, used) = varint(row).unwrap_or((0, 0));
                row.advance(used);
                let bytes = row.split_to(len as usize);
                let text = String::from_utf8_lossy(&bytes);
                match self {
                    Self::NullableText(b) => b.append_value(text),
                    Self::NullableTextView(b) => b.append_value(text),
                    _ => {}
                }
            }
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Self::Int64(b) | Self::NullableInt64(b) => Arc::new(b.finish()),
            Self::Time(b) => Arc::new(b.finish()),
            Self::UInt64(b) => Arc::new(b.finish()),
            Self::NullableUInt8(b) => Arc::new(b.finish()),
            Self::NullableInt32(b) => Arc::new(b.finish()),
            Self::NullableFloat64(b) => Arc::new(b.finish()),
            Self::NullableText(b) => Arc::new(b.finish()),
            Self::NullableTextView(b) => Arc::new(b.finish()),
        }
    }
}

impl Decoder {
    fn new(schema: SchemaRef, batch_size: usize) -> Result<Self> {
        let columns = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, field)| Column::new(i, field, batch_size))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            schema,
            columns,
            pending: BytesMut::new(),
            rows: 0,
            batch_size,
            failed: false,
        })
    }

    fn push(&mut self, chunk: Bytes) {
        self.pending.extend_from_slice(&chunk);
    }

    /// A full batch, or at the end the last rows; an error for bytes that
    /// are not rows of the schema.
    fn ready(&mut self, ended: bool) -> Option<Result<RecordBatch>> {
        if self.failed {
            return None;
        }
        while self.rows < self.batch_size {
            let Some(len) = row_len(&self.pending, &self.columns) else {
                break;
            };
            let mut row = self.pending.split_to(len).freeze();
            for column in &mut self.columns {
                column.append(&mut row);
            }
            self.rows += 1;
        }
        if self.rows == self.batch_size || (ended && self.rows > 0) {
            let arrays: Vec<ArrayRef> = self.columns.iter_mut().map(Column::finish).collect();
            self.rows = 0;
            return Some(RecordBatch::try_new(self.schema.clone(), arrays).map_err(Error::Arrow));
        }
        if ended && !self.pending.is_empty() {
            self.failed = true;
            return Some(Err(Error::Internal(format!(
                "ClickHouse ended a RowBinary answer inside a row ({} bytes left)",
                self.pending.len()
            ))));
        }
        None
    }
}

/// The length of the first row of `bytes`, if it is complete.
fn row_len(bytes: &[u8], columns: &[Column]) -> Option<usize> {
    let mut at = 0;
    for column in columns {
        if column.nullable() {
            let null = *bytes.get(at)?;
            at += 1;
            if null == 1 {
                continue;
            }
        }
        at += match column.width() {
            Some(width) => width,
            None => {
                let (len, used) = varint(bytes.get(at..)?)?;
                used + usize::try_from(len).ok()?
            }
        };
        if at > bytes.len() {
            return None;
        }
    }
    Some(at)
}

/// An unsigned LEB128 number and the bytes it took.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests;
