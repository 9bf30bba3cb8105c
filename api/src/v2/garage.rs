//! `/v2/garage/list|create|update|delete`: an account's garages (depots).
//! Any user of the account lists them; changes need the right `vehicle_update`.

use platform::{Garage, Right, UserAuth};
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Done, Success};
use crate::route::{NoParams, Params, Route, User};
use crate::v2::records::Created;
use crate::{ApiResult, AppState};

const CHANGE: User = User::needs(Right::VehicleUpdate);

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new("/v2/garage/list", User::any(), list).doc(
            "List the garages",
            "Every garage (depot) of the account, by id.",
        ),
        Route::new("/v2/garage/create", CHANGE, create).doc(
            "Create a garage",
            "Stores a garage of the account (a sub-user's belongs to its master); answers its id. \
             Needs the right `vehicle_update`.",
        ),
        Route::new("/v2/garage/update", CHANGE, update)
            .doc(
                "Update a garage",
                "Replaces every member of the garage `garage.id`. Needs the right `vehicle_update`.",
            )
            .errors(&[ErrorCode::NotFoundInDatabase]),
        Route::new("/v2/garage/delete", CHANGE, delete)
            .doc(
                "Delete a garage",
                "Deletes the garage; its vehicles keep no garage. Needs the right `vehicle_update`.",
            )
            .errors(&[ErrorCode::NotFoundInDatabase]),
    ]
}

/// The garages.
#[derive(Debug, Serialize, ToSchema)]
struct Garages {
    list: Vec<Garage>,
}

async fn list(state: AppState, caller: UserAuth, _: NoParams) -> ApiResult<Success<Garages>> {
    let list = state.store().list_garages(caller.master_id).await?;
    Ok(Success(Garages { list }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct GarageParams {
    /// The garage (`id` required by update, ignored by create).
    garage: Garage,
}

impl Params for GarageParams {}

async fn create(state: AppState, caller: UserAuth, p: GarageParams) -> ApiResult<Success<Created>> {
    let id = state
        .store()
        .create_garage(caller.master_id, p.garage)
        .await?;
    Ok(Success(Created { id }))
}

async fn update(state: AppState, caller: UserAuth, p: GarageParams) -> ApiResult<Success<Done>> {
    state
        .store()
        .update_garage(caller.master_id, p.garage)
        .await?;
    Ok(Success::done())
}

#[derive(Debug, Deserialize, ToSchema)]
struct DeleteParams {
    /// The garage to delete.
    garage_id: i64,
}

impl Params for DeleteParams {}

async fn delete(state: AppState, caller: UserAuth, p: DeleteParams) -> ApiResult<Success<Done>> {
    state
        .store()
        .delete_garage(caller.master_id, p.garage_id)
        .await?;
    Ok(Success::done())
}
