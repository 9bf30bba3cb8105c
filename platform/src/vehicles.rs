//! An account's vehicles: `vehicle/create|read|update|delete|list`
//! (spec document 3, clarifications 33-34). A vehicle bound to a tracker
//! outside a sub-user's scope does not exist for that sub-user.

use schemas::TrackerId;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::listing::search_text;
use crate::{Error, Result, Store, UserAuth, optional_text, records, trimmed_text};

mod list;

/// A vehicle's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum VehicleType {
    /// A truck.
    Truck,
    /// A car.
    Car,
    /// A bus.
    Bus,
    /// Special machinery.
    Special,
}

impl VehicleType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Truck => "truck",
            Self::Car => "car",
            Self::Bus => "bus",
            Self::Special => "special",
        }
    }

    /// The subtypes of the type (spec document 3).
    pub fn subtypes(self) -> &'static [&'static str] {
        match self {
            Self::Car => &[
                "sedan",
                "universal",
                "hatchback",
                "liftback",
                "limousine",
                "pickup",
                "minivan",
                "coupe",
                "coupe4d",
                "muscle",
                "convertible",
                "phaeton",
                "lando",
                "crossover",
                "roadster",
                "suv",
            ],
            Self::Truck => &[
                "tipper",
                "board",
                "covered",
                "awning",
                "mixer",
                "tanker",
                "refrigerator",
                "transporter",
                "container",
                "tractor",
            ],
            Self::Bus => &[
                "city",
                "shuttle",
                "platform",
                "school",
                "intercity",
                "sightseeing",
            ],
            Self::Special => &[
                "mobile_crane",
                "racing",
                "buggy",
                "ambulance",
                "firefighter",
                "hearse",
                "shop",
                "harvester",
                "snowplow",
                "tractor",
                "grader",
                "excavator",
                "bulldozer",
                "armored",
                "amphibian",
                "boat",
            ],
        }
    }
}

/// A vehicle's fuel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FuelType {
    /// Petrol.
    Petrol,
    /// Diesel.
    Diesel,
    /// Gas.
    Gas,
}

impl FuelType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Petrol => "petrol",
            Self::Diesel => "diesel",
            Self::Gas => "gas",
        }
    }
}

/// The vehicle object of spec document 3. Members left out of a create or
/// update take their empty value (texts `""`, numbers 0, optional members
/// null); `label` and `type` are required. `decisions.md` 82 lists the limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Vehicle {
    /// The vehicle's id: answered by `read` and `list`, required by `update`, ignored by `create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// The tracker it carries (one of the account's, not blocked), or null.
    #[serde(default)]
    pub tracker_id: Option<i64>,
    /// Its name: 1 to 100 characters.
    #[schema(min_length = 1, max_length = 100, example = "Volvo FH #12")]
    pub label: String,
    /// Highest speed, km/h (0 to 1000).
    #[serde(default)]
    pub max_speed: i64,
    /// Model, at most 100 characters.
    #[serde(default)]
    pub model: String,
    /// Type.
    #[serde(rename = "type")]
    pub vehicle_type: VehicleType,
    /// Subtype, one of the type's, or null.
    #[serde(default)]
    pub subtype: Option<String>,
    /// The account's garage it belongs to, or null.
    #[serde(default)]
    pub garage_id: Option<i64>,
    /// Trailer, at most 255 characters.
    #[serde(default)]
    pub trailer: Option<String>,
    /// Year of manufacture, 1900 to 2100.
    #[serde(default)]
    pub manufacture_year: Option<i64>,
    /// Colour name (not an RGB value), at most 100 characters.
    #[serde(default)]
    pub color: Option<String>,
    /// Notes, at most 1,000 characters.
    #[serde(default)]
    pub additional_info: Option<String>,
    /// License plate, at most 15 characters.
    #[serde(default)]
    pub reg_number: String,
    /// VIN, at most 17 characters.
    #[serde(default)]
    pub vin: String,
    /// Chassis number, at most 50 characters.
    #[serde(default)]
    pub chassis_number: String,
    /// Frame number, at most 50 characters.
    #[serde(default)]
    pub frame_number: Option<String>,
    /// Payload, kg.
    #[serde(default)]
    pub payload_weight: i64,
    /// Payload height, mm.
    #[serde(default)]
    pub payload_height: f64,
    /// Payload length, mm.
    #[serde(default)]
    pub payload_length: f64,
    /// Payload width, mm.
    #[serde(default)]
    pub payload_width: f64,
    /// Most passengers.
    #[serde(default)]
    pub passengers: i64,
    /// Gross weight, kg.
    #[serde(default)]
    pub gross_weight: Option<i64>,
    /// Fuel, or null.
    #[serde(default)]
    pub fuel_type: Option<FuelType>,
    /// Fuel grade, at most 50 characters.
    #[serde(default)]
    pub fuel_grade: String,
    /// Norm consumption, litres per 100 km.
    #[serde(default)]
    pub norm_avg_fuel_consumption: f64,
    /// Tank volume, litres.
    #[serde(default)]
    pub fuel_tank_volume: i64,
    /// Fuel cost per litre.
    #[serde(default)]
    pub fuel_cost: Option<f64>,
    /// Wheel arrangement (`6x4`), at most 20 characters.
    #[serde(default)]
    pub wheel_arrangement: String,
    /// Tyre size, at most 50 characters.
    #[serde(default)]
    pub tyre_size: String,
    /// Number of tyres.
    #[serde(default)]
    pub tyres_number: i64,
    /// Liability insurance policy number, at most 50 characters.
    #[serde(default)]
    pub liability_insurance_policy_number: String,
    /// Valid till, `YYYY-MM-DD`, or null.
    #[serde(default)]
    #[schema(format = Date)]
    pub liability_insurance_valid_till: Option<String>,
    /// Voluntary insurance policy number, at most 50 characters.
    #[serde(default)]
    pub free_insurance_policy_number: String,
    /// Valid till, `YYYY-MM-DD`, or null.
    #[serde(default)]
    #[schema(format = Date)]
    pub free_insurance_valid_till: Option<String>,
    /// Icon; set only by an avatar call (ignored by create and update).
    #[serde(default)]
    pub icon_id: Option<i64>,
    /// Icon colour: six hex digits without `#`.
    #[serde(default)]
    #[schema(pattern = "^[0-9A-Fa-f]{6}$")]
    pub icon_color: Option<String>,
    /// Avatar file name; set only by an avatar call (ignored by create and update).
    #[serde(default)]
    pub avatar_file_name: String,
    /// Tag ids.
    #[serde(default)]
    pub tags: Vec<i64>,
}

/// A vehicle as `list` answers it: the object, its tracker's label and its
/// garage's organization name.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ListedVehicle {
    /// The vehicle.
    #[serde(flatten)]
    pub vehicle: Vehicle,
    /// The bound tracker's label, or null.
    pub tracker_label: Option<String>,
    /// The garage's organization name, or null.
    pub garage_organization_name: Option<String>,
}

impl Vehicle {
    /// A vehicle with only a label and a type: every other member empty.
    pub fn new(label: &str, vehicle_type: VehicleType) -> Self {
        Self {
            id: None,
            tracker_id: None,
            label: label.to_owned(),
            max_speed: 0,
            model: String::new(),
            vehicle_type,
            subtype: None,
            garage_id: None,
            trailer: None,
            manufacture_year: None,
            color: None,
            additional_info: None,
            reg_number: String::new(),
            vin: String::new(),
            chassis_number: String::new(),
            frame_number: None,
            payload_weight: 0,
            payload_height: 0.0,
            payload_length: 0.0,
            payload_width: 0.0,
            passengers: 0,
            gross_weight: None,
            fuel_type: None,
            fuel_grade: String::new(),
            norm_avg_fuel_consumption: 0.0,
            fuel_tank_volume: 0,
            fuel_cost: None,
            wheel_arrangement: String::new(),
            tyre_size: String::new(),
            tyres_number: 0,
            liability_insurance_policy_number: String::new(),
            liability_insurance_valid_till: None,
            free_insurance_policy_number: String::new(),
            free_insurance_valid_till: None,
            icon_id: None,
            icon_color: None,
            avatar_file_name: String::new(),
            tags: Vec::new(),
        }
    }

    /// The vehicle as stored, or the first member that is not valid, named
    /// by its path (`vehicle.subtype`).
    pub(crate) fn checked(self) -> Result<Self> {
        let text =
            |field: &'static str, value: &str, max: usize| trimmed_text(field, value, 0, max);
        let optional = |field: &'static str, value: Option<String>, max: usize| {
            optional_text(field, value.as_deref(), max)
        };
        let at_least_zero = |field: &'static str, value: i64| {
            if value < 0 {
                Err(Error::invalid(field, "must be 0 or more"))
            } else {
                Ok(value)
            }
        };
        let non_negative = |field: &'static str, value: f64| {
            if value.is_finite() && value >= 0.0 {
                Ok(value)
            } else {
                Err(Error::invalid(field, "must be 0 or more"))
            }
        };
        let date = |field: &'static str, value: Option<String>| {
            value
                .map(|d| {
                    let d = d.trim().to_owned();
                    chrono::NaiveDate::parse_from_str(&d, "%Y-%m-%d")
                        .ok()
                        .filter(|_| d.len() == 10)
                        .map(|_| d)
                        .ok_or_else(|| Error::invalid(field, "must be a date YYYY-MM-DD"))
                })
                .transpose()
        };
        let subtype = optional("vehicle.subtype", self.subtype, 50)?;
        if let Some(subtype) = subtype.as_deref() {
            let allowed = self.vehicle_type.subtypes();
            if !allowed.contains(&subtype) {
                return Err(Error::invalid(
                    "vehicle.subtype",
                    format!(
                        "{subtype:?} is not a subtype of {}: one of {}",
                        self.vehicle_type.as_str(),
                        allowed.join(", ")
                    ),
                ));
            }
        }
        if !(0..=1000).contains(&self.max_speed) {
            return Err(Error::invalid(
                "vehicle.max_speed",
                "must be from 0 to 1000",
            ));
        }
        if let Some(year) = self.manufacture_year.filter(|y| !(1900..=2100).contains(y)) {
            return Err(Error::invalid(
                "vehicle.manufacture_year",
                format!("must be from 1900 to 2100, got {year}"),
            ));
        }
        let icon_color = optional("vehicle.icon_color", self.icon_color, 6)?;
        if let Some(color) = icon_color.as_deref() {
            if color.len() != 6 || !color.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(Error::invalid(
                    "vehicle.icon_color",
                    "must be six hex digits without #",
                ));
            }
        }
        if let Some(i) = self.tags.iter().position(|t| *t < 1) {
            return Err(Error::invalid(
                format!("vehicle.tags[{i}]"),
                "must be a tag id (1 or more)",
            ));
        }
        Ok(Self {
            id: self.id,
            tracker_id: self.tracker_id,
            label: trimmed_text("vehicle.label", &self.label, 1, 100)?,
            max_speed: self.max_speed,
            model: text("vehicle.model", &self.model, 100)?,
            vehicle_type: self.vehicle_type,
            subtype,
            garage_id: self.garage_id,
            trailer: optional("vehicle.trailer", self.trailer, 255)?,
            manufacture_year: self.manufacture_year,
            color: optional("vehicle.color", self.color, 100)?,
            additional_info: optional("vehicle.additional_info", self.additional_info, 1000)?,
            reg_number: text("vehicle.reg_number", &self.reg_number, 15)?,
            vin: text("vehicle.vin", &self.vin, 17)?,
            chassis_number: text("vehicle.chassis_number", &self.chassis_number, 50)?,
            frame_number: optional("vehicle.frame_number", self.frame_number, 50)?,
            payload_weight: at_least_zero("vehicle.payload_weight", self.payload_weight)?,
            payload_height: non_negative("vehicle.payload_height", self.payload_height)?,
            payload_length: non_negative("vehicle.payload_length", self.payload_length)?,
            payload_width: non_negative("vehicle.payload_width", self.payload_width)?,
            passengers: at_least_zero("vehicle.passengers", self.passengers)?,
            gross_weight: self
                .gross_weight
                .map(|w| at_least_zero("vehicle.gross_weight", w))
                .transpose()?,
            fuel_type: self.fuel_type,
            fuel_grade: text("vehicle.fuel_grade", &self.fuel_grade, 50)?,
            norm_avg_fuel_consumption: non_negative(
                "vehicle.norm_avg_fuel_consumption",
                self.norm_avg_fuel_consumption,
            )?,
            fuel_tank_volume: at_least_zero("vehicle.fuel_tank_volume", self.fuel_tank_volume)?,
            fuel_cost: self
                .fuel_cost
                .map(|c| non_negative("vehicle.fuel_cost", c))
                .transpose()?,
            wheel_arrangement: text("vehicle.wheel_arrangement", &self.wheel_arrangement, 20)?,
            tyre_size: text("vehicle.tyre_size", &self.tyre_size, 50)?,
            tyres_number: at_least_zero("vehicle.tyres_number", self.tyres_number)?,
            liability_insurance_policy_number: text(
                "vehicle.liability_insurance_policy_number",
                &self.liability_insurance_policy_number,
                50,
            )?,
            liability_insurance_valid_till: date(
                "vehicle.liability_insurance_valid_till",
                self.liability_insurance_valid_till,
            )?,
            free_insurance_policy_number: text(
                "vehicle.free_insurance_policy_number",
                &self.free_insurance_policy_number,
                50,
            )?,
            free_insurance_valid_till: date(
                "vehicle.free_insurance_valid_till",
                self.free_insurance_valid_till,
            )?,
            // Set by the avatar calls only.
            icon_id: None,
            icon_color,
            avatar_file_name: String::new(),
            tags: self.tags,
        })
    }

    /// The vehicle of a row: its `body`, with the members its columns own.
    fn from_row(row: &SqliteRow) -> Result<Self> {
        let body: String = row.try_get("body")?;
        let mut vehicle: Self =
            serde_json::from_str(&body).map_err(|e| Error::corrupt("vehicles.body", e))?;
        vehicle.id = Some(row.try_get("id")?);
        vehicle.tracker_id = row.try_get("tracker_id")?;
        vehicle.garage_id = row.try_get("garage_id")?;
        Ok(vehicle)
    }
}

/// The columns of `vehicles` a write sets, after `master_user_id`.
const COLUMNS: [&str; 22] = [
    "tracker_id",
    "garage_id",
    "label",
    "reg_number",
    "model",
    "type",
    "subtype",
    "vin",
    "fuel_type",
    "fuel_grade",
    "norm_avg_fuel_consumption",
    "fuel_tank_volume",
    "payload_weight",
    "chassis_number",
    "wheel_arrangement",
    "tyres_number",
    "tyre_size",
    "max_speed",
    "passengers",
    "search_text",
    "body",
    "created_at",
];

type Query<'q> = sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>>;

/// Binds [`COLUMNS`] but `created_at`, in order.
fn bind_columns<'q>(query: Query<'q>, v: &'q Vehicle, body: String) -> Query<'q> {
    query
        .bind(v.tracker_id)
        .bind(v.garage_id)
        .bind(&v.label)
        .bind(&v.reg_number)
        .bind(&v.model)
        .bind(v.vehicle_type.as_str())
        .bind(&v.subtype)
        .bind(&v.vin)
        .bind(v.fuel_type.map(FuelType::as_str))
        .bind(&v.fuel_grade)
        .bind(v.norm_avg_fuel_consumption)
        .bind(v.fuel_tank_volume)
        .bind(v.payload_weight)
        .bind(&v.chassis_number)
        .bind(&v.wheel_arrangement)
        .bind(v.tyres_number)
        .bind(&v.tyre_size)
        .bind(v.max_speed)
        .bind(v.passengers)
        .bind(search_text(&[&v.label, &v.reg_number, &v.vin]))
        .bind(body)
}

/// The SQL condition hiding, from a sub-user, the vehicles bound to
/// trackers outside its scope (`$2` is the sub-user); none for a master.
fn scope(caller: &UserAuth) -> &'static str {
    if caller.is_subuser() {
        " AND (v.tracker_id IS NULL OR v.tracker_id IN \
         (SELECT tracker_id FROM subuser_trackers WHERE user_id = $2))"
    } else {
        " AND $2 = $2"
    }
}

impl Store {
    /// One vehicle the caller sees; 201 when it has none with this id.
    pub async fn read_vehicle(&self, caller: &UserAuth, id: i64) -> Result<Vehicle> {
        let row = sqlx::query(&format!(
            "SELECT v.id, v.tracker_id, v.garage_id, v.body FROM vehicles v \
             WHERE v.master_user_id = $1{} AND v.id = $3",
            scope(caller)
        ))
        .bind(caller.master_id.0)
        .bind(caller.user_id.0)
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        match row {
            Some(row) => Vehicle::from_row(&row),
            None => Err(records::not_found("vehicle", id)),
        }
    }

    /// Stores a vehicle of the caller's account; its id. A tracker already
    /// carried by another vehicle moves to this one when `force_reassign`,
    /// else 247.
    pub async fn create_vehicle(
        &self,
        caller: &UserAuth,
        vehicle: Vehicle,
        force_reassign: bool,
    ) -> Result<i64> {
        let vehicle = vehicle.checked()?;
        self.check_vehicle_links(caller, &vehicle).await?;
        let body = body_of(&vehicle)?;
        let mut tx = self.write_tx().await?;
        release_tracker(&mut tx, &vehicle, None, force_reassign).await?;
        let values: Vec<String> = (2..=COLUMNS.len() + 1).map(|n| format!("${n}")).collect();
        let sql = format!(
            "INSERT INTO vehicles (master_user_id, {}) VALUES ($1, {}) RETURNING id",
            COLUMNS.join(", "),
            values.join(", ")
        );
        let query = bind_columns(sqlx::query(&sql).bind(caller.master_id.0), &vehicle, body)
            .bind(self.clock.now());
        let row = query.fetch_one(&mut *tx).await?;
        tx.commit().await?;
        Ok(row.try_get("id")?)
    }

    /// Replaces every member of the caller's vehicle `vehicle.id`. 201 when
    /// the caller has no such vehicle; 247 as for create; 261 when the
    /// tracker changes while the vehicle has open service tasks.
    pub async fn update_vehicle(
        &self,
        caller: &UserAuth,
        vehicle: Vehicle,
        force_reassign: bool,
    ) -> Result<()> {
        let id = records::required_id("vehicle.id", vehicle.id)?;
        let vehicle = vehicle.checked()?;
        let current = self.read_vehicle(caller, id).await?;
        self.check_vehicle_links(caller, &vehicle).await?;
        if current.tracker_id != vehicle.tracker_id {
            let open: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM vehicle_service_tasks WHERE vehicle_id = $1 AND closed = FALSE",
            )
            .bind(id)
            .fetch_one(&self.pool)
            .await?;
            if open > 0 {
                return Err(Error::OpenServiceTasks {
                    vehicle_id: id,
                    tasks: open,
                });
            }
        }
        let body = body_of(&vehicle)?;
        let mut tx = self.write_tx().await?;
        release_tracker(&mut tx, &vehicle, Some(id), force_reassign).await?;
        let sets: Vec<String> = COLUMNS[..COLUMNS.len() - 1]
            .iter()
            .enumerate()
            .map(|(i, column)| format!("{column} = ${}", i + 3))
            .collect();
        let sql = format!(
            "UPDATE vehicles SET {} WHERE id = $1 AND master_user_id = $2",
            sets.join(", ")
        );
        let query = bind_columns(
            sqlx::query(&sql).bind(id).bind(caller.master_id.0),
            &vehicle,
            body,
        );
        let done = query.execute(&mut *tx).await?;
        records::one_changed(done.rows_affected(), "vehicle", id)?;
        tx.commit().await?;
        Ok(())
    }

    /// Deletes one vehicle the caller sees (201 when none has this id), or
    /// the ones of `ids` it sees (the others are passed over silently).
    pub async fn delete_vehicles(
        &self,
        caller: &UserAuth,
        ids: &[i64],
        strict: bool,
    ) -> Result<()> {
        let mut tx = self.write_tx().await?;
        for id in ids {
            let done = sqlx::query(&format!(
                "DELETE FROM vehicles AS v WHERE v.master_user_id = $1{} AND v.id = $3",
                scope(caller)
            ))
            .bind(caller.master_id.0)
            .bind(caller.user_id.0)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            if strict {
                records::one_changed(done.rows_affected(), "vehicle", *id)?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    /// The tracker (the caller's, in its scope, not blocked: 201/204/208
    /// as raw data answers) and garage (the account's, else 201) a vehicle names.
    async fn check_vehicle_links(&self, caller: &UserAuth, vehicle: &Vehicle) -> Result<()> {
        if let Some(tracker) = vehicle.tracker_id {
            self.tracker_for(caller, TrackerId(tracker)).await?;
        }
        if let Some(garage) = vehicle.garage_id {
            let owned: Option<i64> =
                sqlx::query_scalar("SELECT id FROM garages WHERE id = $1 AND master_user_id = $2")
                    .bind(garage)
                    .bind(caller.master_id.0)
                    .fetch_optional(&self.pool)
                    .await?;
            records::one_changed(u64::from(owned.is_some()), "garage", garage)?;
        }
        Ok(())
    }

    /// Adds an open service task to a vehicle (the maintenance module's
    /// record; `trackhouse admin`); its id.
    pub async fn create_service_task(&self, vehicle: i64, description: &str) -> Result<i64> {
        let description = trimmed_text("description", description, 1, 255)?;
        let id = sqlx::query_scalar(
            "INSERT INTO vehicle_service_tasks (vehicle_id, description, created_at) \
             VALUES ($1, $2, $3) RETURNING id",
        )
        .bind(vehicle)
        .bind(&description)
        .bind(self.clock.now())
        .fetch_one(&self.pool)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(db) if db.is_foreign_key_violation() => Error::NotFound {
                entity: "vehicle",
                id: vehicle.to_string(),
            },
            _ => Error::from(e),
        })?;
        Ok(id)
    }

    /// Closes a service task; 201 when there is none with this id.
    pub async fn close_service_task(&self, task: i64) -> Result<()> {
        let done = sqlx::query("UPDATE vehicle_service_tasks SET closed = TRUE WHERE id = $1")
            .bind(task)
            .execute(&self.pool)
            .await?;
        records::one_changed(done.rows_affected(), "service task", task)
    }
}

/// The JSON kept in `body`: the object without the members columns own.
fn body_of(vehicle: &Vehicle) -> Result<String> {
    let mut body = vehicle.clone();
    body.id = None;
    serde_json::to_string(&body).map_err(|e| Error::corrupt("vehicles.body", e))
}

/// Frees the tracker `vehicle` names from any other vehicle when
/// `force_reassign`; 247 when another vehicle carries it and not.
async fn release_tracker(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    vehicle: &Vehicle,
    this: Option<i64>,
    force_reassign: bool,
) -> Result<()> {
    let Some(tracker) = vehicle.tracker_id else {
        return Ok(());
    };
    let holder: Option<i64> =
        sqlx::query_scalar("SELECT id FROM vehicles WHERE tracker_id = $1 AND id IS NOT $2")
            .bind(tracker)
            .bind(this)
            .fetch_optional(&mut **tx)
            .await?;
    let Some(holder) = holder else {
        return Ok(());
    };
    if !force_reassign {
        return Err(Error::AlreadyExists {
            entity: "vehicle carrying the tracker",
            id: holder,
        });
    }
    sqlx::query("UPDATE vehicles SET tracker_id = NULL WHERE id = $1")
        .bind(holder)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests;
