//! `/v2/garage/*`: read back exactly as stored, validated member by member
//! (named by path), the three request forms, the right `vehicle_update`,
//! and isolation between accounts.

use platform::Right;
use serde_json::{Value, json};

use crate::TestServer;

fn garage() -> Value {
    json!({
        "location": {"lat": 43.25, "lng": 76.95, "address": "  Abay Ave 52  ", "radius": 150},
        "mechanic_name": "Serik",
        "dispatcher_name": null,
        "organization_name": "Depot \"North\""
    })
}

async fn list(srv: &TestServer, hash: &str) -> Vec<Value> {
    srv.list("/v2/garage/list", hash).await
}

#[tokio::test]
async fn a_garage_reads_back_as_stored_and_its_changes_replace_every_member() {
    let srv = TestServer::start().await;
    let acc = srv.account("garages@example.com").await;
    assert_eq!(list(&srv, &acc.key).await, Vec::<Value>::new());

    let created = srv
        .post(
            "/v2/garage/create",
            json!({"hash": acc.key, "garage": garage()}),
        )
        .await;
    let id = created.ok()["id"].as_i64().unwrap();
    let mut expected = garage();
    expected["id"] = json!(id);
    expected["location"]["address"] = json!("Abay Ave 52");
    assert_eq!(
        list(&srv, &acc.key).await,
        vec![expected],
        "trimmed, nulls kept"
    );

    // A second one without location or names; ids ascend.
    let bare = srv
        .post(
            "/v2/garage/create",
            json!({"hash": acc.key, "garage": {"id": 999, "unknown": 1}}),
        )
        .await;
    let bare_id = bare.ok()["id"].as_i64().unwrap();
    assert!(bare_id > id, "the id sent to create is ignored");
    let all = list(&srv, &acc.key).await;
    assert_eq!(
        all[1],
        json!({"id": bare_id, "location": null, "mechanic_name": null, "dispatcher_name": null,
               "organization_name": null})
    );

    // update replaces every member.
    srv.post(
        "/v2/garage/update",
        json!({"hash": acc.key, "garage": {"id": id, "location": {"lat": -90, "lng": 180, "address": ""},
               "mechanic_name": "Aidar"}}),
    )
    .await
    .ok();
    assert_eq!(
        list(&srv, &acc.key).await[0],
        json!({"id": id, "location": {"lat": -90.0, "lng": 180.0, "address": "", "radius": null},
               "mechanic_name": "Aidar", "dispatcher_name": null, "organization_name": null})
    );

    srv.post(
        "/v2/garage/delete",
        json!({"hash": acc.key, "garage_id": id}),
    )
    .await
    .ok();
    let left: Vec<i64> = list(&srv, &acc.key)
        .await
        .iter()
        .map(|g| g["id"].as_i64().unwrap())
        .collect();
    assert_eq!(left, vec![bare_id]);
    srv.post(
        "/v2/garage/delete",
        json!({"hash": acc.key, "garage_id": id}),
    )
    .await
    .error(201, 400);
    srv.post(
        "/v2/garage/update",
        json!({"hash": acc.key, "garage": {"id": id}}),
    )
    .await
    .error(201, 400);
}

#[tokio::test]
async fn every_member_is_checked_and_named_by_its_path() {
    let srv = TestServer::start().await;
    let acc = srv.account("garage-checks@example.com").await;
    let long = "é".repeat(256);
    let cases = [
        (
            json!({"location": {"lat": 90.5, "lng": 0}}),
            "garage.location.lat",
        ),
        (
            json!({"location": {"lat": 0, "lng": -180.01}}),
            "garage.location.lng",
        ),
        (
            json!({"location": {"lat": 0, "lng": 0, "radius": 0}}),
            "garage.location.radius",
        ),
        (
            json!({"location": {"lat": 0, "lng": 0, "radius": 100_001}}),
            "garage.location.radius",
        ),
        (
            json!({"location": {"lat": "north", "lng": 0}}),
            "garage.location.lat",
        ),
        (json!({"location": {"lng": 0}}), "garage.location.lat"),
        (
            json!({"location": {"lat": 0, "lng": 0, "address": "a\u{7}b"}}),
            "garage.location.address",
        ),
        (json!({"mechanic_name": long}), "garage.mechanic_name"),
        (
            json!({"dispatcher_name": "tab\there"}),
            "garage.dispatcher_name",
        ),
        (
            json!({"organization_name": ["x"]}),
            "garage.organization_name",
        ),
    ];
    for (garage, path) in cases {
        let answer = srv
            .post(
                "/v2/garage/create",
                json!({"hash": acc.key, "garage": garage}),
            )
            .await;
        answer.error(7, 400);
        assert_eq!(
            answer.body["errors"][0]["parameter"], path,
            "{garage}: {answer:?}"
        );
    }
    srv.post("/v2/garage/create", json!({"hash": acc.key}))
        .await
        .error(7, 400);
    let no_id = srv
        .post("/v2/garage/update", json!({"hash": acc.key, "garage": {}}))
        .await;
    no_id.error(7, 400);
    assert_eq!(no_id.body["errors"][0]["parameter"], "garage.id");
    assert!(list(&srv, &acc.key).await.is_empty(), "nothing was stored");

    // The edges that are taken.
    let edges = json!({"location": {"lat": 90, "lng": -180, "radius": 100_000},
                       "mechanic_name": "é".repeat(255), "dispatcher_name": "", "organization_name": "   "});
    srv.post(
        "/v2/garage/create",
        json!({"hash": acc.key, "garage": edges}),
    )
    .await
    .ok();
    let stored = &list(&srv, &acc.key).await[0];
    assert_eq!(stored["location"]["radius"], 100_000);
    assert_eq!(stored["location"]["address"], "");
    assert_eq!(stored["organization_name"], "", "blank is trimmed to empty");
}

#[tokio::test]
async fn json_form_and_get_requests_are_the_same_call() {
    let srv = TestServer::start().await;
    let acc = srv.account("garage-forms@example.com").await;
    let text = garage().to_string();
    srv.post_form(
        "/v2/garage/create",
        &[("hash", acc.key.as_str()), ("garage", text.as_str())],
    )
    .await
    .ok();
    srv.get(
        "/v2/garage/create",
        &[("hash", acc.key.as_str()), ("garage", text.as_str())],
    )
    .await
    .ok();
    let listed = list(&srv, &acc.key).await;
    assert_eq!(listed.len(), 2);
    let strip = |mut g: Value| {
        g.as_object_mut().unwrap().remove("id");
        g
    };
    assert_eq!(strip(listed[0].clone()), strip(listed[1].clone()));
    let by_get = srv
        .get("/v2/garage/list", &[("hash", acc.key.as_str())])
        .await;
    assert_eq!(by_get.ok()["list"].as_array().unwrap(), &listed);
    let id = listed[0]["id"].to_string();
    srv.post_form(
        "/v2/garage/delete",
        &[("hash", acc.key.as_str()), ("garage_id", id.as_str())],
    )
    .await
    .ok();
    assert_eq!(list(&srv, &acc.key).await.len(), 1);
}

#[tokio::test]
async fn changes_need_vehicle_update_and_belong_to_the_master() {
    let srv = TestServer::start().await;
    let acc = srv.account("garage-rights@example.com").await;
    let reader = srv.subuser(&acc, "reader@example.com", vec![]).await;
    let fleet = srv
        .subuser(&acc, "fleet@example.com", vec![Right::VehicleUpdate])
        .await;

    let refused = srv
        .post(
            "/v2/garage/create",
            json!({"hash": reader, "garage": garage()}),
        )
        .await;
    assert!(refused.error(13, 403).contains("vehicle_update"));
    let id = srv
        .post(
            "/v2/garage/create",
            json!({"hash": fleet, "garage": garage()}),
        )
        .await
        .ok()["id"]
        .as_i64()
        .unwrap();
    // The master sees the sub-user's garage, and so does every sub-user.
    for hash in [&acc.key, &reader, &fleet] {
        assert_eq!(list(&srv, hash).await[0]["id"], id, "{hash}");
    }
    for (path, params) in [
        ("/v2/garage/update", json!({"garage": {"id": id}})),
        ("/v2/garage/delete", json!({"garage_id": id})),
    ] {
        let mut params = params;
        params["hash"] = json!(reader);
        srv.post(path, params).await.error(13, 403);
    }
    srv.post("/v2/garage/delete", json!({"hash": fleet, "garage_id": id}))
        .await
        .ok();
}

#[tokio::test]
async fn another_accounts_garage_does_not_exist_for_the_caller() {
    let srv = TestServer::start().await;
    let owner = srv.account("garage-owner@example.com").await;
    let other = srv.account("garage-other@example.com").await;
    let id = srv
        .post(
            "/v2/garage/create",
            json!({"hash": owner.key, "garage": garage()}),
        )
        .await
        .ok()["id"]
        .as_i64()
        .unwrap();
    assert!(list(&srv, &other.key).await.is_empty());
    srv.post(
        "/v2/garage/update",
        json!({"hash": other.key, "garage": {"id": id, "mechanic_name": "thief"}}),
    )
    .await
    .error(201, 400);
    srv.post(
        "/v2/garage/delete",
        json!({"hash": other.key, "garage_id": id}),
    )
    .await
    .error(201, 400);
    let mut expected = garage();
    expected["id"] = json!(id);
    expected["location"]["address"] = json!("Abay Ave 52");
    assert_eq!(list(&srv, &owner.key).await, vec![expected], "unchanged");
}
