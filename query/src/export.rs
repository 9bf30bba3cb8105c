//! The raw data export as a stream of encoded chunks: CSV, Parquet or NDJSON.
//!
//! The header is the first chunk, sent before any data is read, so the answer
//! starts at once; rows follow in chunks of about [`CHUNK_BYTES`] as the scan
//! yields batches. Dropping the stream (a client that went away) drops the scan.

use bytes::Bytes;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::{Stream, StreamExt};

use crate::columns::{ColumnPlan, Output};
use crate::csv::{
    Cell, CsvColumn, CsvEncoder, GPS_FIX_TYPE_NAMES, MN_TYPE_NAMES, MapEntry, MapValue,
};
use crate::{Error, Result};

mod typed;

/// Bytes gathered before a chunk is handed to the response.
pub const CHUNK_BYTES: usize = 256 * 1024;

/// How times are written.
#[derive(Debug, Clone, Copy)]
pub struct TimeFormat {
    /// The zone times are written in.
    pub zone: chrono_tz::Tz,
    /// ISO form (`2024-10-10T13:13:14+0600`) or plain (`2024-10-10 13:13:14`).
    pub iso: bool,
}

fn enum_names(column: &str) -> Option<&'static [&'static str]> {
    match column {
        "gps_fix_type" => Some(GPS_FIX_TYPE_NAMES),
        "mn_type" => Some(MN_TYPE_NAMES),
        _ => None,
    }
}

/// The CSV encoder for a column plan over the scan's batches.
pub fn csv_encoder(plan: &ColumnPlan, time: TimeFormat) -> Result<CsvEncoder> {
    let index = |storage: &str| {
        plan.scan_index(storage)
            .ok_or_else(|| Error::Internal(format!("column {storage} is not scanned")))
    };
    let mut columns = Vec::with_capacity(plan.outputs.len());
    for output in &plan.outputs {
        let (column, cell) = match &output.output {
            Output::MessageTime => (
                1,
                Cell::Time {
                    zone: time.zone,
                    iso: time.iso,
                },
            ),
            Output::ServerTime => (
                2,
                Cell::Time {
                    zone: time.zone,
                    iso: time.iso,
                },
            ),
            Output::Simple(name, ty) => {
                let cell = match (enum_names(name), ty) {
                    (Some(names), _) => Cell::Enum(names),
                    (None, schemas::columns::SimpleType::Utf8) => Cell::Text,
                    (None, _) => Cell::Number,
                };
                (index(name)?, cell)
            }
            Output::Flags => (index(schemas::columns::FLAGS)?, Cell::Number),
            Output::FlagBit(bit) => (index(schemas::columns::FLAGS)?, Cell::FlagBit(*bit)),
            Output::Inner(kind, name) => {
                let cell = match kind {
                    schemas::columns::InnerKind::States => Cell::StateValue,
                    _ => Cell::Number,
                };
                (index(name)?, cell)
            }
            Output::Map(kind, names) => {
                let entries = names
                    .iter()
                    .map(|name| {
                        let key = schemas::columns::InnerKind::split(name)
                            .map_or(name.as_str(), |(_, inner)| inner);
                        let value = match kind {
                            schemas::columns::InnerKind::States => MapValue::StateJson,
                            _ => MapValue::Number,
                        };
                        Ok(MapEntry {
                            key: key.to_owned(),
                            column: index(name)?,
                            value,
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                (0, Cell::JsonMap(entries))
            }
            Output::Null => (0, Cell::Null),
        };
        columns.push(CsvColumn {
            header: output.header.clone(),
            column,
            cell,
        });
    }
    Ok(CsvEncoder::new(columns))
}

/// The output formats of the raw data export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// CSV per clarifications 13-15 (`text/csv`).
    Csv,
    /// A Parquet file with the same rows and columns (clarification 17).
    Parquet,
    /// One JSON object per row (`application/x-ndjson`), for pipelines.
    NdJson,
}

impl Format {
    /// The answer's content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Csv => "text/csv; charset=utf-8",
            Self::Parquet => "application/vnd.apache.parquet",
            Self::NdJson => "application/x-ndjson",
        }
    }
}

/// Encodes a scan in `format` as a stream of chunks. The first chunk (the CSV
/// header) is sent before any data is read.
pub fn export_stream(
    plan: ColumnPlan,
    time: TimeFormat,
    format: Format,
    batches: SendableRecordBatchStream,
) -> Result<impl Stream<Item = Result<Bytes>> + Send> {
    let encoder: Box<dyn Encode> = match format {
        Format::Csv => Box::new(csv_encoder(&plan, time)?),
        Format::NdJson => Box::new(NdJson(typed::Typed::new(plan, time))),
        Format::Parquet => Box::new(ParquetOut::try_new(typed::Typed::new(plan, time))?),
    };
    Ok(spawn_chunks(encoder, batches))
}

/// An output format's encoder, fed batch by batch.
trait Encode: Send {
    /// What goes out before any row.
    fn start(&mut self, _out: &mut Vec<u8>) -> Result<()> {
        Ok(())
    }
    /// Appends a batch's rows.
    fn batch(&mut self, batch: &RecordBatch, out: &mut Vec<u8>) -> Result<()>;
    /// What goes out after the last row.
    fn finish(&mut self, _out: &mut Vec<u8>) -> Result<()> {
        Ok(())
    }
}

impl Encode for CsvEncoder {
    fn start(&mut self, out: &mut Vec<u8>) -> Result<()> {
        self.write_header(out);
        Ok(())
    }
    fn batch(&mut self, batch: &RecordBatch, out: &mut Vec<u8>) -> Result<()> {
        self.write_batch(batch, out).map_err(Error::Csv)
    }
}

struct NdJson(typed::Typed);

impl Encode for NdJson {
    fn batch(&mut self, batch: &RecordBatch, out: &mut Vec<u8>) -> Result<()> {
        self.0.ndjson(batch, out)
    }
}

/// Parquet written row group by row group into a buffer the stream drains.
struct ParquetOut {
    typed: typed::Typed,
    buffer: SharedBuffer,
    writer: Option<ArrowWriter<SharedBuffer>>,
}

impl ParquetOut {
    fn try_new(typed: typed::Typed) -> Result<Self> {
        let buffer = SharedBuffer::default();
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            // Small row groups keep the writer's memory flat however long the export.
            .set_max_row_group_row_count(Some(64 * 1024))
            .build();
        let writer = ArrowWriter::try_new(buffer.clone(), typed.schema().clone(), Some(properties))
            .map_err(|e| Error::Internal(format!("parquet writer: {e}")))?;
        Ok(Self {
            typed,
            buffer,
            writer: Some(writer),
        })
    }
}

impl Encode for ParquetOut {
    fn batch(&mut self, batch: &RecordBatch, out: &mut Vec<u8>) -> Result<()> {
        let typed = self.typed.batch(batch)?;
        if let Some(writer) = self.writer.as_mut() {
            writer
                .write(&typed)
                .map_err(|e| Error::Internal(format!("parquet writer: {e}")))?;
        }
        self.buffer.drain_into(out);
        Ok(())
    }
    fn finish(&mut self, out: &mut Vec<u8>) -> Result<()> {
        if let Some(writer) = self.writer.take() {
            writer
                .close()
                .map_err(|e| Error::Internal(format!("parquet writer: {e}")))?;
        }
        self.buffer.drain_into(out);
        Ok(())
    }
}

/// A `Write` target shared between the Parquet writer and the stream.
#[derive(Debug, Clone, Default)]
struct SharedBuffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl SharedBuffer {
    fn drain_into(&self, out: &mut Vec<u8>) {
        let mut buffer = self.0.lock().unwrap_or_else(|p| p.into_inner());
        out.append(&mut buffer);
    }
}

impl std::io::Write for SharedBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs an encoder over a scan in its own task, at most two chunks ahead of
/// the consumer; dropping the stream aborts the task, and with it the scan.
static IN_FLIGHT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static CANCELLED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Exports being encoded now.
pub fn exports_in_flight() -> u64 {
    IN_FLIGHT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Exports stopped before their end because the client went away.
pub fn exports_cancelled() -> u64 {
    CANCELLED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Counts an export in flight; dropped unfinished (the task aborted or the
/// client gone), it counts a cancellation.
struct Flight {
    finished: bool,
}

impl Flight {
    fn start() -> Self {
        IN_FLIGHT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self { finished: false }
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        if !self.finished {
            CANCELLED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::debug!("export cancelled: the client went away");
        }
    }
}

fn spawn_chunks(
    mut encoder: Box<dyn Encode>,
    mut batches: SendableRecordBatchStream,
) -> impl Stream<Item = Result<Bytes>> + Send {
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Bytes>>(2);
    let task = tokio::spawn(async move {
        let mut flight = Flight::start();
        let mut out = Vec::with_capacity(CHUNK_BYTES + 64 * 1024);
        let started = encoder.start(&mut out);
        // An encoding error ends the export as surely as its last row.
        flight.finished = started.is_err();
        if let Err(e) = started {
            let _ = sender.send(Err(e)).await;
            return;
        }
        if !out.is_empty()
            && sender
                .send(Ok(Bytes::from(std::mem::take(&mut out))))
                .await
                .is_err()
        {
            return;
        }
        while let Some(batch) = batches.next().await {
            let written = batch
                .map_err(Error::Plan)
                .and_then(|b| encoder.batch(&b, &mut out));
            if let Err(e) = written {
                flight.finished = true;
                let _ = sender.send(Err(e)).await;
                return;
            }
            if out.len() >= CHUNK_BYTES {
                let chunk =
                    std::mem::replace(&mut out, Vec::with_capacity(CHUNK_BYTES + 64 * 1024));
                if sender.send(Ok(Bytes::from(chunk))).await.is_err() {
                    return;
                }
            }
        }
        flight.finished = true;
        if let Err(e) = encoder.finish(&mut out) {
            let _ = sender.send(Err(e)).await;
            return;
        }
        if !out.is_empty() {
            let _ = sender.send(Ok(Bytes::from(out))).await;
        }
    });
    futures::stream::unfold(
        (receiver, AbortOnDrop(task)),
        |(mut receiver, abort)| async move {
            receiver.recv().await.map(|item| (item, (receiver, abort)))
        },
    )
}

/// Stops the producing task when the stream is dropped (a client disconnect cancels the query).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
