//! Reading telemetry stored in ClickHouse (`deploy/clickhouse/schema.sql`).
//!
//! A scan becomes one SQL query with the tracker, both time ranges and the
//! column list pushed down; ClickHouse deduplicates (`LIMIT 1 BY` the dedup
//! key, keeping the earliest arrival, until its merges have folded the
//! copies) and sorts, and streams `RowBinary`, decoded here into Arrow
//! batches of the scan's schema as the bytes arrive. An inner column
//! (`inputs.lls_level_1`) is picked out of its kind's `Nested` arrays in
//! the query, so only the requested values travel.
//!
//! The names of a tracker's inner columns come from the small
//! `inner_columns` table (tracker, day, name), not from the messages.

use std::collections::BTreeSet;

use bytes::{Buf, Bytes, BytesMut};
use datafusion::arrow::array::{
    ArrayBuilder, ArrayRef, Float64Builder, Int32Builder, Int64Builder, RecordBatch, StringBuilder,
    StringViewBuilder, TimestampMillisecondBuilder, UInt8Builder, UInt64Builder,
};
use datafusion::arrow::datatypes::{DataType, SchemaRef, TimeUnit};
use futures::{Stream, StreamExt};
use schemas::ClickHouseTable;
use schemas::columns::{self, InnerKind};

use crate::scan::ScanRequest;
use crate::{Error, Result};

const DAY_MS: i64 = 86_400_000;

/// A client of `table`'s database.
pub(crate) fn client(table: &ClickHouseTable) -> clickhouse::Client {
    let mut client = clickhouse::Client::default()
        .with_url(&table.url)
        .with_database(&table.database);
    if let Some(user) = &table.user {
        client = client.with_user(user);
    }
    if let Some(password) = &table.password {
        client = client.with_password(password);
    }
    client
}

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
    for field in schema.fields() {
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
        select.push(format!("{expression} AS `{name}`"));
    }
    binds.push(Bind::Int(request.tracker));
    binds.push(Bind::Int(request.message.0));
    binds.push(Bind::Int(request.message.1));
    let telemetry = table.qualified(ClickHouseTable::TELEMETRY);
    // `LIMIT 1 BY` keeps the first row of each key in the `ORDER BY` order:
    // the earliest arrival, as a merge does. It runs before the server-time
    // filter, so a later copy never stands in for a filtered-out first one.
    let deduplicated = format!(
        "SELECT {} FROM {telemetry} \
         WHERE tracker_id = ? AND msg_time >= ? AND msg_time < ? \
         ORDER BY msg_time, content_hash, server_time \
         LIMIT 1 BY msg_time, content_hash",
        select.join(", ")
    );
    let sql = match request.server {
        None => deduplicated,
        Some((from, to)) => {
            binds.push(Bind::Int(from));
            binds.push(Bind::Int(to));
            format!(
                "SELECT * FROM ({deduplicated}) WHERE `{s}` >= ? AND `{s}` < ? ORDER BY `{m}`, `{h}`",
                s = columns::SERVER_TIME,
                m = columns::MESSAGE_TIME,
                h = columns::CONTENT_HASH,
            )
        }
    };
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
/// One query per UTC day of the message range, as the Parquet scan reads a
/// day at a time: ClickHouse 18.16 sorts a query's whole result before its
/// first row (it cannot read in key order), so a day bounds its sort memory
/// and the wait for the first row. The next day's query runs while this
/// day's rows are decoded and sent (its first bytes awaited ahead).
pub(crate) fn scan(
    table: &ClickHouseTable,
    schema: SchemaRef,
    request: &ScanRequest,
) -> Result<impl Stream<Item = Result<RecordBatch>> + Send + 'static> {
    // Checks the columns once, before any query is sent.
    scan_sql(table, &schema, request)?;
    let batch_size = request.batch_size.max(1);
    let client = client(table);
    let (table, request) = (table.clone(), request.clone());
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
        days(stored)
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
    let started = queries
        .map(move |query: Result<((String, Vec<Bind>), SchemaRef)>| {
            let client = client.clone();
            async move {
                let ((sql, binds), schema) = query?;
                let mut cursor = bound(client.query(&sql), binds)
                    .fetch_bytes("RowBinary")
                    .map_err(Error::clickhouse("reading telemetry"))?;
                let first = cursor
                    .next()
                    .await
                    .map_err(Error::clickhouse("reading telemetry"))?;
                Ok::<_, Error>((cursor, first, schema))
            }
        })
        .buffered(2);
    Ok(started
        .map(move |day| match day {
            Ok((cursor, first, schema)) => match Decoder::new(schema, batch_size) {
                Ok(mut decoder) => {
                    let ended = first.is_none();
                    if let Some(chunk) = first {
                        decoder.push(chunk);
                    }
                    decoded(cursor, decoder, ended).boxed()
                }
                Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
            },
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
        })
        .flatten())
}

/// The UTC days of `[from, to)`, each clipped to the range.
fn days((from, to): (i64, i64)) -> Vec<(i64, i64)> {
    let mut days = Vec::new();
    let mut start = from;
    while start < to {
        let end = (start.div_euclid(DAY_MS) + 1)
            .saturating_mul(DAY_MS)
            .min(to);
        days.push((start, end));
        start = end;
    }
    days
}

/// The batches of one answer, decoded as its bytes arrive.
fn decoded(
    cursor: clickhouse::query::BytesCursor,
    decoder: Decoder,
    ended: bool,
) -> impl Stream<Item = Result<RecordBatch>> + Send + 'static {
    futures::stream::unfold(
        (cursor, decoder, ended),
        |(mut cursor, mut decoder, mut ended)| async move {
            loop {
                if let Some(batch) = decoder.ready(ended) {
                    return Some((batch, (cursor, decoder, ended)));
                }
                if ended {
                    return None;
                }
                match cursor.next().await {
                    Ok(Some(chunk)) => decoder.push(chunk),
                    Ok(None) => ended = true,
                    Err(e) => {
                        return Some((
                            Err(Error::clickhouse("reading telemetry")(e)),
                            (cursor, decoder, true),
                        ));
                    }
                }
            }
        },
    )
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
    let names: Vec<String> = client(table)
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
    kinds: Vec<Kind>,
    builders: Vec<Box<dyn ArrayBuilder>>,
    pending: BytesMut,
    rows: usize,
    batch_size: usize,
    failed: bool,
}

/// How a column is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int64,
    Time,
    UInt64,
    NullableUInt8,
    NullableInt32,
    NullableInt64,
    NullableFloat64,
    NullableText,
    NullableTextView,
}

impl Kind {
    /// Bytes of a non-null fixed-width value (texts: 0).
    const fn width(self) -> usize {
        match self {
            Self::Int64
            | Self::Time
            | Self::UInt64
            | Self::NullableInt64
            | Self::NullableFloat64 => 8,
            Self::NullableInt32 => 4,
            Self::NullableUInt8 => 1,
            Self::NullableText | Self::NullableTextView => 0,
        }
    }

    const fn nullable(self) -> bool {
        !matches!(self, Self::Int64 | Self::Time | Self::UInt64)
    }
}

impl Decoder {
    fn new(schema: SchemaRef, batch_size: usize) -> Result<Self> {
        let kinds = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, field)| match (i, field.data_type()) {
                (0, DataType::Int64) => Ok(Kind::Int64),
                (_, DataType::Timestamp(TimeUnit::Millisecond, _)) => Ok(Kind::Time),
                (_, DataType::UInt64) if field.name() == columns::CONTENT_HASH => Ok(Kind::UInt64),
                (_, DataType::UInt8) => Ok(Kind::NullableUInt8),
                (_, DataType::Int32) => Ok(Kind::NullableInt32),
                (_, DataType::Int64) => Ok(Kind::NullableInt64),
                (_, DataType::Float64) => Ok(Kind::NullableFloat64),
                (_, DataType::Utf8) => Ok(Kind::NullableText),
                (_, DataType::Utf8View) => Ok(Kind::NullableTextView),
                (_, other) => Err(Error::Internal(format!(
                    "no ClickHouse decoding for {} of type {other}",
                    field.name()
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        let mut decoder = Self {
            schema,
            kinds,
            builders: Vec::new(),
            pending: BytesMut::new(),
            rows: 0,
            batch_size,
            failed: false,
        };
        decoder.builders = decoder.new_builders();
        Ok(decoder)
    }

    fn new_builders(&self) -> Vec<Box<dyn ArrayBuilder>> {
        let n = self.batch_size;
        self.kinds
            .iter()
            .map(|kind| -> Box<dyn ArrayBuilder> {
                match kind {
                    Kind::Int64 | Kind::NullableInt64 => Box::new(Int64Builder::with_capacity(n)),
                    Kind::Time => {
                        Box::new(TimestampMillisecondBuilder::with_capacity(n).with_timezone("UTC"))
                    }
                    Kind::UInt64 => Box::new(UInt64Builder::with_capacity(n)),
                    Kind::NullableUInt8 => Box::new(UInt8Builder::with_capacity(n)),
                    Kind::NullableInt32 => Box::new(Int32Builder::with_capacity(n)),
                    Kind::NullableFloat64 => Box::new(Float64Builder::with_capacity(n)),
                    Kind::NullableText => Box::new(StringBuilder::with_capacity(n, n * 8)),
                    Kind::NullableTextView => Box::new(StringViewBuilder::with_capacity(n)),
                }
            })
            .collect()
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
            match row_len(&self.pending, &self.kinds) {
                Some(len) => {
                    let row = self.pending.split_to(len).freeze();
                    self.append(row);
                }
                None => break,
            }
        }
        if self.rows == self.batch_size || (ended && self.rows > 0) {
            return Some(self.finish());
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

    /// Appends one complete row (checked by [`row_len`]).
    fn append(&mut self, mut row: Bytes) {
        for (kind, builder) in self.kinds.iter().zip(self.builders.iter_mut()) {
            let any = builder.as_any_mut();
            if kind.nullable() && row.get_u8() == 1 {
                append_null(*kind, any);
                continue;
            }
            match kind {
                Kind::Int64 | Kind::NullableInt64 => {
                    downcast::<Int64Builder>(any).append_value(row.get_i64_le())
                }
                Kind::Time => {
                    downcast::<TimestampMillisecondBuilder>(any).append_value(row.get_i64_le())
                }
                Kind::UInt64 => downcast::<UInt64Builder>(any).append_value(row.get_u64_le()),
                Kind::NullableUInt8 => downcast::<UInt8Builder>(any).append_value(row.get_u8()),
                Kind::NullableInt32 => downcast::<Int32Builder>(any).append_value(row.get_i32_le()),
                Kind::NullableFloat64 => {
                    downcast::<Float64Builder>(any).append_value(row.get_f64_le())
                }
                Kind::NullableText | Kind::NullableTextView => {
                    let (len, used) = varint(&row).unwrap_or((0, 0));
                    row.advance(used);
                    let text = row.split_to(len as usize);
                    let text = String::from_utf8_lossy(&text);
                    if *kind == Kind::NullableText {
                        downcast::<StringBuilder>(any).append_value(text);
                    } else {
                        downcast::<StringViewBuilder>(any).append_value(text);
                    }
                }
            }
        }
        self.rows += 1;
    }

    fn finish(&mut self) -> Result<RecordBatch> {
        let arrays: Vec<ArrayRef> = self.builders.iter_mut().map(|b| b.finish()).collect();
        self.rows = 0;
        RecordBatch::try_new(self.schema.clone(), arrays).map_err(Error::Arrow)
    }
}

fn downcast<B: 'static>(any: &mut dyn std::any::Any) -> &mut B {
    match any.downcast_mut::<B>() {
        Some(builder) => builder,
        None => unreachable!("each kind's builder is made by Decoder::new_builders"),
    }
}

fn append_null(kind: Kind, any: &mut dyn std::any::Any) {
    match kind {
        Kind::Int64 | Kind::NullableInt64 => downcast::<Int64Builder>(any).append_null(),
        Kind::Time => downcast::<TimestampMillisecondBuilder>(any).append_null(),
        Kind::UInt64 => downcast::<UInt64Builder>(any).append_null(),
        Kind::NullableUInt8 => downcast::<UInt8Builder>(any).append_null(),
        Kind::NullableInt32 => downcast::<Int32Builder>(any).append_null(),
        Kind::NullableFloat64 => downcast::<Float64Builder>(any).append_null(),
        Kind::NullableText => downcast::<StringBuilder>(any).append_null(),
        Kind::NullableTextView => downcast::<StringViewBuilder>(any).append_null(),
    }
}

/// The length of the first row of `bytes`, if it is complete.
fn row_len(bytes: &[u8], kinds: &[Kind]) -> Option<usize> {
    let mut at = 0;
    for kind in kinds {
        if kind.nullable() {
            let null = *bytes.get(at)?;
            at += 1;
            if null == 1 {
                continue;
            }
        }
        at += match kind {
            Kind::NullableText | Kind::NullableTextView => {
                let (len, used) = varint(bytes.get(at..)?)?;
                used + usize::try_from(len).ok()?
            }
            fixed => fixed.width(),
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
