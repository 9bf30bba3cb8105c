//! Which columns an export writes and which storage columns it reads
//! (spec document 3, clarifications 13 and 15).
//!
//! `msg_time` is always first; the others follow in the order requested. A
//! complex column with an inner name reads that inner column (an unknown
//! inner name gives nulls); without one, its JSON map of the inner columns
//! present (`flags` alone: the bitmap); a trailing `.*` expands in place to
//! the inner columns present in the range, sorted alphabetically.

use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion::arrow::array::Array;
use datafusion::execution::TaskContext;
use futures::StreamExt;
use schemas::columns::{self, InnerKind, SimpleType};
use schemas::{FLAG_BITS, TelemetrySnapshot};

use crate::scan::{ScanRequest, scan};

use crate::{Error, Result};

/// What an output column writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Message time.
    MessageTime,
    /// Server time.
    ServerTime,
    /// A simple column, by storage name.
    Simple(&'static str, SimpleType),
    /// `flags`: the bitmap.
    Flags,
    /// `flags.<bit>`: one bit as 0/1.
    FlagBit(u32),
    /// An inner column, by storage name.
    Inner(InnerKind, String),
    /// A complex column without inner name: the JSON map of these inner columns.
    Map(InnerKind, Vec<String>),
    /// An inner name the tracker has no values for in the range: always null.
    Null,
}

/// One column of the export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputColumn {
    /// The header, as the caller named it (or as expanded).
    pub header: String,
    /// What it writes.
    pub output: Output,
}

/// An export's columns, and the storage columns its scan reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnPlan {
    /// The columns written, `msg_time` first.
    pub outputs: Vec<OutputColumn>,
    /// Storage columns to read besides tracker, message and server time.
    pub scan_columns: Vec<String>,
}

impl ColumnPlan {
    /// Where a storage column is in the scan's batches (see `scan::scan_schema`).
    pub fn scan_index(&self, storage: &str) -> Option<usize> {
        match storage {
            columns::TRACKER_ID => Some(0),
            columns::MESSAGE_TIME => Some(1),
            columns::SERVER_TIME => Some(2),
            other => self
                .scan_columns
                .iter()
                .position(|c| c == other)
                .map(|i| i + 3),
        }
    }
}

/// The inner columns a tracker has values for within the ranges, exactly.
///
/// The catalog's per-tracker spans answer without reading data when every
/// span the ranges touch lies wholly inside them (the common case: whole
/// days, no server-time filter). Otherwise the candidates from the catalog
/// are checked by reading only those columns for the tracker's rows in range.
pub async fn present_inner_columns(
    snapshot: &Arc<TelemetrySnapshot>,
    tracker: i64,
    message: (i64, i64),
    server: Option<(i64, i64)>,
    ctx: Arc<TaskContext>,
) -> Result<BTreeSet<String>> {
    let (candidates, exact) = inner_candidates(snapshot, tracker, message, server).await?;
    if exact || candidates.is_empty() {
        return Ok(candidates);
    }
    let request = ScanRequest {
        tracker,
        message,
        server,
        columns: candidates.iter().cloned().collect(),
        batch_size: 8192,
        with_server_time: true,
        string_views: false,
    };
    let mut batches = scan(snapshot.clone(), request, ctx)?;
    let mut present = BTreeSet::new();
    while let Some(batch) = batches.next().await {
        let batch = batch.map_err(Error::Plan)?;
        for (field, array) in batch
            .schema_ref()
            .fields()
            .iter()
            .zip(batch.columns())
            .skip(3)
        {
            if array.null_count() < array.len() {
                present.insert(field.name().clone());
            }
        }
        if present.len() == candidates.len() {
            break;
        }
    }
    Ok(present)
}

/// The inner columns the stored rows' index and the memtable show for the
/// tracker in the ranges, and whether that answer is exact (see
/// [`catalog_candidates`]; on ClickHouse, the `inner_columns` table by day,
/// exact for whole days without a server-time filter). Reads no message.
pub async fn inner_candidates(
    snapshot: &TelemetrySnapshot,
    tracker: i64,
    message: (i64, i64),
    server: Option<(i64, i64)>,
) -> Result<(BTreeSet<String>, bool)> {
    let Some(table) = &snapshot.clickhouse else {
        return Ok(catalog_candidates(snapshot, tracker, message, server));
    };
    let (mut present, exact) =
        crate::clickhouse::inner_columns(table, tracker, message, server).await?;
    memtable_candidates(snapshot, tracker, message, server, &mut present);
    Ok((present, exact))
}

/// The inner columns the catalog and memtable show for the tracker in the
/// ranges, and whether that answer is exact (every file span touched lies
/// wholly inside the ranges; memtable rows are checked one by one). Reads no
/// data file: what `get_inputs` answers with.
pub fn catalog_candidates(
    snapshot: &TelemetrySnapshot,
    tracker: i64,
    message: (i64, i64),
    server: Option<(i64, i64)>,
) -> (BTreeSet<String>, bool) {
    let server_range = server.unwrap_or((i64::MIN, i64::MAX));
    let mut present = BTreeSet::new();
    let mut exact = true;
    for file in snapshot.files.iter() {
        let Some(span) = file.span(tracker) else {
            continue;
        };
        if span.meets_message_times(message.0, message.1)
            && file.server_time_min_ms < server_range.1
            && server_range.0 <= file.server_time_max_ms
        {
            present.extend(span.inner_names(file).map(str::to_owned));
            let inside_message =
                message.0 <= span.message_time_min_ms && span.message_time_max_ms < message.1;
            let inside_server = server.is_none()
                || (server_range.0 <= file.server_time_min_ms
                    && file.server_time_max_ms < server_range.1);
            exact &= inside_message && inside_server;
        }
    }
    memtable_candidates(snapshot, tracker, message, server, &mut present);
    (present, exact)
}

/// Adds the inner columns the memtable's rows in the ranges have values for.
fn memtable_candidates(
    snapshot: &TelemetrySnapshot,
    tracker: i64,
    message: (i64, i64),
    server: Option<(i64, i64)>,
    present: &mut BTreeSet<String>,
) {
    let server_range = server.unwrap_or((i64::MIN, i64::MAX));
    for batch in &snapshot.unflushed {
        let Some(keys) = columns::key_columns(batch) else {
            continue;
        };
        let (trackers, times, servers) = (keys.tracker, keys.message_time, keys.server_time);
        let rows: Vec<usize> = (0..batch.num_rows())
            .filter(|&i| {
                let (m, s) = (times.value(i), servers.value(i));
                trackers.value(i) == tracker
                    && message.0 <= m
                    && m < message.1
                    && server_range.0 <= s
                    && s < server_range.1
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        for (field, array) in batch.schema_ref().fields().iter().zip(batch.columns()) {
            if InnerKind::split(field.name()).is_some() && rows.iter().any(|&i| array.is_valid(i)) {
                present.insert(field.name().clone());
            }
        }
    }
}

/// Resolves the requested columns; an unknown column is code 7 naming it.
///
/// A column given twice, or both by name and by an expansion (`inputs.fuel`
/// and `inputs.*`), is written once, where it first appears. More than
/// `max_columns` columns after expansion (besides `msg_time`) is code 7:
/// the width of a row, and so of every batch encoded, stays bounded.
pub fn plan_columns(
    requested: &[String],
    present: &BTreeSet<String>,
    max_columns: usize,
) -> Result<ColumnPlan> {
    if requested.len() > max_columns {
        return Err(Error::TooManyColumns {
            columns: requested.len(),
            max: max_columns,
        });
    }
    let mut outputs = vec![OutputColumn {
        header: columns::MESSAGE_TIME.to_owned(),
        output: Output::MessageTime,
    }];
    for name in requested.iter().map(|n| n.trim()) {
        if name == columns::MESSAGE_TIME {
            continue;
        }
        let unknown = || Error::UnknownColumn {
            column: name.to_owned(),
        };
        if name == columns::SERVER_TIME {
            outputs.push(OutputColumn {
                header: name.to_owned(),
                output: Output::ServerTime,
            });
        } else if let Some((storage, ty)) = columns::SIMPLE_COLUMNS.iter().find(|(n, _)| *n == name)
        {
            outputs.push(OutputColumn {
                header: name.to_owned(),
                output: Output::Simple(storage, *ty),
            });
        } else if name == columns::FLAGS {
            outputs.push(OutputColumn {
                header: name.to_owned(),
                output: Output::Flags,
            });
        } else if let Some(bit) = name.strip_prefix("flags.") {
            let output = if bit == "*" {
                for (bit_name, bit) in sorted_flag_bits() {
                    outputs.push(OutputColumn {
                        header: format!("flags.{bit_name}"),
                        output: Output::FlagBit(bit),
                    });
                }
                continue;
            } else {
                FLAG_BITS
                    .iter()
                    .find(|(n, _)| *n == bit)
                    .map_or(Output::Null, |(_, b)| Output::FlagBit(*b))
            };
            outputs.push(OutputColumn {
                header: name.to_owned(),
                output,
            });
        } else if let Some(kind) = InnerKind::from_prefix(name) {
            let inner = present
                .iter()
                .filter(|c| InnerKind::split(c).is_some_and(|(k, _)| k == kind))
                .cloned()
                .collect();
            outputs.push(OutputColumn {
                header: name.to_owned(),
                output: Output::Map(kind, inner),
            });
        } else if let Some((kind, inner)) = InnerKind::split(name) {
            if inner.is_empty() {
                return Err(unknown());
            }
            if inner == "*" {
                for column in present
                    .iter()
                    .filter(|c| InnerKind::split(c).is_some_and(|(k, _)| k == kind))
                {
                    outputs.push(OutputColumn {
                        header: column.clone(),
                        output: Output::Inner(kind, column.clone()),
                    });
                }
            } else if present.contains(name) {
                outputs.push(OutputColumn {
                    header: name.to_owned(),
                    output: Output::Inner(kind, name.to_owned()),
                });
            } else {
                outputs.push(OutputColumn {
                    header: name.to_owned(),
                    output: Output::Null,
                });
            }
        } else {
            return Err(unknown());
        }
    }
    let mut seen = std::collections::HashSet::new();
    outputs.retain(|o| seen.insert(o.header.clone()));
    if outputs.len() - 1 > max_columns {
        return Err(Error::TooManyColumns {
            columns: outputs.len() - 1,
            max: max_columns,
        });
    }
    let mut scan_columns: Vec<String> = Vec::new();
    let mut scanned = std::collections::HashSet::new();
    let mut need = |column: &str| {
        if scanned.insert(column.to_owned()) {
            scan_columns.push(column.to_owned());
        }
    };
    for output in &outputs {
        match &output.output {
            Output::Simple(name, _) => need(name),
            Output::Flags | Output::FlagBit(_) => need(columns::FLAGS),
            Output::Inner(_, name) => need(name),
            Output::Map(_, names) => names.iter().for_each(|n| need(n)),
            Output::MessageTime | Output::ServerTime | Output::Null => {}
        }
    }
    Ok(ColumnPlan {
        outputs,
        scan_columns,
    })
}

fn sorted_flag_bits() -> Vec<(&'static str, u32)> {
    let mut bits = FLAG_BITS.to_vec();
    bits.sort_by_key(|(name, _)| *name);
    bits
}

#[cfg(test)]
mod tests;
