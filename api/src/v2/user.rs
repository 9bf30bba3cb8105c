//! `/v2/user/auth` and `/v2/user/logout` (clarification 8).

use std::net::IpAddr;

use platform::{Secret, UserAuth};
use schemas::{DealerId, ErrorCode};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Done, Success};
use crate::route::{NoParams, Params, Public, Route, Session};
use crate::{ApiResult, AppState};

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new("/v2/user/auth", Public, auth)
            .doc(
                "Log in with login and password",
                "Opens a user session; its hash is the credential of API key management (and, \
                 deprecated, of the other account calls). Rate-limited per client address.",
            )
            .errors(&[
                ErrorCode::WrongLoginOrPassword,
                ErrorCode::UserNotActivated,
                ErrorCode::AccessDenied,
            ]),
        Route::new("/v2/user/logout", Session::any(), logout).doc(
            "End the user session",
            "Ends the session whose hash is given; API keys are not affected.",
        ),
    ]
}

#[derive(Debug, Deserialize, ToSchema)]
struct AuthParams {
    /// The user's login (e-mail), case-insensitive.
    #[schema(min_length = 1, max_length = 255)]
    login: String,
    /// The user's password.
    #[schema(min_length = 1, max_length = 40)]
    password: String,
    /// Log in only if the user belongs to this dealer.
    dealer_id: Option<i64>,
}

impl Params for AuthParams {}

/// A new user session.
#[derive(Debug, Serialize, ToSchema)]
struct Authenticated {
    /// Always `authenticated`.
    #[schema(value_type = String, example = "authenticated")]
    r#type: &'static str,
    /// The session hash: 32 hexadecimal characters.
    #[schema(pattern = "^[0-9a-f]{32}$")]
    hash: String,
}

async fn auth(
    state: AppState,
    _client: IpAddr,
    p: AuthParams,
) -> ApiResult<Success<Authenticated>> {
    platform::check_printable("password", &p.password, 1, 40)?;
    let (secret, _) = state
        .store()
        .user_login(&p.login, &p.password, p.dealer_id.map(DealerId))
        .await?;
    Ok(Success(Authenticated {
        r#type: "authenticated",
        hash: secret.expose().to_owned(),
    }))
}

async fn logout(
    state: AppState,
    (_, secret): (UserAuth, Secret),
    _: NoParams,
) -> ApiResult<Success<Done>> {
    state.store().user_logout(&secret).await?;
    Ok(Success::done())
}
