//! `/v2/api/key/create|list|delete`: master user, standard session only.

use platform::{ApiKey, Secret, UserAuth};
use serde::{Deserialize, Serialize};

use crate::route::{NoParams, Params, Route, Session};
use crate::{ApiError, ApiResult, AppState, Reply, time};

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new("/v2/api/key/create", Session::master(), create),
        Route::new("/v2/api/key/list", Session::master(), list),
        Route::new("/v2/api/key/delete", Session::master(), delete),
    ]
}

/// The API key object of spec document 3.
#[derive(Debug, Serialize)]
struct KeyObject {
    hash: String,
    create_date: String,
    title: String,
}

fn key_object(key: &ApiKey, zone: &str) -> KeyObject {
    KeyObject {
        hash: key.hash.expose().to_owned(),
        create_date: time::main_interface(key.created_at, zone),
        title: key.title.clone(),
    }
}

#[derive(Debug, Deserialize)]
struct CreateParams {
    title: String,
}

impl Params for CreateParams {}

async fn create(
    state: AppState,
    (user, _): (UserAuth, Secret),
    p: CreateParams,
) -> ApiResult<Reply> {
    let key = state.store().create_api_key(user.user_id, &p.title).await?;
    Reply::value(key_object(&key, &user.time_zone))
}

async fn list(state: AppState, (user, _): (UserAuth, Secret), _: NoParams) -> ApiResult<Reply> {
    let keys = state.store().list_api_keys(user.user_id).await?;
    Reply::list(
        keys.iter()
            .map(|k| key_object(k, &user.time_zone))
            .collect::<Vec<_>>(),
    )
}

#[derive(Debug, Deserialize)]
struct DeleteParams {
    key: String,
}

impl Params for DeleteParams {}

async fn delete(
    state: AppState,
    (user, _): (UserAuth, Secret),
    p: DeleteParams,
) -> ApiResult<Reply> {
    if p.key.trim().is_empty() {
        return Err(ApiError::invalid("key", "must not be empty"));
    }
    state.store().delete_api_key(user.user_id, &p.key).await?;
    Ok(Reply::ok())
}
