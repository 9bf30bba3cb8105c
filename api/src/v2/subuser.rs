//! `/v2/subuser/*`: right `admin` and plan feature `multilevel_access` on all trackers.

use platform::{Feature, Right, UserAuth};
use serde::Serialize;
use utoipa::ToSchema;

use crate::answer::Success;
use crate::route::{FeatureScope, NoParams, Route, User};
use crate::{ApiResult, AppState, time};

const SUBUSER_CALLS: User =
    User::needs(Right::Admin).feature(Feature::MultilevelAccess, FeatureScope::AllTrackers);

pub(super) fn routes() -> Vec<Route> {
    vec![Route::new("/v2/subuser/list", SUBUSER_CALLS, list).doc(
        "List the sub-users",
        "Every sub-user of the account. Needs the right `admin` and the plan feature \
         `multilevel_access` on every tracker of the account.",
    )]
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
