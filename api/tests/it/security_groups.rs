//! `/v2/security_group/*` (clarification 37): groups read back as stored,
//! their rights take effect on their sub-users' next call, a deleted
//! group's sub-users hold nothing, `admin` is never granted, only the
//! master user manages them, and another account's groups do not exist.

use serde_json::{Value, json};

use crate::TestServer;

async fn groups(srv: &TestServer, hash: &str) -> Vec<Value> {
    srv.list("/v2/security_group/list", hash).await
}

#[tokio::test]
async fn a_group_reads_back_with_its_rights_in_order_once_each() {
    let srv = TestServer::start().await;
    let acc = srv.account("groups@example.com").await;
    assert!(groups(&srv, &acc.key).await.is_empty());
    let id = srv
        .post(
            "/v2/security_group/create",
            json!({"hash": acc.key, "security_group": {"label": " Dispatchers ",
                   "rights": ["weblocator_session_create", "vehicle_update", "vehicle_update"]}}),
        )
        .await
        .ok()["id"]
        .as_i64()
        .unwrap();
    let empty = srv
        .post_form(
            "/v2/security_group/create",
            &[
                ("hash", acc.key.as_str()),
                ("security_group", r#"{"label":"Nobody"}"#),
            ],
        )
        .await
        .ok()["id"]
        .as_i64()
        .unwrap();
    assert_eq!(
        groups(&srv, &acc.key).await,
        vec![
            json!({"id": id, "label": "Dispatchers", "rights": ["vehicle_update", "weblocator_session_create"]}),
            json!({"id": empty, "label": "Nobody", "rights": []}),
        ]
    );
    srv.post(
        "/v2/security_group/update",
        json!({"hash": acc.key, "security_group": {"id": id, "label": "Dispatch", "rights": ["payment_create"]}}),
    )
    .await
    .ok();
    assert_eq!(
        groups(&srv, &acc.key).await[0],
        json!({"id": id, "label": "Dispatch", "rights": ["payment_create"]})
    );
    srv.get(
        "/v2/security_group/delete",
        &[
            ("hash", acc.key.as_str()),
            ("security_group_id", &id.to_string()),
        ],
    )
    .await
    .ok();
    assert_eq!(groups(&srv, &acc.key).await.len(), 1);
    srv.post(
        "/v2/security_group/delete",
        json!({"hash": acc.key, "security_group_id": id}),
    )
    .await
    .error(201, 400);
}

#[tokio::test]
async fn labels_and_rights_are_checked() {
    let srv = TestServer::start().await;
    let acc = srv.account("group-checks@example.com").await;
    for (group, path) in [
        (json!({"label": "x".repeat(256)}), "security_group.label"),
        (json!({"label": " "}), "security_group.label"),
        (
            json!({"label": "ok", "rights": ["vehicle_update", "admin"]}),
            "security_group.rights[1]",
        ),
        (
            json!({"label": "ok", "rights": ["fly"]}),
            "security_group.rights[0]",
        ),
        (
            json!({"label": "ok", "rights": "vehicle_update"}),
            "security_group.rights",
        ),
    ] {
        let answer = srv
            .post(
                "/v2/security_group/create",
                json!({"hash": acc.key, "security_group": group}),
            )
            .await;
        answer.error(7, 400);
        assert_eq!(
            answer.body["errors"][0]["parameter"], path,
            "{group}: {answer:?}"
        );
    }
    let no_id = srv
        .post(
            "/v2/security_group/update",
            json!({"hash": acc.key, "security_group": {"label": "x"}}),
        )
        .await;
    no_id.error(7, 400);
    assert_eq!(no_id.body["errors"][0]["parameter"], "security_group.id");
    srv.post(
        "/v2/security_group/create",
        json!({"hash": acc.key, "security_group": {"label": "x".repeat(255)}}),
    )
    .await
    .ok();
    assert_eq!(groups(&srv, &acc.key).await.len(), 1);
}

#[tokio::test]
async fn a_groups_rights_are_its_sub_users_rights_from_their_next_call() {
    let srv = TestServer::start().await;
    let acc = srv.account("group-rights@example.com").await;
    let sub = srv.subuser(&acc, "staff@example.com", vec![]).await;
    let create = || {
        srv.post(
            "/v2/department/create",
            json!({"hash": sub, "department": {"label": "Night"}}),
        )
    };
    create().await.error(13, 403);
    // The sub-user's group (the test world gives each sub-user one).
    let group = groups(&srv, &acc.key).await[0]["id"].as_i64().unwrap();
    srv.post(
        "/v2/security_group/update",
        json!({"hash": acc.key, "security_group": {"id": group, "label": "Staff", "rights": ["employee_update"]}}),
    )
    .await
    .ok();
    create().await.ok();
    srv.post(
        "/v2/security_group/delete",
        json!({"hash": acc.key, "security_group_id": group}),
    )
    .await
    .ok();
    create().await.error(13, 403);
    // Only the master user manages groups.
    srv.post("/v2/security_group/list", json!({"hash": sub}))
        .await
        .error(13, 403);
}

#[tokio::test]
async fn another_accounts_group_does_not_exist_for_the_caller() {
    let srv = TestServer::start().await;
    let owner = srv.account("group-owner@example.com").await;
    let other = srv.account("group-other@example.com").await;
    let id = srv
        .post(
            "/v2/security_group/create",
            json!({"hash": owner.key, "security_group": {"label": "Mine", "rights": ["vehicle_update"]}}),
        )
        .await
        .ok()["id"]
        .as_i64()
        .unwrap();
    assert!(groups(&srv, &other.key).await.is_empty());
    srv.post(
        "/v2/security_group/update",
        json!({"hash": other.key, "security_group": {"id": id, "label": "Stolen", "rights": []}}),
    )
    .await
    .error(201, 400);
    srv.post(
        "/v2/security_group/delete",
        json!({"hash": other.key, "security_group_id": id}),
    )
    .await
    .error(201, 400);
    assert_eq!(
        groups(&srv, &owner.key).await,
        vec![json!({"id": id, "label": "Mine", "rights": ["vehicle_update"]})]
    );
}
