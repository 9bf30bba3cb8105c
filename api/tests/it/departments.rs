//! `/v2/department/*`: read back exactly as stored, the label and location
//! checked (named by path), the three request forms, the right
//! `employee_update`, and isolation between accounts.

use platform::Right;
use serde_json::{Value, json};

use crate::TestServer;

async fn list(srv: &TestServer, hash: &str) -> Vec<Value> {
    srv.list("/v2/department/list", hash).await
}

async fn create(srv: &TestServer, hash: &str, department: Value) -> i64 {
    srv.post(
        "/v2/department/create",
        json!({"hash": hash, "department": department}),
    )
    .await
    .ok()["id"]
        .as_i64()
        .unwrap()
}

#[tokio::test]
async fn a_department_reads_back_as_stored_and_updates_replace_it() {
    let srv = TestServer::start().await;
    let acc = srv.account("departments@example.com").await;
    let night = create(
        &srv,
        &acc.key,
        json!({"label": " Night shift ", "location": {"lat": 51.1, "lng": 71.4, "address": "Astana", "radius": 1}}),
    )
    .await;
    let day = create(&srv, &acc.key, json!({"label": "Day", "location": null})).await;
    assert_eq!(
        list(&srv, &acc.key).await,
        vec![
            json!({"id": night, "label": "Night shift",
                   "location": {"lat": 51.1, "lng": 71.4, "address": "Astana", "radius": 1}}),
            json!({"id": day, "label": "Day", "location": null}),
        ]
    );
    srv.post(
        "/v2/department/update",
        json!({"hash": acc.key, "department": {"id": night, "label": "Nights"}}),
    )
    .await
    .ok();
    assert_eq!(
        list(&srv, &acc.key).await[0],
        json!({"id": night, "label": "Nights", "location": null})
    );
    srv.post(
        "/v2/department/delete",
        json!({"hash": acc.key, "department_id": day}),
    )
    .await
    .ok();
    assert_eq!(list(&srv, &acc.key).await.len(), 1);
    srv.post(
        "/v2/department/delete",
        json!({"hash": acc.key, "department_id": day}),
    )
    .await
    .error(201, 400);
}

#[tokio::test]
async fn the_label_and_location_are_checked_at_their_edges() {
    let srv = TestServer::start().await;
    let acc = srv.account("department-checks@example.com").await;
    create(&srv, &acc.key, json!({"label": "д".repeat(255)})).await;
    for (department, path) in [
        (json!({"label": "д".repeat(256)}), "department.label"),
        (json!({"label": "   "}), "department.label"),
        (json!({}), "department.label"),
        (json!({"label": "a\nb"}), "department.label"),
        (
            json!({"label": "x", "location": {"lat": 0, "lng": 0, "radius": -5}}),
            "department.location.radius",
        ),
        (
            json!({"label": "x", "location": {"lat": -91, "lng": 0}}),
            "department.location.lat",
        ),
    ] {
        let answer = srv
            .post(
                "/v2/department/create",
                json!({"hash": acc.key, "department": department}),
            )
            .await;
        answer.error(7, 400);
        assert_eq!(
            answer.body["errors"][0]["parameter"], path,
            "{department}: {answer:?}"
        );
    }
    assert_eq!(
        list(&srv, &acc.key).await.len(),
        1,
        "only the 255-character label"
    );
}

#[tokio::test]
async fn forms_rights_and_other_accounts() {
    let srv = TestServer::start().await;
    let acc = srv.account("department-rights@example.com").await;
    let other = srv.account("department-other@example.com").await;
    let clerk = srv
        .subuser(&acc, "clerk@example.com", vec![Right::VehicleUpdate])
        .await;
    let hr = srv
        .subuser(&acc, "hr@example.com", vec![Right::EmployeeUpdate])
        .await;

    // Form and GET: `department` as JSON text.
    srv.post_form(
        "/v2/department/create",
        &[("hash", hr.as_str()), ("department", r#"{"label":"Form"}"#)],
    )
    .await
    .ok();
    srv.get(
        "/v2/department/create",
        &[("hash", hr.as_str()), ("department", r#"{"label":"Get"}"#)],
    )
    .await
    .ok();
    let listed = list(&srv, &acc.key).await;
    let labels: Vec<&str> = listed
        .iter()
        .map(|d| d["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        ["Form", "Get"],
        "a sub-user's departments are the master's"
    );
    assert_eq!(
        list(&srv, &clerk).await,
        listed,
        "every user of the account lists them"
    );

    let refused = srv
        .post(
            "/v2/department/create",
            json!({"hash": clerk, "department": {"label": "No"}}),
        )
        .await;
    assert!(refused.error(13, 403).contains("employee_update"));
    let id = listed[0]["id"].as_i64().unwrap();
    srv.post(
        "/v2/department/delete",
        json!({"hash": clerk, "department_id": id}),
    )
    .await
    .error(13, 403);

    assert!(list(&srv, &other.key).await.is_empty());
    srv.post(
        "/v2/department/update",
        json!({"hash": other.key, "department": {"id": id, "label": "Mine"}}),
    )
    .await
    .error(201, 400);
    srv.post(
        "/v2/department/delete",
        json!({"hash": other.key, "department_id": id}),
    )
    .await
    .error(201, 400);
    assert_eq!(list(&srv, &acc.key).await, listed, "unchanged");
}
