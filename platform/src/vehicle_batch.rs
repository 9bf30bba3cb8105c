//! `vehicle/batch_convert` (clarification 35): lines of cells, pasted as
//! tab-separated text or uploaded as a file, checked as vehicles without
//! storing them. Each line becomes one vehicle object with an `errors` list
//! (empty when the line would be accepted by `vehicle/create`), so a client
//! can show every mistake of every line at once and then create the good
//! ones. The checks are `vehicle/create`'s own ([`Vehicle::checked`]).

use serde::Serialize;
use serde_json::{Map, Value};

use crate::spreadsheet::{self, Table};
use crate::uploads::UploadRules;
use crate::{Error, Result, Store, UserAuth, Vehicle, VehicleType};

/// How a cell becomes a member of the vehicle object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A text; an empty cell is `""`.
    Text,
    /// A text or null; an empty cell is null.
    OptionalText,
    /// A whole number; an empty cell is 0.
    Integer,
    /// A whole number or null.
    OptionalInteger,
    /// A number (`.` or `,` as the decimal separator); an empty cell is 0.
    Number,
    /// A number or null.
    OptionalNumber,
    /// One of the words listed (case-insensitive); an empty cell is null
    /// (for `type`: `car`).
    Word(&'static [&'static str]),
}

/// The members a batch may carry, in the order of the vehicle object.
/// Links to other records (`tracker_id`, `garage_id`, tags, icon) are set
/// when the vehicles are created, not from a spreadsheet.
const FIELDS: &[(&str, Kind)] = &[
    ("label", Kind::Text),
    ("max_speed", Kind::Integer),
    ("model", Kind::Text),
    ("type", Kind::Word(&["truck", "car", "bus", "special"])),
    ("subtype", Kind::OptionalText),
    ("trailer", Kind::OptionalText),
    ("manufacture_year", Kind::OptionalInteger),
    ("color", Kind::OptionalText),
    ("additional_info", Kind::OptionalText),
    ("reg_number", Kind::Text),
    ("vin", Kind::Text),
    ("chassis_number", Kind::Text),
    ("frame_number", Kind::OptionalText),
    ("payload_weight", Kind::Integer),
    ("payload_height", Kind::Number),
    ("payload_length", Kind::Number),
    ("payload_width", Kind::Number),
    ("passengers", Kind::Integer),
    ("gross_weight", Kind::OptionalInteger),
    ("fuel_type", Kind::Word(&["petrol", "diesel", "gas"])),
    ("fuel_grade", Kind::Text),
    ("norm_avg_fuel_consumption", Kind::Number),
    ("fuel_tank_volume", Kind::Integer),
    ("fuel_cost", Kind::OptionalNumber),
    ("wheel_arrangement", Kind::Text),
    ("tyre_size", Kind::Text),
    ("tyres_number", Kind::Integer),
    ("liability_insurance_policy_number", Kind::Text),
    ("liability_insurance_valid_till", Kind::OptionalText),
    ("free_insurance_policy_number", Kind::Text),
    ("free_insurance_valid_till", Kind::OptionalText),
    ("icon_color", Kind::OptionalText),
];

/// The columns of a batch when the call names none.
pub const DEFAULT_BATCH_FIELDS: [&str; 4] = ["label", "model", "reg_number", "fuel_grade"];

/// Where the lines come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchSource {
    /// Pasted text: lines of tab-separated cells.
    Text(String),
    /// A file uploaded by the account (`file_id`): TSV, CSV, XLS or XLSX.
    File(String),
}

/// What `vehicle/batch_convert` may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchRules {
    /// Lines converted; the rest is cut (`limit_exceeded`).
    pub max_lines: usize,
    /// The uploads `file_id` names.
    pub uploads: UploadRules,
}

/// One mistake of a line: the column (`fields` item) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct BatchError {
    /// The member, as named in `fields` (`label` also when `fields` lacks it).
    pub parameter: String,
    /// What is wrong with it.
    pub error: String,
}

/// A line as a vehicle object (not stored), with its mistakes.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ConvertedVehicle {
    /// The vehicle: valid members as `vehicle/create` would store them, a
    /// member with a mistake as read (or empty when it could not be read).
    #[serde(flatten)]
    pub vehicle: Vehicle,
    /// Empty when `vehicle/create` would accept the vehicle.
    pub errors: Vec<BatchError>,
}

/// The lines converted, and whether the batch was cut.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvertedBatch {
    /// One vehicle per non-blank line, at most `max_lines`.
    pub list: Vec<ConvertedVehicle>,
    /// True when lines beyond `max_lines` were left out.
    pub limit_exceeded: bool,
}

/// The batch's columns: `fields` (each a member of [`FIELDS`], once), or
/// [`DEFAULT_BATCH_FIELDS`] when absent; 7 naming the bad item.
fn columns(fields: Option<&[String]>) -> Result<Vec<(&'static str, Kind)>> {
    let Some(fields) = fields else {
        return Ok(DEFAULT_BATCH_FIELDS
            .iter()
            .filter_map(|name| FIELDS.iter().find(|(n, _)| n == name).copied())
            .collect());
    };
    if fields.is_empty() {
        return Err(Error::invalid("fields", "must name at least one member"));
    }
    let mut columns: Vec<(&'static str, Kind)> = Vec::with_capacity(fields.len());
    for (i, field) in fields.iter().enumerate() {
        let Some(&column) = FIELDS.iter().find(|(n, _)| *n == field.trim()) else {
            let names: Vec<&str> = FIELDS.iter().map(|(n, _)| *n).collect();
            return Err(Error::invalid(
                format!("fields[{i}]"),
                format!(
                    "{field:?} is not a member a batch can set: one of {}",
                    names.join(", ")
                ),
            ));
        };
        if columns.iter().any(|(n, _)| *n == column.0) {
            return Err(Error::invalid(
                format!("fields[{i}]"),
                format!("{field:?} is named twice"),
            ));
        }
        columns.push(column);
    }
    Ok(columns)
}

/// A cell as a JSON member, or what is wrong with it.
fn cell_value(kind: Kind, cell: &str) -> std::result::Result<Value, String> {
    let number = |cell: &str| {
        // `28,5` from a spreadsheet in a comma-decimal locale.
        let cell = if cell.contains('.') {
            cell.to_owned()
        } else {
            cell.replace(',', ".")
        };
        cell.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .ok_or_else(|| format!("{cell:?} is not a number"))
    };
    let integer = |cell: &str| {
        cell.parse::<i64>()
            .map_err(|_| format!("{cell:?} is not a whole number"))
    };
    Ok(match (kind, cell.is_empty()) {
        (Kind::Text, _) => Value::from(cell),
        (Kind::Integer, true) => Value::from(0),
        (Kind::Number, true) => Value::from(0.0),
        (
            Kind::OptionalText | Kind::OptionalInteger | Kind::OptionalNumber | Kind::Word(_),
            true,
        ) => Value::Null,
        (Kind::OptionalText, false) => Value::from(cell),
        (Kind::Integer | Kind::OptionalInteger, false) => Value::from(integer(cell)?),
        (Kind::Number | Kind::OptionalNumber, false) => Value::from(number(cell)?),
        (Kind::Word(words), false) => {
            let word = cell.to_lowercase();
            if !words.contains(&word.as_str()) {
                return Err(format!("{cell:?} is not one of {}", words.join(", ")));
            }
            Value::from(word)
        }
    })
}

/// An object of every member at its empty value, `type` `car`.
fn empty_vehicle() -> Map<String, Value> {
    match serde_json::to_value(Vehicle::new("", VehicleType::Car)) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

fn member(object: &Map<String, Value>, name: &str) -> Value {
    object.get(name).cloned().unwrap_or(Value::Null)
}

fn vehicle_of(object: Map<String, Value>) -> Result<Vehicle> {
    serde_json::from_value(Value::Object(object))
        .map_err(|e| Error::corrupt("a converted vehicle", e))
}

/// Converts one line: the vehicle, and every mistake (all of them, not the first).
fn convert_line(
    empty: &Map<String, Value>,
    columns: &[(&'static str, Kind)],
    cells: &[String],
) -> Result<ConvertedVehicle> {
    let mut object = empty.clone();
    let mut errors = Vec::new();
    for (i, (name, kind)) in columns.iter().enumerate() {
        let cell = cells.get(i).map_or("", String::as_str);
        match cell_value(*kind, cell) {
            // An empty `type` keeps `car`.
            Ok(Value::Null) if *name == "type" => {}
            Ok(value) => {
                object.insert((*name).to_owned(), value);
            }
            Err(error) => errors.push(BatchError {
                parameter: (*name).to_owned(),
                error,
            }),
        }
    }
    let vehicle = vehicle_of(object.clone())?;
    if errors.is_empty() {
        if let Ok(checked) = vehicle.clone().checked() {
            return Ok(ConvertedVehicle {
                vehicle: checked,
                errors,
            });
        }
    }
    // Each member on its own against an otherwise valid vehicle of the
    // line's type, so that every mistake is named, not only the first.
    let mut valid = empty.clone();
    valid.insert("label".to_owned(), Value::from("-"));
    valid.insert("type".to_owned(), member(&object, "type"));
    let names = columns
        .iter()
        .map(|(n, _)| *n)
        .chain((!columns.iter().any(|(n, _)| *n == "label")).then_some("label"));
    for name in names {
        if name == "type" || errors.iter().any(|e| e.parameter == name) {
            continue;
        }
        let mut probe = valid.clone();
        probe.insert(name.to_owned(), member(&object, name));
        if let Err(Error::InvalidArgument { reason, .. }) = vehicle_of(probe)?.checked() {
            errors.push(BatchError {
                parameter: name.to_owned(),
                error: reason,
            });
        }
    }
    Ok(ConvertedVehicle { vehicle, errors })
}

/// Converts the rows of a table.
fn convert_table(table: Table, columns: &[(&'static str, Kind)]) -> Result<ConvertedBatch> {
    let empty = empty_vehicle();
    let list = table
        .rows
        .iter()
        .map(|cells| convert_line(&empty, columns, cells))
        .collect::<Result<_>>()?;
    Ok(ConvertedBatch {
        list,
        limit_exceeded: table.cut,
    })
}

impl Store {
    /// `vehicle/batch_convert`: the lines of `source` in the columns
    /// `fields` (default [`DEFAULT_BATCH_FIELDS`]) as vehicles, unstored.
    /// 201 for a `file_id` the account does not have; 7 for a bad `fields`
    /// item or a file that cannot be read.
    pub async fn convert_vehicles(
        &self,
        caller: &UserAuth,
        rules: &BatchRules,
        source: BatchSource,
        fields: Option<&[String]>,
    ) -> Result<ConvertedBatch> {
        let columns = columns(fields)?;
        let max_lines = rules.max_lines;
        let table = match source {
            BatchSource::Text(text) => spreadsheet::read_text(&text, b'\t', max_lines),
            BatchSource::File(file_id) => {
                let file = self.read_upload(caller, &rules.uploads, &file_id).await?;
                let max_inflated = rules.uploads.max_inflated_bytes;
                tokio::task::spawn_blocking(move || {
                    spreadsheet::read_file("file_id", &file.content, max_lines, max_inflated)
                })
                .await
                .map_err(|e| Error::corrupt("reading an uploaded file", e))??
            }
        };
        convert_table(table, &columns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(text: &str, fields: Option<&[&str]>, max_lines: usize) -> ConvertedBatch {
        let fields: Option<Vec<String>> =
            fields.map(|f| f.iter().map(|s| (*s).to_owned()).collect());
        let columns = columns(fields.as_deref()).unwrap();
        convert_table(spreadsheet::read_text(text, b'\t', max_lines), &columns).unwrap()
    }

    #[test]
    fn default_columns_make_valid_vehicles_of_type_car() {
        let batch = convert("Truck 1\tVolvo FH\tA 001 AA\tDT\n", None, 500);
        assert!(!batch.limit_exceeded);
        let v = &batch.list[0];
        assert!(v.errors.is_empty(), "{:?}", v.errors);
        assert_eq!(
            (
                v.vehicle.label.as_str(),
                v.vehicle.model.as_str(),
                v.vehicle.reg_number.as_str(),
                v.vehicle.fuel_grade.as_str(),
                v.vehicle.vehicle_type,
            ),
            ("Truck 1", "Volvo FH", "A 001 AA", "DT", VehicleType::Car)
        );
    }

    #[test]
    fn every_mistake_of_a_line_is_named() {
        let fields = [
            "label",
            "type",
            "subtype",
            "fuel_tank_volume",
            "vin",
            "max_speed",
        ];
        let line = "\tBUS\tdump_truck\t-4\t123456789012345678\tfast\n";
        let batch = convert(line, Some(&fields), 500);
        let errors: Vec<&str> = batch.list[0]
            .errors
            .iter()
            .map(|e| e.parameter.as_str())
            .collect();
        assert_eq!(
            errors,
            ["max_speed", "label", "subtype", "fuel_tank_volume", "vin"],
            "{:?}",
            batch.list[0].errors
        );
        assert_eq!(batch.list[0].vehicle.vehicle_type, VehicleType::Bus);
    }

    #[test]
    fn a_missing_label_column_is_an_error_of_label() {
        let batch = convert("Volvo\n", Some(&["model"]), 500);
        assert_eq!(batch.list[0].errors[0].parameter, "label");
    }

    #[test]
    fn comma_decimals_short_lines_and_the_line_limit() {
        let fields = ["label", "norm_avg_fuel_consumption", "fuel_type"];
        let batch = convert("A\t28,5\tDiesel\nB\n\nC\t1\nD\t2\n", Some(&fields), 3);
        assert!(batch.limit_exceeded);
        assert_eq!(batch.list.len(), 3);
        assert!(batch.list.iter().all(|v| v.errors.is_empty()));
        assert!((batch.list[0].vehicle.norm_avg_fuel_consumption - 28.5).abs() < 1e-9);
        assert_eq!(
            batch.list[0].vehicle.fuel_type,
            Some(crate::FuelType::Diesel)
        );
        assert_eq!(batch.list[1].vehicle.fuel_type, None);
    }

    #[test]
    fn fields_are_checked() {
        let unknown = columns(Some(&["label".to_owned(), "tracker_id".to_owned()])).unwrap_err();
        assert!(unknown.to_string().contains("fields[1]"), "{unknown}");
        let twice = columns(Some(&["vin".to_owned(), "vin".to_owned()])).unwrap_err();
        assert!(twice.to_string().contains("fields[1]"), "{twice}");
        assert!(columns(Some(&[])).is_err());
    }
}
