//! Dealer panel calls (`/v2/panel`, spec document 2).

use std::net::IpAddr;

use platform::{PanelAuth, Permission, Secret};
use serde::Deserialize;

use crate::route::{NoParams, Panel, Params, Public, Route};
use crate::{ApiResult, AppState, Reply};

/// Every panel call.
pub(crate) fn routes() -> Vec<Route> {
    vec![
        Route::new("/v2/panel/account/auth", Public, auth),
        Route::new(
            "/v2/panel/account/get_permissions",
            Panel::any(),
            get_permissions,
        ),
        Route::new("/v2/panel/account/logout", Panel::any(), logout),
        Route::new(
            "/v2/panel/dealer/get_info",
            Panel::needs(Permission::BaseGetDealerInfo),
            get_info,
        ),
    ]
}

#[derive(Debug, Deserialize)]
struct AuthParams {
    login: String,
    password: String,
}

impl Params for AuthParams {}

async fn auth(state: AppState, _client: IpAddr, p: AuthParams) -> ApiResult<Reply> {
    let (secret, auth) = state.store().panel_login(&p.login, &p.password).await?;
    Reply::ok()
        .with("hash", secret.expose())?
        .with("permissions", auth.permission_map())
}

async fn get_permissions(
    _: AppState,
    (auth, _): (PanelAuth, Secret),
    _: NoParams,
) -> ApiResult<Reply> {
    Reply::ok().with("permissions", auth.permission_map())
}

async fn logout(
    state: AppState,
    (_, secret): (PanelAuth, Secret),
    _: NoParams,
) -> ApiResult<Reply> {
    state.store().panel_logout(&secret).await?;
    Ok(Reply::ok())
}

async fn get_info(
    state: AppState,
    (auth, _): (PanelAuth, Secret),
    _: NoParams,
) -> ApiResult<Reply> {
    let info = state.store().dealer_info(auth.dealer_id).await?;
    Reply::ok().flatten(info)
}
