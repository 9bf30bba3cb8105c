//! Sorting batches into day files, and reading keys back.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use arrow::compute::{SortColumn, concat_batches, lexsort_to_indices, take_record_batch};
use arrow::datatypes::{Int64Type, TimestampMillisecondType, UInt64Type};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::SortingColumn;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::statistics::Statistics;
use parquet::schema::types::ColumnPath;
use schemas::columns::{self, InnerKind};
use schemas::{FileEntry, TrackerSpan};

use super::ParquetConfig;
use super::catalog::sync_dir;
use crate::batch::day_of;
use crate::{Error, Result};

/// Brings batches with different inner columns to one schema (missing columns null).
pub(crate) fn unify(batches: &[RecordBatch]) -> Result<Option<RecordBatch>> {
    let inner: BTreeSet<String> = batches
        .iter()
        .flat_map(|b| {
            b.schema_ref()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect::<Vec<_>>()
        })
        .filter(|name| InnerKind::split(name).is_some())
        .collect();
    let names: Vec<String> = inner.into_iter().collect();
    let schema = columns::schema_with(&names);
    let mut aligned = Vec::with_capacity(batches.len());
    for batch in batches.iter().filter(|b| b.num_rows() > 0) {
        let arrays: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|field| {
                batch
                    .column_by_name(field.name())
                    .cloned()
                    .unwrap_or_else(|| {
                        arrow::array::new_null_array(field.data_type(), batch.num_rows())
                    })
            })
            .collect();
        aligned.push(RecordBatch::try_new(schema.clone(), arrays).map_err(Error::Arrow)?);
    }
    if aligned.is_empty() {
        return Ok(None);
    }
    concat_batches(&schema, &aligned)
        .map(Some)
        .map_err(Error::Arrow)
}

/// Sorts rows by (day, tracker_id, msg_time) and writes one file per day.
pub(crate) fn write_day_files(
    config: &ParquetConfig,
    batches: &[RecordBatch],
    mut next_id: impl FnMut() -> u64,
) -> Result<Vec<FileEntry>> {
    let Some(all) = unify(batches)? else {
        return Ok(Vec::new());
    };
    let times = column_i64(&all, columns::MESSAGE_TIME)?;
    let days: Int64Array = times.iter().map(|t| t.map(day_of)).collect();
    let sort = [
        SortColumn {
            values: Arc::new(days.clone()),
            options: None,
        },
        SortColumn {
            values: all
                .column_by_name(columns::TRACKER_ID)
                .cloned()
                .ok_or(missing(columns::TRACKER_ID))?,
            options: None,
        },
        SortColumn {
            values: all
                .column_by_name(columns::MESSAGE_TIME)
                .cloned()
                .ok_or(missing(columns::MESSAGE_TIME))?,
            options: None,
        },
    ];
    let order = lexsort_to_indices(&sort, None).map_err(Error::Arrow)?;
    let sorted = take_record_batch(&all, &order).map_err(Error::Arrow)?;
    let sorted_days = arrow::compute::take(&days, &order, None).map_err(Error::Arrow)?;
    let sorted_days = sorted_days.as_primitive::<Int64Type>();

    let mut entries = Vec::new();
    let mut start = 0;
    while start < sorted.num_rows() {
        let day = sorted_days.value(start);
        let mut end = start;
        while end < sorted.num_rows() && sorted_days.value(end) == day {
            end += 1;
        }
        let slice = drop_empty_inner_columns(&sorted.slice(start, end - start))?;
        entries.push(write_file(config, &slice, day, next_id())?);
        start = end;
    }
    Ok(entries)
}

fn missing(column: &'static str) -> Error {
    Error::Arrow(arrow::error::ArrowError::SchemaError(format!(
        "column {column} missing"
    )))
}

fn column_i64<'a>(
    batch: &'a RecordBatch,
    name: &'static str,
) -> Result<&'a arrow::array::PrimitiveArray<TimestampMillisecondType>> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<TimestampMillisecondType>())
        .ok_or(missing(name))
}

/// A file lists only the inner columns it has values for, so the catalog's
/// names are exact and `.*` expansion needs no scan.
fn drop_empty_inner_columns(batch: &RecordBatch) -> Result<RecordBatch> {
    let keep: Vec<String> = batch
        .schema_ref()
        .fields()
        .iter()
        .zip(batch.columns())
        .filter(|(field, array)| {
            InnerKind::split(field.name()).is_some() && array.null_count() < array.len()
        })
        .map(|(field, _)| field.name().clone())
        .collect();
    let schema = columns::schema_with(&keep);
    let arrays = schema
        .fields()
        .iter()
        .map(|f| {
            batch
                .column_by_name(f.name())
                .cloned()
                .ok_or_else(|| missing("inner"))
        })
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(schema, arrays).map_err(Error::Arrow)
}

fn properties(config: &ParquetConfig) -> Result<WriterProperties> {
    let level = ZstdLevel::try_new(config.zstd_level).map_err(|source| Error::Parquet {
        path: config.root.clone(),
        source,
    })?;
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_max_row_group_row_count(Some(config.row_group_rows.max(1)))
        .set_sorting_columns(Some(vec![
            SortingColumn {
                column_idx: 0,
                descending: false,
                nulls_first: false,
            },
            SortingColumn {
                column_idx: 1,
                descending: false,
                nulls_first: false,
            },
        ]));
    // Times are unique and increasing: a dictionary of every value plus an
    // index per row costs ~3.7 B/row, delta encoding a fraction of that. Every
    // read carries msg_time, so this decides what a narrow read costs.
    for time in [columns::MESSAGE_TIME, columns::SERVER_TIME] {
        builder = builder
            .set_column_dictionary_enabled(ColumnPath::from(time), false)
            .set_column_encoding(ColumnPath::from(time), Encoding::DELTA_BINARY_PACKED);
    }
    // Hashes are random: a dictionary never pays.
    builder = builder.set_column_dictionary_enabled(ColumnPath::from(columns::CONTENT_HASH), false);
    Ok(builder.build())
}

fn write_file(config: &ParquetConfig, batch: &RecordBatch, day: i64, id: u64) -> Result<FileEntry> {
    let date = chrono::DateTime::from_timestamp(day * 86_400, 0)
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| day.to_string());
    let relative = Path::new(&format!("day={date}")).join(format!("f{id:012}.parquet"));
    let path = config.root.join(&relative);
    let dir = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| config.root.clone());
    std::fs::create_dir_all(&dir).map_err(Error::io("creating", &dir))?;
    let tmp = path.with_extension("tmp");
    let file = File::create(&tmp).map_err(Error::io("creating", &tmp))?;
    let parquet_error = |source| Error::Parquet {
        path: tmp.clone(),
        source,
    };
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(properties(config)?))
        .map_err(parquet_error)?;
    writer.write(batch).map_err(parquet_error)?;
    let file = writer.into_inner().map_err(parquet_error)?;
    file.sync_all().map_err(Error::io("syncing", &tmp))?;
    let bytes = file
        .metadata()
        .map_err(Error::io("reading metadata of", &tmp))?
        .len();
    std::fs::rename(&tmp, &path).map_err(Error::io("renaming", &path))?;
    sync_dir(&dir)?;

    let trackers = batch
        .column_by_name(columns::TRACKER_ID)
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
        .ok_or(missing(columns::TRACKER_ID))?;
    let message = column_i64(batch, columns::MESSAGE_TIME)?;
    let server = column_i64(batch, columns::SERVER_TIME)?;
    let range = |a: &dyn Fn(usize) -> i64, rows: std::ops::Range<usize>| {
        rows.map(a)
            .fold((i64::MAX, i64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)))
    };
    let all = 0..batch.num_rows();
    let (tracker_min, tracker_max) = range(&|i| trackers.value(i), all.clone());
    let (message_time_min_ms, message_time_max_ms) = range(&|i| message.value(i), all.clone());
    let (server_time_min_ms, server_time_max_ms) = range(&|i| server.value(i), all);
    let inner: Vec<(String, ArrayRef)> = batch
        .schema_ref()
        .fields()
        .iter()
        .zip(batch.columns())
        .filter(|(f, _)| InnerKind::split(f.name()).is_some())
        .map(|(f, a)| (f.name().clone(), a.clone()))
        .collect();
    // Rows are sorted by tracker: each tracker is one contiguous run.
    let mut spans = Vec::new();
    let mut start = 0;
    while start < batch.num_rows() {
        let tracker = trackers.value(start);
        let mut end = start;
        while end < batch.num_rows() && trackers.value(end) == tracker {
            end += 1;
        }
        let (message_time_min_ms, message_time_max_ms) = range(&|i| message.value(i), start..end);
        let present = inner
            .iter()
            .enumerate()
            .filter(|(_, (_, array))| array.slice(start, end - start).null_count() < end - start)
            .map(|(i, _)| i as u32)
            .collect();
        spans.push(TrackerSpan {
            tracker_id: tracker,
            message_time_min_ms,
            message_time_max_ms,
            rows: (end - start) as u64,
            inner: present,
        });
        start = end;
    }
    Ok(FileEntry {
        id,
        path: relative,
        tracker_min,
        tracker_max,
        message_time_min_ms,
        message_time_max_ms,
        server_time_min_ms,
        server_time_max_ms,
        rows: batch.num_rows() as u64,
        bytes,
        inner_columns: inner.into_iter().map(|(name, _)| name).collect(),
        trackers: spans,
    })
}

/// Appends the (message time, content hash) of `tracker`'s rows with message
/// time in `[from, to)`, reading only the three key columns of the row groups
/// whose tracker statistics overlap.
pub(crate) fn read_keys(
    path: &Path,
    tracker: i64,
    (from, to): (i64, i64),
    out: &mut Vec<(i64, u64)>,
) -> Result<()> {
    let parquet_error = |source| Error::Parquet {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(Error::io("opening", path))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(parquet_error)?;
    let schema = builder.parquet_schema();
    let leaf = |name: &str| (0..schema.num_columns()).find(|&i| schema.column(i).name() == name);
    let (Some(t), Some(m), Some(h)) = (
        leaf(columns::TRACKER_ID),
        leaf(columns::MESSAGE_TIME),
        leaf(columns::CONTENT_HASH),
    ) else {
        return Err(missing(columns::CONTENT_HASH));
    };
    let groups: Vec<usize> = builder
        .metadata()
        .row_groups()
        .iter()
        .enumerate()
        .filter(|(_, group)| match group.column(t).statistics() {
            Some(Statistics::Int64(s)) => {
                s.min_opt().is_none_or(|min| *min <= tracker)
                    && s.max_opt().is_none_or(|max| *max >= tracker)
            }
            _ => true,
        })
        .map(|(i, _)| i)
        .collect();
    let mask = ProjectionMask::leaves(schema, [t, m, h]);
    let reader = builder
        .with_projection(mask)
        .with_row_groups(groups)
        .build()
        .map_err(parquet_error)?;
    for batch in reader {
        let batch = batch.map_err(Error::Arrow)?;
        let trackers = batch
            .column_by_name(columns::TRACKER_ID)
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .ok_or(missing(columns::TRACKER_ID))?;
        let times = column_i64(&batch, columns::MESSAGE_TIME)?;
        let hashes = batch
            .column_by_name(columns::CONTENT_HASH)
            .and_then(|c| c.as_primitive_opt::<UInt64Type>())
            .ok_or(missing(columns::CONTENT_HASH))?;
        for i in 0..batch.num_rows() {
            let time = times.value(i);
            if trackers.value(i) == tracker && time >= from && time < to {
                out.push((time, hashes.value(i)));
            }
        }
    }
    Ok(())
}

/// Reads a whole file, keeping the rows for which `keep(tracker, message time)`
/// holds; returns the kept batches and the number of rows read.
pub(crate) fn read_filtered(
    path: &Path,
    keep: &dyn Fn(i64, i64) -> bool,
) -> Result<(Vec<RecordBatch>, u64)> {
    let parquet_error = |source| Error::Parquet {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(Error::io("opening", path))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(parquet_error)?
        .build()
        .map_err(parquet_error)?;
    let mut kept = Vec::new();
    let mut read = 0;
    for batch in reader {
        let batch = batch.map_err(Error::Arrow)?;
        read += batch.num_rows() as u64;
        let trackers = batch
            .column_by_name(columns::TRACKER_ID)
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .ok_or(missing(columns::TRACKER_ID))?;
        let times = column_i64(&batch, columns::MESSAGE_TIME)?;
        let mask: arrow::array::BooleanArray = (0..batch.num_rows())
            .map(|i| Some(keep(trackers.value(i), times.value(i))))
            .collect();
        let filtered = arrow::compute::filter_record_batch(&batch, &mask).map_err(Error::Arrow)?;
        if filtered.num_rows() > 0 {
            kept.push(filtered);
        }
    }
    Ok((kept, read))
}
