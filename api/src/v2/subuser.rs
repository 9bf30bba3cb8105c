//! `/v2/subuser/*`: right `admin` and plan feature `multilevel_access` on all trackers.

use platform::{Feature, Right, UserAuth};
use schemas::{ErrorCode, TrackerId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Done, Success};
use crate::route::{FeatureScope, NoParams, Params, Route, User};
use crate::v2::records::Created;
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
        Route::new("/v2/subuser/register", SUBUSER_CALLS, register)
            .doc(
                "Register a sub-user",
                "A new sub-user of the account with its password (6 to 20 characters); it sees no \
                 trackers until `subuser/update` gives it some. Answers its id.",
            )
            .errors(&[ErrorCode::NotFoundInDatabase, ErrorCode::LoginAlreadyInUse]),
        Route::new("/v2/subuser/update", SUBUSER_CALLS, update)
            .doc(
                "Update a sub-user",
                "Replaces the profile and security group of the sub-user `user.id`, and its tracker \
                 scope when `tracker_ids` is given (trackers of the account only, else 217).",
            )
            .errors(&[
                ErrorCode::NotFoundInDatabase,
                ErrorCode::LoginAlreadyInUse,
                ErrorCode::NonexistentEntitiesInList,
            ]),
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
struct RegisterParams {
    /// The sub-user (`id` ignored).
    user: platform::Subuser,
    /// Its password: 6 to 20 printable characters (a number is taken as its decimal text).
    #[schema(min_length = 6, max_length = 20)]
    password: String,
}

impl Params for RegisterParams {}

async fn register(
    state: AppState,
    caller: UserAuth,
    p: RegisterParams,
) -> ApiResult<Success<Created>> {
    let id = state
        .store()
        .register_subuser(caller.master_id, p.user, &p.password)
        .await?;
    Ok(Success(Created { id: id.0 }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct UpdateParams {
    /// The sub-user (`id` required).
    user: platform::Subuser,
    /// The trackers it may see (its scope); unchanged when absent.
    #[serde(default)]
    tracker_ids: Option<Vec<i64>>,
}

impl Params for UpdateParams {}

async fn update(state: AppState, caller: UserAuth, p: UpdateParams) -> ApiResult<Success<Done>> {
    let trackers: Option<Vec<TrackerId>> = p
        .tracker_ids
        .map(|ids| ids.into_iter().map(TrackerId).collect());
    state
        .store()
        .update_subuser(caller.master_id, p.user, trackers.as_deref())
        .await?;
    Ok(Success::done())
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
