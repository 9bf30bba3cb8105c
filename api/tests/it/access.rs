//! Sub-user rights, plan features and the deprecated session hash, declared per route.

use api::ApiConfig;
use platform::Right;
use serde_json::json;

use crate::TestServer;

#[tokio::test]
async fn a_missing_sub_user_right_is_13() {
    let srv = TestServer::start().await;
    let acc = srv.account("rights@example.com").await;
    // /v2/subuser/list needs `admin`, which no sub-user can hold.
    let sub = srv
        .subuser(
            &acc,
            "limited@example.com",
            vec![Right::VehicleUpdate, Right::PaymentCreate],
        )
        .await;
    let e = srv.post("/v2/subuser/list", json!({"hash": sub})).await;
    assert!(e.error(13, 403).contains("admin"));
    // The master user holds every right.
    let list = srv.post("/v2/subuser/list", json!({"hash": acc.key})).await;
    assert_eq!(list.ok()["list"][0]["login"], "limited@example.com");
    assert_eq!(list.body["list"][0]["creation_date"], "2024-06-01 17:00:00");
}

#[tokio::test]
async fn a_missing_plan_feature_is_236() {
    let srv = TestServer::start().await;
    let acc = srv.account("features@example.com").await;
    srv.post("/v2/subuser/list", json!({"hash": acc.key}))
        .await
        .ok();
    let bare = srv.tracker_without_features(&acc).await;
    let e = srv.post("/v2/subuser/list", json!({"hash": acc.key})).await;
    let description = e.error(236, 402);
    assert!(
        description.contains(&bare.to_string()) && description.contains("multilevel_access"),
        "{description}"
    );
}

#[tokio::test]
async fn session_hashes_work_deprecated_and_can_be_switched_off() {
    let srv = TestServer::start().await;
    let acc = srv.account("deprecated@example.com").await;
    let by_session = srv
        .post("/v2/subuser/list", json!({"hash": acc.session}))
        .await;
    by_session.ok();
    assert_eq!(by_session.headers["deprecation"], "true");
    let by_key = srv.post("/v2/subuser/list", json!({"hash": acc.key})).await;
    assert!(by_key.headers.get("deprecation").is_none());
    assert_eq!(by_key.body, by_session.body);

    let strict = TestServer::start_with(ApiConfig {
        allow_session_auth: false,
        ..ApiConfig::default()
    })
    .await;
    let acc = strict.account("strict@example.com").await;
    strict
        .post("/v2/subuser/list", json!({"hash": acc.session}))
        .await
        .error(276, 403);
    strict
        .post("/v2/subuser/list", json!({"hash": acc.key}))
        .await
        .ok();
    // Key management still takes the session.
    strict
        .post("/v2/api/key/list", json!({"hash": acc.session}))
        .await
        .ok();
}
