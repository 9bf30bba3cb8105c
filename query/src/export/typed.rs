//! The export's columns as typed Arrow arrays: for Parquet output (clarification
//! 17) and NDJSON lines. Same rows and columns as the CSV; enums stay their
//! 0-based numbers in Parquet and are spelled in NDJSON, like in CSV.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray, UInt8Array};
use datafusion::arrow::datatypes::{
    DataType, Field, Int64Type, Schema, SchemaRef, TimeUnit, TimestampMillisecondType,
};
use datafusion::arrow::record_batch::RecordBatch;
use schemas::columns::{InnerKind, SimpleType};
use serde_json::{Map, Value};

use super::TimeFormat;
use crate::columns::{ColumnPlan, Output};
use crate::csv::{GPS_FIX_TYPE_NAMES, MN_TYPE_NAMES};
use crate::{Error, Result};

/// Builds the export's typed batches from scan batches.
#[derive(Debug)]
pub(crate) struct Typed {
    plan: ColumnPlan,
    time: TimeFormat,
    schema: SchemaRef,
}

impl Typed {
    pub(crate) fn new(plan: ColumnPlan, time: TimeFormat) -> Self {
        let zone: Arc<str> = Arc::from(time.zone.name());
        let fields: Vec<Field> = plan
            .outputs
            .iter()
            .map(|o| {
                let data_type = match &o.output {
                    Output::MessageTime | Output::ServerTime => {
                        DataType::Timestamp(TimeUnit::Millisecond, Some(zone.clone()))
                    }
                    Output::Simple(_, ty) => ty.data_type(),
                    Output::Flags => DataType::Int64,
                    Output::FlagBit(_) => DataType::UInt8,
                    Output::Inner(kind, _) => match kind {
                        InnerKind::States => DataType::Utf8,
                        other => other.data_type(),
                    },
                    Output::Map(..) | Output::Null => DataType::Utf8,
                };
                Field::new(
                    o.header.as_str(),
                    data_type,
                    !matches!(o.output, Output::MessageTime),
                )
            })
            .collect();
        Self {
            plan,
            time,
            schema: Arc::new(Schema::new(fields)),
        }
    }

    pub(crate) fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn scan_column<'a>(&self, scan: &'a RecordBatch, storage: &str) -> Result<&'a ArrayRef> {
        self.plan
            .scan_index(storage)
            .and_then(|i| scan.columns().get(i))
            .ok_or_else(|| Error::Internal(format!("column {storage} is not scanned")))
    }

    /// The export's batch for one scan batch.
    pub(crate) fn batch(&self, scan: &RecordBatch) -> Result<RecordBatch> {
        let rows = scan.num_rows();
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.plan.outputs.len());
        for (output, field) in self.plan.outputs.iter().zip(self.schema.fields()) {
            let array: ArrayRef = match &output.output {
                Output::MessageTime | Output::ServerTime => {
                    let index = if output.output == Output::MessageTime {
                        1
                    } else {
                        2
                    };
                    let times = scan
                        .column(index)
                        .as_primitive::<TimestampMillisecondType>()
                        .clone();
                    Arc::new(times.with_timezone(self.time.zone.name()))
                }
                Output::Simple(name, _) => self.scan_column(scan, name)?.clone(),
                Output::Flags => self.scan_column(scan, schemas::columns::FLAGS)?.clone(),
                Output::FlagBit(bit) => {
                    let flags = self
                        .scan_column(scan, schemas::columns::FLAGS)?
                        .as_primitive::<Int64Type>();
                    Arc::new(
                        flags
                            .iter()
                            .map(|f| f.map(|f| ((f >> bit) & 1) as u8))
                            .collect::<UInt8Array>(),
                    )
                }
                Output::Inner(InnerKind::States, name) => {
                    let states = self.scan_column(scan, name)?.as_string::<i32>();
                    Arc::new(
                        states
                            .iter()
                            .map(|s| s.map(state_text))
                            .collect::<StringArray>(),
                    )
                }
                Output::Inner(_, name) => self.scan_column(scan, name)?.clone(),
                Output::Map(kind, names) => {
                    let columns = names
                        .iter()
                        .map(|n| self.scan_column(scan, n))
                        .collect::<Result<Vec<_>>>()?;
                    let maps: StringArray = (0..rows)
                        .map(|row| {
                            Some(Value::Object(map_of(*kind, names, &columns, row)).to_string())
                        })
                        .collect();
                    Arc::new(maps)
                }
                Output::Null => datafusion::arrow::array::new_null_array(field.data_type(), rows),
            };
            arrays.push(array);
        }
        RecordBatch::try_new(self.schema.clone(), arrays).map_err(Error::Arrow)
    }

    /// Appends one JSON object per row, keys the column headers in order.
    pub(crate) fn ndjson(&self, scan: &RecordBatch, out: &mut Vec<u8>) -> Result<()> {
        let typed = self.batch(scan)?;
        for row in 0..typed.num_rows() {
            let mut object = Map::with_capacity(self.plan.outputs.len());
            for ((output, array), field) in self
                .plan
                .outputs
                .iter()
                .zip(typed.columns())
                .zip(self.schema.fields())
            {
                let value = if array.is_null(row) {
                    Value::Null
                } else {
                    match &output.output {
                        Output::MessageTime | Output::ServerTime => {
                            let ms = array.as_primitive::<TimestampMillisecondType>().value(row);
                            Value::String(format_time(ms, self.time))
                        }
                        Output::Simple(name, SimpleType::UInt8) => {
                            let names = if *name == "gps_fix_type" {
                                GPS_FIX_TYPE_NAMES
                            } else {
                                MN_TYPE_NAMES
                            };
                            let n = usize::from(
                                array
                                    .as_primitive::<datafusion::arrow::datatypes::UInt8Type>()
                                    .value(row),
                            );
                            names
                                .get(n)
                                .map_or(Value::Null, |s| Value::String((*s).to_owned()))
                        }
                        Output::Inner(InnerKind::States, name) => {
                            let states = self.scan_column(scan, name)?.as_string::<i32>();
                            serde_json::from_str(states.value(row))
                                .unwrap_or_else(|_| Value::String(states.value(row).to_owned()))
                        }
                        Output::Map(..) => {
                            serde_json::from_str(array.as_string::<i32>().value(row))
                                .unwrap_or(Value::Null)
                        }
                        _ => scalar(array, row, field.data_type()),
                    }
                };
                object.insert(output.header.clone(), value);
            }
            serde_json::to_writer(&mut *out, &Value::Object(object))
                .map_err(|e| Error::Internal(e.to_string()))?;
            out.push(b'\n');
        }
        Ok(())
    }
}

/// A state's value as plain text: a JSON string unquoted, other values as written.
fn state_text(json: &str) -> String {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::String(text)) => text,
        _ => json.to_owned(),
    }
}

fn map_of(
    kind: InnerKind,
    names: &[String],
    columns: &[&ArrayRef],
    row: usize,
) -> Map<String, Value> {
    let mut map = Map::new();
    for (name, column) in names.iter().zip(columns) {
        if column.is_null(row) {
            continue;
        }
        let key = InnerKind::split(name)
            .map_or(name.as_str(), |(_, inner)| inner)
            .to_owned();
        let value = match kind {
            InnerKind::States => {
                let text = column.as_string::<i32>().value(row);
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
            }
            _ => scalar(column, row, column.data_type()),
        };
        map.insert(key, value);
    }
    map
}

/// A number or text cell as JSON; integral floats as integers, like the CSV.
fn scalar(array: &ArrayRef, row: usize, data_type: &DataType) -> Value {
    use datafusion::arrow::datatypes::{Float64Type, Int32Type, UInt8Type};
    match data_type {
        DataType::Float64 => {
            let v = array.as_primitive::<Float64Type>().value(row);
            if v.is_finite() && v == v.trunc() && v.abs() < 1e15 {
                Value::from(v as i64)
            } else {
                serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
            }
        }
        DataType::Int64 => Value::from(array.as_primitive::<Int64Type>().value(row)),
        DataType::Int32 => Value::from(array.as_primitive::<Int32Type>().value(row)),
        DataType::UInt8 => Value::from(array.as_primitive::<UInt8Type>().value(row)),
        DataType::Utf8 => Value::String(array.as_string::<i32>().value(row).to_owned()),
        _ => Value::Null,
    }
}

/// A time as the CSV writes it, without the quotes.
pub(crate) fn format_time(ms: i64, time: TimeFormat) -> String {
    let Some(instant) = chrono::DateTime::from_timestamp_millis(ms) else {
        return String::new();
    };
    let local = instant.with_timezone(&time.zone);
    if !time.iso {
        return local.format("%Y-%m-%d %H:%M:%S").to_string();
    }
    let text = local.format("%Y-%m-%dT%H:%M:%S%z").to_string();
    match text.strip_suffix("+0000") {
        Some(utc) => format!("{utc}Z"),
        None => text,
    }
}
