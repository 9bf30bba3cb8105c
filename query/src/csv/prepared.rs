//! The encoder's columns bound to one batch: each source column downcast
//! once, then written row by row.

use arrow::array::{
    Array, AsArray, Int64Array, LargeStringArray, StringArray, StringViewArray, UInt8Array,
};
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;

use super::json::{write_quoted, write_state_cell, write_state_json};
use super::number::{Numbers, value_at};
use super::time::TimeColumn;
use super::{Cell, CsvColumn, CsvError, MapValue};

/// What number cells read, in errors.
const NUMBER: &str = "number";
/// What state cells read, in errors.
const STATE: &str = "state (JSON text)";

/// One CSV column over one batch.
#[derive(Debug)]
pub(super) enum Prepared<'a> {
    Time(TimeColumn<'a>),
    Number(Numbers<'a>),
    Text(Strings<'a>),
    Enum {
        values: &'a UInt8Array,
        names: &'static [&'static str],
    },
    State(Strings<'a>),
    FlagBit {
        values: &'a Int64Array,
        bit: u32,
    },
    JsonMap(Vec<MapColumn<'a>>),
    Null,
}

/// One key of a JSON map cell over one batch.
#[derive(Debug)]
pub(super) struct MapColumn<'a> {
    /// `""key"":`, ready to copy.
    key: &'a [u8],
    source: MapSource<'a>,
}

#[derive(Debug)]
enum MapSource<'a> {
    Number(Numbers<'a>),
    State(Strings<'a>),
}

impl<'a> Prepared<'a> {
    /// Binds `column` to `batch`; `map_keys` are its encoded JSON map keys.
    pub(super) fn try_new(
        column: &CsvColumn,
        map_keys: &'a [Vec<u8>],
        batch: &'a RecordBatch,
    ) -> Result<Self, CsvError> {
        let source = |index: usize| {
            batch
                .columns()
                .get(index)
                .map(|array| array.as_ref())
                .ok_or_else(|| CsvError::MissingColumn {
                    header: column.header.clone(),
                    column: index,
                    columns: batch.num_columns(),
                })
        };
        let unexpected =
            |index: usize, cell: &'static str, array: &dyn Array| CsvError::UnexpectedType {
                header: column.header.clone(),
                column: index,
                cell,
                actual: array.data_type().clone(),
            };
        let (index, cell) = (column.column, &column.cell);
        let (array, prepared, expected) = match cell {
            Cell::Null => return Ok(Self::Null),
            Cell::JsonMap(entries) => {
                return entries
                    .iter()
                    .zip(map_keys)
                    .map(|(entry, key)| {
                        let array = source(entry.column)?;
                        let (source, expected) = match entry.value {
                            MapValue::Number => {
                                (Numbers::try_new(array).map(MapSource::Number), NUMBER)
                            }
                            MapValue::StateJson => {
                                (Strings::try_new(array).map(MapSource::State), STATE)
                            }
                        };
                        let source =
                            source.ok_or_else(|| unexpected(entry.column, expected, array))?;
                        Ok(MapColumn { key, source })
                    })
                    .collect::<Result<_, _>>()
                    .map(Self::JsonMap);
            }
            Cell::Time { zone, iso } => {
                let array = source(index)?;
                (
                    array,
                    TimeColumn::try_new(array, *zone, *iso).map(Self::Time),
                    "time",
                )
            }
            Cell::Number => {
                let array = source(index)?;
                (array, Numbers::try_new(array).map(Self::Number), NUMBER)
            }
            Cell::Text => {
                let array = source(index)?;
                (array, Strings::try_new(array).map(Self::Text), "text")
            }
            Cell::Enum(names) => {
                let array = source(index)?;
                let prepared = array
                    .as_primitive_opt()
                    .map(|values| Self::Enum { values, names });
                (array, prepared, "enum (UInt8)")
            }
            Cell::StateValue => {
                let array = source(index)?;
                (array, Strings::try_new(array).map(Self::State), STATE)
            }
            Cell::FlagBit(bit) => {
                let array = source(index)?;
                let prepared = array
                    .as_primitive_opt()
                    .map(|values| Self::FlagBit { values, bit: *bit });
                (array, prepared, "flag bit (Int64)")
            }
        };
        prepared.ok_or_else(|| unexpected(index, expected, array))
    }

    /// Writes the cell of `row`: its value, or `\N`.
    #[inline]
    pub(super) fn write(&mut self, row: usize, out: &mut Vec<u8>) {
        let written = match self {
            Self::Time(times) => times.write(row, out),
            Self::Number(numbers) => numbers.write(row, out),
            Self::Text(strings) => strings
                .get(row)
                .map(|text| write_quoted(text, out))
                .is_some(),
            Self::Enum { values, names } => value_at(values, row)
                .and_then(|number| names.get(usize::from(number)))
                .map(|name| write_quoted(name, out))
                .is_some(),
            Self::State(strings) => strings
                .get(row)
                .is_some_and(|text| write_state_cell(text, out)),
            Self::FlagBit { values, bit } => match value_at(values, row) {
                Some(bitmap) => {
                    // Bits past 63 are never set.
                    let set = bitmap.checked_shr(*bit).is_some_and(|v| v & 1 == 1);
                    out.push(if set { b'1' } else { b'0' });
                    true
                }
                None => false,
            },
            Self::JsonMap(entries) => {
                write_map(entries, row, out);
                true
            }
            Self::Null => false,
        };
        if !written {
            out.extend_from_slice(b"\\N");
        }
    }
}

/// Writes the JSON object of the row's non-null values, as one quoted cell.
fn write_map(entries: &[MapColumn<'_>], row: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\"{");
    let mut empty = true;
    for entry in entries {
        let mark = out.len();
        if !empty {
            out.push(b',');
        }
        out.extend_from_slice(entry.key);
        let written = match &entry.source {
            MapSource::Number(numbers) => numbers.write(row, out),
            MapSource::State(strings) => strings
                .get(row)
                .is_some_and(|text| write_state_json(text, out)),
        };
        if written {
            empty = false;
        } else {
            // Null (or NaN): the key goes too.
            out.truncate(mark);
        }
    }
    out.extend_from_slice(b"}\"");
}

/// A text batch column, whichever of Arrow's string layouts it uses.
#[derive(Debug, Clone, Copy)]
pub(super) enum Strings<'a> {
    Utf8(&'a StringArray),
    Large(&'a LargeStringArray),
    View(&'a StringViewArray),
}

impl<'a> Strings<'a> {
    fn try_new(array: &'a dyn Array) -> Option<Self> {
        match array.data_type() {
            DataType::Utf8 => array.as_string_opt().map(Self::Utf8),
            DataType::LargeUtf8 => array.as_string_opt().map(Self::Large),
            DataType::Utf8View => array.as_string_view_opt().map(Self::View),
            _ => None,
        }
    }

    /// The text at `row`, unless null.
    #[inline]
    fn get(&self, row: usize) -> Option<&'a str> {
        match self {
            Self::Utf8(a) => a.is_valid(row).then(|| a.value(row)),
            Self::Large(a) => a.is_valid(row).then(|| a.value(row)),
            Self::View(a) => a.is_valid(row).then(|| a.value(row)),
        }
    }
}
