//! `/v2/plugin/list` (clarification 46): the user's plugins, else its
//! dealer's, else the configured defaults; `parameters` omitted when null.

use api::ApiConfig;
use platform::PluginOwner;
use serde_json::json;

use crate::TestServer;
use crate::server::generous_limits;

async fn ids(srv: &TestServer, hash: &str) -> Vec<i64> {
    srv.post("/v2/plugin/list", json!({ "hash": hash }))
        .await
        .ok()["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn the_users_plugins_else_the_dealers_else_the_defaults() {
    let srv = TestServer::start_with(ApiConfig {
        rate_limits: generous_limits(),
        default_plugins: vec![2, 1],
        ..ApiConfig::default()
    })
    .await;
    let acc = srv.account("plugins@example.com").await;
    assert_eq!(ids(&srv, &acc.key).await, [1, 2], "the defaults, by id");
    let list = srv.post("/v2/plugin/list", json!({"hash": acc.key})).await;
    let first = &list.ok()["list"][0];
    assert_eq!(first["type"], "tracker_register");
    assert_eq!(first["filter"], json!({"exclusion": true, "values": []}));
    assert!(
        first.get("parameters").is_none(),
        "null parameters are omitted: {first}"
    );

    srv.store
        .set_plugin(PluginOwner::Dealer(acc.dealer), 3, true)
        .await
        .unwrap();
    assert_eq!(ids(&srv, &acc.key).await, [3], "the dealer's");
    let list = srv.post("/v2/plugin/list", json!({"hash": acc.key})).await;
    assert_eq!(
        list.ok()["list"][0]["parameters"],
        json!({"apn_prompt": true})
    );
    srv.store
        .set_plugin(PluginOwner::User(acc.user), 29, true)
        .await
        .unwrap();
    assert_eq!(ids(&srv, &acc.key).await, [29], "the user's own");
    srv.store
        .set_plugin(PluginOwner::User(acc.user), 29, false)
        .await
        .unwrap();
    assert_eq!(ids(&srv, &acc.key).await, [3]);
    // A sub-user sees its master's.
    let sub = srv.subuser(&acc, "plugin-sub@example.com", vec![]).await;
    assert_eq!(ids(&srv, &sub).await, [3]);
    // Unknown plugins and owners are 201.
    let unknown = srv
        .store
        .set_plugin(PluginOwner::User(acc.user), 999, true)
        .await;
    assert!(
        matches!(unknown, Err(platform::Error::NotFound { .. })),
        "{unknown:?}"
    );
}
