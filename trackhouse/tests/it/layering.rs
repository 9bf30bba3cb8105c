//! Dependencies between workspace members point down, dev- and build-dependencies included:
//! `schemas` ← {`platform`, `ingest`, `query`, `resample`, `geocoder`} ← `api` ← `trackhouse`;
//! siblings never depend on each other; `benches` may use any member but the binary,
//! `bench-kernels` only `resample` and `schemas`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The siblings of the middle layer: each depends on `schemas` only.
const SIBLINGS: [&str; 5] = ["platform", "ingest", "query", "resample", "geocoder"];

/// Whether member `from` may depend on member `to`.
fn allowed(from: &str, to: &str) -> bool {
    match from {
        "schemas" => false,
        _ if SIBLINGS.contains(&from) => to == "schemas",
        "api" => to == "schemas" || SIBLINGS.contains(&to),
        "trackhouse" => to == "schemas" || to == "api" || SIBLINGS.contains(&to),
        "benches" => to != "trackhouse" && to != "benches",
        // The kernel benchmarks stay small: the pure-compute crates only.
        "bench-kernels" => to == "schemas" || to == "resample",
        // A new member must be given its place in this table first.
        _ => false,
    }
}

/// One dependency of a workspace member on another.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    from: String,
    to: String,
    /// `normal`, `dev` or `build`.
    kind: String,
}

/// Every edge between workspace members, from `cargo metadata`.
fn member_edges() -> Vec<Edge> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(&manifest)
        .output()
        .expect("running cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
    let member_ids: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let members: Vec<&Value> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| p["id"].as_str().is_some_and(|id| member_ids.contains(id)))
        .collect();
    let names: BTreeSet<&str> = members.iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names.len(), member_ids.len(), "a member without a name");
    let mut edges = Vec::new();
    for package in members {
        let from = package["name"].as_str().expect("package name");
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let to = dep["name"].as_str().expect("dependency name");
            if names.contains(to) {
                edges.push(Edge {
                    from: from.to_owned(),
                    to: to.to_owned(),
                    kind: dep["kind"].as_str().unwrap_or("normal").to_owned(),
                });
            }
        }
    }
    edges.sort();
    edges
}

#[test]
fn workspace_dependencies_point_down() {
    let edges = member_edges();
    // The graph was really read: the binary's edges to the layers below are there.
    for (from, to) in [
        ("trackhouse", "api"),
        ("api", "platform"),
        ("platform", "schemas"),
    ] {
        assert!(
            edges.iter().any(|e| e.from == from && e.to == to),
            "expected edge {from} -> {to} missing from {edges:?}"
        );
    }
    let forbidden: Vec<String> = edges
        .iter()
        .filter(|e| !allowed(&e.from, &e.to))
        .map(|e| format!("{} -> {} ({})", e.from, e.to, e.kind))
        .collect();
    assert!(
        forbidden.is_empty(),
        "forbidden dependency edges between workspace members:\n  {}",
        forbidden.join("\n  ")
    );
}

#[test]
fn the_allowed_edges_are_the_documented_layers() {
    let members = [
        "schemas",
        "platform",
        "ingest",
        "query",
        "resample",
        "geocoder",
        "api",
        "trackhouse",
        "benches",
    ];
    let mut granted = Vec::new();
    for from in members {
        for to in members {
            if allowed(from, to) {
                granted.push(format!("{from}->{to}"));
            }
        }
    }
    let expected = [
        "platform->schemas",
        "ingest->schemas",
        "query->schemas",
        "resample->schemas",
        "geocoder->schemas",
        "api->schemas",
        "api->platform",
        "api->ingest",
        "api->query",
        "api->resample",
        "api->geocoder",
        "trackhouse->schemas",
        "trackhouse->platform",
        "trackhouse->ingest",
        "trackhouse->query",
        "trackhouse->resample",
        "trackhouse->geocoder",
        "trackhouse->api",
        "benches->schemas",
        "benches->platform",
        "benches->ingest",
        "benches->query",
        "benches->resample",
        "benches->geocoder",
        "benches->api",
    ];
    assert_eq!(granted, expected);
    assert!(
        !allowed("new-crate", "schemas"),
        "unknown members get no edge"
    );
}
