//! `/v2/panel/tariff/…` (spec document 2): the dealer's plans and the
//! defaults per device type.

use platform::{
    DeviceType, OrderedQuery, PanelAuth, Permission, Plan, PlanDefaults, PlanQuery, Secret,
    ServicePrices,
};
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Done, Success};
use crate::route::{NoParams, Panel, Params, Route};
use crate::{ApiError, ApiResult, AppState};

type Caller = (PanelAuth, Secret);

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new(
            "/v2/panel/tariff/create",
            Panel::needs(Permission::TariffsCreate),
            create,
        )
        .doc(
            "Create a plan",
            "A plan the dealer sells; answers its id. `activeday` plans are for trackers only \
             (214); a name the dealer already uses is 244. Needs `tariffs: create`.",
        )
        .errors(&[
            ErrorCode::NotSupportedByDevice,
            ErrorCode::DuplicateEntityLabel,
        ]),
        Route::new(
            "/v2/panel/tariff/list",
            Panel::needs(Permission::TariffsRead),
            list,
        )
        .doc(
            "List the plans",
            "The dealer's plans, optionally of one `device_type`, filtered (a case-insensitive \
             part of the id, name, price or device type), ordered by `order_by` (`id`, `name`, \
             `device_type`, `group_id` or `price`; `ascending` unless false), paged by \
             `offset`/`limit`; `count` of all that match, and what the dealer pays for services. \
             Needs `tariffs: read`.",
        )
        .errors(&[ErrorCode::LimitTooBig]),
        Route::new(
            "/v2/panel/tariff/read",
            Panel::needs(Permission::TariffsRead),
            read,
        )
        .doc(
            "Read a plan",
            "One plan of the dealer. Needs `tariffs: read`.",
        )
        .errors(&[ErrorCode::NotFoundInDatabase]),
        Route::new(
            "/v2/panel/tariff/update",
            Panel::needs(Permission::TariffsUpdate),
            update,
        )
        .doc(
            "Update a plan",
            "Replaces every member of the plan `tariff.id` but its device type. A new \
             `store_period` is the retention of the plan's trackers from the next retention run. \
             Needs `tariffs: update`.",
        )
        .errors(&[
            ErrorCode::NotFoundInDatabase,
            ErrorCode::NotSupportedByDevice,
            ErrorCode::DuplicateEntityLabel,
        ]),
        Route::new(
            "/v2/panel/tariff/defaults/read",
            Panel::needs(Permission::TariffsRead),
            read_defaults,
        )
        .doc(
            "Read the plan defaults",
            "The default plan, activation bonus and free days of new trackers and cameras. \
             Needs `tariffs: read`.",
        ),
        Route::new(
            "/v2/panel/tariff/defaults/update",
            Panel::needs(Permission::TariffsUpdate),
            update_defaults,
        )
        .doc(
            "Update the plan defaults",
            "Sets the defaults of trackers (`tracker`) and, when given, of cameras (`camera`). \
             The plan must be the dealer's (239) and for that device type (237). Needs \
             `tariffs: update`.",
        )
        .errors(&[ErrorCode::NewTariffNotFound, ErrorCode::InvalidTariff]),
    ]
}

#[derive(Debug, Deserialize, ToSchema)]
struct PlanParams {
    /// The plan (`id` required by update, ignored by create; `device_type` ignored by update).
    tariff: Plan,
}

impl Params for PlanParams {}

/// The plan created.
#[derive(Debug, Serialize, ToSchema)]
struct Created {
    /// Its id.
    id: i64,
}

async fn create(state: AppState, (auth, _): Caller, p: PlanParams) -> ApiResult<Success<Created>> {
    let id = state
        .store()
        .create_dealer_plan(auth.dealer_id, p.tariff)
        .await?;
    Ok(Success(Created { id }))
}

async fn update(state: AppState, (auth, _): Caller, p: PlanParams) -> ApiResult<Success<Done>> {
    state
        .store()
        .update_dealer_plan(auth.dealer_id, p.tariff)
        .await?;
    Ok(Success::done())
}

#[derive(Debug, Deserialize, ToSchema)]
struct ReadParams {
    /// The plan.
    tariff_id: i64,
}

impl Params for ReadParams {}

/// The plan.
#[derive(Debug, Serialize, ToSchema)]
struct Read {
    value: Plan,
}

async fn read(state: AppState, (auth, _): Caller, p: ReadParams) -> ApiResult<Success<Read>> {
    let value = state
        .store()
        .dealer_plan(auth.dealer_id, p.tariff_id)
        .await?;
    Ok(Success(Read { value }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct ListParams {
    /// Only plans for this device type.
    #[serde(default)]
    device_type: Option<DeviceType>,
    /// A case-insensitive part of the id, name, price or device type.
    #[serde(default)]
    #[schema(max_length = 255)]
    filter: Option<String>,
    /// `id` (default), `name`, `device_type`, `group_id` or `price`.
    #[serde(default)]
    #[schema(example = "name")]
    order_by: Option<String>,
    /// Ascending unless false.
    #[serde(default)]
    ascending: Option<bool>,
    /// Rows to skip.
    #[serde(default)]
    #[schema(minimum = 0)]
    offset: Option<i64>,
    /// Rows to answer, 0 to 10,000 (10,000 when absent).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 10000)]
    limit: Option<i64>,
}

impl Params for ListParams {}

/// A page of plans.
#[derive(Debug, Serialize, ToSchema)]
struct Plans {
    list: Vec<Plan>,
    /// What the dealer pays for services (its PaaS plan's prices).
    wholesale_service_prices: ServicePrices,
    /// Plans that match, ignoring `offset` and `limit`.
    count: i64,
}

async fn list(state: AppState, (auth, _): Caller, p: ListParams) -> ApiResult<Success<Plans>> {
    let query = PlanQuery {
        device_type: p.device_type,
        list: OrderedQuery::new(p.order_by, p.ascending, p.filter, p.limit, p.offset),
    };
    let store = state.store();
    let (list, count) = store.list_dealer_plans(auth.dealer_id, &query).await?;
    let wholesale_service_prices = store.wholesale_service_prices(auth.dealer_id).await?;
    Ok(Success(Plans {
        list,
        wholesale_service_prices,
        count,
    }))
}

/// The defaults per device type.
#[derive(Debug, Serialize, ToSchema)]
struct Defaults {
    tracker: PlanDefaults,
    camera: PlanDefaults,
}

async fn read_defaults(
    state: AppState,
    (auth, _): Caller,
    _: NoParams,
) -> ApiResult<Success<Defaults>> {
    let (tracker, camera) = state.store().plan_defaults(auth.dealer_id).await?;
    Ok(Success(Defaults { tracker, camera }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct DefaultsParams {
    /// The defaults of trackers.
    #[serde(default)]
    tracker: Option<PlanDefaults>,
    /// The defaults of cameras.
    #[serde(default)]
    camera: Option<PlanDefaults>,
}

impl Params for DefaultsParams {}

async fn update_defaults(
    state: AppState,
    (auth, _): Caller,
    p: DefaultsParams,
) -> ApiResult<Success<Done>> {
    if p.tracker.is_none() && p.camera.is_none() {
        return Err(ApiError::invalid("tracker", "is required"));
    }
    let store = state.store();
    for (device_type, field, defaults) in [
        (DeviceType::Tracker, "tracker", p.tracker),
        (DeviceType::Camera, "camera", p.camera),
    ] {
        if let Some(defaults) = defaults {
            store
                .update_plan_defaults(auth.dealer_id, device_type, field, defaults)
                .await?;
        }
    }
    Ok(Success::done())
}
