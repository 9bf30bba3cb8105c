//! `/v2/plugin/list`: the plugins available to the account (clarification
//! 46): enabled for the user, else for its dealer, else the configured
//! defaults (`--default-plugins`).

use platform::{Plugin, UserAuth};
use serde::Serialize;
use utoipa::ToSchema;

use crate::answer::Success;
use crate::route::{NoParams, Route, User};
use crate::{ApiResult, AppState};

pub(super) fn routes() -> Vec<Route> {
    vec![Route::new("/v2/plugin/list", User::any(), list).doc(
        "List the plugins",
        "The plugins available to the account, by id: those enabled for the user, else for its \
         dealer, else the server's defaults (`--default-plugins`).",
    )]
}

/// The plugins.
#[derive(Debug, Serialize, ToSchema)]
struct Plugins {
    list: Vec<Plugin>,
}

async fn list(state: AppState, caller: UserAuth, _: NoParams) -> ApiResult<Success<Plugins>> {
    let list = state
        .store()
        .plugins_of(
            caller.master_id,
            caller.dealer_id,
            &state.inner.config.default_plugins,
        )
        .await?;
    Ok(Success(Plugins { list }))
}
