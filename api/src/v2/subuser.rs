//! `/v2/subuser/*`: right `admin` and plan feature `multilevel_access` on all trackers.

use platform::{Feature, Right, UserAuth};
use serde::Serialize;

use crate::route::{FeatureScope, NoParams, Route, User};
use crate::{ApiResult, AppState, Reply, time};

const SUBUSER_CALLS: User =
    User::needs(Right::Admin).feature(Feature::MultilevelAccess, FeatureScope::AllTrackers);

pub(super) fn routes() -> Vec<Route> {
    vec![Route::new("/v2/subuser/list", SUBUSER_CALLS, list)]
}

#[derive(Debug, Serialize)]
struct SubuserObject {
    #[serde(flatten)]
    subuser: platform::Subuser,
    creation_date: String,
}

async fn list(state: AppState, caller: UserAuth, _: NoParams) -> ApiResult<Reply> {
    let subusers = state.store().list_subusers(caller.master_id).await?;
    let list: Vec<SubuserObject> = subusers
        .into_iter()
        .map(|s| SubuserObject {
            creation_date: time::main_interface(s.created_at, &caller.time_zone),
            subuser: s,
        })
        .collect();
    Reply::list(list)
}
