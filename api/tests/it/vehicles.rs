//! `/v2/vehicle/*` (clarifications 31-34): read back as stored, every
//! member checked and named by its path, one vehicle per tracker (moved, or
//! 247), 261 with open service tasks, lists sorted, filtered and paged in
//! SQL, the sub-user scope, the three request forms, and isolation.

use platform::Right;
use serde_json::{Value, json};

use crate::{Account, TestServer};

fn truck(label: &str) -> Value {
    json!({
        "tracker_id": null,
        "label": label,
        "max_speed": 90,
        "model": "Volvo FH16",
        "type": "truck",
        "subtype": "tanker",
        "garage_id": null,
        "trailer": "Schmitz S.KO",
        "manufacture_year": 2019,
        "color": "white",
        "additional_info": null,
        "reg_number": "123ABC02",
        "vin": "YV2RT40A8KB123456",
        "chassis_number": "CH-1",
        "frame_number": null,
        "payload_weight": 20000,
        "payload_height": 2500.5,
        "payload_length": 13600.0,
        "payload_width": 2450.0,
        "passengers": 2,
        "gross_weight": 40000,
        "fuel_type": "diesel",
        "fuel_grade": "DT-L-K5",
        "norm_avg_fuel_consumption": 31.5,
        "fuel_tank_volume": 600,
        "fuel_cost": 295.0,
        "wheel_arrangement": "6x4",
        "tyre_size": "315/80 R22.5",
        "tyres_number": 10,
        "liability_insurance_policy_number": "LI-77",
        "liability_insurance_valid_till": "2025-03-31",
        "free_insurance_policy_number": "",
        "free_insurance_valid_till": null,
        "icon_id": null,
        "icon_color": "1E90FF",
        "avatar_file_name": "",
        "tags": [3, 7]
    })
}

async fn create(srv: &TestServer, hash: &str, vehicle: Value) -> i64 {
    srv.post(
        "/v2/vehicle/create",
        json!({"hash": hash, "vehicle": vehicle}),
    )
    .await
    .ok()["id"]
        .as_i64()
        .unwrap()
}

async fn read(srv: &TestServer, hash: &str, id: i64) -> crate::Answer {
    srv.post("/v2/vehicle/read", json!({"hash": hash, "vehicle_id": id}))
        .await
}

async fn list(srv: &TestServer, hash: &str, params: Value) -> Vec<Value> {
    let mut params = params;
    params["hash"] = json!(hash);
    srv.post("/v2/vehicle/list", params).await.ok()["list"]
        .as_array()
        .unwrap()
        .clone()
}

fn labels(list: &[Value]) -> Vec<&str> {
    list.iter().map(|v| v["label"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn a_vehicle_reads_back_as_stored_and_lists_with_its_tracker_and_garage() {
    let srv = TestServer::start().await;
    let acc = srv.account("vehicles@example.com").await;
    let garage = srv
        .post(
            "/v2/garage/create",
            json!({"hash": acc.key, "garage": {"organization_name": "North depot"}}),
        )
        .await
        .ok()["id"]
        .as_i64()
        .unwrap();
    let mut sent = truck(" Tanker 1 ");
    sent["tracker_id"] = json!(acc.trackers[0].0);
    sent["garage_id"] = json!(garage);
    sent["icon_id"] = json!(55);
    sent["avatar_file_name"] = json!("me.png");
    sent["unknown_member"] = json!("ignored");
    let id = create(&srv, &acc.key, sent).await;

    let mut expected = truck("Tanker 1");
    expected["id"] = json!(id);
    expected["tracker_id"] = json!(acc.trackers[0].0);
    expected["garage_id"] = json!(garage);
    assert_eq!(
        read(&srv, &acc.key, id).await.ok()["value"],
        expected,
        "trimmed; icon_id and avatar_file_name are the avatar calls' only"
    );
    let listed = list(&srv, &acc.key, json!({})).await;
    let mut with_links = expected.clone();
    with_links["tracker_label"] = json!("Truck 0");
    with_links["garage_organization_name"] = json!("North depot");
    assert_eq!(listed, vec![with_links]);

    // update replaces every member; deleting the garage leaves none.
    srv.post(
        "/v2/vehicle/update",
        json!({"hash": acc.key, "vehicle": {"id": id, "label": "Bus", "type": "bus", "garage_id": garage}}),
    )
    .await
    .ok();
    srv.post(
        "/v2/garage/delete",
        json!({"hash": acc.key, "garage_id": garage}),
    )
    .await
    .ok();
    let value = read(&srv, &acc.key, id).await.ok()["value"].clone();
    assert_eq!(value["label"], "Bus");
    assert_eq!(
        value["tracker_id"],
        Value::Null,
        "the update unbound the tracker"
    );
    assert_eq!(value["garage_id"], Value::Null);
    assert_eq!(value["tags"], json!([]));
    assert_eq!(value["reg_number"], "");
}

#[tokio::test]
async fn every_member_is_checked_and_named_by_its_path() {
    let srv = TestServer::start().await;
    let acc = srv.account("vehicle-checks@example.com").await;
    let cases: Vec<(&str, Value, &str)> = vec![
        ("subtype", json!("sedan"), "vehicle.subtype"),
        ("type", json!("plane"), "vehicle.type"),
        ("label", json!(""), "vehicle.label"),
        ("label", json!("x".repeat(101)), "vehicle.label"),
        (
            "reg_number",
            json!("1234567890123456"),
            "vehicle.reg_number",
        ),
        ("vin", json!("YV2RT40A8KB1234567"), "vehicle.vin"),
        ("icon_color", json!("#1E90F"), "vehicle.icon_color"),
        ("icon_color", json!("1E90FG"), "vehicle.icon_color"),
        (
            "liability_insurance_valid_till",
            json!("2025-13-01"),
            "vehicle.liability_insurance_valid_till",
        ),
        (
            "free_insurance_valid_till",
            json!("2025-1-1"),
            "vehicle.free_insurance_valid_till",
        ),
        ("manufacture_year", json!(1899), "vehicle.manufacture_year"),
        ("max_speed", json!(-1), "vehicle.max_speed"),
        ("payload_weight", json!(-5), "vehicle.payload_weight"),
        ("fuel_cost", json!(-0.5), "vehicle.fuel_cost"),
        ("fuel_type", json!("coal"), "vehicle.fuel_type"),
        ("tags", json!([1, 0]), "vehicle.tags[1]"),
        ("passengers", json!("many"), "vehicle.passengers"),
    ];
    for (member, value, path) in cases {
        let mut vehicle = truck("Checked");
        vehicle[member] = value.clone();
        let answer = srv
            .post(
                "/v2/vehicle/create",
                json!({"hash": acc.key, "vehicle": vehicle}),
            )
            .await;
        answer.error(7, 400);
        assert_eq!(
            answer.body["errors"][0]["parameter"], path,
            "{member}={value}: {answer:?}"
        );
    }
    let mut no_type = truck("No type");
    no_type.as_object_mut().unwrap().remove("type");
    let answer = srv
        .post(
            "/v2/vehicle/create",
            json!({"hash": acc.key, "vehicle": no_type}),
        )
        .await;
    answer.error(7, 400);
    assert_eq!(answer.body["errors"][0]["parameter"], "vehicle.type");
    assert!(
        list(&srv, &acc.key, json!({})).await.is_empty(),
        "nothing stored"
    );

    // The edges that are taken, and the smallest vehicle.
    let mut edges = truck(&"x".repeat(100));
    edges["reg_number"] = json!("123456789012345");
    edges["vin"] = json!("YV2RT40A8KB12345");
    edges["manufacture_year"] = json!(2100);
    edges["max_speed"] = json!(1000);
    create(&srv, &acc.key, edges).await;
    create(&srv, &acc.key, json!({"label": "Bare", "type": "special"})).await;
    let bare = &list(&srv, &acc.key, json!({"filter": "bare"})).await[0];
    assert_eq!(bare["subtype"], Value::Null);
    assert_eq!(bare["max_speed"], 0);
    assert_eq!(bare["fuel_type"], Value::Null);
}

#[tokio::test]
async fn a_tracker_carries_one_vehicle_and_moves_unless_told_not_to() {
    let srv = TestServer::start().await;
    let acc = srv.account("vehicle-trackers@example.com").await;
    let other = srv.account("vehicle-trackers-other@example.com").await;
    let tracker = acc.trackers[0].0;
    let mut first = truck("First");
    first["tracker_id"] = json!(tracker);
    let first = create(&srv, &acc.key, first).await;

    let mut second = truck("Second");
    second["tracker_id"] = json!(tracker);
    srv.post(
        "/v2/vehicle/create",
        json!({"hash": acc.key, "vehicle": second, "force_reassign": false}),
    )
    .await
    .error(247, 409);
    let second = create(&srv, &acc.key, second).await;
    assert_eq!(
        read(&srv, &acc.key, first).await.ok()["value"]["tracker_id"],
        Value::Null
    );
    assert_eq!(
        read(&srv, &acc.key, second).await.ok()["value"]["tracker_id"],
        tracker
    );

    for (foreign, code, http) in [(other.trackers[0].0, 204, 404), (999_999, 201, 400)] {
        let mut vehicle = truck("Foreign");
        vehicle["tracker_id"] = json!(foreign);
        srv.post(
            "/v2/vehicle/create",
            json!({"hash": acc.key, "vehicle": vehicle}),
        )
        .await
        .error(code, http);
    }
    srv.store
        .set_tracker_blocked(acc.trackers[1], true)
        .await
        .unwrap();
    let mut blocked = truck("Blocked");
    blocked["tracker_id"] = json!(acc.trackers[1].0);
    srv.post(
        "/v2/vehicle/create",
        json!({"hash": acc.key, "vehicle": blocked}),
    )
    .await
    .error(208, 403);

    // An open service task holds the tracker (261) until it is closed.
    let task = srv
        .store
        .create_service_task(second, "Replace the tank sensor")
        .await
        .unwrap();
    let mut moved = truck("Second");
    moved["id"] = json!(second);
    srv.post(
        "/v2/vehicle/update",
        json!({"hash": acc.key, "vehicle": moved}),
    )
    .await
    .error(261, 403);
    let mut same = moved.clone();
    same["tracker_id"] = json!(tracker);
    same["label"] = json!("Second, renamed");
    srv.post(
        "/v2/vehicle/update",
        json!({"hash": acc.key, "vehicle": same}),
    )
    .await
    .ok();
    srv.store.close_service_task(task).await.unwrap();
    srv.post(
        "/v2/vehicle/update",
        json!({"hash": acc.key, "vehicle": moved}),
    )
    .await
    .ok();
}

#[tokio::test]
async fn lists_are_sorted_filtered_and_paged() {
    let srv = TestServer::start().await;
    let acc = srv.account("vehicle-lists@example.com").await;
    for (label, reg, vin, speed) in [
        ("beta", "B100", "VIN0000000000001", 80),
        ("Alpha", "A200", "VIN0000000000002", 80),
        ("Гранит", "C300", "VIN0000000000003", 60),
        ("gamma", "x_%1", "WDB0000000000004", 100),
    ] {
        let mut vehicle = truck(label);
        vehicle["reg_number"] = json!(reg);
        vehicle["vin"] = json!(vin);
        vehicle["max_speed"] = json!(speed);
        create(&srv, &acc.key, vehicle).await;
    }
    let by = |sort: Value| list(&srv, &acc.key, json!({ "sort": sort }));
    assert_eq!(
        labels(&by(json!([])).await),
        ["beta", "Alpha", "Гранит", "gamma"],
        "by id"
    );
    assert_eq!(
        labels(&by(json!(["label=asc"])).await),
        ["Alpha", "beta", "gamma", "Гранит"]
    );
    assert_eq!(
        labels(&by(json!(["max_speed=desc", "label=desc"])).await),
        ["gamma", "beta", "Alpha", "Гранит"]
    );
    assert_eq!(
        labels(&by(json!(["tyres_size=asc", "id=desc"])).await)[0],
        "gamma"
    );
    for bad in [
        json!(["label=asc", "id=asc", "vin=asc"]),
        json!(["colour=asc"]),
        json!(["label=up"]),
        json!(["label"]),
    ] {
        let answer = srv
            .post("/v2/vehicle/list", json!({"hash": acc.key, "sort": bad}))
            .await;
        answer.error(7, 400);
        assert!(
            answer.body["errors"][0]["parameter"]
                .as_str()
                .unwrap()
                .starts_with("sort"),
            "{answer:?}"
        );
    }

    let matching = |filter: &str| {
        let filter = filter.to_owned();
        let srv = &srv;
        let key = acc.key.clone();
        async move {
            labels(&list(srv, &key, json!({ "filter": filter })).await)
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(matching("ALPH").await, ["Alpha"], "label, any case");
    assert_eq!(matching("гран").await, ["Гранит"], "Unicode case");
    assert_eq!(matching("b1").await, ["beta"], "registration number");
    assert_eq!(matching("wdb").await, ["gamma"], "VIN");
    assert_eq!(matching("_%").await, ["gamma"], "wildcards are literal");
    assert_eq!(matching("   ").await.len(), 4, "blank is none");
    assert_eq!(matching(&"x".repeat(100)).await.len(), 0);
    let long = srv
        .post(
            "/v2/vehicle/list",
            json!({"hash": acc.key, "filter": "x".repeat(101)}),
        )
        .await;
    long.error(7, 400);
    assert_eq!(long.body["errors"][0]["parameter"], "filter");

    let page = |limit: i64, offset: i64| {
        list(
            &srv,
            &acc.key,
            json!({"sort": ["label=asc"], "limit": limit, "offset": offset}),
        )
    };
    assert_eq!(labels(&page(2, 1).await), ["beta", "gamma"]);
    assert!(page(0, 0).await.is_empty());
    assert!(page(10, 4).await.is_empty());
    list(&srv, &acc.key, json!({"limit": 10_000})).await;
    srv.post(
        "/v2/vehicle/list",
        json!({"hash": acc.key, "limit": 10_001}),
    )
    .await
    .error(212, 400);
    srv.post("/v2/vehicle/list", json!({"hash": acc.key, "offset": -1}))
        .await
        .error(7, 400);
    // GET, with the sort items as JSON text.
    let by_get = srv
        .get(
            "/v2/vehicle/list",
            &[
                ("hash", acc.key.as_str()),
                ("sort", r#"["vin=desc"]"#),
                ("limit", "1"),
            ],
        )
        .await;
    assert_eq!(by_get.ok()["list"][0]["label"], "gamma");
}

#[tokio::test]
async fn deletes_take_exactly_one_of_an_id_or_ids() {
    let srv = TestServer::start().await;
    let acc = srv.account("vehicle-deletes@example.com").await;
    let ids: Vec<i64> = [
        create(&srv, &acc.key, truck("One")).await,
        create(&srv, &acc.key, truck("Two")).await,
        create(&srv, &acc.key, truck("Three")).await,
    ]
    .to_vec();
    srv.post(
        "/v2/vehicle/delete",
        json!({"hash": acc.key, "vehicle_id": 999_999}),
    )
    .await
    .error(201, 400);
    for both_or_neither in [
        json!({"hash": acc.key, "vehicle_id": ids[0], "vehicle_ids": [ids[1]]}),
        json!({"hash": acc.key}),
    ] {
        srv.post("/v2/vehicle/delete", both_or_neither)
            .await
            .error(7, 400);
    }
    srv.post_form(
        "/v2/vehicle/delete",
        &[
            ("hash", acc.key.as_str()),
            ("vehicle_ids", &format!("[{}, 999999, {}]", ids[0], ids[1])),
        ],
    )
    .await
    .ok();
    assert_eq!(labels(&list(&srv, &acc.key, json!({})).await), ["Three"]);
    srv.post(
        "/v2/vehicle/delete",
        json!({"hash": acc.key, "vehicle_id": ids[2]}),
    )
    .await
    .ok();
    read(&srv, &acc.key, ids[2]).await.error(201, 400);
}

/// A sub-user seeing the first tracker only, with or without `vehicle_update`.
async fn scoped(srv: &TestServer, acc: &Account, login: &str, rights: Vec<Right>) -> String {
    srv.subuser(acc, login, rights).await
}

#[tokio::test]
async fn a_vehicle_on_a_hidden_tracker_does_not_exist_for_the_sub_user() {
    let srv = TestServer::start().await;
    let acc = srv.account("vehicle-scope@example.com").await;
    let mut seen = truck("Seen");
    seen["tracker_id"] = json!(acc.trackers[0].0);
    let seen = create(&srv, &acc.key, seen).await;
    let mut hidden = truck("Hidden");
    hidden["tracker_id"] = json!(acc.trackers[1].0);
    let hidden = create(&srv, &acc.key, hidden).await;
    let unbound = create(&srv, &acc.key, truck("Unbound")).await;

    let editor = scoped(&srv, &acc, "editor@example.com", vec![Right::VehicleUpdate]).await;
    assert_eq!(
        labels(&list(&srv, &editor, json!({})).await),
        ["Seen", "Unbound"]
    );
    read(&srv, &editor, seen).await.ok();
    read(&srv, &editor, hidden).await.error(201, 400);
    let mut update = truck("Taken");
    update["id"] = json!(hidden);
    srv.post(
        "/v2/vehicle/update",
        json!({"hash": editor, "vehicle": update}),
    )
    .await
    .error(201, 400);
    srv.post(
        "/v2/vehicle/delete",
        json!({"hash": editor, "vehicle_id": hidden}),
    )
    .await
    .error(201, 400);
    srv.post(
        "/v2/vehicle/delete",
        json!({"hash": editor, "vehicle_ids": [hidden]}),
    )
    .await
    .ok();
    // Nor can it bind a hidden tracker.
    let mut bind = truck("Unbound");
    bind["id"] = json!(unbound);
    bind["tracker_id"] = json!(acc.trackers[1].0);
    srv.post(
        "/v2/vehicle/update",
        json!({"hash": editor, "vehicle": bind}),
    )
    .await
    .error(204, 404);
    assert_eq!(
        read(&srv, &acc.key, hidden).await.ok()["value"]["label"],
        "Hidden",
        "unchanged"
    );

    let viewer = scoped(&srv, &acc, "viewer@example.com", vec![]).await;
    assert_eq!(list(&srv, &viewer, json!({})).await.len(), 2);
    srv.post(
        "/v2/vehicle/create",
        json!({"hash": viewer, "vehicle": truck("No")}),
    )
    .await
    .error(13, 403);
}

#[tokio::test]
async fn another_accounts_vehicle_does_not_exist_for_the_caller() {
    let srv = TestServer::start().await;
    let owner = srv.account("vehicle-owner@example.com").await;
    let other = srv.account("vehicle-other@example.com").await;
    let id = create(&srv, &owner.key, truck("Mine")).await;
    assert!(list(&srv, &other.key, json!({})).await.is_empty());
    read(&srv, &other.key, id).await.error(201, 400);
    let mut stolen = truck("Stolen");
    stolen["id"] = json!(id);
    srv.post(
        "/v2/vehicle/update",
        json!({"hash": other.key, "vehicle": stolen}),
    )
    .await
    .error(201, 400);
    srv.post(
        "/v2/vehicle/delete",
        json!({"hash": other.key, "vehicle_id": id}),
    )
    .await
    .error(201, 400);
    srv.post(
        "/v2/vehicle/delete",
        json!({"hash": other.key, "vehicle_ids": [id]}),
    )
    .await
    .ok();
    // Another account's garage is not this account's either.
    let garage = srv
        .post(
            "/v2/garage/create",
            json!({"hash": other.key, "garage": {}}),
        )
        .await
        .ok()["id"]
        .as_i64()
        .unwrap();
    let mut with_garage = truck("Garaged");
    with_garage["garage_id"] = json!(garage);
    srv.post(
        "/v2/vehicle/create",
        json!({"hash": owner.key, "vehicle": with_garage}),
    )
    .await
    .error(201, 400);
    assert_eq!(
        read(&srv, &owner.key, id).await.ok()["value"]["label"],
        "Mine"
    );
}
