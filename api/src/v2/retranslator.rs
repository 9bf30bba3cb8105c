//! `/v2/retranslator/list|create|update|delete` and the protocol list
//! (under `protocol/list` and `protocols/list`, clarification 39). Changes
//! need the right `admin` (master users only); any user of the account
//! lists them.

use platform::{RETRANSLATOR_PROTOCOLS, Retranslator, RetranslatorProtocol, Right, UserAuth};
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Done, Success};
use crate::route::{NoParams, Params, Route, User};
use crate::v2::records::Created;
use crate::{ApiResult, AppState};

const CHANGE: User = User::needs(Right::Admin);

pub(super) fn routes() -> Vec<Route> {
    let protocols = |path| {
        Route::new(path, User::any(), protocol_list).doc(
            "List the retranslator protocols",
            "The protocols device data can be forwarded in, with what each needs (login, password).",
        )
    };
    vec![
        Route::new("/v2/retranslator/list", User::any(), list).doc(
            "List the retranslators",
            "Every retranslator of the account, by id, passwords as stored.",
        ),
        Route::new("/v2/retranslator/create", CHANGE, create)
            .doc(
                "Create a retranslator",
                "Stores where the account's device data is to be forwarded; answers its id. 247 when \
                 one with the same address, port and login exists; 268 beyond the user's quota \
                 (10 unless set with `trackhouse admin`). Master users only.",
            )
            .errors(&[ErrorCode::EntityAlreadyExists, ErrorCode::OverQuota]),
        Route::new("/v2/retranslator/update", CHANGE, update)
            .doc(
                "Update a retranslator",
                "Replaces every member of the retranslator `retranslator.id`. Master users only.",
            )
            .errors(&[ErrorCode::NotFoundInDatabase, ErrorCode::EntityAlreadyExists]),
        Route::new("/v2/retranslator/delete", CHANGE, delete)
            .doc("Delete a retranslator", "Master users only.")
            .errors(&[ErrorCode::NotFoundInDatabase]),
        protocols("/v2/retranslator/protocol/list"),
        protocols("/v2/retranslator/protocols/list"),
    ]
}

/// The retranslators.
#[derive(Debug, Serialize, ToSchema)]
struct Retranslators {
    list: Vec<Retranslator>,
}

async fn list(state: AppState, caller: UserAuth, _: NoParams) -> ApiResult<Success<Retranslators>> {
    let list = state.store().list_retranslators(caller.master_id).await?;
    Ok(Success(Retranslators { list }))
}

/// The protocols.
#[derive(Debug, Serialize, ToSchema)]
struct Protocols {
    list: &'static [RetranslatorProtocol],
}

async fn protocol_list(_: AppState, _: UserAuth, _: NoParams) -> ApiResult<Success<Protocols>> {
    Ok(Success(Protocols {
        list: RETRANSLATOR_PROTOCOLS,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct RetranslatorParams {
    /// The retranslator (`id` required by update, ignored by create).
    retranslator: Retranslator,
}

impl Params for RetranslatorParams {}

async fn create(
    state: AppState,
    caller: UserAuth,
    p: RetranslatorParams,
) -> ApiResult<Success<Created>> {
    let id = state
        .store()
        .create_retranslator(caller.master_id, p.retranslator)
        .await?;
    Ok(Success(Created { id }))
}

async fn update(
    state: AppState,
    caller: UserAuth,
    p: RetranslatorParams,
) -> ApiResult<Success<Done>> {
    state
        .store()
        .update_retranslator(caller.master_id, p.retranslator)
        .await?;
    Ok(Success::done())
}

#[derive(Debug, Deserialize, ToSchema)]
struct DeleteParams {
    /// The retranslator to delete.
    retranslator_id: i64,
}

impl Params for DeleteParams {}

async fn delete(state: AppState, caller: UserAuth, p: DeleteParams) -> ApiResult<Success<Done>> {
    state
        .store()
        .delete_retranslator(caller.master_id, p.retranslator_id)
        .await?;
    Ok(Success::done())
}
