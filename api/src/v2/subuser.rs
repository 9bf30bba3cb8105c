//! `/v2/subuser/*`: right `admin` and plan feature `multilevel_access` on all trackers.

use platform::{Feature, Right, UserAuth};
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Done, Success};
use crate::route::{FeatureScope, NoParams, Params, Route, User};
use crate::{ApiResult, AppState, time};

/// Every sub-user and security group call: right `admin` (master users
/// only) and plan feature `multilevel_access` on every tracker of the account.
pub(super) const SUBUSER_CALLS: User =
    User::needs(Right::Admin).feature(Feature::MultilevelAccess, FeatureScope::AllTrackers);

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new("/v2/subuser/list", SUBUSER_CALLS, list).doc(
            "List the sub-users",
            "Every sub-user of the account. Needs the right `admin` and the plan feature \
             `multilevel_access` on every tracker of the account.",
        ),
        Route::new("/v2/subuser/delete", SUBUSER_CALLS, delete)
            .doc(
                "Delete a sub-user",
                "Deletes the sub-user for good: its sessions and API keys end at once and its login \
                 is free again; what it created stays with the account.",
            )
            .errors(&[ErrorCode::NotFoundInDatabase]),
        Route::new("/v2/subuser/session/create", SUBUSER_CALLS, session_create)
            .doc(
                "Create a session of a sub-user",
                "A new user session hash of the sub-user, as if it had logged in, so that the \
                 master can act as it (a master session or an API key).",
            )
            .errors(&[ErrorCode::NotFoundInDatabase, ErrorCode::UserNotActivated]),
    ]
}

#[derive(Debug, Deserialize, ToSchema)]
struct SubuserParams {
    /// The sub-user.
    subuser_id: i64,
}

impl Params for SubuserParams {}

async fn delete(state: AppState, caller: UserAuth, p: SubuserParams) -> ApiResult<Success<Done>> {
    state
        .store()
        .delete_subuser(caller.master_id, p.subuser_id)
        .await?;
    Ok(Success::done())
}

/// The session created.
#[derive(Debug, Serialize, ToSchema)]
struct Session {
    /// The sub-user's session hash: 32 hexadecimal characters.
    #[schema(pattern = "^[0-9a-f]{32}$")]
    hash: String,
}

async fn session_create(
    state: AppState,
    caller: UserAuth,
    p: SubuserParams,
) -> ApiResult<Success<Session>> {
    let secret = state
        .store()
        .create_subuser_session(caller.master_id, p.subuser_id)
        .await?;
    Ok(Success(Session {
        hash: secret.expose().to_owned(),
    }))
}

/// A sub-user.
#[derive(Debug, Serialize, ToSchema)]
struct SubuserObject {
    #[serde(flatten)]
    subuser: platform::Subuser,
    /// When it was created, `YYYY-MM-DD HH:MM:SS` in the caller's time zone.
    creation_date: String,
}

/// The sub-users.
#[derive(Debug, Serialize, ToSchema)]
struct Subusers {
    list: Vec<SubuserObject>,
}

async fn list(state: AppState, caller: UserAuth, _: NoParams) -> ApiResult<Success<Subusers>> {
    let subusers = state.store().list_subusers(caller.master_id).await?;
    let list = subusers
        .into_iter()
        .map(|s| SubuserObject {
            creation_date: time::main_interface(s.created_at, &caller.time_zone),
            subuser: s,
        })
        .collect();
    Ok(Success(Subusers { list }))
}
