//! The OpenAPI 3.1 document of every call, made from the route declarations
//! (`route::Route`), never written beside them: served at `GET /openapi.json`
//! with a reference page at `GET /docs`, and written to `docs/openapi.json` by
//! `trackhouse openapi`.
//!
//! A lenient call (`RequestDoc::Params`) is documented twice, as `get` with
//! query parameters and as `post` with a JSON or form body: the three request
//! forms of clarification 1. In the query and the form, an array or object
//! parameter is JSON text (`contentMediaType: application/json`, its
//! `contentSchema` the parameter's schema). Each status a call can fail with
//! gets the error object, its `status.code` an enum of the codes the call
//! declares for that status.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use schemas::ErrorCode;
use serde_json::{Map, Value, json};

use crate::AppState;
use crate::answer::{Answer, Media, MediaKind, Schemas};
use crate::route::{AccessDoc, CallDoc, Credential, FILE_PART, RequestDoc, Route};

/// The document of `routes`.
pub(crate) fn document(routes: &[Route]) -> Value {
    document_and_clashes(routes).0
}

/// The document of `routes`, and the schema names two different types
/// registered (see [`Schemas::clashes`]).
pub(crate) fn document_and_clashes(routes: &[Route]) -> (Value, Vec<String>) {
    let mut schemas = Schemas::default();
    let error_object = error_object(&mut schemas);
    let mut errors = ErrorResponses {
        object: error_object,
        named: Map::new(),
    };
    let mut paths = Map::new();
    for route in routes {
        let item = path_item(route.path, &route.doc, &mut schemas, &mut errors);
        paths.insert(route.path.to_owned(), item);
    }
    let clashes = schemas.clashes().to_vec();
    let document = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Trackhouse",
            "version": env!("CARGO_PKG_VERSION"),
            "summary": "Telemetry of GPS fleet trackers and the fleet monitoring platform's web API.",
            "description": INFO,
            "license": { "name": "Apache-2.0", "identifier": "Apache-2.0" }
        },
        "tags": TAGS.iter().map(|(name, description)| json!({"name": name, "description": description})).collect::<Vec<_>>(),
        "paths": paths,
        "components": {
            "schemas": schemas.into_map(),
            "responses": errors.named,
            "securitySchemes": {
                "NVX": {
                    "type": "apiKey", "in": "header", "name": "Authorization",
                    "description": "`Authorization: NVX <hash>`: the API key, user session or panel session hash the call takes (`x-trackhouse-credential`)."
                },
                "hash": {
                    "type": "apiKey", "in": "query", "name": "hash",
                    "description": "The same hash as the parameter `hash`, in the query string or in the JSON or form body."
                },
                "ingestToken": {
                    "type": "http", "scheme": "bearer",
                    "description": "An ingest token (`trackhouse admin ingest-token create`), as `Authorization: Bearer <token>`."
                }
            }
        }
    });
    (document, clashes)
}

const INFO: &str = "Every call of the main interface (`/v2`), the raw data export \
(`/dwh/v1`), fuel resampling (`/eco_fleet/v1`) and device data intake (`/ingest/v1`), \
served by one `trackhouse` process.\n\n\
Calls of `/v2`, `/dwh/v1` and `/eco_fleet/v1` take their parameters in any of three \
equivalent forms: POST with a JSON object body, POST form-encoded, or GET with a query \
string; in the last two an array or object parameter is written as JSON text. Paths \
answer with or without a trailing slash. The credential goes in `Authorization: NVX <hash>` \
or as the parameter `hash`.\n\n\
Every failure answers the error object `{\"success\":false,\"status\":{\"code\",\"description\"}}` \
with the HTTP status of its code (spec document 1); validation errors (code 7) name the \
parameter in `errors`. Over a rate limit the answer is 429, code 15, with `Retry-After`.";

/// Tags, by path prefix, in the order the reference shows them.
const TAGS: [(&str, &str); 6] = [
    (
        "Account",
        "Calls of the account (`/v2`): sessions, API keys, sub-users.",
    ),
    ("Dealer panel", "Calls of the dealer panel (`/v2/panel`)."),
    (
        "Raw data",
        "Raw data export (`/dwh/v1`): CSV, Parquet or NDJSON.",
    ),
    (
        "Fuel resampling",
        "Fuel, speed, movement and position on a time grid (`/eco_fleet/v1`).",
    ),
    ("Intake", "Device messages in (`/ingest/v1`)."),
    ("Service", "Health, metrics and this document."),
];

fn tag(path: &str) -> &'static str {
    if path.starts_with("/v2/panel/") {
        "Dealer panel"
    } else if path.starts_with("/v2/") {
        "Account"
    } else if path.starts_with("/dwh/") {
        "Raw data"
    } else if path.starts_with("/eco_fleet/") {
        "Fuel resampling"
    } else if path.starts_with("/ingest/") {
        "Intake"
    } else {
        "Service"
    }
}

fn path_item(
    path: &str,
    doc: &CallDoc,
    schemas: &mut Schemas,
    errors: &mut ErrorResponses,
) -> Value {
    let path_params: Vec<&str> = path
        .split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        .collect();
    let answer = (doc.answer)(schemas);
    let mut responses = errors.responses(answer, &doc.codes());
    for (status, response) in doc.refusals {
        responses[status.to_string()] = response();
    }
    let mut item = Map::new();
    for &method in doc.methods {
        let mut operation = Map::new();
        operation.insert("tags".into(), json!([tag(path)]));
        operation.insert("summary".into(), json!(doc.summary));
        operation.insert("description".into(), json!(doc.description));
        operation.insert("operationId".into(), json!(operation_id(method, path)));
        let mut parameters = Vec::new();
        match doc.request {
            RequestDoc::Params(schema) => {
                let params = ParamsSchema::of(schema(schemas));
                for name in &path_params {
                    if let Some(schema) = params.properties.get(*name) {
                        parameters.push(json!({
                            "name": name, "in": "path", "required": true,
                            "schema": plain(schema),
                        }));
                    }
                }
                let others = params.without(&path_params);
                if method == "get" {
                    parameters.extend(others.query_parameters());
                } else {
                    operation.insert("requestBody".into(), others.request_body());
                }
            }
            RequestDoc::Multipart(schema) => {
                let params = ParamsSchema::of(schema(schemas));
                operation.insert("requestBody".into(), params.multipart_body());
            }
            RequestDoc::Body {
                media_type,
                schema,
                headers,
            } => {
                parameters.extend(headers());
                operation.insert(
                    "requestBody".into(),
                    json!({ "required": true, "content": { media_type: { "schema": schema(schemas) } } }),
                );
            }
            RequestDoc::Nothing => {}
        }
        if !parameters.is_empty() {
            operation.insert("parameters".into(), Value::Array(parameters));
        }
        operation.insert("responses".into(), responses.clone());
        let (security, credential) = security(&doc.access);
        if let Some(security) = security {
            operation.insert("security".into(), security);
        }
        operation.insert("x-trackhouse-credential".into(), json!(credential));
        item.insert(method.to_owned(), Value::Object(operation));
    }
    Value::Object(item)
}

/// `post_v2_api_key_create`, `get_eco_fleet_v1_trackers_tracker_id_resampling`.
fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_owned();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        id.push('_');
        id.extend(part.chars().filter(|c| !matches!(c, '{' | '}')));
    }
    id.replace(['.', '-'], "_")
}

fn security(access: &AccessDoc) -> (Option<Value>, &'static str) {
    let credential = access.credential;
    let security = match credential {
        Credential::None => None,
        Credential::IngestToken => Some(json!([{ "ingestToken": [] }])),
        Credential::ApiKey | Credential::UserSession | Credential::PanelSession => {
            Some(json!([{ "NVX": [] }, { "hash": [] }]))
        }
    };
    (security, credential.name())
}

/// The parameters of a lenient call: the properties of its type's schema.
struct ParamsSchema {
    properties: Map<String, Value>,
    required: Vec<String>,
    description: Option<Value>,
}

impl ParamsSchema {
    fn of(schema: Value) -> Self {
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Self {
            properties,
            required,
            description: schema.get("description").cloned(),
        }
    }

    fn without(&self, names: &[&str]) -> Self {
        Self {
            properties: self
                .properties
                .iter()
                .filter(|(k, _)| !names.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            required: self
                .required
                .iter()
                .filter(|k| !names.contains(&k.as_str()))
                .cloned()
                .collect(),
            description: self.description.clone(),
        }
    }

    fn query_parameters(&self) -> Vec<Value> {
        self.properties
            .iter()
            .map(|(name, schema)| {
                let mut parameter = json!({
                    "name": name,
                    "in": "query",
                    "required": self.required.contains(name),
                    "schema": as_text(schema),
                });
                if let Some(description) = schema.get("description") {
                    parameter["description"] = description.clone();
                }
                parameter
            })
            .collect()
    }

    fn object(&self, property: impl Fn(&Value) -> Value) -> Value {
        let mut object = json!({
            "type": "object",
            "properties": self.properties.iter().map(|(k, v)| (k.clone(), property(v))).collect::<Map<_, _>>(),
        });
        if !self.required.is_empty() {
            object["required"] = json!(self.required);
        }
        if let Some(description) = &self.description {
            object["description"] = description.clone();
        }
        object
    }

    /// The parameters as text parts, and the part `file`.
    fn multipart_body(&self) -> Value {
        let mut object = self.object(as_text);
        object["properties"][FILE_PART] = json!({
            "type": "string",
            "format": "binary",
            "description": "The file.",
        });
        let mut required = self.required.clone();
        required.push(FILE_PART.to_owned());
        object["required"] = json!(required);
        json!({
            "required": true,
            "content": { "multipart/form-data": { "schema": object } }
        })
    }

    fn request_body(&self) -> Value {
        json!({
            "required": !self.required.is_empty(),
            "content": {
                "application/json": { "schema": self.object(Value::clone) },
                "application/x-www-form-urlencoded": { "schema": self.object(as_text) },
            }
        })
    }
}

/// Whether a schema takes a JSON array or object (or a reference to one).
fn structured(schema: &Value) -> bool {
    let kinds = |t: &Value| matches!(t.as_str(), Some("array" | "object"));
    match schema.get("type") {
        Some(Value::Array(types)) => types.iter().any(kinds),
        Some(t) => kinds(t),
        None => ["$ref", "oneOf", "anyOf", "allOf", "properties", "items"]
            .iter()
            .any(|k| schema.get(*k).is_some()),
    }
}

/// A parameter as text (query string, form body): arrays and objects as JSON
/// text; `null` is not a value there.
fn as_text(schema: &Value) -> Value {
    let text_option = schema
        .get("oneOf")
        .and_then(Value::as_array)
        .is_some_and(|options| {
            options
                .iter()
                .any(|o| o.get("type") == Some(&json!("string")))
        });
    if text_option {
        // Text as it is, or an object as JSON text: only a description can say so.
        let mut text = json!({ "type": "string" });
        if let Some(description) = schema.get("description") {
            text["description"] = description.clone();
        }
        return text;
    }
    if structured(schema) {
        let mut text = json!({
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": plain(schema),
        });
        if let Some(description) = schema.get("description") {
            text["description"] = description.clone();
        }
        return text;
    }
    plain(schema)
}

/// The schema without `null` among its types (absent is how text says null).
fn plain(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            schema["type"] = only;
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(options)) = schema.get_mut("oneOf") {
        options.retain(|o| o.get("type") != Some(&json!("null")));
    }
    schema
}

/// The error object, registered once; each status refines `status.code`.
fn error_object(schemas: &mut Schemas) -> Value {
    schemas.insert(
        "Error",
        json!({
            "type": "object",
            "description": "The error object of every failure (spec document 1).",
            "required": ["success", "status"],
            "properties": {
                "success": { "type": "boolean", "const": false },
                "status": {
                    "type": "object",
                    "required": ["code", "description"],
                    "properties": {
                        "code": { "type": "integer", "description": "The spec's error code." },
                        "description": { "type": "string", "description": "The code's meaning, and what failed." }
                    }
                },
                "errors": {
                    "type": "array",
                    "description": "With code 7: each failing parameter and what is wrong with it (with codes 7, 206 and 273 of a file upload: each row's problems).",
                    "items": {
                        "type": "object",
                        "required": ["parameter", "error"],
                        "properties": {
                            "row_number": { "type": "integer", "description": "The row of an uploaded file, 1-based, the header row not counted." },
                            "parameter": { "type": "string", "description": "The parameter as the caller wrote it (`title`, `user.login`, `codes[1]`)." },
                            "error": { "type": "string" }
                        }
                    }
                }
            }
        }),
    )
}

/// The error responses, one per status and set of codes, shared by the
/// operations that answer the same (`components/responses/Error400_3_4_7`).
struct ErrorResponses {
    object: Value,
    named: Map<String, Value>,
}

impl ErrorResponses {
    /// The responses of an operation: `success` and a reference per failing status.
    fn responses(&mut self, success: Value, codes: &[ErrorCode]) -> Value {
        let mut by_status: BTreeMap<u16, Vec<ErrorCode>> = BTreeMap::new();
        for &code in codes {
            by_status.entry(code.http_status()).or_default().push(code);
        }
        let mut responses = Map::new();
        responses.insert("200".into(), success);
        for (status, codes) in by_status {
            let name = codes.iter().fold(format!("Error{status}"), |name, c| {
                format!("{name}_{}", c.number())
            });
            if !self.named.contains_key(&name) {
                let response = self.response(status, &codes);
                self.named.insert(name.clone(), response);
            }
            responses.insert(
                status.to_string(),
                json!({ "$ref": format!("#/components/responses/{name}") }),
            );
        }
        Value::Object(responses)
    }

    fn response(&self, status: u16, codes: &[ErrorCode]) -> Value {
        let numbers: Vec<u16> = codes.iter().map(|c| c.number()).collect();
        let meanings: Vec<String> = codes
            .iter()
            .map(|c| format!("{} {}", c.number(), c.meaning()))
            .collect();
        let mut response = json!({
            "description": format!("The error object; code {}.", meanings.join("; ")),
            "content": { "application/json": { "schema": {
                "allOf": [
                    self.object,
                    { "properties": { "status": { "properties": { "code": { "enum": numbers } } } } }
                ]
            } } }
        });
        if status == 429 || status == 503 {
            response["headers"] = json!({ "Retry-After": {
                "description": "Seconds to wait before trying again.",
                "schema": { "type": "integer", "minimum": 1 }
            } });
        }
        response
    }
}

/// `GET /openapi.json` and `GET /docs`.
pub(crate) fn routes() -> Vec<Route> {
    vec![
        Route::custom(
            "/openapi.json",
            get(openapi_json),
            CallDoc::plain_get(
                "This document",
                "The OpenAPI 3.1 document of every call, made from the same declarations as the routes.",
                Vec::new(),
                Media::<OpenApiJson>::describe,
            ),
        ),
        Route::custom(
            "/docs",
            get(reference_page),
            CallDoc::plain_get(
                "A reference page of this document",
                "One HTML page that renders `/openapi.json` in the browser (RapiDoc, loaded from a CDN by the browser).",
                Vec::new(),
                Media::<Html>::describe,
            ),
        ),
    ]
}

#[derive(Debug)]
struct OpenApiJson;

impl MediaKind for OpenApiJson {
    const DESCRIPTION: &'static str = "The OpenAPI 3.1 document.";
    fn content() -> Value {
        json!({ "application/json": { "schema": { "type": "object", "required": ["openapi", "paths"] } } })
    }
}

#[derive(Debug)]
struct Html;

impl MediaKind for Html {
    const DESCRIPTION: &'static str = "An HTML page.";
    fn content() -> Value {
        json!({ "text/html": { "schema": { "type": "string" } } })
    }
}

async fn openapi_json(State(state): State<AppState>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        state.openapi_document().clone(),
    )
        .into_response()
}

async fn reference_page() -> Response {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        REFERENCE_PAGE,
    )
        .into_response()
}

const REFERENCE_PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Trackhouse API reference</title>
<script type="module" src="https://unpkg.com/rapidoc@9.3.8/dist/rapidoc-min.js"></script>
</head>
<body>
<rapi-doc id="reference" render-style="read" show-header="false"
  allow-try="true" schema-style="table" default-schema-tab="schema"
  sort-tags="false" info-description-headings-in-navbar="true">
  <p slot="nav-logo" style="padding:8px 16px;font-weight:600">Trackhouse</p>
  <noscript>This page renders <a href="openapi.json">openapi.json</a> with RapiDoc, which needs JavaScript.</noscript>
</rapi-doc>
<script>
  // The document sits beside this page: /openapi.json for /docs and /docs/ alike, under any prefix.
  const here = location.pathname.endsWith("/") ? "../openapi.json" : "openapi.json";
  document.getElementById("reference").setAttribute("spec-url", new URL(here, location.href).href);
</script>
</body>
</html>
"#;

#[cfg(test)]
mod tests;
