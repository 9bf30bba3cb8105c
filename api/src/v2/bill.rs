//! `/v2/bill/create|list`: an account's bills, for users with the billing
//! plugin (29; else 222) and the right `payment_create` (clarification 45).

use platform::{Bill, ListQuery, Right, UserAuth};
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::Success;
use crate::route::{Params, Route, User};
use crate::{ApiResult, AppState, time};

const BILLS: User = User::needs(Right::PaymentCreate);

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new("/v2/bill/create", BILLS, create)
            .doc(
                "Create a bill",
                "A bill of `sum` (positive, in the panel's default currency) for `payer`; answers its \
                 id. Needs the billing plugin (29) and the right `payment_create`.",
            )
            .errors(&[ErrorCode::PluginNotFound]),
        Route::new("/v2/bill/list", BILLS, list)
            .doc(
                "List the bills",
                "The account's bills by id: `limit` 1 to 10,000 (the default), `offset`; `count` is \
                 their number in all. Needs the billing plugin (29) and the right `payment_create`.",
            )
            .errors(&[ErrorCode::PluginNotFound, ErrorCode::LimitTooBig]),
    ]
}

#[derive(Debug, Deserialize, ToSchema)]
struct CreateParams {
    /// Who pays: 1 to 255 characters.
    #[schema(min_length = 1, max_length = 255)]
    payer: String,
    /// The sum, positive.
    #[schema(exclusive_minimum = 0)]
    sum: f64,
}

impl Params for CreateParams {}

/// The bill's id.
#[derive(Debug, Serialize, ToSchema)]
struct Created {
    /// Its id (`order_id`).
    value: i64,
}

async fn create(state: AppState, caller: UserAuth, p: CreateParams) -> ApiResult<Success<Created>> {
    let value = state
        .store()
        .create_bill(
            &caller,
            &state.inner.config.default_plugins,
            &p.payer,
            p.sum,
        )
        .await?;
    Ok(Success(Created { value }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct ListParams {
    /// Bills to answer, 1 to 10,000 (10,000 when absent).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 10000)]
    limit: Option<i64>,
    /// Bills to skip.
    #[serde(default)]
    #[schema(minimum = 0)]
    offset: Option<i64>,
}

impl Params for ListParams {}

/// A bill of spec document 3.
#[derive(Debug, Serialize, ToSchema)]
struct BillObject {
    /// Its id.
    order_id: i64,
    /// When it was made, `YYYY-MM-DD HH:MM:SS` in the account's zone.
    created: String,
    /// The sum.
    sum: f64,
    /// `created`, `settled` or `canceled`.
    #[schema(example = "created")]
    status: String,
    /// Its positions.
    positions: Vec<String>,
    /// The order's page: the configured base URL and the id.
    link: String,
}

/// The bills.
#[derive(Debug, Serialize, ToSchema)]
struct Bills {
    /// Bills in all.
    count: i64,
    bills: Vec<BillObject>,
}

async fn list(state: AppState, caller: UserAuth, p: ListParams) -> ApiResult<Success<Bills>> {
    let page = ListQuery {
        limit: p.limit,
        offset: p.offset,
        ..ListQuery::default()
    };
    let config = &state.inner.config;
    let (bills, count) = state
        .store()
        .list_bills(&caller, &config.default_plugins, &page)
        .await?;
    let bills = bills
        .into_iter()
        .map(|b: Bill| BillObject {
            link: format!("{}{}", config.billing_orders_base_url, b.order_id),
            order_id: b.order_id,
            created: time::main_interface(b.created, &caller.time_zone),
            sum: b.sum,
            status: b.status,
            positions: b.positions,
        })
        .collect();
    Ok(Success(Bills { count, bills }))
}
