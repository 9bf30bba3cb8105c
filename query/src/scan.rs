//! One tracker's rows over a telemetry snapshot, in message-time order,
//! streamed day by day.
//!
//! Files are day-partitioned by message time, so days never overlap: the scan
//! runs one small DataFusion plan per day (the day's files, each its own
//! sorted partition, plus the memtable's rows of that day, merged by message
//! time) and chains them. Memory holds one day's open files, never the range.
//! Files are pruned by the catalog (tracker span, both time ranges); row
//! groups and pages by Parquet statistics with the predicate pushed down; only
//! the requested columns are read.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{
    concat_batches, filter_record_batch, sort_to_indices, take_record_batch,
};
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef, TimestampMillisecondType};
use datafusion::common::{Column, DFSchema, ScalarValue};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::physical_plan::parquet::{
    CachedParquetFileReaderFactory, ParquetFileReaderFactory, can_expr_be_pushed_down_with_schemas,
};
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::execution::TaskContext;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::execution_props::ExecutionProps;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{Expr, lit};
use datafusion::object_store::ObjectMeta;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::physical_expr::utils::split_conjunction;
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr, create_physical_expr};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::union::UnionExec;
use datafusion::physical_plan::{ExecutionPlan, PhysicalExpr, SendableRecordBatchStream};
use futures::StreamExt;
use schemas::columns::{self, InnerKind, SimpleType};
use schemas::{FileEntry, TelemetrySnapshot};

use crate::{Error, Result};

const DAY_MS: i64 = 86_400_000;

/// What to read.
#[derive(Debug, Clone)]
pub struct ScanRequest {
    /// The tracker.
    pub tracker: i64,
    /// Message time range `[from, to)`, ms.
    pub message: (i64, i64),
    /// Server time range `[from, to)`, ms, if filtered.
    pub server: Option<(i64, i64)>,
    /// Storage columns to read besides `tracker_id`, `msg_time` and
    /// `server_time` (which every scan has): simple columns, `flags`, inner columns.
    pub columns: Vec<String>,
    /// Rows per batch.
    pub batch_size: usize,
    /// Whether the batches carry `server_time` (a read that neither filters
    /// nor returns it, such as resampling, saves decoding it).
    pub with_server_time: bool,
    /// Whether text columns come as `Utf8View` rather than `Utf8`. Parquet
    /// stores them dictionary-encoded, and a view of a short string is
    /// decoded by copying 16 bytes, without building an offsets buffer and
    /// copying each string's bytes: cheaper for a read that only inspects
    /// them (the ignition source of resampling).
    pub string_views: bool,
}

/// The schema of a scan's batches: `tracker_id`, `msg_time`, `server_time`, then the requested columns.
pub fn scan_schema(columns: &[String]) -> Result<SchemaRef> {
    scan_schema_with(columns, true, false)
}

/// [`scan_schema`], with or without `server_time`, text as `Utf8` or `Utf8View`.
fn scan_schema_with(
    columns: &[String],
    with_server_time: bool,
    string_views: bool,
) -> Result<SchemaRef> {
    use datafusion::arrow::datatypes::DataType;
    let mut fields = vec![
        Field::new(
            columns::TRACKER_ID,
            datafusion::arrow::datatypes::DataType::Int64,
            false,
        ),
        Field::new(columns::MESSAGE_TIME, columns::time_type(), false),
    ];
    if with_server_time {
        fields.push(Field::new(
            columns::SERVER_TIME,
            columns::time_type(),
            false,
        ));
    }
    for name in columns {
        let data_type = if name == columns::FLAGS {
            datafusion::arrow::datatypes::DataType::Int64
        } else if let Some((kind, _)) = InnerKind::split(name) {
            kind.data_type()
        } else if let Some((_, ty)) = columns::SIMPLE_COLUMNS.iter().find(|(n, _)| n == name) {
            SimpleType::data_type(*ty)
        } else {
            return Err(Error::UnknownColumn {
                column: name.clone(),
            });
        };
        let data_type = match data_type {
            DataType::Utf8 if string_views => DataType::Utf8View,
            other => other,
        };
        fields.push(Field::new(name.as_str(), data_type, true));
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// Streams the tracker's rows in message-time order.
pub fn scan(
    snapshot: Arc<TelemetrySnapshot>,
    request: ScanRequest,
    ctx: Arc<TaskContext>,
) -> Result<SendableRecordBatchStream> {
    if let Some(table) = snapshot.clickhouse.clone() {
        return clickhouse_scan(&snapshot, &table, &request, ctx);
    }
    let (schema, days) = day_inputs(&snapshot, &request)?;
    // The tracker's memtable rows are copies now (`day_inputs`): the stream
    // keeps the files, not the memtable's batches, which the flushes during
    // a long export would otherwise leave in memory until it ends.
    let snapshot = Arc::new(snapshot.files_only());
    let predicate = predicate(
        &schema,
        &request,
        request.server.unwrap_or((i64::MIN, i64::MAX)),
    )?;
    let readers = file_readers(&ctx)?;
    // Each day's plan is built when the previous day is done, so the first
    // rows (and the answer's first byte) do not wait for every day's plan.
    // `snapshot` travels with the stream, keeping its files on disk until the stream ends.
    let plan_schema = schema.clone();
    let stream = futures::stream::iter(days)
        .map(move |(files, memory)| {
            let plan = day_plan(
                &snapshot,
                &plan_schema,
                (files, memory),
                &predicate,
                &readers,
                request.batch_size,
            )
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)));
            match plan.and_then(|plan| plan.execute(0, ctx.clone())) {
                Ok(stream) => stream.boxed(),
                Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
            }
        })
        .flatten();
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
}

/// The ClickHouse rows of the request merged with the memtable's by message
/// time. A row the flusher has inserted but not yet dropped from the
/// memtable comes from both: of rows with equal message time and content
/// hash, the first is kept.
fn clickhouse_scan(
    snapshot: &TelemetrySnapshot,
    table: &schemas::ClickHouseTable,
    request: &ScanRequest,
    ctx: Arc<TaskContext>,
) -> Result<SendableRecordBatchStream> {
    use datafusion::arrow::datatypes::DataType;
    let schema = request_schema(request)?;
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(columns::CONTENT_HASH, DataType::UInt64, false));
    let keyed: SchemaRef = Arc::new(Schema::new(fields));
    let server = request.server.unwrap_or((i64::MIN, i64::MAX));
    let mut memory = Vec::new();
    for batch in &snapshot.unflushed {
        memory.extend(
            memtable_rows(batch, &keyed, request, server)?
                .into_iter()
                .map(|(_, rows)| rows),
        );
    }
    let remote = crate::clickhouse::scan(table, keyed.clone(), request)?
        .map(|batch| batch.map_err(|e| datafusion::error::DataFusionError::External(Box::new(e))));
    let out = schema.clone();
    if memory.is_empty() {
        // ClickHouse's rows alone are deduplicated already (`sort_day`):
        // only the hash column goes.
        let stream = remote.map(move |batch| {
            let batch = batch?;
            let columns = batch.columns()[..out.fields().len()].to_vec();
            RecordBatch::try_new(out.clone(), columns)
                .map_err(|e| datafusion::error::DataFusionError::ArrowError(Box::new(e), None))
        });
        return Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)));
    }
    let merged: SendableRecordBatchStream = {
        let sorted = sorted_by_message_time(&keyed, &memory)?;
        let ordering = LexOrdering::new([PhysicalSortExpr::new_default(Arc::new(
            datafusion::physical_expr::expressions::Column::new(columns::MESSAGE_TIME, 1),
        ))])
        .ok_or_else(|| Error::Internal("empty ordering".into()))?;
        let stored = StreamingTableExec::try_new(
            keyed.clone(),
            vec![Arc::new(OnceStream::new(Box::pin(
                RecordBatchStreamAdapter::new(keyed.clone(), remote),
            )))],
            None,
            vec![ordering.clone()],
            false,
            None,
        )
        .map_err(Error::Plan)?;
        let memory = MemorySourceConfig::try_new_exec(&[vec![sorted]], keyed.clone(), None)
            .map_err(Error::Plan)?;
        let union = UnionExec::try_new(vec![Arc::new(stored), memory]).map_err(Error::Plan)?;
        SortPreservingMergeExec::new(ordering, union)
            .execute(0, ctx)
            .map_err(Error::Plan)?
    };
    let mut seen = FirstOfKey::default();
    let stream = merged.map(move |batch| {
        let batch = batch?;
        seen.keep_first(&batch, &out)
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))
    });
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
}

/// Drops the rows of a message-time-ordered stream whose (message time,
/// content hash) came before, and the hash column (the last).
#[derive(Debug, Default)]
struct FirstOfKey {
    time: Option<i64>,
    hashes: Vec<u64>,
}

impl FirstOfKey {
    fn keep_first(&mut self, batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
        use datafusion::arrow::datatypes::UInt64Type;
        let times = batch.column(1).as_primitive::<TimestampMillisecondType>();
        let hashes = batch
            .columns()
            .last()
            .and_then(|c| c.as_primitive_opt::<UInt64Type>())
            .ok_or_else(|| Error::Internal("a keyed batch lacks its hash".into()))?;
        let mut dropped = 0;
        let keep: BooleanArray = (0..batch.num_rows())
            .map(|i| {
                let (time, hash) = (times.value(i), hashes.value(i));
                if self.time != Some(time) {
                    self.time = Some(time);
                    self.hashes.clear();
                }
                let first = !self.hashes.contains(&hash);
                if first {
                    self.hashes.push(hash);
                } else {
                    dropped += 1;
                }
                Some(first)
            })
            .collect();
        let columns = batch.columns()[..schema.fields().len()].to_vec();
        let projected = RecordBatch::try_new(schema.clone(), columns).map_err(Error::Arrow)?;
        if dropped == 0 {
            return Ok(projected);
        }
        filter_record_batch(&projected, &keep).map_err(Error::Arrow)
    }
}

/// A partition of a plan that is an already running stream.
struct OnceStream {
    schema: SchemaRef,
    stream: std::sync::Mutex<Option<SendableRecordBatchStream>>,
}

impl OnceStream {
    fn new(stream: SendableRecordBatchStream) -> Self {
        Self {
            schema: stream.schema(),
            stream: std::sync::Mutex::new(Some(stream)),
        }
    }
}

impl std::fmt::Debug for OnceStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnceStream").finish_non_exhaustive()
    }
}

impl PartitionStream for OnceStream {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let taken = self.stream.lock().unwrap_or_else(|p| p.into_inner()).take();
        taken.unwrap_or_else(|| {
            Box::pin(RecordBatchStreamAdapter::new(
                self.schema.clone(),
                futures::stream::once(async {
                    Err(datafusion::error::DataFusionError::Internal(
                        "a ClickHouse answer can be read once".into(),
                    ))
                }),
            ))
        })
    }
}

/// One UTC day's input: its files in lanes (see [`lanes`]) and its
/// memtable rows.
type DayInput = (Vec<Vec<FileEntry>>, Vec<RecordBatch>);

/// The scan's schema and one plan per UTC day of message time, in day order:
/// the days never overlap, so their outputs chained are in message-time
/// order. Each plan has one output partition.
pub(crate) fn day_plans(
    snapshot: &TelemetrySnapshot,
    request: &ScanRequest,
    ctx: &TaskContext,
) -> Result<(SchemaRef, Vec<Arc<dyn ExecutionPlan>>)> {
    let (schema, days) = day_inputs(snapshot, request)?;
    let predicate = predicate(
        &schema,
        request,
        request.server.unwrap_or((i64::MIN, i64::MAX)),
    )?;
    let readers = file_readers(ctx)?;
    let plans = days
        .into_iter()
        .map(|day| {
            day_plan(
                snapshot,
                &schema,
                day,
                &predicate,
                &readers,
                request.batch_size,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((schema, plans))
}

/// The scan's schema and the inputs of each UTC day of message time that
/// may hold rows, in day order.
fn day_inputs(
    snapshot: &TelemetrySnapshot,
    request: &ScanRequest,
) -> Result<(SchemaRef, Vec<DayInput>)> {
    let schema = request_schema(request)?;
    let (from, to) = request.message;
    let server = request.server.unwrap_or((i64::MIN, i64::MAX));
    let mut days: BTreeMap<i64, (Vec<Spanned>, Vec<RecordBatch>)> = BTreeMap::new();
    for file in snapshot.files.iter() {
        let Some(span) = file.span(request.tracker) else {
            continue;
        };
        let overlaps_message = span.meets_message_times(from, to);
        let overlaps_server =
            file.server_time_min_ms < server.1 && server.0 <= file.server_time_max_ms;
        if overlaps_message && overlaps_server {
            days.entry(file.message_time_min_ms.div_euclid(DAY_MS))
                .or_default()
                .0
                .push((
                    span.message_time_min_ms,
                    span.message_time_max_ms,
                    file.clone(),
                ));
        }
    }
    for batch in &snapshot.unflushed {
        for (day, rows) in memtable_rows(batch, &schema, request, server)? {
            days.entry(day).or_default().1.push(rows);
        }
    }
    let days = days
        .into_values()
        .map(|(files, memory)| (lanes(files), memory))
        .collect();
    Ok((schema, days))
}

/// A file with the tracker's message-time span in it, ms.
type Spanned = (i64, i64, FileEntry);

/// The files of a day in lanes: each lane's files in message-time order,
/// their spans of the tracker not overlapping, so a lane is read one file
/// after the other and its rows come in order. Lanes are then merged.
///
/// One partition per file would open every file of the day at once, each
/// holding its pages of every column asked for: a day of many flushes
/// (before compaction) took hundreds of MB for one export. Successive
/// flushes hold successive spans of a tracker, so lanes are few: one, plus
/// one for each file a late message reaches back over. Greedy by earliest
/// start into the lane that ended latest before it: as few lanes as the
/// spans' greatest overlap.
fn lanes<F>(mut files: Vec<(i64, i64, F)>) -> Vec<Vec<F>> {
    files.sort_by_key(|(from, to, _)| (*from, *to));
    let mut lanes: Vec<(i64, Vec<F>)> = Vec::new();
    for (from, to, file) in files {
        let fit = lanes
            .iter_mut()
            .filter(|(end, _)| *end <= from)
            .max_by_key(|(end, _)| *end);
        match fit {
            Some((end, lane)) => {
                *end = to;
                lane.push(file);
            }
            None => lanes.push((to, vec![file])),
        }
    }
    lanes.into_iter().map(|(_, lane)| lane).collect()
}

/// The schema of a request's batches.
fn request_schema(request: &ScanRequest) -> Result<SchemaRef> {
    if request.server.is_some() && !request.with_server_time {
        return Err(Error::Internal(
            "a server-time filter needs the server_time column".into(),
        ));
    }
    scan_schema_with(
        &request.columns,
        request.with_server_time,
        request.string_views,
    )
}

/// The filter every row must pass: the tracker and both time ranges.
fn predicate(
    schema: &SchemaRef,
    request: &ScanRequest,
    server: (i64, i64),
) -> Result<Arc<dyn PhysicalExpr>> {
    let time = |ms: i64| {
        lit(ScalarValue::TimestampMillisecond(
            Some(ms),
            Some("UTC".into()),
        ))
    };
    let column = |name: &str| Expr::Column(Column::new_unqualified(name));
    let mut expr = column(columns::TRACKER_ID)
        .eq(lit(request.tracker))
        .and(column(columns::MESSAGE_TIME).gt_eq(time(request.message.0)))
        .and(column(columns::MESSAGE_TIME).lt(time(request.message.1)));
    if request.server.is_some() {
        expr = expr
            .and(column(columns::SERVER_TIME).gt_eq(time(server.0)))
            .and(column(columns::SERVER_TIME).lt(time(server.1)));
    }
    let df_schema = DFSchema::try_from(schema.as_ref().clone()).map_err(Error::Plan)?;
    create_physical_expr(
        &expr,
        &df_schema,
        &ExecutionProps::new(),
        &PhysicalPlanningContext::default(),
    )
    .map_err(Error::Plan)
}

/// Opens the Parquet files of a scan through the runtime's file metadata
/// cache, so a file's footer and page index are read and parsed once, not
/// on every read. Safe because a file is never changed once written: a
/// rewrite (compaction, dedup) writes new files under new ids, and the
/// cache lives no longer than the process that assigns them.
fn file_readers(ctx: &TaskContext) -> Result<Arc<dyn ParquetFileReaderFactory>> {
    let runtime = ctx.runtime_env();
    let store = runtime
        .object_store(ObjectStoreUrl::local_filesystem())
        .map_err(Error::Plan)?;
    Ok(Arc::new(CachedParquetFileReaderFactory::new(
        store,
        runtime.cache_manager.get_file_metadata_cache(),
    )))
}

/// A catalog file as the local object store names it. The location is made
/// from the absolute path segment by segment (`Path::from` of the path's text
/// would escape a `.` segment or a `%` once too often, and the store would
/// look for a file that does not exist).
fn stored_file(root: &std::path::Path, file: &FileEntry) -> Result<PartitionedFile> {
    let path = root.join(&file.path);
    let location =
        ObjectPath::from_absolute_path(&path).map_err(|source| Error::FilePath { path, source })?;
    Ok(PartitionedFile::new_from_meta(ObjectMeta {
        location,
        last_modified: chrono::DateTime::UNIX_EPOCH,
        size: file.bytes,
        e_tag: None,
        version: None,
    }))
}

/// One day: each lane of files a sorted partition, the memtable rows
/// another, filtered and merged by message time.
fn day_plan(
    snapshot: &TelemetrySnapshot,
    schema: &SchemaRef,
    (files, memory): DayInput,
    predicate: &Arc<dyn PhysicalExpr>,
    readers: &Arc<dyn ParquetFileReaderFactory>,
    batch_size: usize,
) -> Result<Arc<dyn ExecutionPlan>> {
    let order = LexOrdering::new([PhysicalSortExpr::new_default(Arc::new(
        datafusion::physical_expr::expressions::Column::new(columns::MESSAGE_TIME, 1),
    ))])
    .ok_or_else(|| Error::Internal("empty ordering".into()))?;
    let mut inputs: Vec<Arc<dyn ExecutionPlan>> = Vec::new();
    if !files.is_empty() {
        let source = ParquetSource::new(schema.clone())
            .with_predicate(predicate.clone())
            .with_pushdown_filters(true)
            .with_enable_page_index(true)
            .with_parquet_file_reader_factory(readers.clone());
        let groups = files
            .iter()
            .map(|lane| {
                let lane = lane
                    .iter()
                    .map(|f| stored_file(&snapshot.root, f))
                    .collect::<Result<Vec<_>>>()?;
                Ok(FileGroup::new(lane))
            })
            .collect::<Result<Vec<_>>>()?;
        let config =
            FileScanConfigBuilder::new(ObjectStoreUrl::local_filesystem(), Arc::new(source))
                .with_file_groups(groups)
                .with_output_ordering(vec![order.clone()])
                .with_batch_size(Some(batch_size))
                .build();
        inputs.push(DataSourceExec::from_data_source(config));
    }
    if !memory.is_empty() {
        inputs.push(
            MemorySourceConfig::try_new_exec(
                &[vec![sorted_by_message_time(schema, &memory)?]],
                schema.clone(),
                None,
            )
            .map_err(Error::Plan)?,
        );
    }
    let union = UnionExec::try_new(inputs).map_err(Error::Plan)?;
    // The Parquet reader applies each conjunct it can push down row by row
    // (exactly: DataFusion's own planner drops its FilterExec on the same
    // test), and `memtable_rows` applied the predicate to the memtable's
    // rows, so filtering again is needed only for a conjunct the reader
    // cannot take. Every one of ours is a comparison on a key column.
    let exact = split_conjunction(predicate)
        .into_iter()
        .all(|conjunct| can_expr_be_pushed_down_with_schemas(conjunct, schema));
    let filtered: Arc<dyn ExecutionPlan> = if exact {
        union
    } else {
        Arc::new(FilterExec::try_new(predicate.clone(), union).map_err(Error::Plan)?)
    };
    if filtered
        .properties()
        .output_partitioning()
        .partition_count()
        == 1
    {
        return Ok(filtered);
    }
    Ok(Arc::new(
        SortPreservingMergeExec::new(order, filtered).with_fetch(None),
    ))
}

/// Memtable rows as one batch sorted by message time: each memtable batch's
/// rows are sorted, but a range's rows may come from several batches
/// (several writes).
fn sorted_by_message_time(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<RecordBatch> {
    let all = concat_batches(schema, batches).map_err(Error::Arrow)?;
    let order = sort_to_indices(all.column(1), None, None).map_err(Error::Arrow)?;
    take_record_batch(&all, &order).map_err(Error::Arrow)
}

/// The memtable rows of the request, aligned to the scan schema, sorted, split by day.
fn memtable_rows(
    batch: &RecordBatch,
    schema: &SchemaRef,
    request: &ScanRequest,
    server: (i64, i64),
) -> Result<Vec<(i64, RecordBatch)>> {
    let Some(keys) = columns::key_columns(batch) else {
        return Err(Error::Internal(
            "a memtable batch lacks its key columns".into(),
        ));
    };
    let (trackers, times, servers) = (keys.tracker, keys.message_time, keys.server_time);
    let (from, to) = request.message;
    let mask: BooleanArray = (0..batch.num_rows())
        .map(|i| {
            let (t, m, s) = (trackers.value(i), times.value(i), servers.value(i));
            Some(t == request.tracker && from <= m && m < to && server.0 <= s && s < server.1)
        })
        .collect();
    if mask.true_count() == 0 {
        return Ok(Vec::new());
    }
    let kept = filter_record_batch(batch, &mask).map_err(Error::Arrow)?;
    let arrays: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| match kept.column_by_name(f.name()) {
            // Text asked for as views: the memtable holds `Utf8`.
            Some(column) if column.data_type() != f.data_type() => {
                datafusion::arrow::compute::cast(column, f.data_type()).map_err(Error::Arrow)
            }
            Some(column) => Ok(column.clone()),
            None => Ok(datafusion::arrow::array::new_null_array(
                f.data_type(),
                kept.num_rows(),
            )),
        })
        .collect::<Result<_>>()?;
    let aligned = RecordBatch::try_new(schema.clone(), arrays).map_err(Error::Arrow)?;
    let order = sort_to_indices(aligned.column(1), None, None).map_err(Error::Arrow)?;
    let sorted = take_record_batch(&aligned, &order).map_err(Error::Arrow)?;
    let times = sorted.column(1).as_primitive::<TimestampMillisecondType>();
    let mut out = Vec::new();
    let mut start = 0;
    while start < sorted.num_rows() {
        let day = times.value(start).div_euclid(DAY_MS);
        let mut end = start;
        while end < sorted.num_rows() && times.value(end).div_euclid(DAY_MS) == day {
            end += 1;
        }
        out.push((day, sorted.slice(start, end - start)));
        start = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, TimestampMillisecondArray, UInt64Array};
    use datafusion::arrow::datatypes::{DataType, Int64Type};
    use futures::TryStreamExt;

    use super::*;

    fn keyed(rows: &[(i64, u64, i64)]) -> (SchemaRef, RecordBatch) {
        let schema = Arc::new(Schema::new(vec![
            Field::new(columns::TRACKER_ID, DataType::Int64, false),
            Field::new(columns::MESSAGE_TIME, columns::time_type(), false),
            Field::new("speed", DataType::Int64, true),
            Field::new(columns::CONTENT_HASH, DataType::UInt64, false),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![1; rows.len()])),
                Arc::new(
                    TimestampMillisecondArray::from_iter_values(rows.iter().map(|r| r.0))
                        .with_timezone("UTC"),
                ),
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
                Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.1))),
            ],
        )
        .unwrap();
        (schema, batch)
    }

    /// A memtable batch of `trackers`' rows at times 1, 2, ... (event id = time).
    fn memtable_batch(trackers: &[i64]) -> RecordBatch {
        let time = |values: Vec<i64>| {
            Arc::new(TimestampMillisecondArray::from(values).with_timezone("UTC")) as ArrayRef
        };
        let times: Vec<i64> = (1..=trackers.len() as i64).collect();
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new(columns::TRACKER_ID, DataType::Int64, false),
                Field::new(columns::MESSAGE_TIME, columns::time_type(), false),
                Field::new(columns::SERVER_TIME, columns::time_type(), false),
                Field::new("event_id", DataType::Int64, true),
            ])),
            vec![
                Arc::new(Int64Array::from(trackers.to_vec())),
                time(times.clone()),
                time(times.clone()),
                Arc::new(Int64Array::from(times)),
            ],
        )
        .unwrap()
    }

    #[test]
    fn files_go_to_as_few_lanes_as_their_spans_overlap() {
        // a, b and e follow each other; c overlaps a, and d follows c.
        let spans = vec![
            (0, 10, 'a'),
            (11, 20, 'b'),
            (5, 8, 'c'),
            (21, 30, 'd'),
            (20, 25, 'e'),
        ];
        assert_eq!(lanes(spans), [vec!['a', 'b', 'e'], vec!['c', 'd']]);
        // Equal times may meet at a lane's seam (rows stay in order).
        assert_eq!(lanes(vec![(0, 5, 1), (5, 9, 2)]), [vec![1, 2]]);
        // Three spans over one instant: three lanes.
        assert_eq!(lanes(vec![(0, 9, 1), (3, 4, 2), (2, 7, 3)]).len(), 3);
        assert!(lanes(Vec::<(i64, i64, u8)>::new()).is_empty());
    }

    /// An export's stream holds its rows of the memtable, not the
    /// memtable's batches: a flush during a long export frees them.
    #[tokio::test]
    async fn a_scan_stream_does_not_hold_the_memtable_batches() {
        let batch = memtable_batch(&[1, 2, 1, 2]);
        let held = batch.column(3).clone();
        let snapshot = Arc::new(TelemetrySnapshot {
            unflushed: vec![batch],
            ..TelemetrySnapshot::default()
        });
        let request = ScanRequest {
            tracker: 1,
            message: (0, 1_000),
            server: None,
            columns: vec!["event_id".into()],
            batch_size: 8192,
            with_server_time: true,
            string_views: false,
        };
        let stream = scan(snapshot, request, crate::task_context()).unwrap();
        assert_eq!(
            Arc::strong_count(&held),
            1,
            "only the test holds the memtable's column"
        );
        let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
        let events: Vec<i64> = batches
            .iter()
            .flat_map(|b| b.column(3).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        assert_eq!(events, [1, 3], "tracker 1's rows, read from the copies");
    }

    #[test]
    fn a_row_in_clickhouse_and_still_in_the_memtable_is_read_once() {
        // Merged on message time: (time, hash, speed). Hash 7 at time 10
        // came from both sides, once across a batch boundary; hash 8 at
        // time 10 is another message of the same millisecond.
        let (schema, first) = keyed(&[(10, 7, 1), (10, 8, 2)]);
        let (_, second) = keyed(&[(10, 7, 1), (11, 7, 3), (11, 7, 3), (12, 9, 4)]);
        let out = Arc::new(Schema::new(schema.fields()[..3].to_vec()));
        let mut seen = FirstOfKey::default();
        let a = seen.keep_first(&first, &out).unwrap();
        let b = seen.keep_first(&second, &out).unwrap();
        assert_eq!(a.schema(), out, "the hash column is dropped");
        let speeds = |batch: &RecordBatch| {
            batch
                .column(2)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .values()
                .to_vec()
        };
        assert_eq!(speeds(&a), vec![1, 2]);
        assert_eq!(speeds(&b), vec![3, 4], "each key once, the first kept");
    }
}
