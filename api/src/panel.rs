//! Dealer panel calls (`/v2/panel`, spec document 2).

mod activation_code;
mod gateway;
mod order;
mod subpaas;
mod tariff;
mod user;

use std::collections::BTreeMap;
use std::net::IpAddr;

use platform::{DealerInfo, PanelAuth, Permission, Secret};
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Done, Success};
use crate::route::{NoParams, Panel, Params, Public, Route};
use crate::{ApiResult, AppState};

/// Every panel call.
pub(crate) fn routes() -> Vec<Route> {
    vec![
        Route::new("/v2/panel/account/auth", Public, auth)
            .doc(
                "Log in to the dealer panel",
                "Opens a panel session. The login is the dealer id. Rate-limited per client address.",
            )
            .errors(&[
                ErrorCode::DealerNotFound,
                ErrorCode::WrongLoginOrPassword,
                ErrorCode::AccessDenied,
            ]),
        Route::new(
            "/v2/panel/account/get_permissions",
            Panel::any(),
            get_permissions,
        )
        .doc(
            "The panel session's permissions",
            "The permissions of the panel account, by group.",
        ),
        Route::new("/v2/panel/account/logout", Panel::any(), logout)
            .doc("End the panel session", "Ends the panel session whose hash is given."),
        Route::new(
            "/v2/panel/dealer/get_info",
            Panel::needs(Permission::BaseGetDealerInfo),
            get_info,
        )
        .doc(
            "The dealer's info",
            "The dealer of the panel session: contract, block status, tracker counts and limits, \
             branding, default plan. Needs the permission `base: get_dealer_info`.",
        )
        .errors(&[ErrorCode::NotFoundInDatabase]),
    ]
    .into_iter()
    .chain(tariff::routes())
    .chain(activation_code::routes())
    .chain(subpaas::routes())
    .chain(user::routes())
    .chain(gateway::routes())
    .chain(order::routes())
    .collect()
}

#[derive(Debug, Deserialize, ToSchema)]
struct AuthParams {
    /// The panel login: the dealer id.
    #[schema(min_length = 1)]
    login: String,
    /// The panel password.
    #[schema(min_length = 1)]
    password: String,
}

impl Params for AuthParams {}

/// Panel permissions by group (`base: [get_dealer_info, …]`).
type PermissionMap = BTreeMap<&'static str, Vec<&'static str>>;

/// A new panel session.
#[derive(Debug, Serialize, ToSchema)]
struct Authenticated {
    /// The panel session hash: 32 hexadecimal characters.
    #[schema(pattern = "^[0-9a-f]{32}$")]
    hash: String,
    /// The permissions of the panel account, by group.
    #[schema(value_type = BTreeMap<String, Vec<String>>)]
    permissions: PermissionMap,
}

async fn auth(
    state: AppState,
    _client: IpAddr,
    p: AuthParams,
) -> ApiResult<Success<Authenticated>> {
    let (secret, auth) = state.store().panel_login(&p.login, &p.password).await?;
    Ok(Success(Authenticated {
        hash: secret.expose().to_owned(),
        permissions: auth.permission_map(),
    }))
}

/// The permissions of a panel session.
#[derive(Debug, Serialize, ToSchema)]
struct Permissions {
    /// By group.
    #[schema(value_type = BTreeMap<String, Vec<String>>)]
    permissions: PermissionMap,
}

async fn get_permissions(
    _: AppState,
    (auth, _): (PanelAuth, Secret),
    _: NoParams,
) -> ApiResult<Success<Permissions>> {
    Ok(Success(Permissions {
        permissions: auth.permission_map(),
    }))
}

async fn logout(
    state: AppState,
    (_, secret): (PanelAuth, Secret),
    _: NoParams,
) -> ApiResult<Success<Done>> {
    state.store().panel_logout(&secret).await?;
    Ok(Success::done())
}

async fn get_info(
    state: AppState,
    (auth, _): (PanelAuth, Secret),
    _: NoParams,
) -> ApiResult<Success<DealerInfo>> {
    let info = state.store().dealer_info(auth.dealer_id).await?;
    Ok(Success(info))
}
