//! `/v2/bill/*` (clarification 45): 222 until the billing plugin (29) is
//! available to the account (for the user or its dealer), the right
//! `payment_create`, bills read back with their link, and paging with a count.

use api::ApiConfig;
use platform::{PluginOwner, Right};
use serde_json::json;

use crate::TestServer;
use crate::server::generous_limits;

#[tokio::test]
async fn bills_need_the_billing_plugin_for_the_user_or_its_dealer() {
    let srv = TestServer::start().await;
    let acc = srv.account("billing@example.com").await;
    let create = |sum: serde_json::Value| {
        srv.post(
            "/v2/bill/create",
            json!({"hash": acc.key, "payer": "Fleet LLP", "sum": sum}),
        )
    };
    assert!(create(json!(100)).await.error(222, 400).contains("Plugin"));
    srv.post("/v2/bill/list", json!({"hash": acc.key}))
        .await
        .error(222, 400);
    srv.store
        .set_plugin(PluginOwner::Dealer(acc.dealer), 29, true)
        .await
        .unwrap();
    create(json!(100)).await.ok();
    // The user's own plugins replace the dealer's: without 29 among them, no billing.
    srv.store
        .set_plugin(PluginOwner::User(acc.user), 1, true)
        .await
        .unwrap();
    create(json!(100)).await.error(222, 400);
    srv.store
        .set_plugin(PluginOwner::User(acc.user), 29, true)
        .await
        .unwrap();
    create(json!(100)).await.ok();
}

#[tokio::test]
async fn bills_read_back_with_their_link_and_page_with_a_count() {
    let srv = TestServer::start_with(ApiConfig {
        rate_limits: generous_limits(),
        billing_orders_base_url: "https://billing.example/orders/".into(),
        default_plugins: vec![29],
        ..ApiConfig::default()
    })
    .await;
    let acc = srv.account("bills@example.com").await;
    let mut ids = Vec::new();
    for (payer, sum) in [
        (" Fleet LLP ", json!(1500.5)),
        ("Ops", json!("20")),
        ("Ops", json!(1e-2)),
    ] {
        let answer = srv
            .post(
                "/v2/bill/create",
                json!({"hash": acc.key, "payer": payer, "sum": sum}),
            )
            .await;
        ids.push(answer.ok()["value"].as_i64().unwrap());
    }
    let list = srv.post("/v2/bill/list", json!({"hash": acc.key})).await;
    assert_eq!(list.ok()["count"], 3);
    assert_eq!(
        list.body["bills"][0],
        json!({"order_id": ids[0], "created": "2024-06-01 17:00:00", "sum": 1500.5, "status": "created",
               "positions": ["Payment by Fleet LLP"], "link": format!("https://billing.example/orders/{}", ids[0])})
    );
    let page = srv
        .post(
            "/v2/bill/list",
            json!({"hash": acc.key, "limit": 1, "offset": 1}),
        )
        .await;
    assert_eq!(page.ok()["count"], 3, "the count ignores the page");
    assert_eq!(page.body["bills"].as_array().unwrap().len(), 1);
    assert_eq!(page.body["bills"][0]["order_id"], ids[1]);
    assert_eq!(page.body["bills"][0]["sum"], 20.0);
    for (params, code) in [
        (json!({"limit": 0}), 7),
        (json!({"limit": 10_001}), 212),
        (json!({"offset": -1}), 7),
    ] {
        let mut params = params;
        params["hash"] = json!(acc.key);
        srv.post("/v2/bill/list", params).await.error(code, 400);
    }
    srv.post("/v2/bill/list", json!({"hash": acc.key, "limit": 10_000}))
        .await
        .ok();
    for (payer, sum, path) in [
        ("Ops", json!(0), "sum"),
        ("Ops", json!(-5), "sum"),
        ("", json!(5), "payer"),
        ("p".repeat(256).as_str(), json!(5), "payer"),
    ] {
        let answer = srv
            .post(
                "/v2/bill/create",
                json!({"hash": acc.key, "payer": payer, "sum": sum}),
            )
            .await;
        answer.error(7, 400);
        assert_eq!(answer.body["errors"][0]["parameter"], path, "{answer:?}");
    }

    // Another account sees none of them; a sub-user needs `payment_create`.
    let other = srv.account("bills-other@example.com").await;
    let theirs = srv.post("/v2/bill/list", json!({"hash": other.key})).await;
    assert_eq!(theirs.ok()["count"], 0);
    let clerk = srv.subuser(&acc, "clerk@example.com", vec![]).await;
    srv.post("/v2/bill/list", json!({"hash": clerk}))
        .await
        .error(13, 403);
    let cashier = srv
        .subuser(&acc, "cashier@example.com", vec![Right::PaymentCreate])
        .await;
    let listed = srv.post("/v2/bill/list", json!({"hash": cashier})).await;
    assert_eq!(listed.ok()["count"], 3, "the account's bills");
}
