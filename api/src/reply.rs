use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::{ApiError, ApiResult};

/// A successful answer: `{"success":true, ...}` with the call's members.
#[derive(Debug, Clone)]
pub struct Reply(Map<String, Value>);

impl Reply {
    /// `{"success":true}` alone, for calls without a result.
    pub fn ok() -> Self {
        let mut map = Map::new();
        map.insert("success".to_owned(), Value::Bool(true));
        Self(map)
    }

    /// A single object under `value`.
    pub fn value(value: impl Serialize) -> ApiResult<Self> {
        Self::ok().with("value", value)
    }

    /// A list under `list`.
    pub fn list(list: impl Serialize) -> ApiResult<Self> {
        Self::ok().with("list", list)
    }

    /// A created identifier under `id`.
    pub fn id(id: i64) -> Self {
        let mut reply = Self::ok();
        reply.0.insert("id".to_owned(), Value::from(id));
        reply
    }

    /// Adds a member.
    pub fn with(mut self, key: &str, value: impl Serialize) -> ApiResult<Self> {
        let value = serde_json::to_value(value).map_err(|e| {
            tracing::error!(error = %e, member = key, "answer could not be serialised");
            ApiError::new(schemas::ErrorCode::Unexpected)
        })?;
        self.0.insert(key.to_owned(), value);
        Ok(self)
    }

    /// Adds every member of an object (for calls that answer fields at the top level).
    pub fn flatten(mut self, object: impl Serialize) -> ApiResult<Self> {
        match serde_json::to_value(object) {
            Ok(Value::Object(members)) => {
                self.0.extend(members);
                Ok(self)
            }
            _ => Err(ApiError::new(schemas::ErrorCode::Unexpected)),
        }
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        axum::Json(Value::Object(self.0)).into_response()
    }
}
