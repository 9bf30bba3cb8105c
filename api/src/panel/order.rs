//! `/v2/panel/order/read` (spec document 2, clarification 53): an order of
//! tracker bundles of the dealer. The platform operator makes orders
//! (`trackhouse admin order create`); the panel reads them.

use platform::{Order, PanelAuth, Permission, Secret};
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
            "/v2/panel/order/read",
            Panel::needs(Permission::TrackerBundlesRead),
            read,
        )
        .doc(
            "Read an order",
            "One order of the dealer with its bundles (devices with their SIM cards); an unknown \
             order or another dealer's (its parent's and sub-dealers' too) is 201. Needs \
             `tracker_bundles: read`.",
        )
        .errors(&[ErrorCode::NotFoundInDatabase]),
    ]
}

#[derive(Debug, Deserialize, ToSchema)]
struct ReadParams {
    /// The order.
    order_id: i64,
}

impl Params for ReadParams {}

/// The order.
#[derive(Debug, Serialize, ToSchema)]
struct Read {
    value: Order,
}

async fn read(state: AppState, (auth, _): Caller, p: ReadParams) -> ApiResult<Success<Read>> {
    let value = state.store().order(auth.dealer_id, p.order_id).await?;
    Ok(Success(Read { value }))
}
