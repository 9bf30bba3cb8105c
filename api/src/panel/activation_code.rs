//! `/v2/panel/dealer/activation_code/…` (spec document 2, clarification
//! 52): the dealer's activation codes.

use platform::{ActivationCode, CodeTerms, OrderedQuery, PanelAuth, Permission, Secret};
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::Success;
use crate::route::{Panel, Params, Route};
use crate::{ApiResult, AppState};

type Caller = (PanelAuth, Secret);

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new(
            "/v2/panel/dealer/activation_code/create",
            Panel::needs(Permission::ActivationCodeRead).and(Permission::ActivationCodeCreate),
            create,
        )
        .doc(
            "Create activation codes",
            "Makes `count` (1 to 1,000) codes of 10 digits, unique on the platform, for the \
             dealer's plan `tariff_id` (201 otherwise) with a bonus and free days; answers how \
             many were made. Needs `activation_code: read` and `create`.",
        )
        .errors(&[ErrorCode::NotFoundInDatabase]),
        Route::new(
            "/v2/panel/dealer/activation_code/list",
            Panel::needs(Permission::ActivationCodeRead),
            list,
        )
        .doc(
            "List the activation codes",
            "The dealer's codes, filtered (a part of the code, plan id, device id or device \
             type), ordered by `order_by` (`code`, `activated`, `tariff_id`, `tariff_name`, \
             `device_type`, `money_amount`, `bonus_amount`, `free_days`; `ascending` unless \
             false), paged; `count` of all that match. Needs `activation_code: read`.",
        )
        .errors(&[ErrorCode::LimitTooBig]),
        Route::new(
            "/v2/panel/dealer/activation_code/update",
            Panel::needs(Permission::ActivationCodeUpdate),
            update,
        )
        .doc(
            "Update activation codes",
            "Gives the plan `tariff_id`, the bonus and the free days to the codes of `codes` that \
             are the dealer's, not activated, and of the plan's device type; answers how many \
             changed. Needs `activation_code: update`.",
        )
        .errors(&[ErrorCode::NotFoundInDatabase]),
    ]
}

#[derive(Debug, Deserialize, ToSchema)]
struct CreateParams {
    /// Codes to make, 1 to 1,000.
    #[schema(minimum = 1, maximum = 1000)]
    count: i64,
    /// A plan of the dealer.
    tariff_id: i64,
    /// Added to the bonus balance at activation (0 or more).
    #[serde(default)]
    #[schema(minimum = 0)]
    bonus_amount: i64,
    /// Free days (0 or more).
    #[serde(default)]
    #[schema(minimum = 0)]
    free_days: i64,
}

impl Params for CreateParams {}

/// How many codes the call made or changed.
#[derive(Debug, Serialize, ToSchema)]
struct Count {
    count: i64,
}

async fn create(state: AppState, (auth, _): Caller, p: CreateParams) -> ApiResult<Success<Count>> {
    let terms = CodeTerms {
        tariff_id: p.tariff_id,
        bonus_amount: p.bonus_amount,
        free_days: p.free_days,
    };
    let count = state
        .store()
        .create_activation_codes(auth.dealer_id, p.count, terms)
        .await?;
    Ok(Success(Count { count }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct ListParams {
    /// A part of the code, plan id, device id or device type.
    #[serde(default)]
    #[schema(max_length = 255)]
    filter: Option<String>,
    /// `code`, `activated`, `tariff_id`, `tariff_name`, `device_type`, `money_amount`, `bonus_amount` or `free_days`.
    #[serde(default)]
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

/// A page of codes.
#[derive(Debug, Serialize, ToSchema)]
struct Codes {
    list: Vec<ActivationCode>,
    /// Codes that match, ignoring `offset` and `limit`.
    count: i64,
}

async fn list(state: AppState, (auth, _): Caller, p: ListParams) -> ApiResult<Success<Codes>> {
    let query = OrderedQuery::new(p.order_by, p.ascending, p.filter, p.limit, p.offset);
    let (list, count) = state
        .store()
        .list_activation_codes(auth.dealer_id, &query)
        .await?;
    Ok(Success(Codes { list, count }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct UpdateParams {
    /// The codes to change (1 to 10,000).
    #[schema(min_items = 1, max_items = 10000)]
    codes: Vec<String>,
    /// A plan of the dealer.
    tariff_id: i64,
    /// Added to the bonus balance at activation (0 or more).
    #[serde(default)]
    #[schema(minimum = 0)]
    bonus_amount: i64,
    /// Free days (0 or more).
    #[serde(default)]
    #[schema(minimum = 0)]
    free_days: i64,
}

impl Params for UpdateParams {}

async fn update(state: AppState, (auth, _): Caller, p: UpdateParams) -> ApiResult<Success<Count>> {
    let terms = CodeTerms {
        tariff_id: p.tariff_id,
        bonus_amount: p.bonus_amount,
        free_days: p.free_days,
    };
    let count = state
        .store()
        .update_activation_codes(auth.dealer_id, &p.codes, terms)
        .await?;
    Ok(Success(Count { count }))
}
