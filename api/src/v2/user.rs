//! `/v2/user/auth` and `/v2/user/logout` (clarification 8).

use std::net::IpAddr;

use platform::{Secret, UserAuth};
use schemas::DealerId;
use serde::Deserialize;

use crate::route::{NoParams, Params, Public, Route, Session};
use crate::{ApiResult, AppState, Reply};

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new("/v2/user/auth", Public, auth),
        Route::new("/v2/user/logout", Session::any(), logout),
    ]
}

#[derive(Debug, Deserialize)]
struct AuthParams {
    login: String,
    password: String,
    dealer_id: Option<i64>,
}

impl Params for AuthParams {}

async fn auth(state: AppState, _client: IpAddr, p: AuthParams) -> ApiResult<Reply> {
    platform::check_printable("password", &p.password, 1, 40)?;
    let (secret, _) = state
        .store()
        .user_login(&p.login, &p.password, p.dealer_id.map(DealerId))
        .await?;
    Reply::ok()
        .with("type", "authenticated")?
        .with("hash", secret.expose())
}

async fn logout(state: AppState, (_, secret): (UserAuth, Secret), _: NoParams) -> ApiResult<Reply> {
    state.store().user_logout(&secret).await?;
    Ok(Reply::ok())
}
