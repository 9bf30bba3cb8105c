//! `/v2/security_group/list|create|update|delete`: the groups that grant
//! sub-users their rights (clarification 37). The sub-user calls' access:
//! right `admin` (master users only) and plan feature `multilevel_access`
//! on every tracker of the account.

use platform::{SecurityGroup, UserAuth};
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Done, Success};
use crate::route::{NoParams, Params, Route};
use crate::v2::records::Created;
use crate::v2::subuser::SUBUSER_CALLS;
use crate::{ApiResult, AppState};

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new("/v2/security_group/list", SUBUSER_CALLS, list).doc(
            "List the security groups",
            "Every security group of the account with the rights it grants, by id.",
        ),
        Route::new("/v2/security_group/create", SUBUSER_CALLS, create).doc(
            "Create a security group",
            "Stores a group (`label`, `rights`) of the account; answers its id. \
             `admin` cannot be granted.",
        ),
        Route::new("/v2/security_group/update", SUBUSER_CALLS, update)
            .doc(
                "Update a security group",
                "Replaces the label and rights of the group `security_group.id`; \
                 its sub-users hold the new rights from their next call.",
            )
            .errors(&[ErrorCode::NotFoundInDatabase]),
        Route::new("/v2/security_group/delete", SUBUSER_CALLS, delete)
            .doc(
                "Delete a security group",
                "Deletes the group; its sub-users fall back to the default group, which grants nothing.",
            )
            .errors(&[ErrorCode::NotFoundInDatabase]),
    ]
}

/// The security groups.
#[derive(Debug, Serialize, ToSchema)]
struct Groups {
    list: Vec<SecurityGroup>,
}

async fn list(state: AppState, caller: UserAuth, _: NoParams) -> ApiResult<Success<Groups>> {
    let list = state.store().list_security_groups(caller.master_id).await?;
    Ok(Success(Groups { list }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct GroupParams {
    /// The group (`id` required by update, ignored by create).
    security_group: SecurityGroup,
}

impl Params for GroupParams {}

async fn create(state: AppState, caller: UserAuth, p: GroupParams) -> ApiResult<Success<Created>> {
    let id = state
        .store()
        .create_security_group(caller.master_id, &p.security_group)
        .await?;
    Ok(Success(Created { id }))
}

async fn update(state: AppState, caller: UserAuth, p: GroupParams) -> ApiResult<Success<Done>> {
    state
        .store()
        .update_security_group(caller.master_id, &p.security_group)
        .await?;
    Ok(Success::done())
}

#[derive(Debug, Deserialize, ToSchema)]
struct DeleteParams {
    /// The group to delete.
    security_group_id: i64,
}

impl Params for DeleteParams {}

async fn delete(state: AppState, caller: UserAuth, p: DeleteParams) -> ApiResult<Success<Done>> {
    state
        .store()
        .delete_security_group(caller.master_id, p.security_group_id)
        .await?;
    Ok(Success::done())
}
