//! `/v2/subuser/delete` and `/v2/subuser/session/create`: a master acts as
//! its sub-user with a session it creates; a deleted sub-user's sessions
//! end at once; neither reaches another account's sub-users.

use serde_json::json;

use crate::TestServer;

#[tokio::test]
async fn a_master_creates_a_session_of_its_sub_user() {
    let srv = TestServer::start().await;
    let acc = srv.account("acting@example.com").await;
    srv.subuser(&acc, "driver@example.com", vec![]).await;
    let list = srv.post("/v2/subuser/list", json!({"hash": acc.key})).await;
    let id = list.ok()["list"][0]["id"].as_i64().unwrap();

    let answer = srv
        .post(
            "/v2/subuser/session/create",
            json!({"hash": acc.key, "subuser_id": id}),
        )
        .await;
    let hash = answer.hash();
    assert_ne!(hash, acc.key);
    // The session is the sub-user's: its scope and rights, not the master's.
    srv.post("/v2/garage/list", json!({"hash": hash}))
        .await
        .ok();
    srv.post("/v2/subuser/list", json!({"hash": hash}))
        .await
        .error(13, 403);
    srv.post("/v2/garage/create", json!({"hash": hash, "garage": {}}))
        .await
        .error(13, 403);

    // A deactivated sub-user gets none.
    srv.store
        .set_user_activated(schemas::UserId(id), false)
        .await
        .unwrap();
    srv.post(
        "/v2/subuser/session/create",
        json!({"hash": acc.key, "subuser_id": id}),
    )
    .await
    .error(103, 400);
}

#[tokio::test]
async fn a_deleted_sub_user_is_gone_at_once() {
    let srv = TestServer::start().await;
    let acc = srv.account("deleting@example.com").await;
    let session = srv.subuser(&acc, "leaver@example.com", vec![]).await;
    srv.post("/v2/garage/list", json!({"hash": session}))
        .await
        .ok();
    let id = srv
        .post("/v2/subuser/list", json!({"hash": acc.key}))
        .await
        .ok()["list"][0]["id"]
        .as_i64()
        .unwrap();
    srv.post(
        "/v2/subuser/delete",
        json!({"hash": acc.key, "subuser_id": id}),
    )
    .await
    .ok();
    srv.post("/v2/garage/list", json!({"hash": session}))
        .await
        .error(4, 400);
    assert_eq!(
        srv.post("/v2/subuser/list", json!({"hash": acc.key}))
            .await
            .ok()["list"],
        json!([])
    );
    srv.post(
        "/v2/user/auth",
        json!({"login": "leaver@example.com", "password": "sub-pass-1"}),
    )
    .await
    .error(102, 400);
    // Irreversible: a second delete finds nothing.
    srv.post(
        "/v2/subuser/delete",
        json!({"hash": acc.key, "subuser_id": id}),
    )
    .await
    .error(201, 400);
}

#[tokio::test]
async fn another_accounts_sub_users_do_not_exist_for_the_caller() {
    let srv = TestServer::start().await;
    let owner = srv.account("sub-owner@example.com").await;
    let other = srv.account("sub-other@example.com").await;
    let session = srv.subuser(&owner, "kept@example.com", vec![]).await;
    let id = srv
        .post("/v2/subuser/list", json!({"hash": owner.key}))
        .await
        .ok()["list"][0]["id"]
        .as_i64()
        .unwrap();
    for path in ["/v2/subuser/session/create", "/v2/subuser/delete"] {
        srv.post(path, json!({"hash": other.key, "subuser_id": id}))
            .await
            .error(201, 400);
    }
    srv.post("/v2/garage/list", json!({"hash": session}))
        .await
        .ok();
}
