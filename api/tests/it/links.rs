//! `/v2/tracker/location/link/*` (clarifications 41-44): links read back
//! as stored with the defaults filled, every member checked at its edges,
//! 217/204/236/268, the right `weblocator_session_create`, a sub-user's
//! scope, the list's filter, search conditions, sort (status in its stated
//! order) and paging, and isolation between accounts.

use platform::{Location, Place, Right};
use serde_json::{Value, json};

use crate::{Account, TestServer};

fn link(trackers: &[i64]) -> Value {
    json!({
        "description": "Delivery to Main St.",
        "trackers": trackers.iter().map(|t| json!({"tracker_id": t, "alias": null,
            "params": {"object_data": ["speed", "address"]}})).collect::<Vec<_>>(),
        "params": {"display_options": {"map": "osm"}},
    })
}

async fn create(srv: &TestServer, hash: &str, body: Value) -> crate::Answer {
    let mut body = body;
    body["hash"] = json!(hash);
    srv.post("/v2/tracker/location/link/create", body).await
}

async fn create_ok(srv: &TestServer, hash: &str, body: Value) -> i64 {
    create(srv, hash, body).await.ok()["value"]
        .as_i64()
        .unwrap()
}

async fn read(srv: &TestServer, hash: &str, id: i64) -> crate::Answer {
    srv.post(
        "/v2/tracker/location/link/read",
        json!({"hash": hash, "id": id}),
    )
    .await
}

async fn list(srv: &TestServer, hash: &str, extra: Value) -> Vec<i64> {
    let mut body = extra;
    body["hash"] = json!(hash);
    srv.post("/v2/tracker/location/link/list", body).await.ok()["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_i64().unwrap())
        .collect()
}

async fn list_error(srv: &TestServer, hash: &str, extra: Value) -> String {
    let mut body = extra;
    body["hash"] = json!(hash);
    srv.post("/v2/tracker/location/link/list", body)
        .await
        .error(7, 400)
        .to_owned()
}

fn ids(acc: &Account) -> Vec<i64> {
    acc.trackers.iter().map(|t| t.0).collect()
}

#[tokio::test]
async fn a_link_reads_back_as_stored_with_defaults_and_changes_in_place() {
    let srv = TestServer::start().await;
    let acc = srv.account("links@example.com").await;
    let t = ids(&acc);
    let id = create_ok(&srv, &acc.key, link(&t)).await;
    let value = read(&srv, &acc.key, id).await.ok()["value"].clone();
    let hash = value["hash"].as_str().unwrap().to_owned();
    assert_eq!(hash.len(), 32);
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(
        value,
        json!({
            // 08:00 UTC in the account's zone (Asia/Tokyo).
            "id": id, "hash": hash, "create_date": "2024-06-01 17:00:00",
            "creator_id": acc.user.0, "description": "Delivery to Main St.", "enabled": true,
            "lifetime": null,
            "params": {"bounding_zone_ids": [], "bounding_mode": null, "place_ids": null,
                       "shorten_url": false,
                       "display_options": {"map": "osm", "autoscale": true, "show_icons": false,
                           "show_driver_info": false, "show_vehicle_info": false,
                           "trace_duration": 5}},
            "trackers": [
                {"tracker_id": t[0], "alias": null, "params": {"object_data": ["speed", "address"]}},
                {"tracker_id": t[1], "alias": null, "params": {"object_data": ["speed", "address"]}},
            ],
        })
    );

    // Update replaces everything but the hash and the state.
    let zone = srv.circle_zone(acc.user, 52.52, 13.4, 500).await;
    let place = srv
        .store
        .create_place(
            acc.user,
            Place {
                id: None,
                label: "Customer".into(),
                location: Location {
                    lat: 52.5,
                    lng: 13.41,
                    address: String::new(),
                    radius: None,
                },
                description: None,
            },
        )
        .await
        .unwrap();
    let changed = json!({
        "hash": acc.key, "id": id, "description": "  Shift 2 ",
        "lifetime": {"from": "2024-06-01 09:00:00", "to": null},
        "trackers": [{"tracker_id": t[1], "alias": " Van ", "params": {"object_data": []}}],
        "params": {"bounding_zone_ids": [zone.0], "bounding_mode": "outside",
                   "place_ids": [place.0], "shorten_url": true,
                   "display_options": {"map": "satellite", "autoscale": false,
                       "show_icons": true, "show_driver_info": true,
                       "show_vehicle_info": true, "trace_duration": 600}},
    });
    srv.post("/v2/tracker/location/link/update", changed)
        .await
        .ok();
    let value = read(&srv, &acc.key, id).await.ok()["value"].clone();
    assert_eq!(value["hash"], json!(hash));
    assert_eq!(value["description"], "Shift 2");
    assert_eq!(
        value["lifetime"],
        json!({"from": "2024-06-01 09:00:00", "to": null})
    );
    assert_eq!(
        value["trackers"],
        json!([{"tracker_id": t[1], "alias": "Van", "params": {"object_data": []}}])
    );
    assert_eq!(
        value["params"],
        json!({"bounding_zone_ids": [zone.0], "bounding_mode": "outside",
               "place_ids": [place.0], "shorten_url": true,
               "display_options": {"map": "satellite", "autoscale": false, "show_icons": true,
                   "show_driver_info": true, "show_vehicle_info": true, "trace_duration": 600}})
    );

    // Update names its link by `id`.
    let mut no_id = link(&t);
    no_id["hash"] = json!(acc.key);
    let description = srv
        .post("/v2/tracker/location/link/update", no_id)
        .await
        .error(7, 400)
        .to_owned();
    assert!(description.contains("id"), "{description}");

    // Switched off and on, then deleted: 201 from then on.
    for active in [false, true, false] {
        srv.post(
            "/v2/tracker/location/link/status/change",
            json!({"hash": acc.key, "id": id, "is_active": active}),
        )
        .await
        .ok();
        assert_eq!(
            read(&srv, &acc.key, id).await.ok()["value"]["enabled"],
            json!(active)
        );
    }
    srv.post(
        "/v2/tracker/location/link/delete",
        json!({"hash": acc.key, "id": id}),
    )
    .await
    .ok();
    read(&srv, &acc.key, id).await.error(201, 400);
    for path in ["delete", "status/change", "update"] {
        let mut body = link(&t);
        body["hash"] = json!(acc.key);
        body["id"] = json!(id);
        body["is_active"] = json!(true);
        srv.post(&format!("/v2/tracker/location/link/{path}"), body)
            .await
            .error(201, 400);
    }
}

#[tokio::test]
async fn members_are_checked_at_their_edges_and_named() {
    let srv = TestServer::start().await;
    let acc = srv.account("edges@example.com").await;
    let t = ids(&acc)[0];
    let with = |f: &dyn Fn(&mut Value)| {
        let mut body = link(&[t]);
        f(&mut body);
        body
    };
    let cases: Vec<(Value, &str)> = vec![
        (with(&|b| b["trackers"] = json!([])), "trackers"),
        (
            with(&|b| {
                b["trackers"] = json!(
                    (0..101)
                        .map(|n| json!({"tracker_id": n}))
                        .collect::<Vec<_>>()
                )
            }),
            "trackers",
        ),
        (
            with(&|b| b["trackers"] = json!([{"tracker_id": t}, {"tracker_id": t}])),
            "trackers[1].tracker_id",
        ),
        (
            with(&|b| b["description"] = json!("d".repeat(256))),
            "description",
        ),
        (
            with(&|b| b["description"] = json!("tab\there")),
            "description",
        ),
        (
            with(&|b| b["trackers"][0]["alias"] = json!("a".repeat(101))),
            "trackers[0].alias",
        ),
        (
            with(&|b| b["trackers"][0]["params"]["object_data"] = json!(["speed", "colour"])),
            "trackers[0].params.object_data[1]",
        ),
        (
            with(&|b| b["params"]["display_options"]["trace_duration"] = json!(86_401)),
            "params.display_options.trace_duration",
        ),
        (
            with(&|b| b["params"]["display_options"]["trace_duration"] = json!(-1)),
            "params.display_options.trace_duration",
        ),
        (
            with(&|b| b["params"]["bounding_zone_ids"] = json!([1])),
            "params.bounding_mode",
        ),
        (
            with(&|b| b["params"]["bounding_mode"] = json!("around")),
            "params.bounding_mode",
        ),
        (
            with(&|b| b["lifetime"] = json!({"from": "2024-06-02"})),
            "lifetime.from",
        ),
        (
            with(&|b| {
                b["lifetime"] = json!({"from": "2024-06-02 10:00:00", "to": "2024-06-02 10:00:00"})
            }),
            "lifetime.to",
        ),
        (with(&|b| b["description"] = json!(null)), "description"),
    ];
    for (body, field) in cases {
        let answer = create(&srv, &acc.key, body.clone()).await;
        let description = answer.error(7, 400);
        assert!(
            description.contains(field),
            "{field} not named in {description:?} for {body}"
        );
    }
    // The edges themselves are taken.
    create_ok(
        &srv,
        &acc.key,
        with(&|b| {
            b["description"] = json!("d".repeat(255));
            b["trackers"][0]["alias"] = json!("a".repeat(100));
            b["params"]["display_options"]["trace_duration"] = json!(86_400);
        }),
    )
    .await;
    create_ok(
        &srv,
        &acc.key,
        with(&|b| b["params"] = json!({"display_options": {"trace_duration": 0}})),
    )
    .await;
}

#[tokio::test]
async fn trackers_zones_places_features_and_the_quota_are_enforced() {
    let mut config = api::ApiConfig {
        geo_link_quota: 2,
        ..api::ApiConfig::default()
    };
    config.rate_limits = crate::server::generous_limits();
    let srv = TestServer::start_with(config).await;
    let acc = srv.account("refs@example.com").await;
    let other = srv.account("other-refs@example.com").await;
    let t = ids(&acc);

    // 217: another account's tracker, or one that does not exist.
    create(&srv, &acc.key, link(&[t[0], other.trackers[0].0]))
        .await
        .error(217, 400);
    create(&srv, &acc.key, link(&[999_999]))
        .await
        .error(217, 400);
    // 204: a zone or place that is not the account's.
    let foreign_zone = srv.circle_zone(other.user, 1.0, 1.0, 10).await;
    let mut body = link(&t);
    body["params"]["bounding_zone_ids"] = json!([foreign_zone.0]);
    body["params"]["bounding_mode"] = json!("inside");
    create(&srv, &acc.key, body).await.error(204, 404);
    let mut body = link(&t);
    body["params"]["place_ids"] = json!([424_242]);
    create(&srv, &acc.key, body).await.error(204, 404);
    // 236: a tracker's plan lacks `weblocator`.
    let bare = srv.tracker_without_features(&acc).await;
    create(&srv, &acc.key, link(&[t[0], bare.0]))
        .await
        .error(236, 402);

    // 268 beyond the quota (2 here); the refusals above stored nothing.
    create_ok(&srv, &acc.key, link(&t)).await;
    create_ok(&srv, &acc.key, link(&t)).await;
    create(&srv, &acc.key, link(&t)).await.error(268, 402);
    // The other account has its own quota.
    create_ok(&srv, &other.key, link(&ids(&other))).await;
}

#[tokio::test]
async fn sub_users_need_the_right_and_see_only_links_of_their_trackers() {
    let srv = TestServer::start().await;
    let acc = srv.account("scope@example.com").await;
    let t = ids(&acc);
    let master_link = create_ok(&srv, &acc.key, link(&t)).await;
    let reader = srv.subuser(&acc, "reader@example.com", vec![]).await;
    let writer = srv
        .subuser(
            &acc,
            "writer@example.com",
            vec![Right::WeblocatorSessionCreate],
        )
        .await;

    create(&srv, &reader, link(&t[..1])).await.error(13, 403);
    // The writer sees the first tracker only: the second is 217 to it.
    create(&srv, &writer, link(&t)).await.error(217, 400);
    let own = create_ok(&srv, &writer, link(&t[..1])).await;
    let value = read(&srv, &writer, own).await.ok()["value"].clone();
    assert_ne!(value["creator_id"], json!(acc.user.0));

    // The master's link shows a tracker the sub-users do not see: hidden, 201.
    read(&srv, &reader, master_link).await.error(201, 400);
    srv.post(
        "/v2/tracker/location/link/status/change",
        json!({"hash": writer, "id": master_link, "is_active": false}),
    )
    .await
    .error(201, 400);
    assert_eq!(list(&srv, &reader, json!({})).await, vec![own]);
    assert_eq!(
        list(&srv, &acc.key, json!({})).await,
        vec![master_link, own]
    );
    // Reading needs no right; changing does.
    read(&srv, &reader, own).await.ok();
    srv.post(
        "/v2/tracker/location/link/delete",
        json!({"hash": reader, "id": own}),
    )
    .await
    .error(13, 403);
    // `creator` conditions are the master's.
    let description = list_error(
        &srv,
        &writer,
        json!({"conditions": [{"type": "contains", "field": "creator", "value": "x"}]}),
    )
    .await;
    assert!(description.contains("conditions[0].field"), "{description}");
}

#[tokio::test]
async fn accounts_never_see_each_others_links() {
    let srv = TestServer::start().await;
    let acc = srv.account("mine@example.com").await;
    let other = srv.account("theirs@example.com").await;
    let id = create_ok(&srv, &acc.key, link(&ids(&acc))).await;
    read(&srv, &other.key, id).await.error(201, 400);
    let mut body = link(&ids(&other));
    body["hash"] = json!(other.key);
    body["id"] = json!(id);
    srv.post("/v2/tracker/location/link/update", body)
        .await
        .error(201, 400);
    srv.post(
        "/v2/tracker/location/link/delete",
        json!({"hash": other.key, "id": id}),
    )
    .await
    .error(201, 400);
    assert!(list(&srv, &other.key, json!({})).await.is_empty());
    read(&srv, &acc.key, id).await.ok();
}

#[tokio::test]
async fn lists_filter_match_conditions_sort_and_page() {
    let srv = TestServer::start().await;
    let acc = srv.account("lists@example.com").await;
    let t = ids(&acc);
    let body = |description: &str, trackers: &[(i64, Option<&str>)], lifetime: Value| {
        json!({
            "description": description,
            "lifetime": lifetime,
            "trackers": trackers.iter().map(|(id, alias)| json!({"tracker_id": id, "alias": alias}))
                .collect::<Vec<_>>(),
        })
    };
    // Now is 2024-06-01 08:00:00 UTC, 17:00 in the account's zone (Asia/Tokyo).
    let enabled = create_ok(
        &srv,
        &acc.key,
        body("Zeta run", &[(t[0], Some("Ärger"))], Value::Null),
    )
    .await;
    let disabled = create_ok(
        &srv,
        &acc.key,
        body("alpha run", &[(t[1], None)], Value::Null),
    )
    .await;
    srv.post(
        "/v2/tracker/location/link/status/change",
        json!({"hash": acc.key, "id": disabled, "is_active": false}),
    )
    .await
    .ok();
    let inactive = create_ok(
        &srv,
        &acc.key,
        body(
            "Mid 50%_run",
            &[(t[0], None), (t[1], Some("Van"))],
            json!({"from": "2024-06-02 00:00:00"}),
        ),
    )
    .await;
    let expired = create_ok(
        &srv,
        &acc.key,
        body(
            "beta",
            &[(t[1], Some("Bus"))],
            json!({"to": "2024-05-31 23:59:59"}),
        ),
    )
    .await;

    assert_eq!(
        list(&srv, &acc.key, json!({"sort": ["status=asc"]})).await,
        vec![enabled, inactive, expired, disabled]
    );
    assert_eq!(
        list(&srv, &acc.key, json!({"sort": ["status=desc", "id=desc"]})).await,
        vec![disabled, expired, inactive, enabled]
    );
    assert_eq!(
        list(&srv, &acc.key, json!({"sort": ["description=asc"]})).await,
        vec![disabled, expired, inactive, enabled]
    );
    assert_eq!(
        list(
            &srv,
            &acc.key,
            json!({"sort": ["expire_date=asc", "id=asc"]})
        )
        .await,
        vec![expired, enabled, disabled, inactive]
    );
    assert_eq!(
        list(&srv, &acc.key, json!({"sort": ["aliases=desc", "id=asc"]})).await,
        vec![enabled, inactive, expired, disabled]
    );
    assert_eq!(
        list(&srv, &acc.key, json!({"sort": ["trackers=desc", "id=asc"]})).await,
        vec![disabled, expired, inactive, enabled]
    );
    assert_eq!(
        list(&srv, &acc.key, json!({"limit": 2, "offset": 1})).await,
        vec![disabled, inactive]
    );

    // The filter: any member, case-insensitive, `%` and `_` as themselves.
    assert_eq!(
        list(&srv, &acc.key, json!({"filter": "RUN"})).await,
        vec![enabled, disabled, inactive]
    );
    assert_eq!(
        list(&srv, &acc.key, json!({"filter": "50%_"})).await,
        vec![inactive]
    );
    assert_eq!(
        list(&srv, &acc.key, json!({"filter": "ärg"})).await,
        vec![enabled]
    );
    assert_eq!(
        list(&srv, &acc.key, json!({"filter": "truck 1"})).await,
        vec![disabled, inactive, expired]
    );
    assert_eq!(list(&srv, &acc.key, json!({"filter": "  "})).await.len(), 4);

    // Conditions, joined by AND with the filter.
    let conditions = |c: Value| json!({"conditions": c});
    assert_eq!(
        list(
            &srv,
            &acc.key,
            conditions(json!([{"type": "eq", "field": "trackers", "value": t[0]}]))
        )
        .await,
        vec![enabled, inactive]
    );
    assert_eq!(
        list(
            &srv,
            &acc.key,
            conditions(json!([{"type": "in", "field": "aliases", "value": ["van", "BUS"]}]))
        )
        .await,
        vec![inactive, expired]
    );
    assert_eq!(
        list(
            &srv,
            &acc.key,
            conditions(json!([{"type": "not", "condition":
            {"type": "contains", "field": "trackers", "value": "truck 0"}}]))
        )
        .await,
        vec![disabled, expired]
    );
    assert_eq!(
        list(
            &srv,
            &acc.key,
            conditions(json!([{"type": "or", "conditions": [
            {"type": "contains", "field": "description", "value": "BETA"},
            {"type": "in", "field": "description", "value": ["zeta run"]}]}]))
        )
        .await,
        vec![enabled, expired]
    );
    assert_eq!(
        list(
            &srv,
            &acc.key,
            json!({"filter": "run", "conditions": [
            {"type": "eq", "field": "creator", "value": acc.user.0},
            {"type": "contains", "field": "trackers", "value": "truck 1"}]})
        )
        .await,
        vec![disabled, inactive]
    );
    assert_eq!(
        list(
            &srv,
            &acc.key,
            conditions(json!([{"type": "period", "field": "expire_date",
            "value": {"from": "2024-05-01 00:00:00", "to": "2024-06-01 00:00:00"}}]))
        )
        .await,
        vec![expired]
    );
    assert_eq!(
        list(
            &srv,
            &acc.key,
            conditions(json!([{"type": "period", "field": "create_date",
            "value": {"from": "2024-06-01 17:00:00", "to": "2024-06-01 17:00:00"}}]))
        )
        .await
        .len(),
        4
    );

    // Malformed conditions and their limits: 7 naming the place.
    let leaf = json!({"type": "contains", "field": "description", "value": "a"});
    let group = |n: usize| json!({"type": "and", "conditions": vec![leaf.clone(); n]});
    for (c, named) in [
        (json!([group(1)]), "conditions[0].conditions"),
        (json!([group(61)]), "conditions[0].conditions"),
        (json!([group(60), group(11)]), "conditions"),
        (
            json!([{"type": "contains", "field": "colour", "value": "a"}]),
            "conditions[0].field",
        ),
        (
            json!([{"type": "contains", "field": "description", "value": " "}]),
            "conditions[0].value",
        ),
        (
            json!([{"type": "contains", "field": "description", "value": "a".repeat(761)}]),
            "conditions[0].value",
        ),
        (
            json!([{"type": "eq", "field": "description", "value": 1}]),
            "conditions[0].type",
        ),
        (
            json!([{"type": "eq", "field": "trackers", "value": 1.5}]),
            "conditions[0].value",
        ),
        (
            json!([{"type": "in", "field": "trackers", "value": ["a"]}]),
            "conditions[0].value[0]",
        ),
        (
            json!([{"type": "period", "field": "create_date", "value": {"from": "x", "to": "y"}}]),
            "conditions[0].value.from",
        ),
        (json!([{"type": "maybe"}]), "conditions"),
        (
            json!([{"type": "or", "conditions": [leaf, {"type": "not", "condition": {"type": "eq", "field": "creator", "value": "me"}}]}]),
            "conditions",
        ),
    ] {
        let description = list_error(&srv, &acc.key, json!({"conditions": c})).await;
        assert!(
            description.contains(named),
            "{named} not in {description:?}"
        );
    }
    // 72 in all is taken: a group of 60 and one of 10 with their two groups.
    assert_eq!(
        list(
            &srv,
            &acc.key,
            json!({"conditions": [group(60), group(10)]})
        )
        .await,
        vec![enabled, disabled, expired]
    );
    list_error(&srv, &acc.key, json!({"sort": ["colour=asc"]})).await;
    list_error(&srv, &acc.key, json!({"sort": ["status=up"]})).await;
    let mut body = json!({"limit": 10_001});
    body["hash"] = json!(acc.key);
    srv.post("/v2/tracker/location/link/list", body)
        .await
        .error(212, 400);
}
