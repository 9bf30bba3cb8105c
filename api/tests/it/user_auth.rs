//! `/v2/user/auth` and `/v2/user/logout` (clarification 8), and session lifetime.

use chrono::TimeDelta;
use platform::BlockStatus;
use serde_json::json;

use crate::TestServer;

#[tokio::test]
async fn login_answers_an_authenticated_session() {
    let srv = TestServer::start().await;
    let acc = srv.account("login@example.com").await;
    let a = srv
        .post(
            "/v2/user/auth",
            json!({"login": "LOGIN@example.com", "password": acc.password}),
        )
        .await;
    let body = a.ok();
    assert_eq!(body["type"], "authenticated");
    let hash = body["hash"].as_str().unwrap();
    assert_eq!(hash.len(), 32);
    assert!(
        hash.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert_ne!(hash, acc.session, "every login opens a new session");
    srv.post("/v2/api/key/list", json!({"hash": hash}))
        .await
        .ok();
}

#[tokio::test]
async fn wrong_credentials_are_102_inactive_103_blocked_dealer_11() {
    let srv = TestServer::start().await;
    let acc = srv.account("who@example.com").await;
    srv.post(
        "/v2/user/auth",
        json!({"login": acc.login, "password": "wrong"}),
    )
    .await
    .error(102, 400);
    srv.post(
        "/v2/user/auth",
        json!({"login": "nobody@example.com", "password": "x"}),
    )
    .await
    .error(102, 400);
    // A user of another dealer than the one named.
    let (other, _) = srv.dealer(None).await;
    srv.post(
        "/v2/user/auth",
        json!({"login": acc.login, "password": acc.password, "dealer_id": other.0}),
    )
    .await
    .error(102, 400);
    srv.post(
        "/v2/user/auth",
        json!({"login": acc.login, "password": acc.password, "dealer_id": acc.dealer.0}),
    )
    .await
    .ok();
    // Password over 40 characters: invalid, naming it.
    let e = srv
        .post(
            "/v2/user/auth",
            json!({"login": acc.login, "password": "p".repeat(41)}),
        )
        .await;
    assert!(e.error(7, 400).contains("password"));

    srv.store.set_user_activated(acc.user, false).await.unwrap();
    srv.post(
        "/v2/user/auth",
        json!({"login": acc.login, "password": acc.password}),
    )
    .await
    .error(103, 400);
    // The wrong password is still 102 for an inactive user: 103 is told only to the owner.
    srv.post(
        "/v2/user/auth",
        json!({"login": acc.login, "password": "wrong"}),
    )
    .await
    .error(102, 400);
    // Existing credentials stop working too.
    srv.post("/v2/subuser/list", json!({"hash": acc.key}))
        .await
        .error(103, 400);
    srv.store.set_user_activated(acc.user, true).await.unwrap();

    srv.store
        .set_dealer_block_status(acc.dealer, BlockStatus::ClientsBlocked)
        .await
        .unwrap();
    srv.post(
        "/v2/user/auth",
        json!({"login": acc.login, "password": acc.password}),
    )
    .await
    .error(11, 403);
    srv.post("/v2/subuser/list", json!({"hash": acc.key}))
        .await
        .error(11, 403);
    // BLOCK_LOGIN blocks the dealer's panel, not its clients.
    srv.store
        .set_dealer_block_status(acc.dealer, BlockStatus::BlockLogin)
        .await
        .unwrap();
    srv.post(
        "/v2/user/auth",
        json!({"login": acc.login, "password": acc.password}),
    )
    .await
    .ok();
}

#[tokio::test]
async fn logout_ends_the_session_but_not_the_keys() {
    let srv = TestServer::start().await;
    let acc = srv.account("bye@example.com").await;
    let other = srv.login(&acc.login, &acc.password).await;
    srv.post("/v2/user/logout", json!({"hash": acc.session}))
        .await
        .ok();
    srv.post("/v2/api/key/list", json!({"hash": acc.session}))
        .await
        .error(4, 400);
    srv.post("/v2/user/logout", json!({"hash": acc.session}))
        .await
        .error(4, 400);
    srv.post("/v2/api/key/list", json!({"hash": other}))
        .await
        .ok();
    srv.post("/v2/subuser/list", json!({"hash": acc.key}))
        .await
        .ok();
    // An API key is not a session: it cannot log out.
    srv.post("/v2/user/logout", json!({"hash": acc.key}))
        .await
        .error(4, 400);
}

#[tokio::test]
async fn sessions_expire_after_30_days_without_use() {
    let srv = TestServer::start().await;
    let acc = srv.account("idle@example.com").await;
    let used = srv.login(&acc.login, &acc.password).await;
    srv.clock.advance(TimeDelta::days(20));
    srv.post("/v2/api/key/list", json!({"hash": used}))
        .await
        .ok();
    srv.clock.advance(TimeDelta::days(20));
    // 40 days old but used 20 days ago: alive; the unused one is gone.
    srv.post("/v2/api/key/list", json!({"hash": used}))
        .await
        .ok();
    srv.post("/v2/api/key/list", json!({"hash": acc.session}))
        .await
        .error(4, 400);
    srv.clock
        .advance(TimeDelta::days(30) + TimeDelta::seconds(1));
    srv.post("/v2/api/key/list", json!({"hash": used}))
        .await
        .error(4, 400);
    // Keys have no lifetime.
    srv.post("/v2/subuser/list", json!({"hash": acc.key}))
        .await
        .ok();
}

#[tokio::test]
async fn a_password_change_ends_sessions_and_keeps_keys() {
    let srv = TestServer::start().await;
    let acc = srv.account("rotate@example.com").await;
    srv.store
        .change_user_password(acc.user, "new-pass-2")
        .await
        .unwrap();
    srv.post("/v2/api/key/list", json!({"hash": acc.session}))
        .await
        .error(4, 400);
    srv.post("/v2/subuser/list", json!({"hash": acc.key}))
        .await
        .ok();
    srv.post(
        "/v2/user/auth",
        json!({"login": acc.login, "password": acc.password}),
    )
    .await
    .error(102, 400);
    srv.login(&acc.login, "new-pass-2").await;
}
