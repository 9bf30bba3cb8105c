//! What a call answers on success, and how the OpenAPI document describes it.
//!
//! A handler returns a type implementing [`Answer`]: the response itself and
//! its description, so the document cannot drift from what is sent. JSON
//! calls answer [`Success`]`<T>`: `{"success":true}` followed by the members
//! of `T`, whose `ToSchema` derive documents them.

use std::collections::BTreeMap;

use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use crate::ApiError;

/// The component schemas a document collects while its calls are described.
#[derive(Debug, Default)]
pub(crate) struct Schemas {
    by_name: BTreeMap<String, Value>,
    /// Names registered twice with different schemas: two Rust types of the
    /// same name, of which only the last would be documented (a test keeps
    /// this empty).
    clashes: Vec<String>,
}

impl Schemas {
    /// `T`'s own schema, inline, after registering every schema it refers to.
    pub(crate) fn inline<T: ToSchema>(&mut self) -> Value {
        let mut named = Vec::new();
        T::schemas(&mut named);
        for (name, schema) in named {
            self.register(name, to_json(&schema));
        }
        to_json(&T::schema())
    }

    /// Registers a schema written out by hand (the error object).
    pub(crate) fn insert(&mut self, name: &str, schema: Value) -> Value {
        self.register(name.to_owned(), schema);
        json!({ "$ref": format!("#/components/schemas/{name}") })
    }

    fn register(&mut self, name: String, schema: Value) {
        if let Some(before) = self.by_name.insert(name.clone(), schema) {
            if self.by_name.get(&name) != Some(&before) {
                self.clashes.push(name);
            }
        }
    }

    /// Names registered with two different schemas.
    pub(crate) fn clashes(&self) -> &[String] {
        &self.clashes
    }

    /// Every schema registered, by name.
    pub(crate) fn into_map(self) -> Map<String, Value> {
        self.by_name.into_iter().collect()
    }
}

/// A schema written as JSON, for a parameter read as a `serde_json::Value`
/// and checked by hand (`#[schema(schema_with = ...)]`).
pub(crate) fn json_schema(
    schema: Value,
) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    serde_json::from_value(schema).unwrap_or_else(|e| {
        // A malformed literal: a bug the document test shows at once.
        let mut broken = utoipa::openapi::schema::Object::new();
        broken.description = Some(format!("schema literal does not parse: {e}"));
        utoipa::openapi::RefOr::T(utoipa::openapi::schema::Schema::Object(broken))
    })
}

fn to_json(schema: &impl Serialize) -> Value {
    // utoipa's schema types serialize to plain JSON; a failure would be a bug in a derive.
    serde_json::to_value(schema).unwrap_or_else(|e| json!({ "description": e.to_string() }))
}

/// A success answer of a call, with its OpenAPI description.
pub(crate) trait Answer: IntoResponse + Send + 'static {
    /// The OpenAPI response object of the success (HTTP 200).
    fn describe(schemas: &mut Schemas) -> Value;
}

/// `{"success":true, ...}` with the members of `T`.
#[derive(Debug)]
pub(crate) struct Success<T>(pub(crate) T);

/// The members of a success that has nothing to say but `success`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Done {}

impl Success<Done> {
    /// `{"success":true}` alone.
    pub(crate) const fn done() -> Self {
        Self(Done {})
    }
}

#[derive(Serialize)]
struct Wire<'a, T> {
    success: bool,
    #[serde(flatten)]
    members: &'a T,
}

impl<T: Serialize> IntoResponse for Success<T> {
    fn into_response(self) -> Response {
        let wire = Wire {
            success: true,
            members: &self.0,
        };
        match serde_json::to_vec(&wire) {
            Ok(body) => (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response(),
            Err(e) => {
                tracing::error!(error = %e, "an answer could not be serialised");
                ApiError::new(schemas::ErrorCode::Unexpected).into_response()
            }
        }
    }
}

impl<T: Serialize + ToSchema + Send + 'static> Answer for Success<T> {
    fn describe(schemas: &mut Schemas) -> Value {
        let members = schemas.inline::<T>();
        json!({
            "description": "Success.",
            "content": { "application/json": { "schema": success_schema(members) } }
        })
    }
}

/// `members` (an object schema) with `success: true` first.
fn success_schema(members: Value) -> Value {
    let flag = json!({ "type": "boolean", "const": true });
    match members {
        Value::Object(mut object) if object.get("type") == Some(&json!("object")) => {
            let mut properties = Map::new();
            properties.insert("success".to_owned(), flag);
            if let Some(Value::Object(own)) = object.remove("properties") {
                properties.extend(own);
            }
            let mut required = vec![json!("success")];
            if let Some(Value::Array(own)) = object.remove("required") {
                required.extend(own);
            }
            object.insert("properties".to_owned(), Value::Object(properties));
            object.insert("required".to_owned(), Value::Array(required));
            Value::Object(object)
        }
        // A composed schema (flattened members): the flag beside it.
        other => json!({
            "allOf": [
                { "type": "object", "required": ["success"], "properties": { "success": flag } },
                other
            ]
        }),
    }
}

/// A body of another media type (CSV, Parquet, text), already built into a response.
#[derive(Debug)]
pub(crate) struct Media<K: MediaKind> {
    response: Response,
    kind: std::marker::PhantomData<K>,
}

impl<K: MediaKind> Media<K> {
    pub(crate) fn new(response: impl IntoResponse) -> Self {
        Self {
            response: response.into_response(),
            kind: std::marker::PhantomData,
        }
    }
}

impl<K: MediaKind> IntoResponse for Media<K> {
    fn into_response(self) -> Response {
        self.response
    }
}

/// The media types of a [`Media`] answer and what it holds.
pub(crate) trait MediaKind: Send + 'static {
    /// What the body holds.
    const DESCRIPTION: &'static str;
    /// `(media type, schema)` pairs the answer may come as.
    fn content() -> Value;
}

impl<K: MediaKind> Answer for Media<K> {
    fn describe(_: &mut Schemas) -> Value {
        json!({ "description": K::DESCRIPTION, "content": K::content() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, ToSchema)]
    struct Member {
        /// A count.
        count: u32,
    }

    #[test]
    fn success_puts_the_flag_first_and_requires_it() {
        let mut schemas = Schemas::default();
        let response = Success::<Member>::describe(&mut schemas);
        let schema = &response["content"]["application/json"]["schema"];
        let keys: Vec<&String> = schema["properties"]
            .as_object()
            .map(|p| p.keys().collect())
            .unwrap_or_default();
        assert_eq!(keys, ["success", "count"]);
        assert_eq!(schema["required"], json!(["success", "count"]));
        assert_eq!(schema["properties"]["success"]["const"], true);
    }

    #[tokio::test]
    async fn success_serializes_the_flag_and_the_members() {
        let response = Success(Member { count: 3 }).into_response();
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap_or_default();
        assert_eq!(&body[..], br#"{"success":true,"count":3}"#);
    }
}
