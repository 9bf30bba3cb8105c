//! `/v2/api/key/create|list|delete` with every rule of documents 1 and 3.

use platform::Right;
use serde_json::json;

use crate::TestServer;

#[tokio::test]
async fn create_list_delete() {
    let srv = TestServer::start().await;
    let acc = srv.account("keys@example.com").await;
    let created = srv
        .post(
            "/v2/api/key/create",
            json!({"hash": acc.session, "title": "ETL \"nightly\" – ü"}),
        )
        .await;
    let value = &created.ok()["value"];
    let key = value["hash"].as_str().unwrap().to_owned();
    assert_eq!(key.len(), 32);
    assert_eq!(value["title"], "ETL \"nightly\" – ü");
    // Created at 2024-06-01 08:00 UTC, written in the account's zone (Asia/Tokyo).
    assert_eq!(value["create_date"], "2024-06-01 17:00:00");

    let list = srv
        .post("/v2/api/key/list", json!({"hash": acc.session}))
        .await;
    let titles: Vec<&str> = list.ok()["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["fixture", "ETL \"nightly\" – ü"]);
    assert_eq!(list.body["list"][1], *value);

    // The new key works at once.
    srv.post("/v2/subuser/list", json!({"hash": key}))
        .await
        .ok();
    srv.post(
        "/v2/api/key/delete",
        json!({"hash": acc.session, "key": key}),
    )
    .await
    .ok();
    srv.post("/v2/subuser/list", json!({"hash": key}))
        .await
        .error(4, 400);
    assert_eq!(
        srv.post("/v2/api/key/list", json!({"hash": acc.session}))
            .await
            .ok()["list"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn twenty_keys_then_268() {
    let srv = TestServer::start().await;
    let acc = srv.account("quota@example.com").await;
    // The fixture holds one key already.
    for n in 2..=20 {
        srv.post(
            "/v2/api/key/create",
            json!({"hash": acc.session, "title": format!("key {n}")}),
        )
        .await
        .ok();
    }
    let e = srv
        .post(
            "/v2/api/key/create",
            json!({"hash": acc.session, "title": "key 21"}),
        )
        .await;
    e.error(268, 402);
    assert_eq!(
        srv.post("/v2/api/key/list", json!({"hash": acc.session}))
            .await
            .ok()["list"]
            .as_array()
            .unwrap()
            .len(),
        20
    );
    // Deleting one frees a place.
    let first = acc.key.clone();
    srv.post(
        "/v2/api/key/delete",
        json!({"hash": acc.session, "key": first}),
    )
    .await
    .ok();
    srv.post(
        "/v2/api/key/create",
        json!({"hash": acc.session, "title": "key 21"}),
    )
    .await
    .ok();
    // The quota is per account.
    let other = srv.account("quota2@example.com").await;
    srv.post(
        "/v2/api/key/create",
        json!({"hash": other.session, "title": "mine"}),
    )
    .await
    .ok();
}

#[tokio::test]
async fn concurrent_creations_never_pass_the_quota() {
    let srv = std::sync::Arc::new(TestServer::start().await);
    let acc = srv.account("race@example.com").await;
    let mut tasks = Vec::new();
    for n in 0..30 {
        let (srv, hash) = (srv.clone(), acc.session.clone());
        tasks.push(tokio::spawn(async move {
            srv.post(
                "/v2/api/key/create",
                json!({"hash": hash, "title": format!("k{n}")}),
            )
            .await
            .status
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        19,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 402).count(),
        11,
        "{statuses:?}"
    );
}

#[tokio::test]
async fn titles_are_1_to_255_printable_characters() {
    let srv = TestServer::start().await;
    let acc = srv.account("titles@example.com").await;
    srv.post(
        "/v2/api/key/create",
        json!({"hash": acc.session, "title": "é".repeat(255)}),
    )
    .await
    .ok();
    for bad in [
        json!("é".repeat(256)),
        json!(""),
        json!("tab\there"),
        json!("bell\u{7}"),
    ] {
        let e = srv
            .post(
                "/v2/api/key/create",
                json!({"hash": acc.session, "title": bad}),
            )
            .await;
        assert!(e.error(7, 400).contains("`title`"), "{e:?}");
        assert_eq!(e.body["errors"][0]["parameter"], "title");
    }
    let e = srv
        .post("/v2/api/key/create", json!({"hash": acc.session}))
        .await;
    assert_eq!(e.body["errors"][0]["parameter"], "title");
    e.error(7, 400);
    // A number is a title too (lenient scalars).
    srv.post(
        "/v2/api/key/create",
        json!({"hash": acc.session, "title": 2024}),
    )
    .await
    .ok();
}

#[tokio::test]
async fn only_the_master_users_standard_session_manages_keys() {
    let srv = TestServer::start().await;
    let acc = srv.account("master@example.com").await;
    for path in [
        "/v2/api/key/create",
        "/v2/api/key/list",
        "/v2/api/key/delete",
    ] {
        let params = json!({"hash": acc.key, "title": "t", "key": acc.key});
        let e = srv.post(path, params).await;
        assert!(e.error(4, 400).contains("API key"), "{path}: {e:?}");
    }
    let sub = srv
        .subuser(&acc, "sub@example.com", vec![Right::VehicleUpdate])
        .await;
    for path in [
        "/v2/api/key/create",
        "/v2/api/key/list",
        "/v2/api/key/delete",
    ] {
        srv.post(path, json!({"hash": sub, "title": "t", "key": acc.key}))
            .await
            .error(13, 403);
    }
    // No Deprecation header on key management with a session.
    let list = srv
        .post("/v2/api/key/list", json!({"hash": acc.session}))
        .await;
    assert!(list.headers.get("deprecation").is_none());
}

#[tokio::test]
async fn deleting_a_key_not_in_the_account_is_201() {
    let srv = TestServer::start().await;
    let acc = srv.account("del@example.com").await;
    let other = srv.account("del2@example.com").await;
    srv.post(
        "/v2/api/key/delete",
        json!({"hash": acc.session, "key": "0".repeat(32)}),
    )
    .await
    .error(201, 400);
    srv.post(
        "/v2/api/key/delete",
        json!({"hash": acc.session, "key": "not a key"}),
    )
    .await
    .error(201, 400);
    // Someone else's key is not in this account, and survives.
    srv.post(
        "/v2/api/key/delete",
        json!({"hash": acc.session, "key": other.key}),
    )
    .await
    .error(201, 400);
    srv.post("/v2/subuser/list", json!({"hash": other.key}))
        .await
        .ok();
    let e = srv
        .post(
            "/v2/api/key/delete",
            json!({"hash": acc.session, "key": ""}),
        )
        .await;
    assert_eq!(e.body["errors"][0]["parameter"], "key");
    e.error(7, 400);
    srv.post("/v2/api/key/delete", json!({"hash": acc.session}))
        .await
        .error(7, 400);
}
