//! `/v2/retranslator/*` (clarifications 39-40): read back as stored
//! (passwords too), each member checked against its limits and the
//! protocol's needs, 247 for the same address, port and login, the per-user
//! quota (268, set with `trackhouse admin`), master users only for changes,
//! the protocol list under both paths, and isolation.

use serde_json::{Value, json};

use crate::TestServer;

fn ips(name: &str, port: i64) -> Value {
    json!({"name": name, "protocol_id": 1, "address": "GPS.Insurer.example", "port": port,
           "login": "356307042441013", "password": "s3cret", "enabled": true})
}

async fn list(srv: &TestServer, hash: &str) -> Vec<Value> {
    srv.list("/v2/retranslator/list", hash).await
}

async fn create(srv: &TestServer, hash: &str, retranslator: Value) -> crate::Answer {
    srv.post(
        "/v2/retranslator/create",
        json!({"hash": hash, "retranslator": retranslator}),
    )
    .await
}

#[tokio::test]
async fn protocols_are_listed_under_both_paths() {
    let srv = TestServer::start().await;
    let acc = srv.account("protocols@example.com").await;
    let one = srv
        .post("/v2/retranslator/protocol/list", json!({"hash": acc.key}))
        .await;
    let other = srv
        .get(
            "/v2/retranslator/protocols/list",
            &[("hash", acc.key.as_str())],
        )
        .await;
    assert_eq!(one.ok(), other.ok());
    let list = one.body["list"].as_array().unwrap();
    let ips = list.iter().find(|p| p["name"] == "Wialon IPS").unwrap();
    assert_eq!(ips["required_login"], true);
    assert_eq!(ips["has_password"], true);
    let retranslator = list
        .iter()
        .find(|p| p["name"] == "Wialon Retranslator")
        .unwrap();
    assert_eq!(retranslator["has_login"], false);
    assert_eq!(retranslator["fake_device_id_pattern"], Value::Null);
}

#[tokio::test]
async fn a_retranslator_reads_back_as_stored_and_updates_replace_it() {
    let srv = TestServer::start().await;
    let acc = srv.account("retranslators@example.com").await;
    let id = create(&srv, &acc.key, ips(" Insurer ", 20332)).await.ok()["id"]
        .as_i64()
        .unwrap();
    let mut expected = ips("Insurer", 20332);
    expected["id"] = json!(id);
    expected["address"] = json!("gps.insurer.example");
    assert_eq!(list(&srv, &acc.key).await, vec![expected]);

    srv.post(
        "/v2/retranslator/update",
        json!({"hash": acc.key, "retranslator": {"id": id, "name": "Raw feed", "protocol_id": 2,
               "address": "10.0.0.7", "port": 20163, "enabled": false}}),
    )
    .await
    .ok();
    assert_eq!(
        list(&srv, &acc.key).await,
        vec![
            json!({"id": id, "name": "Raw feed", "protocol_id": 2, "address": "10.0.0.7",
                    "port": 20163, "login": null, "password": null, "enabled": false})
        ]
    );
    srv.post(
        "/v2/retranslator/delete",
        json!({"hash": acc.key, "retranslator_id": id}),
    )
    .await
    .ok();
    assert!(list(&srv, &acc.key).await.is_empty());
    srv.post(
        "/v2/retranslator/delete",
        json!({"hash": acc.key, "retranslator_id": id}),
    )
    .await
    .error(201, 400);
    let mut gone = ips("Gone", 1);
    gone["id"] = json!(id);
    srv.post(
        "/v2/retranslator/update",
        json!({"hash": acc.key, "retranslator": gone}),
    )
    .await
    .error(201, 400);
}

#[tokio::test]
async fn members_are_checked_against_their_limits_and_the_protocol() {
    let srv = TestServer::start().await;
    let acc = srv.account("retranslator-checks@example.com").await;
    let with = |member: &str, value: Value| {
        let mut r = ips("Checked", 20332);
        r[member] = value;
        r
    };
    for (retranslator, path) in [
        (with("name", json!("")), "retranslator.name"),
        (with("name", json!("n".repeat(65))), "retranslator.name"),
        (with("address", json!("")), "retranslator.address"),
        (
            with("address", json!("a".repeat(256))),
            "retranslator.address",
        ),
        (with("address", json!("two words")), "retranslator.address"),
        (with("port", json!(0)), "retranslator.port"),
        (with("port", json!(65536)), "retranslator.port"),
        (with("protocol_id", json!(99)), "retranslator.protocol_id"),
        (with("login", json!(null)), "retranslator.login"),
        (with("login", json!("")), "retranslator.login"),
        (with("login", json!("l".repeat(65))), "retranslator.login"),
        (
            with("login", json!("not a device id")),
            "retranslator.login",
        ),
        (
            with("password", json!("p".repeat(65))),
            "retranslator.password",
        ),
        (
            json!({"name": "R", "protocol_id": 2, "address": "h", "port": 1, "login": "x"}),
            "retranslator.login",
        ),
    ] {
        let answer = create(&srv, &acc.key, retranslator.clone()).await;
        answer.error(7, 400);
        assert_eq!(
            answer.body["errors"][0]["parameter"], path,
            "{retranslator}: {answer:?}"
        );
    }
    assert!(list(&srv, &acc.key).await.is_empty());
    // The edges that are taken.
    let mut edges = with("name", json!("n".repeat(64)));
    edges["address"] = json!("a".repeat(255));
    edges["port"] = json!(65535);
    edges["login"] = json!("l".repeat(64));
    edges["password"] = json!("p".repeat(64));
    create(&srv, &acc.key, edges).await.ok();
    create(&srv, &acc.key, with("port", json!(1))).await.ok();
}

#[tokio::test]
async fn the_same_target_is_247_and_the_quota_is_268() {
    let srv = TestServer::start().await;
    let acc = srv.account("retranslator-quota@example.com").await;
    create(&srv, &acc.key, ips("First", 20332)).await.ok();
    let mut same = ips("Same target", 20332);
    same["address"] = json!("gps.insurer.EXAMPLE");
    same["password"] = json!("other");
    create(&srv, &acc.key, same).await.error(247, 409);
    // Another login is another target.
    let mut other_login = ips("Other device", 20332);
    other_login["login"] = json!("356307042441014");
    let second = create(&srv, &acc.key, other_login).await.ok()["id"]
        .as_i64()
        .unwrap();
    let mut moved = ips("Moved", 20332);
    moved["id"] = json!(second);
    srv.post(
        "/v2/retranslator/update",
        json!({"hash": acc.key, "retranslator": moved}),
    )
    .await
    .error(247, 409);

    for port in 3..=10 {
        create(&srv, &acc.key, ips("More", port)).await.ok();
    }
    let refused = create(&srv, &acc.key, ips("Eleventh", 11)).await;
    assert!(refused.error(268, 402).contains("10"), "{refused:?}");
    srv.store
        .set_retranslator_quota(acc.user, Some(11))
        .await
        .unwrap();
    create(&srv, &acc.key, ips("Eleventh", 11)).await.ok();
    create(&srv, &acc.key, ips("Twelfth", 12))
        .await
        .error(268, 402);
    assert_eq!(list(&srv, &acc.key).await.len(), 11);
}

#[tokio::test]
async fn changes_are_the_masters_and_other_accounts_see_nothing() {
    let srv = TestServer::start().await;
    let acc = srv.account("retranslator-rights@example.com").await;
    let other = srv.account("retranslator-other@example.com").await;
    let sub = srv
        .subuser(
            &acc,
            "operator@example.com",
            vec![platform::Right::VehicleUpdate],
        )
        .await;
    let id = create(&srv, &acc.key, ips("Mine", 20332)).await.ok()["id"]
        .as_i64()
        .unwrap();
    create(&srv, &sub, ips("Sub's", 1)).await.error(13, 403);
    assert_eq!(list(&srv, &sub).await.len(), 1, "a sub-user lists them");
    srv.post(
        "/v2/retranslator/delete",
        json!({"hash": sub, "retranslator_id": id}),
    )
    .await
    .error(13, 403);

    assert!(list(&srv, &other.key).await.is_empty());
    let mut stolen = ips("Stolen", 1);
    stolen["id"] = json!(id);
    srv.post(
        "/v2/retranslator/update",
        json!({"hash": other.key, "retranslator": stolen}),
    )
    .await
    .error(201, 400);
    srv.post(
        "/v2/retranslator/delete",
        json!({"hash": other.key, "retranslator_id": id}),
    )
    .await
    .error(201, 400);
    // The same target in another account is another retranslator.
    create(&srv, &other.key, ips("Theirs", 20332)).await.ok();
    assert_eq!(list(&srv, &acc.key).await[0]["name"], "Mine");
}
