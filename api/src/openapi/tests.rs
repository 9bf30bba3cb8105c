//! The document is made from the routes: every route is in it with its
//! summary, parameters, answer and codes; `docs/openapi.json` is up to date.

use serde_json::{Value, json};

use crate::server::routes;

fn doc() -> Value {
    crate::openapi_document()
}

#[test]
fn every_route_is_documented_with_a_summary_and_its_methods() {
    let doc = doc();
    let routes = routes();
    let paths = doc["paths"].as_object().expect("paths");
    assert_eq!(paths.len(), routes.len(), "one path item per route");
    for route in &routes {
        let item = &paths[route.path];
        for method in route.doc.methods {
            let operation = &item[*method];
            assert!(
                operation.is_object(),
                "{method} {} is not documented",
                route.path
            );
            let summary = operation["summary"].as_str().unwrap_or_default();
            assert!(
                !summary.is_empty(),
                "{method} {} has no summary",
                route.path
            );
            let description = operation["description"].as_str().unwrap_or_default();
            assert!(
                !description.is_empty(),
                "{method} {} has no description",
                route.path
            );
            assert!(
                operation["responses"]["200"].is_object(),
                "{method} {}",
                route.path
            );
        }
    }
}

#[test]
fn operation_ids_are_unique() {
    let doc = doc();
    let mut ids: Vec<&str> = doc["paths"]
        .as_object()
        .into_iter()
        .flat_map(|p| p.values())
        .flat_map(|item| item.as_object().into_iter().flat_map(|m| m.values()))
        .filter_map(|op| op["operationId"].as_str())
        .collect();
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count);
}

#[test]
fn lenient_calls_take_the_three_forms() {
    let doc = doc();
    let create = &doc["paths"]["/v2/api/key/create"];
    let get_params: Vec<&str> = create["get"]["parameters"]
        .as_array()
        .expect("query parameters")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(get_params, ["title"]);
    assert_eq!(create["get"]["parameters"][0]["in"], "query");
    assert_eq!(create["get"]["parameters"][0]["schema"]["maxLength"], 255);
    let content = &create["post"]["requestBody"]["content"];
    assert_eq!(
        content["application/json"]["schema"]["required"],
        json!(["title"])
    );
    assert!(content["application/x-www-form-urlencoded"].is_object());
    assert_eq!(create["post"]["x-trackhouse-credential"], "user_session");
    assert_eq!(
        create["post"]["security"],
        json!([{ "NVX": [] }, { "hash": [] }])
    );
}

#[test]
fn arrays_are_json_text_in_the_query_and_the_form() {
    let doc = doc();
    let read = &doc["paths"]["/dwh/v1/tracker/raw_data/read"];
    let columns = read["get"]["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .find(|p| p["name"] == "columns")
        .expect("columns");
    assert_eq!(columns["schema"]["type"], "string");
    assert_eq!(columns["schema"]["contentMediaType"], "application/json");
    assert_eq!(columns["schema"]["contentSchema"]["type"], "array");
    let form = &read["post"]["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
        ["properties"]["columns"];
    assert_eq!(form["type"], "string");
    let json_body = &read["post"]["requestBody"]["content"]["application/json"]["schema"]["properties"]
        ["columns"];
    assert_eq!(json_body["type"], "array");
    // The export's three media types.
    let media: Vec<&String> = read["post"]["responses"]["200"]["content"]
        .as_object()
        .expect("content")
        .keys()
        .collect();
    assert_eq!(
        media,
        [
            "text/csv",
            "application/vnd.apache.parquet",
            "application/x-ndjson"
        ]
    );
}

#[test]
fn path_parameters_leave_the_body() {
    let doc = doc();
    let post = &doc["paths"]["/eco_fleet/v1/trackers/{tracker_id}/resampling"]["post"];
    let parameters = post["parameters"].as_array().expect("parameters");
    assert_eq!(parameters.len(), 1);
    assert_eq!(parameters[0]["name"], "tracker_id");
    assert_eq!(parameters[0]["in"], "path");
    assert_eq!(parameters[0]["required"], true);
    let body = &post["requestBody"]["content"]["application/json"]["schema"];
    assert!(body["properties"].get("tracker_id").is_none(), "{body}");
    assert_eq!(
        body["properties"]["resampling_props"]["items"]["properties"]["data_type"]["enum"],
        json!(["FUEL", "SPEED", "MOVEMENT", "LNG", "LAT"])
    );
}

#[test]
fn error_codes_are_listed_under_their_status() {
    let doc = doc();
    let read = &doc["paths"]["/dwh/v1/tracker/raw_data/read"]["post"]["responses"];
    let response = |status: &str| -> &Value {
        let reference = read[status]["$ref"].as_str().unwrap_or_default();
        let name = reference
            .strip_prefix("#/components/responses/")
            .unwrap_or_else(|| panic!("{status}: {reference}"));
        &doc["components"]["responses"][name]
    };
    let codes = |status: &str| -> Vec<i64> {
        response(status)["content"]["application/json"]["schema"]["allOf"][1]["properties"]
            ["status"]["properties"]["code"]["enum"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default()
    };
    // Credential (3, 4, 103), input (5, 7), the call (201, 211).
    assert_eq!(codes("400"), [3, 4, 5, 7, 103, 201, 211]);
    // 11 dealer blocked, 208 tracker blocked, 276 session refused.
    assert_eq!(codes("403"), [11, 208, 276]);
    assert_eq!(codes("404"), [204]);
    assert_eq!(codes("412"), [9]);
    assert_eq!(codes("429"), [15]);
    assert_eq!(codes("500"), [1, 6]);
    assert_eq!(codes("503"), [8, 14]);
    assert!(response("429")["headers"]["Retry-After"].is_object());
    // A public call has no security; the intake takes its bearer token.
    let auth = &doc["paths"]["/v2/user/auth"]["post"];
    assert!(auth.get("security").is_none());
    assert_eq!(auth["x-trackhouse-credential"], "none");
    let intake = &doc["paths"]["/ingest/v1/messages"];
    assert!(intake.get("get").is_none());
    assert_eq!(intake["post"]["security"], json!([{ "ingestToken": [] }]));
}

#[test]
fn component_references_resolve() {
    let doc = doc();
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for reference in refs {
        let defined = if let Some(name) = reference.strip_prefix("#/components/schemas/") {
            schemas.contains_key(name)
        } else if let Some(name) = reference.strip_prefix("#/components/responses/") {
            doc["components"]["responses"].get(name).is_some()
        } else {
            false
        };
        assert!(defined, "{reference} is not defined");
    }
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                if key == "$ref" {
                    out.extend(inner.as_str().map(str::to_owned));
                } else {
                    collect_refs(inner, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// `docs/openapi.json` is what `trackhouse openapi` writes today, so a change
/// of a call shows up in review as a change of the document.
#[test]
fn the_committed_document_is_up_to_date() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/openapi.json");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == crate::openapi_text(),
        "{} is not the document of the routes; run `cargo run -- openapi --out docs/openapi.json`",
        path.display()
    );
}

/// The platform's text enums are documented as they are written on the wire
/// (the fuzzer found `NotBlocked` documented for `NOT_BLOCKED`).
#[test]
fn enums_are_documented_as_sent() {
    let doc = doc();
    let schemas = &doc["components"]["schemas"];
    let spelled = |all: &[&str]| json!(all);
    assert_eq!(
        schemas["BlockStatus"]["enum"],
        spelled(
            &platform::BlockStatus::ALL
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
        )
    );
    assert_eq!(
        schemas["ContractType"]["enum"],
        spelled(
            &platform::ContractType::ALL
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
        )
    );
    assert_eq!(schemas["BlockStatus"]["enum"][0], "NOT_BLOCKED");
}

/// Calls are mounted only by `Route::mount`, so none can bypass the
/// declaration that documents it: no other `.route(`, `.nest(`, `.merge(`
/// or `.route_service(` in the crate's sources.
#[test]
fn routes_are_mounted_only_from_their_declarations() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offenders = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("api/src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let relative = path.strip_prefix(&src).unwrap_or(&path).to_owned();
            for (n, line) in text.lines().enumerate() {
                let mounts = [".route(", ".nest(", ".merge(", ".route_service("]
                    .iter()
                    .any(|m| line.contains(m));
                let comment = line.trim_start().starts_with("//");
                if mounts && !comment && relative != std::path::Path::new("route.rs") {
                    offenders.push(format!("{}:{}: {line}", relative.display(), n + 1));
                }
            }
        }
    }
    // This file names the methods it looks for, in strings.
    offenders.retain(|o| !o.starts_with("openapi/tests.rs"));
    assert!(
        offenders.is_empty(),
        "mounted outside Route::mount:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn no_two_types_share_a_schema_name() {
    // utoipa names a schema after its Rust type: a second type of the same
    // name (a `Location` of another module) would silently replace the first.
    let (_, clashes) = crate::openapi::document_and_clashes(&routes());
    assert!(clashes.is_empty(), "schemas named twice: {clashes:?}");
}

#[test]
fn a_name_registered_with_another_schema_is_a_clash() {
    let mut schemas = crate::answer::Schemas::default();
    schemas.insert("Location", json!({"type": "object"}));
    schemas.insert("Location", json!({"type": "object"}));
    assert!(schemas.clashes().is_empty());
    schemas.insert("Location", json!({"type": "string"}));
    assert_eq!(schemas.clashes(), ["Location"]);
}
