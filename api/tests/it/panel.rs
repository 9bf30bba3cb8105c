//! `/v2/panel/account/*` and a permission-guarded panel call.

use chrono::TimeDelta;
use platform::{BlockStatus, Permission};
use serde_json::json;

use crate::TestServer;

#[tokio::test]
async fn panel_login_answers_hash_and_permissions() {
    let srv = TestServer::start().await;
    let (dealer, password) = srv
        .dealer(Some(vec![
            Permission::BaseGetDealerInfo,
            Permission::UsersRead,
            Permission::UsersCreate,
        ]))
        .await;
    let a = srv
        .post(
            "/v2/panel/account/auth",
            json!({"login": dealer.0.to_string(), "password": password}),
        )
        .await;
    let body = a.ok();
    assert_eq!(body["hash"].as_str().unwrap().len(), 32);
    assert_eq!(
        body["permissions"],
        json!({"base": ["get_dealer_info"], "users": ["create", "read"]})
    );
    // The login may come as a number too.
    srv.post(
        "/v2/panel/account/auth",
        json!({"login": dealer.0, "password": password}),
    )
    .await
    .ok();
    let perms = srv
        .post(
            "/v2/panel/account/get_permissions",
            json!({"hash": body["hash"]}),
        )
        .await;
    assert_eq!(perms.ok()["permissions"], body["permissions"]);
}

#[tokio::test]
async fn a_full_panel_account_lists_every_group() {
    let srv = TestServer::start().await;
    let (dealer, password) = srv.dealer(None).await;
    let a = srv
        .post(
            "/v2/panel/account/auth",
            json!({"login": dealer.0.to_string(), "password": password}),
        )
        .await;
    let perms = a.ok()["permissions"].as_object().unwrap().clone();
    let groups: Vec<&str> = perms.keys().map(String::as_str).collect();
    for group in [
        "base",
        "service_settings",
        "notification_settings",
        "trackers",
        "users",
        "user_sessions",
        "tariffs",
        "transactions",
        "activation_code",
        "password",
        "email_gateways",
        "subpaas",
        "tracker_bundles",
    ] {
        assert!(groups.contains(&group), "{group} missing from {groups:?}");
    }
    assert_eq!(
        perms["trackers"],
        json!([
            "corrupt", "create", "delete", "global", "read", "report", "update"
        ])
    );
}

#[tokio::test]
async fn unknown_dealer_12_wrong_password_102_blocked_11() {
    let srv = TestServer::start().await;
    let (dealer, password) = srv.dealer(None).await;
    let login = dealer.0.to_string();
    srv.post(
        "/v2/panel/account/auth",
        json!({"login": "999999", "password": password}),
    )
    .await
    .error(12, 400);
    srv.post(
        "/v2/panel/account/auth",
        json!({"login": "not-a-number", "password": password}),
    )
    .await
    .error(12, 400);
    srv.post(
        "/v2/panel/account/auth",
        json!({"login": login, "password": "wrong-pass"}),
    )
    .await
    .error(102, 400);
    let session = srv
        .post(
            "/v2/panel/account/auth",
            json!({"login": login, "password": password}),
        )
        .await
        .hash();
    for status in [
        BlockStatus::InitialBlock,
        BlockStatus::BlockLogin,
        BlockStatus::ClientsBlocked,
    ] {
        srv.store
            .set_dealer_block_status(dealer, status)
            .await
            .unwrap();
        srv.post(
            "/v2/panel/account/auth",
            json!({"login": login, "password": password}),
        )
        .await
        .error(11, 403);
        // Open sessions are refused at once too.
        srv.post(
            "/v2/panel/account/get_permissions",
            json!({"hash": session}),
        )
        .await
        .error(11, 403);
    }
    // A wrong password to a blocked dealer does not reveal the block.
    srv.post(
        "/v2/panel/account/auth",
        json!({"login": login, "password": "wrong-pass"}),
    )
    .await
    .error(102, 400);
    srv.store
        .set_dealer_block_status(dealer, BlockStatus::NotBlocked)
        .await
        .unwrap();
    srv.post(
        "/v2/panel/account/get_permissions",
        json!({"hash": session}),
    )
    .await
    .ok();
}

#[tokio::test]
async fn panel_sessions_last_24_hours_from_creation_and_end_on_logout() {
    let srv = TestServer::start().await;
    let (dealer, password) = srv.dealer(None).await;
    let login = dealer.0.to_string();
    let session = srv
        .post(
            "/v2/panel/account/auth",
            json!({"login": login, "password": password}),
        )
        .await
        .hash();
    let other = srv
        .post(
            "/v2/panel/account/auth",
            json!({"login": login, "password": password}),
        )
        .await
        .hash();
    srv.clock.advance(TimeDelta::hours(23));
    // Use does not renew a panel session.
    srv.post(
        "/v2/panel/account/get_permissions",
        json!({"hash": session}),
    )
    .await
    .ok();
    srv.clock.advance(TimeDelta::hours(1));
    srv.post(
        "/v2/panel/account/get_permissions",
        json!({"hash": session}),
    )
    .await
    .error(4, 400);

    let fresh = srv
        .post(
            "/v2/panel/account/auth",
            json!({"login": login, "password": password}),
        )
        .await
        .hash();
    srv.post("/v2/panel/account/logout", json!({"hash": fresh}))
        .await
        .ok();
    srv.post("/v2/panel/account/get_permissions", json!({"hash": fresh}))
        .await
        .error(4, 400);
    srv.post("/v2/panel/account/get_permissions", json!({"hash": other}))
        .await
        .error(4, 400);
}

#[tokio::test]
async fn a_missing_permission_is_13() {
    let srv = TestServer::start().await;
    let (dealer, password) = srv.dealer(Some(vec![Permission::UsersRead])).await;
    let session = srv
        .post(
            "/v2/panel/account/auth",
            json!({"login": dealer.0.to_string(), "password": password}),
        )
        .await
        .hash();
    let e = srv
        .post("/v2/panel/dealer/get_info", json!({"hash": session}))
        .await;
    assert!(e.error(13, 403).contains("base: get_dealer_info"));

    let (dealer, password) = srv.dealer(None).await;
    let session = srv
        .post(
            "/v2/panel/account/auth",
            json!({"login": dealer.0.to_string(), "password": password}),
        )
        .await
        .hash();
    let info = srv
        .post("/v2/panel/dealer/get_info", json!({"hash": session}))
        .await;
    let body = info.ok();
    assert_eq!(body["id"], dealer.0);
    assert_eq!(body["contract_type"], "PAAS");
    assert_eq!(body["block_status"], "NOT_BLOCKED");
    assert_eq!(body["store_period"], "P3M");
}

/// A password longer than any panel password can be is refused before it is
/// hashed (argon2 costs time in the password's length too).
#[tokio::test]
async fn an_overlong_panel_password_is_7_before_any_hashing() {
    let srv = TestServer::start().await;
    let (dealer, _) = srv.dealer(None).await;
    let long = "p".repeat(1_000_000);
    let answer = srv
        .post(
            "/v2/panel/account/auth",
            json!({"login": dealer.0.to_string(), "password": long}),
        )
        .await;
    let description = answer.error(7, 400);
    assert!(description.contains("`password`"), "{description}");
}
