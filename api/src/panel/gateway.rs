//! `/v2/panel/gateways/email/list` (spec document 2, clarification 53):
//! the SMTP gateways of the dealer's platform. The platform operator makes
//! and binds them (`trackhouse admin email-gateway`); the panel reads them.

use platform::{EmailGateways, PanelAuth, Permission, Secret};

use crate::answer::Success;
use crate::route::{NoParams, Panel, Route};
use crate::{ApiResult, AppState};

type Caller = (PanelAuth, Secret);

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new(
            "/v2/panel/gateways/email/list",
            Panel::needs(Permission::EmailGatewaysRead),
            list,
        )
        .doc(
            "List the e-mail gateways",
            "The gateway the dealer sends with (`bound_gateway`, null when none is bound), the \
             dealer's own SMTP gateways with their parameters (`own`), and the gateways it may \
             lease (`leasable`: those its parent dealer, or the platform operator for a dealer \
             without one, offers; shown without parameters), each by id. Needs \
             `email_gateways: read`.",
        ),
    ]
}

async fn list(
    state: AppState,
    (auth, _): Caller,
    _: NoParams,
) -> ApiResult<Success<EmailGateways>> {
    let gateways = state.store().email_gateways(auth.dealer_id).await?;
    Ok(Success(gateways))
}
