//! The raw data export as a stream of encoded chunks.
//!
//! The header is the first chunk, sent before any data is read, so the answer
//! starts at once; rows follow in chunks of about [`CHUNK_BYTES`] as the scan
//! yields batches. Dropping the stream (a client that went away) drops the scan.

use bytes::Bytes;
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::{Stream, StreamExt};
use schemas::{GpsFixType, MnType};

use crate::columns::{ColumnPlan, Output};
use crate::csv::{Cell, CsvColumn, CsvEncoder, MapEntry, MapValue};
use crate::{Error, Result};

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

fn spellings<T: Copy>(all: &[T], spell: fn(T) -> &'static str) -> &'static [&'static str] {
    Box::leak(
        all.iter()
            .map(|v| spell(*v))
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    )
}

fn enum_names(column: &str) -> Option<&'static [&'static str]> {
    static GPS: std::sync::OnceLock<&'static [&'static str]> = std::sync::OnceLock::new();
    static MN: std::sync::OnceLock<&'static [&'static str]> = std::sync::OnceLock::new();
    match column {
        "gps_fix_type" => Some(GPS.get_or_init(|| spellings(GpsFixType::ALL, GpsFixType::as_str))),
        "mn_type" => Some(MN.get_or_init(|| spellings(MnType::ALL, MnType::as_str))),
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

/// Encodes a scan as CSV chunks: the header first, then rows.
///
/// Encoding runs in its own task, at most two chunks ahead of the consumer;
/// dropping the stream aborts it, and with it the scan.
pub fn csv_stream(
    encoder: CsvEncoder,
    mut batches: SendableRecordBatchStream,
) -> impl Stream<Item = Result<Bytes>> + Send {
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Bytes>>(2);
    let task = tokio::spawn(async move {
        let mut out = Vec::with_capacity(CHUNK_BYTES + 64 * 1024);
        encoder.write_header(&mut out);
        if sender
            .send(Ok(Bytes::from(std::mem::take(&mut out))))
            .await
            .is_err()
        {
            return;
        }
        while let Some(batch) = batches.next().await {
            let written = batch
                .map_err(Error::Plan)
                .and_then(|b| encoder.write_batch(&b, &mut out).map_err(Error::Csv));
            if let Err(e) = written {
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
