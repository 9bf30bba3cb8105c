//! The CSV encoder of the raw data export (`/dwh/v1/tracker/raw_data/read`).
//!
//! The caller decides, once per request, which batch column each CSV column
//! reads and how it is written (a [`Cell`]); [`CsvEncoder::write_batch`] then
//! appends the rows of each Arrow batch to a byte buffer:
//!
//! ```text
//! Vec<CsvColumn> ─► CsvEncoder::new ─► write_header(out)
//!                                   └► write_batch(batch, out)  (once per batch)
//! ```
//!
//! The rules are those of spec document 3 and clarifications 13-15: values
//! separated by commas, rows ended by LF, text, enum spellings, date/times and
//! JSON maps in double quotes with inner quotes doubled and nothing else
//! escaped, numbers unquoted in their shortest exact form, null as a bare
//! `\N`. Quoting depends on the column, never on the value, which is why
//! `arrow-csv` (which quotes per value) is not used.
//!
//! Decisions, also tested:
//! - `-0.0` is written `0`, like [`schemas::format_number`]; NaN and the
//!   infinities, which CSV numbers cannot express, are written `\N`, and are
//!   left out of JSON maps like nulls.
//! - A `Float32` value is written in the shortest form that reads back as the
//!   same `f32` (`0.1`, not the `0.10000000149011612` of its `f64` widening).
//! - A state that is not valid JSON text (stored data never is) is written as
//!   text, quoted, rather than failing the export; JSON `null` is `\N`.
//! - Instants outside chrono's range (about ±262,000 years) are `\N`.
//!
//! Speed: each batch column is downcast once per batch; cells are written
//! straight into the output buffer with no allocation (integers by `itoa`,
//! floats by `ryu` laid out without exponent, dates by hand), and the zone
//! offset is looked up once per 15-minute bucket instead of once per row
//! (see `time.rs` for why that is exact).

use arrow::record_batch::RecordBatch;
use schemas::{GpsFixType, MnType};

mod error;
mod json;
mod number;

pub use number::write_f64;
mod prepared;
mod time;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

pub use error::CsvError;

use prepared::Prepared;

/// How the values of one CSV column are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    /// A `Timestamp(_, UTC)` written in `zone`, quoted: with `iso`
    /// `"2024-10-10T13:13:14+0600"` (seconds, no fraction, `+HHMM`, `Z` when
    /// the offset is zero), without it `"2024-10-10 13:13:14"`.
    ///
    /// Any time unit is accepted; the fraction of a second is dropped (the
    /// instant is rounded down).
    Time {
        /// The zone the wall-clock time is written in.
        zone: chrono_tz::Tz,
        /// ISO 8601 with offset (`true`) or `YYYY-MM-DD HH:MM:SS` (`false`).
        iso: bool,
    },
    /// Any `Int8`..`Int64`, `UInt8`..`UInt64`, `Float32` or `Float64` array,
    /// unquoted in its shortest exact form (`54.22809`, `0`, `24296.444`,
    /// `-1`): no trailing zeros, never an exponent; NaN and infinities are `\N`.
    Number,
    /// `Utf8` (also `LargeUtf8`, `Utf8View`): quoted, inner quotes doubled,
    /// nothing else escaped.
    Text,
    /// A `UInt8` enum number written as its spelling, quoted; a number with no
    /// spelling is `\N`. For `gps_fix_type` ([`GPS_FIX_TYPE_NAMES`]) and
    /// `mn_type` ([`MN_TYPE_NAMES`]).
    Enum(&'static [&'static str]),
    /// A `Utf8` column holding a state as a JSON scalar: a JSON string is
    /// written as its text, quoted CSV-style (JSON escapes decoded); a number
    /// or `true`/`false` unquoted as written; `null` as `\N`.
    StateValue,
    /// One bit of an `Int64` bitmap, as `0` or `1` (`flags.location_valid`
    /// is bit 0, `lbs` bit 1, `soft_lbs` bit 2: [`schemas::FLAG_BITS`]).
    FlagBit(u32),
    /// A complex column without inner name: a JSON object of the row's
    /// non-null inner values, keys in the given order, quoted as one cell
    /// (`"{""lls_level_1"":512,""fuel"":3.5}"`); a row with none is `"{}"`.
    JsonMap(Vec<MapEntry>),
    /// Always `\N` (an unknown inner name).
    Null,
}

/// One key of a [`Cell::JsonMap`] and the batch column its values come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapEntry {
    /// The key in the JSON object (the inner name: `lls_level_1`, `2`).
    pub key: String,
    /// Index of the source column in the batch.
    pub column: usize,
    /// How the source column's values become JSON values.
    pub value: MapValue,
}

/// How the values of a [`MapEntry`] are written into the JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapValue {
    /// A numeric column (inputs, discrete values): the number in shortest form.
    Number,
    /// A `Utf8` column of JSON scalars (states): the JSON value itself.
    StateJson,
}

/// One CSV column: its header and how it is filled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvColumn {
    /// The name written in the header row (unquoted here; quoted on output).
    pub header: String,
    /// Index of the source column in the batch; ignored for
    /// [`Cell::JsonMap`] (each entry names its own) and [`Cell::Null`].
    pub column: usize,
    /// How the values are written.
    pub cell: Cell,
}

/// Spellings of `gps_fix_type`, by stored number (clarification 17).
pub const GPS_FIX_TYPE_NAMES: &[&str] = &[
    GpsFixType::Unknown.as_str(),
    GpsFixType::NoFix.as_str(),
    GpsFixType::HasFix.as_str(),
    GpsFixType::LastKnownPosition.as_str(),
];

/// Spellings of `mn_type`, by stored number (clarification 17).
pub const MN_TYPE_NAMES: &[&str] = &[
    MnType::Unknown.as_str(),
    MnType::Gsm.as_str(),
    MnType::Cdma.as_str(),
    MnType::Wcdma.as_str(),
    MnType::Lte.as_str(),
    MnType::Nr.as_str(),
];

/// Writes Arrow batches as the raw data export's CSV; built once per request.
#[derive(Debug, Clone)]
pub struct CsvEncoder {
    columns: Vec<CsvColumn>,
    /// Per column, the JSON map keys already encoded as `""key"":`
    /// (JSON-escaped, then CSV-doubled); empty for other cells.
    map_keys: Vec<Vec<Vec<u8>>>,
}

impl CsvEncoder {
    /// An encoder writing these columns, in this order.
    pub fn new(columns: Vec<CsvColumn>) -> Self {
        let map_keys = columns
            .iter()
            .map(|column| match &column.cell {
                Cell::JsonMap(entries) => entries
                    .iter()
                    .map(|entry| json::encoded_key(&entry.key))
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        Self { columns, map_keys }
    }

    /// The columns, in output order.
    pub fn columns(&self) -> &[CsvColumn] {
        &self.columns
    }

    /// Appends the header row: every name quoted, comma-separated, then LF.
    pub fn write_header(&self, out: &mut Vec<u8>) {
        for (i, column) in self.columns.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json::write_quoted(&column.header, out);
        }
        out.push(b'\n');
    }

    /// Appends one row per row of `batch`, each ended by LF; nulls are a bare `\N`.
    ///
    /// A column of a type its [`Cell`] cannot write, or an index past the
    /// batch's columns, is an error and nothing is appended.
    pub fn write_batch(&self, batch: &RecordBatch, out: &mut Vec<u8>) -> Result<(), CsvError> {
        let mut prepared = self
            .columns
            .iter()
            .zip(&self.map_keys)
            .map(|(column, keys)| Prepared::try_new(column, keys, batch))
            .collect::<Result<Vec<_>, _>>()?;
        let rows = batch.num_rows();
        // A guess at the row width that spares most regrowth of `out`.
        out.reserve(rows.saturating_mul(prepared.len().saturating_mul(12)));
        for row in 0..rows {
            for (i, column) in prepared.iter_mut().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                column.write(row, out);
            }
            out.push(b'\n');
        }
        Ok(())
    }
}
