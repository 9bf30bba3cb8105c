//! `/v2/vehicle/create|read|update|delete|list|batch_convert`: an
//! account's vehicles (clarifications 33-35). Any user of the account reads
//! and lists them (a sub-user only those whose tracker is in its scope, or
//! that carry none); changes and conversions need the right `vehicle_update`.

use platform::{
    BatchRules, BatchSource, ConvertedVehicle, ListQuery, ListedVehicle, Right, UserAuth, Vehicle,
};
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Done, Success};
use crate::route::{Params, Route, User};
use crate::v2::records::Created;
use crate::{ApiError, ApiResult, AppState};

const CHANGE: User = User::needs(Right::VehicleUpdate);

/// What a vehicle's tracker may answer: not found, another account's or
/// outside the scope, blocked; the tracker already carried (without
/// `force_reassign`).
const LINK_CODES: [ErrorCode; 4] = [
    ErrorCode::NotFoundInDatabase,
    ErrorCode::EntityNotFound,
    ErrorCode::DeviceBlocked,
    ErrorCode::EntityAlreadyExists,
];

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new("/v2/vehicle/list", User::any(), list)
            .doc(
                "List the vehicles",
                "The account's vehicles with their tracker's label and garage's organization name: \
                 `sort` at most two `<property>=asc|desc` items, `filter` at most 100 characters \
                 (a case-insensitive part of the label, registration number or VIN), `limit` \
                 (at most 10,000, the default) and `offset`; by id without `sort`.",
            )
            .errors(&[ErrorCode::LimitTooBig]),
        Route::new("/v2/vehicle/read", User::any(), read)
            .doc("Read a vehicle", "One vehicle of the account.")
            .errors(&[ErrorCode::NotFoundInDatabase]),
        Route::new("/v2/vehicle/create", CHANGE, create)
            .doc(
                "Create a vehicle",
                "Stores a vehicle; answers its id. A tracker carried by another vehicle moves to \
                 this one unless `force_reassign` is false (then 247). Needs the right `vehicle_update`.",
            )
            .errors(&LINK_CODES),
        Route::new("/v2/vehicle/update", CHANGE, update)
            .doc(
                "Update a vehicle",
                "Replaces every member of the vehicle `vehicle.id`; 261 when its tracker would \
                 change while it has open service tasks. Needs the right `vehicle_update`.",
            )
            .errors(&[
                ErrorCode::NotFoundInDatabase,
                ErrorCode::EntityNotFound,
                ErrorCode::DeviceBlocked,
                ErrorCode::EntityAlreadyExists,
                ErrorCode::EntityHasExternalLinks,
            ]),
        Route::new("/v2/vehicle/delete", CHANGE, delete)
            .doc(
                "Delete vehicles",
                "Exactly one of `vehicle_id` (201 when unknown) or `vehicle_ids` (unknown ids are \
                 passed over). Needs the right `vehicle_update`.",
            )
            .errors(&[ErrorCode::NotFoundInDatabase]),
        Route::new("/v2/vehicle/batch_convert", CHANGE, batch_convert)
            .doc(
                "Check vehicles in bulk",
                "Reads vehicles, one per line, from `batch` (cells separated by tabs) or from the \
                 file `file_id` (uploaded with `file/upload`: TSV, CSV with `,` or `;`, XLS or \
                 XLSX, first sheet), the cells in the order of `fields` (default `label`, `model`, \
                 `reg_number`, `fuel_grade`), and answers each as a vehicle object, not stored, \
                 with its `errors` (empty when `vehicle/create` would accept it). Blank lines are \
                 skipped; at most `--batch-convert-max-lines` (500) lines are read, and \
                 `limit_exceeded` says whether more were cut. `geocoder` is accepted for \
                 compatibility: no vehicle member is an address. Needs the right `vehicle_update`.",
            )
            .errors(&[ErrorCode::NotFoundInDatabase]),
    ]
}

#[derive(Debug, Deserialize, ToSchema)]
struct BatchParams {
    /// Lines of tab-separated cells (ignored when `file_id` is given).
    #[serde(default)]
    batch: Option<String>,
    /// A file uploaded with `file/upload` (201 when the account has no such file).
    #[serde(default)]
    file_id: Option<String>,
    /// The members the cells are, in order.
    #[serde(default)]
    #[schema(example = json!(["label", "model", "reg_number", "fuel_grade"]))]
    fields: Option<Vec<String>>,
    /// The geocoder of address members (vehicles have none: not used).
    #[serde(default)]
    #[allow(
        dead_code,
        reason = "accepted as the spec lists it; vehicles have no address member"
    )]
    geocoder: Option<String>,
}

impl Params for BatchParams {}

/// The lines as vehicles.
#[derive(Debug, Serialize, ToSchema)]
struct Converted {
    /// One vehicle per non-blank line read, with its errors.
    list: Vec<ConvertedVehicle>,
    /// True when lines beyond the limit were left out.
    limit_exceeded: bool,
}

async fn batch_convert(
    state: AppState,
    caller: UserAuth,
    p: BatchParams,
) -> ApiResult<Success<Converted>> {
    let source = match (p.file_id, p.batch) {
        (Some(file_id), _) => BatchSource::File(file_id),
        (None, Some(batch)) => BatchSource::Text(batch),
        (None, None) => {
            return Err(ApiError::invalid(
                "batch",
                "one of batch and file_id is required",
            ));
        }
    };
    let config = &state.inner.config;
    let rules = BatchRules {
        max_lines: config.batch_convert_max_lines,
        uploads: config.uploads,
    };
    let batch = state
        .store()
        .convert_vehicles(&caller, &rules, source, p.fields.as_deref())
        .await?;
    if batch.limit_exceeded {
        state.inner.metrics.count_cut("batch_convert_max_lines");
    }
    Ok(Success(Converted {
        list: batch.list,
        limit_exceeded: batch.limit_exceeded,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct ListParams {
    /// Rows to answer, 0 to 10,000 (10,000 when absent).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 10000)]
    limit: Option<i64>,
    /// Rows to skip.
    #[serde(default)]
    #[schema(minimum = 0)]
    offset: Option<i64>,
    /// At most two `<property>=asc|desc` items.
    #[serde(default)]
    #[schema(max_items = 2, example = json!(["label=asc", "reg_number=desc"]))]
    sort: Vec<String>,
    /// A case-insensitive part of the label, registration number or VIN.
    #[serde(default)]
    #[schema(max_length = 100)]
    filter: Option<String>,
}

impl Params for ListParams {}

/// The vehicles.
#[derive(Debug, Serialize, ToSchema)]
struct Vehicles {
    list: Vec<ListedVehicle>,
}

async fn list(state: AppState, caller: UserAuth, p: ListParams) -> ApiResult<Success<Vehicles>> {
    let query = ListQuery {
        sort: p.sort,
        filter: p.filter,
        limit: p.limit,
        offset: p.offset,
    };
    let list = state.store().list_vehicles(&caller, &query).await?;
    Ok(Success(Vehicles { list }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct ReadParams {
    /// The vehicle.
    vehicle_id: i64,
}

impl Params for ReadParams {}

/// The vehicle.
#[derive(Debug, Serialize, ToSchema)]
struct Read {
    value: Vehicle,
}

async fn read(state: AppState, caller: UserAuth, p: ReadParams) -> ApiResult<Success<Read>> {
    let value = state.store().read_vehicle(&caller, p.vehicle_id).await?;
    Ok(Success(Read { value }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct VehicleParams {
    /// The vehicle (`id` required by update, ignored by create).
    vehicle: Vehicle,
    /// Move the tracker from the vehicle carrying it (default true); false: 247 instead.
    #[serde(default = "yes")]
    force_reassign: bool,
}

fn yes() -> bool {
    true
}

impl Params for VehicleParams {}

async fn create(
    state: AppState,
    caller: UserAuth,
    p: VehicleParams,
) -> ApiResult<Success<Created>> {
    let id = state
        .store()
        .create_vehicle(&caller, p.vehicle, p.force_reassign)
        .await?;
    Ok(Success(Created { id }))
}

async fn update(state: AppState, caller: UserAuth, p: VehicleParams) -> ApiResult<Success<Done>> {
    state
        .store()
        .update_vehicle(&caller, p.vehicle, p.force_reassign)
        .await?;
    Ok(Success::done())
}

#[derive(Debug, Deserialize, ToSchema)]
struct DeleteParams {
    /// One vehicle (201 when unknown).
    #[serde(default)]
    vehicle_id: Option<i64>,
    /// Several vehicles (unknown ids passed over).
    #[serde(default)]
    vehicle_ids: Option<Vec<i64>>,
}

impl Params for DeleteParams {}

async fn delete(state: AppState, caller: UserAuth, p: DeleteParams) -> ApiResult<Success<Done>> {
    let (ids, strict) = match (p.vehicle_id, p.vehicle_ids) {
        (Some(id), None) => (vec![id], true),
        (None, Some(ids)) => (ids, false),
        _ => {
            return Err(ApiError::invalid(
                "vehicle_id",
                "exactly one of vehicle_id and vehicle_ids is required",
            ));
        }
    };
    state.store().delete_vehicles(&caller, &ids, strict).await?;
    Ok(Success::done())
}
