//! `/v2/api/key/create|list|delete`: master user, standard session only.

use platform::{ApiKey, Secret, UserAuth};
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Done, Success};
use crate::route::{NoParams, Params, Route, Session};
use crate::{ApiError, ApiResult, AppState, time};

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new("/v2/api/key/create", Session::master(), create)
            .doc(
                "Create an API key",
                "A new API key of the master user, for integrations; it works until deleted. \
                 Needs a user session (not an API key).",
            )
            .errors(&[ErrorCode::OverQuota, ErrorCode::NotFoundInDatabase]),
        Route::new("/v2/api/key/list", Session::master(), list).doc(
            "List the API keys",
            "Every API key of the master user, oldest first. Needs a user session.",
        ),
        Route::new("/v2/api/key/delete", Session::master(), delete)
            .doc(
                "Delete an API key",
                "Deletes one of the master user's API keys; calls made with it fail with code 4 from then on.",
            )
            .errors(&[ErrorCode::NotFoundInDatabase]),
    ]
}

/// The API key object of spec document 3.
#[derive(Debug, Serialize, ToSchema)]
struct KeyObject {
    /// The key: 32 hexadecimal characters.
    #[schema(pattern = "^[0-9a-f]{32}$")]
    hash: String,
    /// When it was created, `YYYY-MM-DD HH:MM:SS` in the user's time zone.
    #[schema(example = "2024-06-01 13:00:00")]
    create_date: String,
    /// Its title.
    title: String,
}

fn key_object(key: &ApiKey, zone: &str) -> KeyObject {
    KeyObject {
        hash: key.hash.expose().to_owned(),
        create_date: time::main_interface(key.created_at, zone),
        title: key.title.clone(),
    }
}

#[derive(Debug, Deserialize, ToSchema)]
struct CreateParams {
    /// What the key is for; printable characters.
    #[schema(min_length = 1, max_length = 255)]
    title: String,
}

impl Params for CreateParams {}

/// The key created.
#[derive(Debug, Serialize, ToSchema)]
struct Created {
    value: KeyObject,
}

async fn create(
    state: AppState,
    (user, _): (UserAuth, Secret),
    p: CreateParams,
) -> ApiResult<Success<Created>> {
    let key = state.store().create_api_key(user.user_id, &p.title).await?;
    Ok(Success(Created {
        value: key_object(&key, &user.time_zone),
    }))
}

/// The keys.
#[derive(Debug, Serialize, ToSchema)]
struct Keys {
    list: Vec<KeyObject>,
}

async fn list(
    state: AppState,
    (user, _): (UserAuth, Secret),
    _: NoParams,
) -> ApiResult<Success<Keys>> {
    let keys = state.store().list_api_keys(user.user_id).await?;
    Ok(Success(Keys {
        list: keys
            .iter()
            .map(|k| key_object(k, &user.time_zone))
            .collect(),
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct DeleteParams {
    /// The key to delete (its `hash`).
    #[schema(min_length = 1)]
    key: String,
}

impl Params for DeleteParams {}

async fn delete(
    state: AppState,
    (user, _): (UserAuth, Secret),
    p: DeleteParams,
) -> ApiResult<Success<Done>> {
    if p.key.trim().is_empty() {
        return Err(ApiError::invalid("key", "must not be empty"));
    }
    state.store().delete_api_key(user.user_id, &p.key).await?;
    Ok(Success::done())
}
