//! `/v2/panel/dealer/activation_code/*` (spec document 2, clarification
//! 52): codes of 10 digits from the CSPRNG, unique; listed, ordered,
//! filtered and counted; updated only when listed, the dealer's, not
//! activated and of the new plan's device type; both permissions; isolation.

use std::collections::HashSet;

use platform::Permission;
use serde_json::{Value, json};

use crate::{Account, TestServer};

async fn panel(srv: &TestServer, acc: &Account) -> String {
    srv.panel_session(acc.dealer, &acc.dealer_password).await
}

async fn plan(srv: &TestServer, hash: &str, name: &str, device_type: &str) -> i64 {
    let tariff =
        json!({"name": name, "type": "monthly", "store_period": "1m", "device_type": device_type});
    srv.post(
        "/v2/panel/tariff/create",
        json!({"hash": hash, "tariff": tariff}),
    )
    .await
    .ok()["id"]
        .as_i64()
        .unwrap()
}

async fn codes(srv: &TestServer, hash: &str, params: Value) -> (Vec<Value>, i64) {
    let mut params = params;
    params["hash"] = json!(hash);
    let answer = srv
        .post("/v2/panel/dealer/activation_code/list", params)
        .await;
    let body = answer.ok();
    (
        body["list"].as_array().unwrap().clone(),
        body["count"].as_i64().unwrap(),
    )
}

#[tokio::test]
async fn codes_are_ten_unique_digits_of_a_plan_of_the_dealer() {
    let srv = TestServer::start().await;
    let acc = srv.account("codes@example.com").await;
    let hash = panel(&srv, &acc).await;
    let tracker_plan = plan(&srv, &hash, "Trackers", "tracker").await;
    let made = srv
        .post(
            "/v2/panel/dealer/activation_code/create",
            json!({"hash": hash, "count": 1000, "tariff_id": tracker_plan, "bonus_amount": 5, "free_days": 30}),
        )
        .await;
    assert_eq!(made.ok()["count"], 1000);
    let (list, count) = codes(&srv, &hash, json!({})).await;
    assert_eq!((list.len(), count), (1000, 1000));
    let distinct: HashSet<&str> = list.iter().map(|c| c["code"].as_str().unwrap()).collect();
    assert_eq!(distinct.len(), 1000);
    assert!(
        distinct
            .iter()
            .all(|c| c.len() == 10 && c.bytes().all(|b| b.is_ascii_digit()))
    );
    // Not a sequence: codes cannot be guessed from one another.
    let mut sorted: Vec<u64> = distinct.iter().map(|c| c.parse().unwrap()).collect();
    sorted.sort_unstable();
    assert!(sorted.windows(2).filter(|w| w[1] - w[0] == 1).count() < 5);
    assert_eq!(
        list[0].as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "code",
            "tariff_id",
            "tariff_name",
            "device_type",
            "bonus_amount",
            "free_days",
            "money_amount",
            "activated",
            "activation_date",
            "device_id"
        ]
    );
    assert_eq!(
        (
            &list[0]["tariff_name"],
            &list[0]["device_type"],
            &list[0]["bonus_amount"],
            &list[0]["free_days"],
            &list[0]["activated"],
            &list[0]["activation_date"],
            &list[0]["device_id"]
        ),
        (
            &json!("Trackers"),
            &json!("tracker"),
            &json!(5),
            &json!(30),
            &json!(false),
            &Value::Null,
            &json!(0)
        )
    );

    for (params, field) in [
        (json!({"count": 0, "tariff_id": tracker_plan}), "count"),
        (json!({"count": 1001, "tariff_id": tracker_plan}), "count"),
        (
            json!({"count": 1, "tariff_id": tracker_plan, "free_days": -1}),
            "free_days",
        ),
        (
            json!({"count": 1, "tariff_id": tracker_plan, "bonus_amount": -1}),
            "bonus_amount",
        ),
    ] {
        let mut params = params;
        params["hash"] = json!(hash);
        let description = srv
            .post("/v2/panel/dealer/activation_code/create", params)
            .await
            .error(7, 400)
            .to_owned();
        assert!(description.contains(field), "{description}");
    }
    let other = srv.account("codes-other@example.com").await;
    let theirs = plan(&srv, &panel(&srv, &other).await, "Theirs", "tracker").await;
    for foreign in [theirs, 999_999] {
        srv.post(
            "/v2/panel/dealer/activation_code/create",
            json!({"hash": hash, "count": 1, "tariff_id": foreign}),
        )
        .await
        .error(201, 400);
    }
    assert_eq!(
        codes(&srv, &hash, json!({})).await.1,
        1000,
        "nothing more was made"
    );
}

#[tokio::test]
async fn lists_are_ordered_filtered_and_paged() {
    let srv = TestServer::start().await;
    let acc = srv.account("codes-list@example.com").await;
    let hash = panel(&srv, &acc).await;
    let alpha = plan(&srv, &hash, "Alpha", "tracker").await;
    let cams = plan(&srv, &hash, "Cams", "camera").await;
    for (count, tariff, free_days) in [(3, alpha, 10), (2, cams, 20)] {
        srv.post(
            "/v2/panel/dealer/activation_code/create",
            json!({"hash": hash, "count": count, "tariff_id": tariff, "bonus_amount": 0, "free_days": free_days}),
        )
        .await
        .ok();
    }
    let (list, count) = codes(&srv, &hash, json!({})).await;
    let by_code: Vec<&str> = list.iter().map(|c| c["code"].as_str().unwrap()).collect();
    let mut sorted = by_code.clone();
    sorted.sort_unstable();
    assert_eq!(
        (by_code, count),
        (sorted.clone(), 5),
        "by code without order_by"
    );
    let (list, _) = codes(
        &srv,
        &hash,
        json!({"order_by": "free_days", "ascending": false, "limit": 2}),
    )
    .await;
    assert!(list.iter().all(|c| c["free_days"] == 20));
    let (list, count) = codes(&srv, &hash, json!({"filter": "CAMERA", "offset": 1})).await;
    assert_eq!((list.len(), count), (1, 2));
    let (list, count) = codes(&srv, &hash, json!({"filter": sorted[4]})).await;
    assert_eq!((list[0]["code"].as_str(), count), (Some(sorted[4]), 1));
    let (_, count) = codes(&srv, &hash, json!({"filter": alpha.to_string()})).await;
    assert!(count >= 3, "the plan id matches its codes");
    let get = srv
        .get(
            "/v2/panel/dealer/activation_code/list",
            &[
                ("hash", hash.as_str()),
                ("order_by", "tariff_name"),
                ("ascending", "false"),
                ("limit", "1"),
            ],
        )
        .await;
    assert_eq!(get.ok()["list"][0]["tariff_name"], "Cams");
    let description = srv
        .post(
            "/v2/panel/dealer/activation_code/list",
            json!({"hash": hash, "order_by": "price"}),
        )
        .await
        .error(7, 400)
        .to_owned();
    assert!(description.contains("order_by"), "{description}");
}

#[tokio::test]
async fn update_changes_only_listed_own_unused_codes_of_the_same_device_type() {
    let srv = TestServer::start().await;
    let acc = srv.account("codes-update@example.com").await;
    let hash = panel(&srv, &acc).await;
    let basic = plan(&srv, &hash, "Basic", "tracker").await;
    let pro = plan(&srv, &hash, "Pro", "tracker").await;
    let cams = plan(&srv, &hash, "Cams", "camera").await;
    for tariff in [basic, basic, basic, cams] {
        srv.post(
            "/v2/panel/dealer/activation_code/create",
            json!({"hash": hash, "count": 1, "tariff_id": tariff, "bonus_amount": 0, "free_days": 0}),
        )
        .await
        .ok();
    }
    let (list, _) = codes(
        &srv,
        &hash,
        json!({"order_by": "device_type", "ascending": false}),
    )
    .await;
    let code = |i: usize| list[i]["code"].as_str().unwrap().to_owned();
    // 0, 1: unused tracker codes; 2: used; 3: a camera code.
    srv.store.activate_code(&code(2), 42).await.unwrap();
    let other = srv.account("codes-update-2@example.com").await;
    let other_hash = panel(&srv, &other).await;
    let other_plan = plan(&srv, &other_hash, "Theirs", "tracker").await;
    srv.post(
        "/v2/panel/dealer/activation_code/create",
        json!({"hash": other_hash, "count": 1, "tariff_id": other_plan, "bonus_amount": 0, "free_days": 0}),
    )
    .await
    .ok();
    let (theirs, _) = codes(&srv, &other_hash, json!({})).await;
    let their_code = theirs[0]["code"].as_str().unwrap().to_owned();

    let answer = srv
        .post(
            "/v2/panel/dealer/activation_code/update",
            json!({"hash": hash, "codes": [code(0), code(1), code(2), code(3), their_code, "0000000000"], "tariff_id": pro, "bonus_amount": 7, "free_days": 3}),
        )
        .await;
    assert_eq!(answer.ok()["count"], 2);
    let (after, _) = codes(
        &srv,
        &hash,
        json!({"order_by": "device_type", "ascending": false}),
    )
    .await;
    let find = |c: &str| after.iter().find(|x| x["code"] == c).unwrap().clone();
    assert_eq!(
        (
            find(&code(0))["tariff_name"].clone(),
            find(&code(0))["bonus_amount"].clone()
        ),
        (json!("Pro"), json!(7))
    );
    assert_eq!(find(&code(1))["tariff_id"], pro);
    assert_eq!(find(&code(2))["tariff_id"], basic, "activated: unchanged");
    assert_eq!(find(&code(2))["activated"], true);
    assert_eq!(find(&code(2))["device_id"], 42);
    assert!(
        find(&code(2))["activation_date"]
            .as_str()
            .unwrap()
            .starts_with("2024-06-01 ")
    );
    assert_eq!(
        find(&code(3))["tariff_id"],
        cams,
        "another device type: unchanged"
    );
    assert_eq!(
        codes(&srv, &other_hash, json!({})).await.0[0]["tariff_id"],
        other_plan
    );

    srv.post(
        "/v2/panel/dealer/activation_code/update",
        json!({"hash": hash, "codes": [], "tariff_id": pro, "bonus_amount": 0, "free_days": 0}),
    )
    .await
    .error(7, 400);
    srv.post(
        "/v2/panel/dealer/activation_code/update",
        json!({"hash": hash, "codes": [code(0)], "tariff_id": other_plan, "bonus_amount": 0, "free_days": 0}),
    )
    .await
    .error(201, 400);
}

#[tokio::test]
async fn create_needs_read_and_create() {
    let srv = TestServer::start().await;
    let (only_create, password) = srv
        .dealer(Some(vec![
            Permission::ActivationCodeCreate,
            Permission::TariffsCreate,
        ]))
        .await;
    let hash = srv.panel_session(only_create, &password).await;
    let tariff = plan(&srv, &hash, "P", "tracker").await;
    let description = srv
        .post(
            "/v2/panel/dealer/activation_code/create",
            json!({"hash": hash, "count": 1, "tariff_id": tariff}),
        )
        .await
        .error(13, 403)
        .to_owned();
    assert!(
        description.contains("activation_code: read"),
        "{description}"
    );
    let (both, password) = srv
        .dealer(Some(vec![
            Permission::ActivationCodeCreate,
            Permission::ActivationCodeRead,
            Permission::TariffsCreate,
        ]))
        .await;
    let hash = srv.panel_session(both, &password).await;
    let tariff = plan(&srv, &hash, "P", "tracker").await;
    srv.post(
        "/v2/panel/dealer/activation_code/create",
        json!({"hash": hash, "count": 1, "tariff_id": tariff}),
    )
    .await
    .ok();
    srv.post(
        "/v2/panel/dealer/activation_code/update",
        json!({"hash": hash, "codes": ["1"], "tariff_id": tariff}),
    )
    .await
    .error(13, 403);
}
