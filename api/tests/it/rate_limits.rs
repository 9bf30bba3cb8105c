//! Rate limits per session, per API key, per dealer on the panel, per IP (clarification 10).

use std::num::NonZeroU32;

use api::{ApiConfig, Rate, RateLimitConfig};
use serde_json::json;

use crate::{Answer, TestServer};

fn per_minute(n: u32) -> Rate {
    Rate::per_minute(NonZeroU32::new(n).unwrap())
}

async fn limited() -> TestServer {
    limited_behind(0).await
}

async fn limited_behind(trusted_proxy_hops: usize) -> TestServer {
    TestServer::start_with(ApiConfig {
        trusted_proxy_hops,
        rate_limits: RateLimitConfig {
            user_session: per_minute(10),
            api_key: per_minute(10),
            panel_dealer: per_minute(10),
            anonymous_ip: per_minute(10),
        },
        ..ApiConfig::default()
    })
    .await
}

#[track_caller]
fn assert_limited(a: &Answer) {
    a.error(15, 429);
    let retry: u64 = a.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
}

#[tokio::test]
async fn an_api_key_flood_is_429_while_the_users_session_goes_on() {
    let srv = limited().await;
    // The fixture's logins use the IP budget; sessions and keys do not.
    let acc = srv.account("flood@example.com").await;
    let second_key = srv
        .store
        .create_api_key(acc.user, "second")
        .await
        .unwrap()
        .hash
        .expose()
        .to_owned();
    let mut statuses = Vec::new();
    for _ in 0..25 {
        statuses.push(srv.post("/v2/subuser/list", json!({"hash": acc.key})).await);
    }
    assert!(
        statuses[..10].iter().all(|a| a.status == 200),
        "the burst is allowed"
    );
    assert_limited(&statuses[24]);
    assert_eq!(statuses.iter().filter(|a| a.status == 429).count(), 15);
    // The same user's session, and another key, are not blocked by the flood.
    srv.post("/v2/subuser/list", json!({"hash": acc.session}))
        .await
        .ok();
    srv.post("/v2/api/key/list", json!({"hash": acc.session}))
        .await
        .ok();
    srv.post("/v2/subuser/list", json!({"hash": second_key}))
        .await
        .ok();
}

#[tokio::test]
async fn each_session_has_its_own_budget() {
    let srv = limited().await;
    let acc = srv.account("sessions@example.com").await;
    let other = srv.login(&acc.login, &acc.password).await;
    for _ in 0..10 {
        srv.post("/v2/api/key/list", json!({"hash": acc.session}))
            .await
            .ok();
    }
    assert_limited(
        &srv.post("/v2/api/key/list", json!({"hash": acc.session}))
            .await,
    );
    srv.post("/v2/api/key/list", json!({"hash": other}))
        .await
        .ok();
    srv.post("/v2/subuser/list", json!({"hash": acc.key}))
        .await
        .ok();
}

#[tokio::test]
async fn logins_and_failed_credentials_are_limited_per_ip() {
    let srv = limited().await;
    let acc = srv.account("guess@example.com").await; // one login
    for _ in 0..9 {
        srv.post(
            "/v2/user/auth",
            json!({"login": acc.login, "password": "guess"}),
        )
        .await
        .error(102, 400);
    }
    assert_limited(
        &srv.post(
            "/v2/user/auth",
            json!({"login": acc.login, "password": acc.password}),
        )
        .await,
    );
    assert_limited(
        &srv.post(
            "/v2/panel/account/auth",
            json!({"login": "1", "password": "x"}),
        )
        .await,
    );
    // Guessing hashes draws on the same budget.
    assert_limited(
        &srv.post("/v2/api/key/list", json!({"hash": "0".repeat(32)}))
            .await,
    );
    // Valid credentials are counted per credential, not per IP.
    srv.post("/v2/api/key/list", json!({"hash": acc.session}))
        .await
        .ok();
}

#[tokio::test]
async fn the_panel_is_limited_per_dealer_across_its_sessions() {
    let srv = limited().await;
    let (dealer, password) = srv.dealer(None).await;
    let login = dealer.0.to_string();
    let a = srv
        .post(
            "/v2/panel/account/auth",
            json!({"login": login, "password": password}),
        )
        .await
        .hash();
    let b = srv
        .post(
            "/v2/panel/account/auth",
            json!({"login": login, "password": password}),
        )
        .await
        .hash();
    for n in 0..10 {
        let hash = if n % 2 == 0 { &a } else { &b };
        srv.post("/v2/panel/account/get_permissions", json!({"hash": hash}))
            .await
            .ok();
    }
    assert_limited(
        &srv.post("/v2/panel/account/get_permissions", json!({"hash": b}))
            .await,
    );
    let (other, password) = srv.dealer(None).await;
    let c = srv
        .post(
            "/v2/panel/account/auth",
            json!({"login": other.0.to_string(), "password": password}),
        )
        .await
        .hash();
    srv.post("/v2/panel/account/get_permissions", json!({"hash": c}))
        .await
        .ok();
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_budget() {
    async fn login(srv: &TestServer, forwarded: &str) -> Answer {
        let request = srv
            .client()
            .post(srv.url("/v2/user/auth"))
            .header("x-forwarded-for", forwarded)
            .json(&json!({"login": "nobody@example.com", "password": "x"}));
        srv.send(request).await
    }
    let srv = limited_behind(1).await;
    for _ in 0..10 {
        login(&srv, "203.0.113.7").await.error(102, 400);
    }
    assert_limited(&login(&srv, "203.0.113.7").await);
    // Another client behind the same proxy, and a forged left-most entry, do not share it.
    login(&srv, "203.0.113.8").await.error(102, 400);
    assert_limited(&login(&srv, "198.51.100.1, 203.0.113.7").await);

    // Without trusted proxies the header is ignored: all share the peer's budget.
    let srv = limited_behind(0).await;
    for n in 0..10 {
        login(&srv, &format!("203.0.113.{n}")).await.error(102, 400);
    }
    assert_limited(&login(&srv, "203.0.113.99").await);
}

/// A valid credential refused for the call (an API key where a session is
/// due: 4; a session where sessions are switched off: 276) counts against
/// the address like a wrong one, so it cannot be used to probe for free.
#[tokio::test]
async fn credentials_refused_for_the_call_count_against_the_address() {
    let srv = TestServer::start_with(ApiConfig {
        allow_session_auth: false,
        rate_limits: RateLimitConfig {
            user_session: per_minute(1_000),
            api_key: per_minute(1_000),
            panel_dealer: per_minute(1_000),
            anonymous_ip: per_minute(4),
        },
        ..ApiConfig::default()
    })
    .await;
    let acc = srv.account("refused@example.com").await; // one login
    srv.post("/v2/api/key/list", json!({"hash": acc.key}))
        .await
        .error(4, 400);
    srv.post("/v2/subuser/list", json!({"hash": acc.session}))
        .await
        .error(276, 403);
    srv.post("/v2/api/key/list", json!({"hash": acc.key}))
        .await
        .error(4, 400);
    assert_limited(
        &srv.post("/v2/subuser/list", json!({"hash": acc.session}))
            .await,
    );
    // The key itself still works where it is due.
    srv.post("/v2/subuser/list", json!({"hash": acc.key}))
        .await
        .ok();
}
