//! `/v2/panel/tariff/*` (spec document 2): plans read back as stored,
//! 214/244/201 and every member checked, lists ordered, filtered and paged
//! with `count`, the defaults (239/237), permissions, isolation between
//! dealers, and a plan's `store_period` taking effect on its trackers' data.

use platform::{NewTracker, Permission};
use serde_json::{Value, json};

use crate::raw_data::csv;
use crate::{Account, TestServer};

fn plan(name: &str) -> Value {
    json!({
        "name": name,
        "group_id": 2,
        "active": true,
        "type": "monthly",
        "price": 12.5,
        "early_change_price": null,
        "device_limit": 50,
        "has_reports": false,
        "store_period": "12m",
        "device_type": "tracker",
        "proportional_charge": true,
        "service_prices": {"incoming_sms": 0.1, "outgoing_sms": 0.2, "service_sms": 0.05, "phone_call": 0.3, "traffic": 0.01}
    })
}

async fn panel(srv: &TestServer, acc: &Account) -> String {
    srv.panel_session(acc.dealer, &acc.dealer_password).await
}

async fn create(srv: &TestServer, hash: &str, tariff: Value) -> i64 {
    srv.post(
        "/v2/panel/tariff/create",
        json!({"hash": hash, "tariff": tariff}),
    )
    .await
    .ok()["id"]
        .as_i64()
        .unwrap()
}

async fn list(srv: &TestServer, hash: &str, params: Value) -> (Vec<String>, i64) {
    let mut params = params;
    params["hash"] = json!(hash);
    let answer = srv.post("/v2/panel/tariff/list", params).await;
    let body = answer.ok();
    let names = body["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    (names, body["count"].as_i64().unwrap())
}

#[tokio::test]
async fn a_plan_reads_back_as_stored_and_every_member_is_checked() {
    let srv = TestServer::start().await;
    let acc = srv.account("tariff@example.com").await;
    let hash = panel(&srv, &acc).await;
    let id = create(&srv, &hash, plan(" Fleet Pro ")).await;
    let read = srv
        .post(
            "/v2/panel/tariff/read",
            json!({"hash": hash, "tariff_id": id}),
        )
        .await;
    let mut expected = plan("Fleet Pro");
    expected["id"] = json!(id);
    assert_eq!(read.ok()["value"], expected);

    // 244: the dealer has a plan of that name; 214: activeday is for trackers only.
    srv.post(
        "/v2/panel/tariff/create",
        json!({"hash": hash, "tariff": plan("Fleet Pro")}),
    )
    .await
    .error(244, 400);
    let mut camera_daily = plan("Camera daily");
    camera_daily["type"] = json!("activeday");
    camera_daily["device_type"] = json!("camera");
    srv.post(
        "/v2/panel/tariff/create",
        json!({"hash": hash, "tariff": camera_daily}),
    )
    .await
    .error(214, 400);
    for (member, value) in [
        ("name", json!("")),
        ("name", json!("x".repeat(256))),
        ("price", json!(-1)),
        ("store_period", json!("forever")),
        ("device_limit", json!(-5)),
        ("type", json!("weekly")),
    ] {
        let mut bad = plan("Bad");
        bad[member] = value;
        let description = srv
            .post(
                "/v2/panel/tariff/create",
                json!({"hash": hash, "tariff": bad}),
            )
            .await
            .error(7, 400)
            .to_owned();
        assert!(
            description.contains(&format!("tariff.{member}")),
            "{member}: {description}"
        );
    }
    let mut edge = plan(&"y".repeat(255));
    edge["price"] = json!(0);
    create(&srv, &hash, edge).await;

    // Update replaces every member but the device type.
    let mut changed = plan("Fleet Pro 2");
    changed["id"] = json!(id);
    changed["type"] = json!("activeday");
    changed["device_type"] = json!("camera");
    changed["store_period"] = json!("30d");
    srv.post(
        "/v2/panel/tariff/update",
        json!({"hash": hash, "tariff": changed}),
    )
    .await
    .ok();
    let value = srv
        .post(
            "/v2/panel/tariff/read",
            json!({"hash": hash, "tariff_id": id}),
        )
        .await
        .ok()["value"]
        .clone();
    assert_eq!(
        (
            &value["name"],
            &value["type"],
            &value["device_type"],
            &value["store_period"]
        ),
        (
            &json!("Fleet Pro 2"),
            &json!("activeday"),
            &json!("tracker"),
            &json!("30d")
        )
    );
    // A name of another plan of the dealer: 244; no id: 7; an unknown id: 201.
    let mut taken = plan(&"y".repeat(255));
    taken["id"] = json!(id);
    srv.post(
        "/v2/panel/tariff/update",
        json!({"hash": hash, "tariff": taken}),
    )
    .await
    .error(244, 400);
    srv.post(
        "/v2/panel/tariff/update",
        json!({"hash": hash, "tariff": plan("No id")}),
    )
    .await
    .error(7, 400);
    let mut unknown = plan("Unknown");
    unknown["id"] = json!(999_999);
    srv.post(
        "/v2/panel/tariff/update",
        json!({"hash": hash, "tariff": unknown}),
    )
    .await
    .error(201, 400);
}

#[tokio::test]
async fn lists_are_ordered_filtered_paged_and_counted() {
    let srv = TestServer::start().await;
    let acc = srv.account("tariff-list@example.com").await;
    let hash = panel(&srv, &acc).await;
    for (name, price, device_type) in [
        ("Basic", 5.0, "tracker"),
        ("Camera Plus", 9.0, "camera"),
        ("Ёлка", 15.0, "tracker"),
        ("Socket", 1.0, "socket"),
    ] {
        let mut p = plan(name);
        p["price"] = json!(price);
        p["device_type"] = json!(device_type);
        create(&srv, &hash, p).await;
    }
    // The dealer's own Standard plan is there too (price 0).
    let (names, count) = list(&srv, &hash, json!({})).await;
    assert_eq!(
        names,
        ["Standard", "Basic", "Camera Plus", "Ёлка", "Socket"]
    );
    assert_eq!(count, 5);
    let (names, _) = list(
        &srv,
        &hash,
        json!({"order_by": "price", "ascending": false}),
    )
    .await;
    assert_eq!(
        names,
        ["Ёлка", "Camera Plus", "Basic", "Socket", "Standard"]
    );
    let (names, count) = list(
        &srv,
        &hash,
        json!({"device_type": "tracker", "order_by": "name", "limit": 2, "offset": 1}),
    )
    .await;
    assert_eq!(
        (names, count),
        (vec!["Standard".to_owned(), "Ёлка".to_owned()], 3)
    );
    // The filter: name (Unicode, case-insensitive), price, device type.
    assert_eq!(list(&srv, &hash, json!({"filter": "ЁЛ"})).await.0, ["Ёлка"]);
    assert_eq!(list(&srv, &hash, json!({"filter": "15"})).await.0, ["Ёлка"]);
    assert_eq!(
        list(&srv, &hash, json!({"filter": "camera"})).await.0,
        ["Camera Plus"]
    );
    assert_eq!(list(&srv, &hash, json!({"filter": "  "})).await.1, 5);
    // The same through GET and a form.
    let get = srv
        .get(
            "/v2/panel/tariff/list",
            &[
                ("hash", hash.as_str()),
                ("order_by", "price"),
                ("ascending", "false"),
                ("limit", "1"),
            ],
        )
        .await;
    assert_eq!(get.ok()["list"][0]["name"], "Ёлка");
    assert_eq!(get.ok()["count"], 5);
    let form = srv
        .post_form(
            "/v2/panel/tariff/list",
            &[("hash", hash.as_str()), ("device_type", "socket")],
        )
        .await;
    assert_eq!(form.ok()["list"][0]["name"], "Socket");
    assert!(form.ok()["wholesale_service_prices"]["traffic"].is_number());

    let description = srv
        .post(
            "/v2/panel/tariff/list",
            json!({"hash": hash, "order_by": "colour"}),
        )
        .await
        .error(7, 400)
        .to_owned();
    assert!(description.contains("order_by"), "{description}");
    srv.post(
        "/v2/panel/tariff/list",
        json!({"hash": hash, "limit": 10_001}),
    )
    .await
    .error(212, 400);
    srv.post(
        "/v2/panel/tariff/list",
        json!({"hash": hash, "device_type": "boat"}),
    )
    .await
    .error(7, 400);
}

#[tokio::test]
async fn defaults_name_a_plan_of_the_dealer_for_the_device_type() {
    let srv = TestServer::start().await;
    let acc = srv.account("tariff-defaults@example.com").await;
    let hash = panel(&srv, &acc).await;
    let defaults = srv
        .post("/v2/panel/tariff/defaults/read", json!({"hash": hash}))
        .await;
    let standard = defaults.ok()["tracker"]["tariff_id"].as_i64().unwrap();
    assert_eq!(defaults.ok()["camera"]["tariff_id"], Value::Null);

    let pro = create(&srv, &hash, plan("Pro")).await;
    let mut camera = plan("Cam");
    camera["device_type"] = json!("camera");
    let cam = create(&srv, &hash, camera).await;
    let tracker = json!({"tariff_id": pro, "activation_bonus": 5.5, "free_days": 14, "free_days_device_limit": 3});
    srv.post(
        "/v2/panel/tariff/defaults/update",
        json!({"hash": hash, "tracker": tracker, "camera": {"tariff_id": cam, "free_days": 7}}),
    )
    .await
    .ok();
    let defaults = srv
        .post("/v2/panel/tariff/defaults/read", json!({"hash": hash}))
        .await;
    assert_eq!(defaults.ok()["tracker"], tracker);
    assert_eq!(
        defaults.ok()["camera"],
        json!({"tariff_id": cam, "activation_bonus": 0.0, "free_days": 7, "free_days_device_limit": null})
    );
    // A new tracker gets the new default plan.
    let new = srv
        .store
        .create_tracker(NewTracker {
            user_id: acc.user,
            label: "New".into(),
            device_id: "35000000000777".into(),
            model: String::new(),
            plan_id: None,
            store_period: None,
            time_zone: None,
        })
        .await
        .unwrap();
    assert_eq!(
        srv.store.tracker(new).await.unwrap().unwrap().plan_id.0,
        pro
    );

    // 239: not a plan of the dealer; 237: a plan for cameras as the trackers' default.
    let other = srv.account("tariff-defaults-2@example.com").await;
    let other_plan = create(&srv, &panel(&srv, &other).await, plan("Theirs")).await;
    for missing in [other_plan, 999_999] {
        srv.post(
            "/v2/panel/tariff/defaults/update",
            json!({"hash": hash, "tracker": {"tariff_id": missing}}),
        )
        .await
        .error(239, 404);
    }
    srv.post(
        "/v2/panel/tariff/defaults/update",
        json!({"hash": hash, "tracker": {"tariff_id": cam}}),
    )
    .await
    .error(237, 400);
    srv.post(
        "/v2/panel/tariff/defaults/update",
        json!({"hash": hash, "tracker": {"tariff_id": pro, "free_days": -1}}),
    )
    .await
    .error(7, 400);
    srv.post("/v2/panel/tariff/defaults/update", json!({"hash": hash}))
        .await
        .error(7, 400);
    let unchanged = srv
        .post("/v2/panel/tariff/defaults/read", json!({"hash": hash}))
        .await;
    assert_eq!(unchanged.ok()["tracker"]["tariff_id"], pro);
    assert_ne!(standard, pro);
}

#[tokio::test]
async fn permissions_are_checked_and_dealers_never_see_each_others_plans() {
    let srv = TestServer::start().await;
    let acc = srv.account("tariff-owner@example.com").await;
    let hash = panel(&srv, &acc).await;
    let id = create(&srv, &hash, plan("Mine")).await;

    let other = srv.account("tariff-stranger@example.com").await;
    let theirs = panel(&srv, &other).await;
    srv.post(
        "/v2/panel/tariff/read",
        json!({"hash": theirs, "tariff_id": id}),
    )
    .await
    .error(201, 400);
    let mut take = plan("Taken");
    take["id"] = json!(id);
    srv.post(
        "/v2/panel/tariff/update",
        json!({"hash": theirs, "tariff": take}),
    )
    .await
    .error(201, 400);
    assert_eq!(list(&srv, &theirs, json!({})).await.0, ["Standard"]);
    // A name is unique per dealer only.
    create(&srv, &theirs, plan("Mine")).await;

    let (reader, password) = srv.dealer(Some(vec![Permission::TariffsRead])).await;
    let reader_hash = srv.panel_session(reader, &password).await;
    list(&srv, &reader_hash, json!({})).await;
    srv.post(
        "/v2/panel/tariff/create",
        json!({"hash": reader_hash, "tariff": plan("No")}),
    )
    .await
    .error(13, 403);
    srv.post(
        "/v2/panel/tariff/defaults/update",
        json!({"hash": reader_hash, "tracker": {"tariff_id": 1}}),
    )
    .await
    .error(13, 403);
    // A user's credential is not a panel session.
    srv.post("/v2/panel/tariff/list", json!({"hash": acc.key}))
        .await
        .error(4, 400);
}

#[tokio::test]
async fn a_plans_store_period_takes_effect_on_its_trackers_data() {
    let srv = TestServer::start().await;
    let acc = srv.account("tariff-period@example.com").await;
    let hash = panel(&srv, &acc).await;
    // The server's clock is 2024-06-01T08:00Z; one message 10 days old, one 1 hour old.
    let t = acc.trackers[0].0;
    let token = srv.ingest_token(false).await;
    srv.intake(
        &token,
        &[
            json!({"tracker_id": t, "msg_time": "2024-05-22T08:00:00Z", "lat": 1.0}),
            json!({"tracker_id": t, "msg_time": "2024-06-01T07:00:00Z", "lat": 2.0}),
        ],
    )
    .await
    .ok();
    let read = json!({"hash": acc.key, "tracker_id": t, "interval": "2024-05-20T00:00:00Z/2024-06-02T00:00:00Z", "columns": ["lat"]});
    let rows = |text: String| text.lines().count() - 1;
    let (status, text) = csv(&srv, read.clone()).await;
    assert_eq!((status, rows(text)), (200, 2));

    // The trackers' plan is the dealer's Standard one: keep two days only.
    let standard = srv
        .post("/v2/panel/tariff/defaults/read", json!({"hash": hash}))
        .await
        .ok()["tracker"]["tariff_id"]
        .as_i64()
        .unwrap();
    let mut standard_plan = srv
        .post(
            "/v2/panel/tariff/read",
            json!({"hash": hash, "tariff_id": standard}),
        )
        .await
        .ok()["value"]
        .clone();
    standard_plan["store_period"] = json!("2d");
    srv.post(
        "/v2/panel/tariff/update",
        json!({"hash": hash, "tariff": standard_plan}),
    )
    .await
    .ok();
    let (status, text) = csv(&srv, read).await;
    assert_eq!((status, rows(text.clone())), (200, 1), "{text}");
    assert!(text.contains("2024-06-01"), "{text}");
}
