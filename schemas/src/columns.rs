//! How messages are laid out as Arrow columns, in Parquet files and in memory.
//!
//! Every simple column is its own Arrow column, and so is every inner value of
//! a complex column (`inputs.lls_level_1`, `states.ignition`,
//! `discrete_inputs.2`): a read of a few inner values touches only their
//! column chunks, never a whole map. A batch or file holds the fixed columns
//! plus the inner columns present in it; readers treat an absent inner column
//! as all nulls.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// Tracker id, `Int64`, never null.
pub const TRACKER_ID: &str = "tracker_id";
/// Message time, `Timestamp(ms, UTC)`, never null.
pub const MESSAGE_TIME: &str = "msg_time";
/// Server time, `Timestamp(ms, UTC)`, never null.
pub const SERVER_TIME: &str = "server_time";
/// xxh3 of the message's content without server time; deduplication key with
/// tracker and message time. Not exported.
pub const CONTENT_HASH: &str = "_content_hash";
/// The flags bitmap, `Int64`.
pub const FLAGS: &str = "flags";
/// Latitude, `Float64`.
pub const LAT: &str = "lat";
/// Longitude, `Float64`.
pub const LNG: &str = "lng";

/// The type of message and server times.
pub fn time_type() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

/// The simple columns of the raw data interface, in the spec's order, with their Arrow types.
///
/// `gps_fix_type` and `mn_type` are stored as their 0-based numbers (clarification 17).
pub const SIMPLE_COLUMNS: &[(&str, SimpleType)] = &[
    ("gps_fix_type", SimpleType::UInt8),
    (LAT, SimpleType::Float64),
    (LNG, SimpleType::Float64),
    ("speed", SimpleType::Float64),
    ("alt", SimpleType::Int32),
    ("satellites", SimpleType::Int32),
    ("heading", SimpleType::Int32),
    ("precision", SimpleType::Int32),
    ("hdop", SimpleType::Float64),
    ("pdop", SimpleType::Float64),
    ("event_id", SimpleType::Int64),
    ("mn_name", SimpleType::Utf8),
    ("mn_roaming", SimpleType::Int32),
    ("mn_code", SimpleType::Int64),
    ("mn_csq", SimpleType::Int32),
    ("mn_type", SimpleType::UInt8),
];

/// Arrow types simple columns use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimpleType {
    /// `UInt8` (enum numbers).
    UInt8,
    /// `Int32`.
    Int32,
    /// `Int64`.
    Int64,
    /// `Float64`.
    Float64,
    /// `Utf8`.
    Utf8,
}

impl SimpleType {
    /// The Arrow type.
    pub fn data_type(self) -> DataType {
        match self {
            Self::UInt8 => DataType::UInt8,
            Self::Int32 => DataType::Int32,
            Self::Int64 => DataType::Int64,
            Self::Float64 => DataType::Float64,
            Self::Utf8 => DataType::Utf8,
        }
    }
}

/// The complex columns whose inner values become columns of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InnerKind {
    /// `discrete_inputs.<n>`: `UInt8` 0 or 1.
    DiscreteInputs,
    /// `discrete_outputs.<n>`: `UInt8` 0 or 1.
    DiscreteOutputs,
    /// `inputs.<name>`: `Float64`.
    Inputs,
    /// `states.<name>`: `Utf8` holding the value as JSON text (`"eco"`, `12.5`, `true`).
    States,
}

impl InnerKind {
    /// Every kind.
    pub const ALL: [InnerKind; 4] = [
        Self::DiscreteInputs,
        Self::DiscreteOutputs,
        Self::Inputs,
        Self::States,
    ];

    /// Where the kind is in [`ALL`](Self::ALL): the order of kinds in a
    /// message's WAL encoding, and the declaration order.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The column name before the period.
    pub const fn prefix(self) -> &'static str {
        match self {
            Self::DiscreteInputs => "discrete_inputs",
            Self::DiscreteOutputs => "discrete_outputs",
            Self::Inputs => "inputs",
            Self::States => "states",
        }
    }

    /// The Arrow type of its inner columns.
    pub fn data_type(self) -> DataType {
        match self {
            Self::DiscreteInputs | Self::DiscreteOutputs => DataType::UInt8,
            Self::Inputs => DataType::Float64,
            Self::States => DataType::Utf8,
        }
    }

    /// The kind with this prefix.
    pub fn from_prefix(prefix: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.prefix() == prefix)
    }

    /// The column of an inner value: `inputs.lls_level_1`.
    pub fn column(self, name: &str) -> String {
        format!("{}.{name}", self.prefix())
    }

    /// Splits `inputs.lls_level_1` into its kind and inner name.
    pub fn split(column: &str) -> Option<(Self, &str)> {
        let (prefix, name) = column.split_once('.')?;
        Some((Self::from_prefix(prefix)?, name))
    }
}

/// The fixed fields every batch and file starts with, in order.
pub fn fixed_fields() -> Vec<Field> {
    let mut fields = vec![
        Field::new(TRACKER_ID, DataType::Int64, false),
        Field::new(MESSAGE_TIME, time_type(), false),
        Field::new(SERVER_TIME, time_type(), false),
    ];
    fields.extend(
        SIMPLE_COLUMNS
            .iter()
            .map(|(name, ty)| Field::new(*name, ty.data_type(), true)),
    );
    fields.push(Field::new(FLAGS, DataType::Int64, true));
    fields.push(Field::new(CONTENT_HASH, DataType::UInt64, false));
    fields
}

/// The schema of a batch with the fixed fields and these inner columns (sorted by the caller).
pub fn schema_with(inner_columns: &[String]) -> SchemaRef {
    let mut fields = fixed_fields();
    fields.extend(inner_columns.iter().filter_map(|column| {
        let (kind, _) = InnerKind::split(column)?;
        Some(Field::new(column.as_str(), kind.data_type(), true))
    }));
    Arc::new(Schema::new(fields))
}

/// A batch's key columns, downcast once: tracker ids, message and server times (ms).
#[derive(Debug, Clone, Copy)]
pub struct KeyColumns<'a> {
    /// `tracker_id`.
    pub tracker: &'a arrow_array::Int64Array,
    /// `msg_time`.
    pub message_time: &'a arrow_array::TimestampMillisecondArray,
    /// `server_time`.
    pub server_time: &'a arrow_array::TimestampMillisecondArray,
}

/// The key columns of a batch with the fixed fields; `None` if one is missing
/// or of another type.
pub fn key_columns(batch: &arrow_array::RecordBatch) -> Option<KeyColumns<'_>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int64Type, TimestampMillisecondType};
    Some(KeyColumns {
        tracker: batch
            .column_by_name(TRACKER_ID)?
            .as_primitive_opt::<Int64Type>()?,
        message_time: batch
            .column_by_name(MESSAGE_TIME)?
            .as_primitive_opt::<TimestampMillisecondType>()?,
        server_time: batch
            .column_by_name(SERVER_TIME)?
            .as_primitive_opt::<TimestampMillisecondType>()?,
    })
}

/// The content hashes of a batch with the fixed fields; `None` if the
/// column is missing or of another type.
pub fn content_hashes(batch: &arrow_array::RecordBatch) -> Option<&arrow_array::UInt64Array> {
    use arrow_array::cast::AsArray;
    batch
        .column_by_name(CONTENT_HASH)?
        .as_primitive_opt::<arrow_array::types::UInt64Type>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_columns_split_and_join() {
        assert_eq!(
            InnerKind::split("inputs.lls_level_1"),
            Some((InnerKind::Inputs, "lls_level_1"))
        );
        assert_eq!(
            InnerKind::split("discrete_inputs.2"),
            Some((InnerKind::DiscreteInputs, "2"))
        );
        assert_eq!(
            InnerKind::split("states.a.b"),
            Some((InnerKind::States, "a.b"))
        );
        assert_eq!(InnerKind::split("flags.lbs"), None);
        assert_eq!(InnerKind::States.column("ignition"), "states.ignition");
    }

    #[test]
    fn a_kinds_index_is_its_place_in_all() {
        for (place, kind) in InnerKind::ALL.into_iter().enumerate() {
            assert_eq!(kind.index(), place);
        }
    }

    #[test]
    fn schemas_hold_fixed_then_inner_columns() {
        let schema = schema_with(&["inputs.fuel".into(), "states.mode".into(), "bogus".into()]);
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(&names[..3], ["tracker_id", "msg_time", "server_time"]);
        assert_eq!(
            &names[names.len() - 3..],
            ["_content_hash", "inputs.fuel", "states.mode"]
        );
        assert_eq!(
            schema.field_with_name("states.mode").unwrap().data_type(),
            &DataType::Utf8
        );
    }
}
