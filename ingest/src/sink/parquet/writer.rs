//! Sorting batches into day files, and reading keys back.

use std::collections::HashMap;
use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use arrow::compute::{SortColumn, lexsort_to_indices, take_record_batch};
use arrow::datatypes::{Int64Type, TimestampMillisecondType};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection, RowSelector};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::SortingColumn;
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::statistics::Statistics;
use parquet::schema::types::ColumnPath;
use schemas::columns::{self, InnerKind, KeyColumns};
use schemas::{FileEntry, InnerLists, TrackerSpan};

use super::ParquetConfig;
use super::catalog::sync_dir;
use super::footers::Footers;
use crate::batch::day_of;
use crate::dedup::PartitionKey;
use crate::{Error, Result};

/// Most inner columns one file holds: a day whose trackers have more between
/// them is written to several files.
const MAX_FILE_INNER_COLUMNS: usize = 4_096;

/// Null cells a file may hold for each value, beyond [`FILE_NULL_SLACK`]:
/// rows of trackers with other columns, or a row with many columns of its
/// own, go to another file of the day rather than widen every row.
const FILE_NULLS_PER_VALUE: usize = 16;
/// Null cells any file may hold regardless.
const FILE_NULL_SLACK: usize = 4 * 1024 * 1024;

/// Most cells (rows × columns) of one batch handed to the Parquet writer:
/// about 8 MB of gathered arrays at a time (a row group takes several;
/// 4 Mi cells held 32 MB at each flush's peak).
const MAX_CHUNK_CELLS: usize = 1024 * 1024;

/// The rows of one tracker on one UTC day, sorted by message time: a run of
/// rows of one of the sorted input batches (its `source`), and the inner
/// columns of that batch it has values in.
/// A flush has about a piece per row, so its numbers are held in 32 bits
/// (a source has at most 64 Ki rows, and a flush a few thousand sources):
/// 40 bytes a piece rather than 56, 13 MB less at a flush's peak.
#[derive(Debug)]
struct Piece {
    day: i64,
    tracker: i64,
    source: u32,
    start: u32,
    len: u32,
    /// Inner cells with a value.
    values: u32,
    /// Where [`Names::inner`] lists the indices into the source's fields of
    /// the inner columns with a value here (a flush has about a piece per
    /// row: no allocation of its own; pieces of a source with the same
    /// columns share one list).
    inner: (u32, u32),
}

impl Piece {
    fn source(&self) -> usize {
        self.source as usize
    }

    fn start(&self) -> usize {
        self.start as usize
    }

    fn len(&self) -> usize {
        self.len as usize
    }

    /// Its rows in its source.
    fn rows(&self) -> std::ops::Range<usize> {
        self.start()..self.start() + self.len()
    }
}

/// The inner columns' names of a flush's sources, each once, so that pieces
/// compare names as numbers (a flush of rows from 10,000 interleaved
/// trackers has about a piece per row).
#[derive(Debug, Default)]
struct Names {
    names: Vec<String>,
    ids: HashMap<String, u32, foldhash::quality::RandomState>,
    /// For each source, the id of each of its fields ([`NOT_INNER`] for the
    /// fixed columns).
    of_field: Vec<Vec<u32>>,
    /// The pieces' inner columns (indices into their source's fields), side by side.
    inner: Vec<u32>,
}

const NOT_INNER: u32 = u32::MAX;

impl Names {
    /// Adds the next source's fields.
    fn add_source(&mut self, schema: &arrow::datatypes::Schema) {
        let ids = schema
            .fields()
            .iter()
            .map(|field| {
                let name = field.name();
                if InnerKind::split(name).is_none() {
                    return NOT_INNER;
                }
                if let Some(&id) = self.ids.get(name) {
                    return id;
                }
                let id = self.names.len() as u32;
                self.names.push(name.clone());
                self.ids.insert(name.clone(), id);
                id
            })
            .collect();
        self.of_field.push(ids);
    }

    /// The indices into its source's fields of the inner columns `piece` has values in.
    fn fields(&self, piece: &Piece) -> &[u32] {
        &self.inner[piece.inner.0 as usize..piece.inner.1 as usize]
    }

    /// The ids of the inner columns `piece` has values in.
    fn of<'s>(&'s self, piece: &'s Piece) -> impl Iterator<Item = u32> + 's {
        let ids = &self.of_field[piece.source()];
        self.fields(piece)
            .iter()
            .map(move |&field| ids[field as usize])
    }
}

/// Writes the rows of `batches` to day files, sorted by (tracker, message time).
///
/// Memory stays bounded by the input and one chunk: nothing brings all the
/// batches to one schema. Each input batch is cut into pieces of one tracker
/// and day (sorted first if it is not); a day's pieces go to files of at
/// most [`MAX_FILE_INNER_COLUMNS`] inner columns; each file is written chunk
/// by chunk, every column of a chunk gathered from its tracker's pieces (a
/// piece without the column gives nulls). The files are added to `written`
/// as they are written, so that a caller whose write or commit fails can
/// delete them.
pub(crate) fn write_day_files(
    config: &ParquetConfig,
    batches: &[RecordBatch],
    mut next_id: impl FnMut() -> u64,
    written: &mut Vec<FileEntry>,
) -> Result<()> {
    let (sources, names, pieces) = pieces(batches)?;
    let mut start = 0;
    while start < pieces.len() {
        let day = pieces[start].day;
        let end = start + pieces[start..].iter().take_while(|p| p.day == day).count();
        for file in file_groups(&names, &pieces[start..end]) {
            written.push(write_file(
                config,
                &sources,
                &names,
                &file.pieces,
                file.names,
                day,
                next_id(),
            )?);
        }
        start = end;
    }
    Ok(())
}

/// The batches sorted by (day, tracker, message time), the names of their
/// inner columns, and their pieces ordered by (day, tracker), input order
/// kept among equals.
fn pieces(batches: &[RecordBatch]) -> Result<(Vec<RecordBatch>, Names, Vec<Piece>)> {
    let sorted = batches
        .iter()
        .filter(|b| b.num_rows() > 0)
        .map(sorted_by_day_tracker_time)
        .collect::<Result<Vec<_>>>()?;
    // Counted first: a flush of interleaved trackers has about a piece per
    // row, and a vector grown by doubling held up to three times the
    // pieces while it moved (a hundred MB of a million-row flush).
    let mut count = 0;
    for batch in &sorted {
        let keys = columns::key_columns(batch).ok_or(missing(columns::TRACKER_ID))?;
        let key = |i: usize| (day_of(keys.message_time.value(i)), keys.tracker.value(i));
        count += 1
            + (1..batch.num_rows())
                .filter(|&i| key(i) != key(i - 1))
                .count();
    }
    let mut sources = Vec::with_capacity(sorted.len());
    let mut names = Names::default();
    let mut pieces = Vec::with_capacity(count);
    for sorted in sorted {
        let keys = columns::key_columns(&sorted).ok_or(missing(columns::TRACKER_ID))?;
        let key = |i: usize| (day_of(keys.message_time.value(i)), keys.tracker.value(i));
        names.add_source(sorted.schema_ref());
        let ids = names.of_field.last().map_or(&[][..], Vec::as_slice);
        // The inner columns with a value somewhere, and their nulls.
        let inner: Vec<(u32, Option<arrow::buffer::NullBuffer>)> = sorted
            .columns()
            .iter()
            .enumerate()
            .filter(|&(i, array)| ids[i] != NOT_INNER && array.null_count() < array.len())
            .map(|(i, array)| (i as u32, array.logical_nulls()))
            .collect();
        let source = sources.len();
        // The previous piece's list of columns: the next one with the same
        // list shares it (a batch's trackers mostly send the same names,
        // and a list per piece of a million-row flush took tens of MB).
        let mut previous: Option<(usize, usize)> = None;
        let mut start = 0;
        while start < sorted.num_rows() {
            let (day, tracker) = key(start);
            let mut end = start + 1;
            while end < sorted.num_rows() && key(end) == (day, tracker) {
                end += 1;
            }
            let len = end - start;
            let narrow = |n: usize| u32::try_from(n).map_err(|_| too_many_cells());
            let mut piece = Piece {
                day,
                tracker,
                source: narrow(source)?,
                start: narrow(start)?,
                len: narrow(len)?,
                inner: (0, 0),
                values: 0,
            };
            let first = names.inner.len();
            for (index, nulls) in &inner {
                let present = match nulls {
                    None => len,
                    Some(nulls) if len == 1 => usize::from(nulls.is_valid(start)),
                    Some(nulls) => len - nulls.slice(start, len).null_count(),
                };
                if present > 0 {
                    names.inner.push(*index);
                    piece.values += narrow(present)?;
                }
            }
            let mut list = (first, names.inner.len());
            match previous {
                Some((from, to)) if names.inner[from..to] == names.inner[first..] => {
                    names.inner.truncate(first);
                    list = (from, to);
                }
                _ => previous = Some(list),
            }
            piece.inner = (
                u32::try_from(list.0).map_err(|_| too_many_cells())?,
                u32::try_from(list.1).map_err(|_| too_many_cells())?,
            );
            pieces.push(piece);
            start = end;
        }
        sources.push(sorted);
    }
    // In place: the input order among equals is (source, start), which
    // the key carries (a stable sort took a buffer of half the pieces).
    pieces.sort_unstable_by_key(|p| (p.day, p.tracker, p.source, p.start));
    Ok((sources, names, pieces))
}

/// `batch` sorted by (day, tracker, message time): itself when it already is
/// (memtable batches and file reads are), else a sorted copy.
fn sorted_by_day_tracker_time(batch: &RecordBatch) -> Result<RecordBatch> {
    let keys = columns::key_columns(batch).ok_or(missing(columns::TRACKER_ID))?;
    let key = |i: usize| {
        let time = keys.message_time.value(i);
        (day_of(time), keys.tracker.value(i), time)
    };
    if (1..batch.num_rows()).all(|i| key(i - 1) <= key(i)) {
        return Ok(batch.clone());
    }
    let days: Int64Array = keys.message_time.iter().map(|t| t.map(day_of)).collect();
    let sort = [
        SortColumn {
            values: Arc::new(days),
            options: None,
        },
        SortColumn {
            values: Arc::new(keys.tracker.clone()),
            options: None,
        },
        SortColumn {
            values: Arc::new(keys.message_time.clone()),
            options: None,
        },
    ];
    let order = lexsort_to_indices(&sort, None).map_err(Error::Arrow)?;
    take_record_batch(batch, &order).map_err(Error::Arrow)
}

/// The trackers of one file and its inner columns, sorted.
#[derive(Debug)]
struct FileGroup<'p> {
    pieces: Vec<&'p Piece>,
    names: Vec<String>,
}

/// A day's pieces cut into files: each piece, in tracker order, goes to the
/// first file it fits, within [`MAX_FILE_INNER_COLUMNS`] columns and
/// [`FILE_NULLS_PER_VALUE`] null cells per value (plus the slack). Trackers
/// with the same columns share a file; a tracker's rows span files only when
/// their columns differ that much (a day that predates the limit on its
/// columns, or a fleet of very different devices).
fn file_groups<'p>(names: &Names, day: &'p [Piece]) -> Vec<FileGroup<'p>> {
    struct Open<'p> {
        pieces: Vec<&'p Piece>,
        /// Which of the flush's names the file has, by id, and how many.
        has: Vec<bool>,
        width: usize,
        rows: usize,
        values: usize,
    }
    let mut open: Vec<Open<'_>> = Vec::new();
    let mut own: Vec<u32> = Vec::new();
    for piece in day {
        own.clear();
        own.extend(names.of(piece));
        let (rows, values) = (piece.len(), piece.values as usize);
        let fits = |group: &Open<'_>| {
            let width = group.width + own.iter().filter(|&&id| !group.has[id as usize]).count();
            let (rows, values) = (group.rows + rows, group.values + values);
            width <= MAX_FILE_INNER_COLUMNS
                && rows * width <= values * (FILE_NULLS_PER_VALUE + 1) + FILE_NULL_SLACK
        };
        let index = match open.iter().position(fits) {
            Some(index) => index,
            None => {
                open.push(Open {
                    pieces: Vec::new(),
                    has: vec![false; names.names.len()],
                    width: 0,
                    rows: 0,
                    values: 0,
                });
                open.len() - 1
            }
        };
        let group = &mut open[index];
        for &id in &own {
            if !std::mem::replace(&mut group.has[id as usize], true) {
                group.width += 1;
            }
        }
        group.rows += rows;
        group.values += values;
        group.pieces.push(piece);
    }
    open.into_iter()
        .map(|group| {
            let mut own: Vec<String> = (group.has.iter().enumerate())
                .filter(|(_, has)| **has)
                .map(|(id, _)| names.names[id].clone())
                .collect();
            own.sort_unstable();
            FileGroup {
                pieces: group.pieces,
                names: own,
            }
        })
        .collect()
}

/// A flush whose pieces name more than 2^32 inner cells between them.
fn too_many_cells() -> Error {
    Error::Arrow(arrow::error::ArrowError::ComputeError(
        "a flush of more than 2^32 inner columns of pieces".to_owned(),
    ))
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

/// The rows of a file in order, as (source, row): tracker by tracker, each
/// one's pieces merged by message time (the pieces' own order among equal
/// times). `keys` are the sources' key columns, by source.
fn file_order(keys: &[KeyColumns<'_>], pieces: &[&Piece]) -> Vec<(usize, usize)> {
    let mut order = Vec::with_capacity(pieces.iter().map(|p| p.len()).sum());
    let mut start = 0;
    while start < pieces.len() {
        let tracker = pieces[start].tracker;
        let end = start
            + pieces[start..]
                .iter()
                .take_while(|p| p.tracker == tracker)
                .count();
        let tracker_pieces = &pieces[start..end];
        // A tracker's pieces mostly follow each other in time (each a later
        // write's rows): then they are taken as they come, with no sort.
        let one_after_another = tracker_pieces.windows(2).all(|pair| {
            let (before, after) = (pair[0], pair[1]);
            keys[before.source()]
                .message_time
                .value(before.rows().end - 1)
                <= keys[after.source()].message_time.value(after.start())
        });
        if one_after_another {
            for piece in tracker_pieces {
                order.extend(piece.rows().map(|row| (piece.source(), row)));
            }
        } else {
            let mut rows = Vec::new();
            for (index, piece) in tracker_pieces.iter().enumerate() {
                let times = keys[piece.source()].message_time;
                rows.extend(
                    piece
                        .rows()
                        .map(|row| (times.value(row), index, piece.source(), row)),
                );
            }
            rows.sort_unstable();
            order.extend(rows.into_iter().map(|(_, _, source, row)| (source, row)));
        }
        start = end;
    }
    order
}

/// A source's columns by name.
type Columns<'s> = HashMap<&'s str, &'s ArrayRef, foldhash::quality::RandomState>;

/// One column of a file, from every source of the flush: each source's
/// array (cast to the file's type, or a one-row null array where the
/// source lacks the column). Made once per file: looking each source's
/// column up by name for every chunk cost sources × columns hash look-ups
/// a chunk, and a flush of per-write batches has thousands of sources.
struct Gatherer {
    arrays: Vec<ArrayRef>,
    /// Which sources have the column.
    present: Vec<bool>,
    /// Whether all do (the picks then index the sources' arrays as they are).
    everywhere: bool,
}

impl Gatherer {
    fn new(field: &arrow::datatypes::Field, maps: &[Columns<'_>]) -> Result<Self> {
        let nulls = arrow::array::new_null_array(field.data_type(), 1);
        let mut arrays = Vec::with_capacity(maps.len());
        let mut present = Vec::with_capacity(maps.len());
        for map in maps {
            let column = map.get(field.name().as_str()).copied();
            present.push(column.is_some());
            arrays.push(match column {
                Some(column) if column.data_type() == field.data_type() => column.clone(),
                Some(column) => {
                    arrow::compute::cast(column, field.data_type()).map_err(Error::Arrow)?
                }
                None => nulls.clone(),
            });
        }
        let everywhere = present.iter().all(|&has| has);
        Ok(Self {
            arrays,
            present,
            everywhere,
        })
    }

    /// The column of the rows `order` (source, row) picks (a source without
    /// it gives nulls). `scratch` holds the picks remapped when a source
    /// lacks the column; it is kept across the columns of a file, so a
    /// flush does not fault in a fresh index of every row for every column.
    fn gather(
        &self,
        order: &[(usize, usize)],
        scratch: &mut Vec<(usize, usize)>,
    ) -> Result<ArrayRef> {
        let indices = if self.everywhere {
            order
        } else {
            scratch.clear();
            scratch.extend(
                order
                    .iter()
                    .map(|&(source, row)| (source, if self.present[source] { row } else { 0 })),
            );
            scratch.as_slice()
        };
        let arrays: Vec<&dyn Array> = self.arrays.iter().map(|a| a.as_ref()).collect();
        arrow::compute::interleave(&arrays, indices).map_err(Error::Arrow)
    }
}

/// Inner columns beyond which a file is written lean: no dictionaries and no
/// compression for inner columns (each column writer then costs little;
/// only a day that predates the limit on its columns has such a file).
const LEAN_FILE_INNER_COLUMNS: usize = 1_024;

fn properties(config: &ParquetConfig, inner_columns: usize) -> Result<WriterProperties> {
    let level = ZstdLevel::try_new(config.zstd_level).map_err(|source| Error::Parquet {
        path: config.root.clone(),
        source,
    })?;
    let lean = inner_columns > LEAN_FILE_INNER_COLUMNS;
    let mut builder = WriterProperties::builder()
        .set_compression(if lean {
            Compression::UNCOMPRESSED
        } else {
            Compression::ZSTD(level)
        })
        // Statistics only for the key columns (below): reads prune by
        // tracker and time, nothing prunes by another column, and each
        // value's min/max cost the flush 6% (decision 140).
        .set_statistics_enabled(EnabledStatistics::None)
        .set_dictionary_enabled(!lean)
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
    // Positions are nearly all distinct: a dictionary only costs the
    // flusher its hashing, and zstd packs the plain values smaller.
    for position in [columns::LAT, columns::LNG] {
        builder = builder.set_column_dictionary_enabled(ColumnPath::from(position), false);
    }
    // Tracker ids are sorted runs: deltas of 0 within a run, small from one
    // tracker to the next.
    builder = builder
        .set_column_dictionary_enabled(ColumnPath::from(columns::TRACKER_ID), false)
        .set_column_encoding(
            ColumnPath::from(columns::TRACKER_ID),
            Encoding::DELTA_BINARY_PACKED,
        );
    // Pruning, by readers and the dedup index's key reads, needs the key
    // columns' page statistics whatever the width.
    for key in [
        columns::TRACKER_ID,
        columns::MESSAGE_TIME,
        columns::SERVER_TIME,
    ] {
        builder =
            builder.set_column_statistics_enabled(ColumnPath::from(key), EnabledStatistics::Page);
    }
    Ok(builder.build())
}

/// Writes one file of a day: its trackers in order, each one's pieces merged
/// by time, in chunks of at most [`MAX_CHUNK_CELLS`] cells.
fn write_file(
    config: &ParquetConfig,
    sources: &[RecordBatch],
    flush_names: &Names,
    pieces: &[&Piece],
    names: Vec<String>,
    day: i64,
    id: u64,
) -> Result<FileEntry> {
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
    let schema = columns::schema_with(&names);
    let mut writer =
        ArrowWriter::try_new(file, schema.clone(), Some(properties(config, names.len())?))
            .map_err(parquet_error)?;
    let chunk_rows =
        (MAX_CHUNK_CELLS / schema.fields().len().max(1)).clamp(1, config.row_group_rows.max(1));
    // Each of the flush's names' place among this file's, by id.
    let mut position = vec![NOT_INNER; flush_names.names.len()];
    for (i, name) in names.iter().enumerate() {
        if let Some(&id) = flush_names.ids.get(name) {
            position[id as usize] = i as u32;
        }
    }

    // Each source's columns by name, looked up once per file (a wide file
    // has thousands of columns; a schema lookup by name is a linear scan).
    let maps: Vec<Columns<'_>> = sources
        .iter()
        .map(|source| {
            source
                .schema_ref()
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .zip(source.columns())
                .collect()
        })
        .collect();
    // Each source's key columns, found by name once: a flush of
    // interleaved trackers has about a piece per row, and looking them up
    // for each piece (a scan of the schema's names) took about 6% of the
    // flusher's samples in `perf`.
    let keys = sources
        .iter()
        .map(|source| columns::key_columns(source).ok_or(missing(columns::TRACKER_ID)))
        .collect::<Result<Vec<_>>>()?;
    let order = file_order(&keys, pieces);
    let gatherers = schema
        .fields()
        .iter()
        .map(|field| Gatherer::new(field, &maps))
        .collect::<Result<Vec<_>>>()?;
    let mut scratch = Vec::new();
    for chunk in order.chunks(chunk_rows) {
        let arrays = gatherers
            .iter()
            .map(|column| column.gather(chunk, &mut scratch))
            .collect::<Result<Vec<_>>>()?;
        let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(Error::Arrow)?;
        writer.write(&batch).map_err(parquet_error)?;
    }

    let mut spans: Vec<TrackerSpan> = Vec::new();
    let mut server = (i64::MAX, i64::MIN);
    // Which span (by ordinal, from 1) last took each of the file's inner
    // columns: a tracker's pieces, about one per row of a flush of
    // interleaved trackers, repeat its names.
    let mut taken = vec![0usize; names.len()];
    // The list of the span being filled, and the file's lists so far: the
    // catalog keeps them as long as the file lives, each distinct one once.
    let mut list: Vec<u32> = Vec::new();
    let mut lists = InnerLists::default();
    let mut close = |span: Option<&mut TrackerSpan>, list: &mut Vec<u32>| {
        if let Some(span) = span {
            list.sort_unstable();
            span.inner = lists.share(list);
        }
        list.clear();
    };
    for piece in pieces {
        let keys = &keys[piece.source()];
        if spans
            .last()
            .is_none_or(|span| span.tracker_id != piece.tracker)
        {
            close(spans.last_mut(), &mut list);
            spans.push(TrackerSpan {
                tracker_id: piece.tracker,
                message_time_min_ms: i64::MAX,
                message_time_max_ms: i64::MIN,
                rows: 0,
                inner: Arc::from([]),
            });
        }
        let ordinal = spans.len();
        let span = &mut spans[ordinal - 1];
        for i in piece.rows() {
            let (m, s) = (keys.message_time.value(i), keys.server_time.value(i));
            span.message_time_min_ms = span.message_time_min_ms.min(m);
            span.message_time_max_ms = span.message_time_max_ms.max(m);
            server = (server.0.min(s), server.1.max(s));
        }
        span.rows += u64::from(piece.len);
        let inner = flush_names
            .of(piece)
            .map(|id| position[id as usize])
            .filter(|&i| i != NOT_INNER);
        for i in inner {
            if std::mem::replace(&mut taken[i as usize], ordinal) != ordinal {
                list.push(i);
            }
        }
    }
    close(spans.last_mut(), &mut list);
    let rows = order.len() as u64;
    let file = writer.into_inner().map_err(parquet_error)?;
    file.sync_all().map_err(Error::io("syncing", &tmp))?;
    let bytes = file
        .metadata()
        .map_err(Error::io("reading metadata of", &tmp))?
        .len();
    std::fs::rename(&tmp, &path).map_err(Error::io("renaming", &path))?;
    sync_dir(&dir)?;

    Ok(FileEntry {
        id,
        path: relative,
        tracker_min: spans.first().map_or(0, |s| s.tracker_id),
        tracker_max: spans.last().map_or(0, |s| s.tracker_id),
        message_time_min_ms: spans
            .iter()
            .map(|s| s.message_time_min_ms)
            .min()
            .unwrap_or(0),
        message_time_max_ms: spans
            .iter()
            .map(|s| s.message_time_max_ms)
            .max()
            .unwrap_or(0),
        server_time_min_ms: server.0,
        server_time_max_ms: server.1,
        rows,
        bytes,
        inner_columns: names.into(),
        trackers: spans.into(),
    })
}

/// Appends the (message time, content hash) of the rows of each partition
/// (tracker, day) of `wanted`, with message times in its range, to its list
/// in `out`, reading only the three
/// key columns of the row groups, and within them of the pages, whose
/// tracker statistics overlap one of `wanted`'s trackers (sorted,
/// distinct).
///
/// The file's footer comes from `footers` (file `id`'s), decoded there
/// with the page index ([`read_options`](super::footers::read_options)): a flush file's row
/// group holds some thousand trackers, and decoding all of it for one
/// tracker's keys made the commits that wait for such a read the
/// half-rate tail (BENCHMARKS).
pub(crate) fn read_keys(
    path: &Path,
    id: u64,
    footers: &Footers,
    wanted: &HashMap<PartitionKey, Range<i64>>,
    trackers: &[i64],
    out: &mut HashMap<PartitionKey, Vec<(i64, u64)>>,
) -> Result<()> {
    let parquet_error = |source| Error::Parquet {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(Error::io("opening", path))?;
    let footer = footers.get(id, &file).map_err(parquet_error)?;
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, footer);
    let schema = builder.parquet_schema();
    let leaf = |name: &str| (0..schema.num_columns()).find(|&i| schema.column(i).name() == name);
    let (Some(t), Some(m), Some(h)) = (
        leaf(columns::TRACKER_ID),
        leaf(columns::MESSAGE_TIME),
        leaf(columns::CONTENT_HASH),
    ) else {
        return Err(missing(columns::CONTENT_HASH));
    };
    let overlaps = |min: i64, max: i64| {
        let first = trackers.partition_point(|&x| x < min);
        trackers.get(first).is_some_and(|&x| x <= max)
    };
    let groups: Vec<usize> = builder
        .metadata()
        .row_groups()
        .iter()
        .enumerate()
        .filter(|(_, group)| match group.column(t).statistics() {
            Some(Statistics::Int64(s)) => overlaps(
                s.min_opt().copied().unwrap_or(i64::MIN),
                s.max_opt().copied().unwrap_or(i64::MAX),
            ),
            _ => true,
        })
        .map(|(i, _)| i)
        .collect();
    let mask = ProjectionMask::leaves(schema, [t, m, h]);
    let selection = tracker_pages(builder.metadata(), &groups, t, overlaps);
    let reader = builder
        .with_projection(mask)
        .with_row_groups(groups)
        .with_row_selection(selection)
        .build()
        .map_err(parquet_error)?;
    // The rows are sorted by tracker: a partition's rows come in one run,
    // looked up once, and gathered in `run` until the next begins (two
    // SipHash look-ups a row were a third of the loader's samples in
    // `perf`; its CPU at the maximum rate fell from 13% to 7% of a core).
    let mut current: Option<(PartitionKey, Option<&Range<i64>>)> = None;
    let mut run: Vec<(i64, u64)> = Vec::new();
    let mut end_run = |current: Option<(PartitionKey, Option<&Range<i64>>)>,
                       run: &mut Vec<(i64, u64)>| {
        if let Some((partition, Some(_))) = current {
            out.entry(partition).or_default().append(run);
        }
    };
    for batch in reader {
        let batch = batch.map_err(Error::Arrow)?;
        let ids = batch
            .column_by_name(columns::TRACKER_ID)
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .ok_or(missing(columns::TRACKER_ID))?;
        let times = column_i64(&batch, columns::MESSAGE_TIME)?;
        let hashes = columns::content_hashes(&batch).ok_or(missing(columns::CONTENT_HASH))?;
        for i in 0..batch.num_rows() {
            let (tracker, time) = (ids.value(i), times.value(i));
            let partition = (tracker, day_of(time));
            if current.is_none_or(|(p, _)| p != partition) {
                end_run(current, &mut run);
                current = Some((partition, wanted.get(&partition)));
            }
            if let Some((_, Some(times))) = current
                && times.contains(&time)
            {
                run.push((time, hashes.value(i)));
            }
        }
    }
    end_run(current, &mut run);
    Ok(())
}

/// The rows of `groups` (in order) on the pages of the tracker column
/// (leaf `column`) whose statistics `overlaps` may hold a wanted tracker:
/// the pages between are skipped. A row group without a page index for
/// the column is read whole.
pub(super) fn tracker_pages(
    metadata: &parquet::file::metadata::ParquetMetaData,
    groups: &[usize],
    column: usize,
    overlaps: impl Fn(i64, i64) -> bool,
) -> RowSelection {
    let mut selectors = Vec::new();
    for &group in groups {
        let rows = usize::try_from(metadata.row_group(group).num_rows()).unwrap_or(0);
        let index = metadata
            .column_index()
            .and_then(|index| index.get(group)?.get(column));
        let pages = metadata
            .offset_index()
            .and_then(|offsets| offsets.get(group)?.get(column))
            .map(|offsets| offsets.page_locations());
        let (Some(ColumnIndexMetaData::INT64(index)), Some(pages)) = (index, pages) else {
            selectors.push(RowSelector::select(rows));
            continue;
        };
        for (page, location) in pages.iter().enumerate() {
            let first = usize::try_from(location.first_row_index).unwrap_or(0);
            let end = pages.get(page + 1).map_or(rows, |next| {
                usize::try_from(next.first_row_index).unwrap_or(rows)
            });
            let wanted = match (index.min_value(page), index.max_value(page)) {
                (Some(&min), Some(&max)) => overlaps(min, max),
                _ => true,
            };
            let len = end.saturating_sub(first);
            selectors.push(if wanted {
                RowSelector::select(len)
            } else {
                RowSelector::skip(len)
            });
        }
    }
    RowSelection::from(selectors)
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
    // Small batches, each kept whole as one source of the rewrite with only
    // the inner columns it has values in: a wide file's absent values are
    // materialized as nulls a thousand rows at a time, and the writer's
    // pieces already list each tracker's own columns, so cutting batches
    // per tracker (as once) only multiplied the sources, by up to the
    // number of trackers of the file, and the per-source work with them.
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(parquet_error)?
        .with_batch_size(1024)
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
            kept.push(crate::batch::valued_only(filtered)?);
        }
    }
    Ok((kept, read))
}
