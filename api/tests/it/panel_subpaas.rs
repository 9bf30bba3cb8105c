//! `/v2/panel/subpaas/*` (spec document 2, clarification 51): sub-dealers
//! made in `INITIAL_BLOCK`, every transition of the block state table, the
//! PaaS/plan preconditions (13), the counts, the limits at their edges,
//! the password ending sessions, and isolation between dealers (parent,
//! sub-dealer, stranger).

use platform::{
    BlockStatus, ContractType, NewDealer, NewPaasTariff, NewTracker, ServicePrices, StorePeriod,
};
use schemas::DealerId;
use serde_json::{Value, json};

use crate::TestServer;

fn new_subdealer(title: &str) -> Value {
    json!({
        "password": "sub-pass-1",
        "title": title,
        "email": "Office@Sub.Example",
        "jur_name": "Sub Telematics LLP",
        "jur_country": "Kazakhstan",
        "link_monitoring": "Track.Sub.Example"
    })
}

/// A PaaS dealer with every permission and its panel session.
async fn parent(srv: &TestServer) -> (DealerId, String) {
    let (dealer, password) = srv.dealer(None).await;
    (dealer, srv.panel_session(dealer, &password).await)
}

async fn create(srv: &TestServer, hash: &str, title: &str) -> i64 {
    let mut params = new_subdealer(title);
    params["hash"] = json!(hash);
    srv.post("/v2/panel/subpaas/create", params).await.ok()["id"]
        .as_i64()
        .unwrap()
}

async fn update(srv: &TestServer, hash: &str, id: i64, change: Value) -> crate::Answer {
    let mut params = change;
    params["hash"] = json!(hash);
    params["subpaas_id"] = json!(id);
    srv.post("/v2/panel/subpaas/update", params).await
}

async fn block_type(srv: &TestServer, hash: &str, id: i64) -> Value {
    srv.post(
        "/v2/panel/subpaas/read",
        json!({"hash": hash, "subpaas_id": id}),
    )
    .await
    .ok()["value"]["block_type"]
        .clone()
}

#[tokio::test]
async fn a_sub_dealer_starts_in_initial_block_and_logs_in_once_the_operator_lifts_it() {
    let srv = TestServer::start().await;
    let (parent_id, hash) = parent(&srv).await;
    let id = create(&srv, &hash, " Sub One ").await;
    let read = srv
        .post(
            "/v2/panel/subpaas/read",
            json!({"hash": hash, "subpaas_id": id}),
        )
        .await;
    assert_eq!(
        read.ok()["value"],
        json!({"subpaas_id": id, "block_type": "INITIAL_BLOCK", "title": "Sub One", "jur_name": "Sub Telematics LLP",
               "email": "office@sub.example", "jur_country": "Kazakhstan", "link_monitoring": "track.sub.example",
               "contact_fio": "", "contact_post": "", "contact_phone": ""})
    );
    // No panel login in INITIAL_BLOCK (11); the operator lifts it.
    srv.post(
        "/v2/panel/account/auth",
        json!({"login": id.to_string(), "password": "sub-pass-1"}),
    )
    .await
    .error(11, 403);
    srv.store
        .set_dealer_block_status(DealerId(id), BlockStatus::NotBlocked)
        .await
        .unwrap();
    let own = srv.panel_session(DealerId(id), "sub-pass-1").await;
    let info = srv
        .post("/v2/panel/dealer/get_info", json!({"hash": own}))
        .await;
    assert_eq!(info.ok()["parent_dealer_id"], parent_id.0);
    assert_eq!(info.ok()["contract_type"], "PAAS");
    let tariff = &info.ok()["tariff"];
    assert_eq!(
        (&tariff["id"], &tariff["name"], &tariff["store_period"]),
        (&json!(1), &json!("PaaS Standard"), &json!("P1Y"))
    );
    // It is a dealer of its own: its plans and sub-dealers are its own.
    assert_eq!(
        srv.post("/v2/panel/subpaas/list", json!({"hash": own}))
            .await
            .ok()["count"],
        0
    );
}

#[tokio::test]
async fn every_transition_of_the_block_state_table() {
    let srv = TestServer::start().await;
    let (_, hash) = parent(&srv).await;
    let id = create(&srv, &hash, "Sub").await;
    // INITIAL_BLOCK: only INITIAL_BLOCK itself (other members change).
    for other in ["NOT_BLOCKED", "BLOCK_LOGIN", "CLIENTS_BLOCKED"] {
        update(&srv, &hash, id, json!({"block_type": other}))
            .await
            .error(13, 403);
    }
    update(
        &srv,
        &hash,
        id,
        json!({"block_type": "INITIAL_BLOCK", "contact_fio": "Aigerim"}),
    )
    .await
    .ok();
    assert_eq!(block_type(&srv, &hash, id).await, "INITIAL_BLOCK");

    srv.store
        .set_dealer_block_status(DealerId(id), BlockStatus::NotBlocked)
        .await
        .unwrap();
    // Among NOT_BLOCKED, BLOCK_LOGIN, CLIENTS_BLOCKED: every move.
    for (from, to) in [
        ("NOT_BLOCKED", "BLOCK_LOGIN"),
        ("BLOCK_LOGIN", "CLIENTS_BLOCKED"),
        ("CLIENTS_BLOCKED", "NOT_BLOCKED"),
        ("NOT_BLOCKED", "CLIENTS_BLOCKED"),
        ("CLIENTS_BLOCKED", "BLOCK_LOGIN"),
        ("BLOCK_LOGIN", "NOT_BLOCKED"),
        ("NOT_BLOCKED", "NOT_BLOCKED"),
    ] {
        assert_eq!(block_type(&srv, &hash, id).await, from);
        // Back to INITIAL_BLOCK, or DELETED: never.
        update(&srv, &hash, id, json!({"block_type": "INITIAL_BLOCK"}))
            .await
            .error(13, 403);
        update(&srv, &hash, id, json!({"block_type": "DELETED"}))
            .await
            .error(13, 403);
        update(&srv, &hash, id, json!({"block_type": to}))
            .await
            .ok();
        assert_eq!(block_type(&srv, &hash, id).await, to);
    }
    update(&srv, &hash, id, json!({"block_type": "FROZEN"}))
        .await
        .error(7, 400);
    // A deleted account refuses every update, whatever it asks.
    srv.store.mark_dealer_deleted(DealerId(id)).await.unwrap();
    assert_eq!(block_type(&srv, &hash, id).await, "DELETED");
    for change in [
        json!({"block_type": "NOT_BLOCKED"}),
        json!({"title": "Alive"}),
        json!({}),
    ] {
        update(&srv, &hash, id, change).await.error(13, 403);
    }
    let listed = srv
        .post("/v2/panel/subpaas/list", json!({"hash": hash}))
        .await;
    assert_eq!(listed.ok()["list"][0]["block_type"], "DELETED");
}

#[tokio::test]
async fn only_paas_dealers_not_blocked_on_a_plan_allowing_it_have_sub_dealers() {
    let srv = TestServer::start().await;
    let (dealer, hash) = parent(&srv).await;
    let tariff = srv
        .store
        .create_paas_tariff(NewPaasTariff {
            name: "No resale".into(),
            currency: "EUR".into(),
            license_price: Some(2.0),
            min_license_pay: None,
            vat: true,
            trial: true,
            premium_gis: false,
            service_prices: ServicePrices::default(),
            store_period: StorePeriod::Months(6),
            allows_subpaas: false,
        })
        .await
        .unwrap();
    srv.store
        .set_dealer_paas_tariff(dealer, tariff)
        .await
        .unwrap();
    let info = srv
        .post("/v2/panel/dealer/get_info", json!({"hash": hash}))
        .await;
    assert_eq!(info.ok()["tariff_id"], tariff);
    assert_eq!(info.ok()["demo_tariff"], true);
    assert_eq!(info.ok()["seller_currency"], "EUR");
    assert_eq!(info.ok()["tariff"]["store_period"], "P6M");
    for path in ["create", "list", "read", "update"] {
        let mut params = new_subdealer("X");
        params["hash"] = json!(hash);
        params["subpaas_id"] = json!(1);
        let description = srv
            .post(&format!("/v2/panel/subpaas/{path}"), params)
            .await
            .error(13, 403)
            .to_owned();
        assert!(
            description.contains("does not allow sub-dealers"),
            "{path}: {description}"
        );
    }
    let partner = srv
        .store
        .create_dealer(NewDealer {
            id: None,
            title: "Partner".into(),
            panel_password: "partner-pass-1".into(),
            contract_type: ContractType::Partner,
            permissions: None,
            default_user_time_zone: "UTC".into(),
        })
        .await
        .unwrap();
    let partner_hash = srv.panel_session(partner, "partner-pass-1").await;
    let description = srv
        .post("/v2/panel/subpaas/list", json!({"hash": partner_hash}))
        .await
        .error(13, 403)
        .to_owned();
    assert!(description.contains("PaaS"), "{description}");
}

#[tokio::test]
async fn members_are_checked_at_their_edges() {
    let srv = TestServer::start().await;
    let (_, hash) = parent(&srv).await;
    for (member, value, ok) in [
        ("title", json!(""), false),
        ("title", json!("t".repeat(50)), true),
        ("title", json!("t".repeat(51)), false),
        ("jur_name", json!("j".repeat(100)), true),
        ("jur_name", json!("j".repeat(101)), false),
        ("password", json!("12345"), false),
        ("password", json!("123456"), true),
        ("password", json!("p".repeat(20)), true),
        ("password", json!("p".repeat(21)), false),
        ("email", json!("not-an-email"), false),
        ("link_monitoring", json!("localhost"), false),
        ("link_monitoring", json!("bad_domain.com"), false),
    ] {
        let mut params = new_subdealer("Edge");
        params[member] = value;
        params["hash"] = json!(hash);
        let answer = srv.post("/v2/panel/subpaas/create", params).await;
        if ok {
            answer.ok();
        } else {
            let description = answer.error(7, 400).to_owned();
            assert!(description.contains(member), "{member}: {description}");
        }
    }
    let id = create(&srv, &hash, "Sub").await;
    for (member, value) in [
        ("contact_post", "p".repeat(51)),
        ("contact_fio", "f".repeat(101)),
        ("title", String::new()),
    ] {
        let description = update(&srv, &hash, id, json!({member: value}))
            .await
            .error(7, 400)
            .to_owned();
        assert!(description.contains(member), "{description}");
    }
}

#[tokio::test]
async fn lists_count_users_and_trackers_and_are_ordered_and_paged() {
    let srv = TestServer::start().await;
    let (_, hash) = parent(&srv).await;
    let beta = create(&srv, &hash, "Beta").await;
    let alpha = create(&srv, &hash, "Alpha").await;
    // Beta gets two users (one deactivated) and three trackers (one blocked).
    let u1 = srv.user(DealerId(beta), "beta-1@example.com").await;
    let u2 = srv.user(DealerId(beta), "beta-2@example.com").await;
    srv.store.set_user_activated(u2, false).await.unwrap();
    for (n, user) in [(1, u1), (2, u1), (3, u2)] {
        let tracker = srv
            .store
            .create_tracker(NewTracker {
                user_id: user,
                label: format!("T{n}"),
                device_id: format!("35100000000000{n}"),
                model: String::new(),
                plan_id: None,
                store_period: None,
                time_zone: None,
            })
            .await
            .unwrap();
        if n == 3 {
            srv.store.set_tracker_blocked(tracker, true).await.unwrap();
        }
    }
    let list = srv
        .post("/v2/panel/subpaas/list", json!({"hash": hash}))
        .await;
    let body = list.ok();
    assert_eq!(body["count"], 2);
    let first = &body["list"][0];
    assert_eq!(
        (
            &first["subpaas_id"],
            &first["login"],
            &first["users_count"],
            &first["active_users_count"],
            &first["trackers_count"],
            &first["active_trackers_count"]
        ),
        (
            &json!(beta),
            &json!(beta.to_string()),
            &json!(2),
            &json!(1),
            &json!(3),
            &json!(2)
        )
    );
    assert!(
        first["creation_date"]
            .as_str()
            .unwrap()
            .starts_with("2024-06-01 ")
    );
    let titles = |v: &Value| -> Vec<String> {
        v["list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["title"].as_str().unwrap().to_owned())
            .collect()
    };
    let by_title = srv
        .post(
            "/v2/panel/subpaas/list",
            json!({"hash": hash, "order_by": "title"}),
        )
        .await;
    assert_eq!(titles(by_title.ok()), ["Alpha", "Beta"]);
    let paged = srv
        .post("/v2/panel/subpaas/list", json!({"hash": hash, "order_by": "subpaas_id", "ascending": false, "limit": 1, "offset": 1}))
        .await;
    assert_eq!(paged.ok()["list"][0]["subpaas_id"], beta.min(alpha));
    assert_eq!(paged.ok()["count"], 2);
    srv.post(
        "/v2/panel/subpaas/list",
        json!({"hash": hash, "order_by": "users_count"}),
    )
    .await
    .error(7, 400);
}

#[tokio::test]
async fn dealers_never_see_or_change_each_others_sub_dealers() {
    let srv = TestServer::start().await;
    let (_, hash) = parent(&srv).await;
    let id = create(&srv, &hash, "Mine").await;
    let (_, stranger) = parent(&srv).await;
    srv.post(
        "/v2/panel/subpaas/read",
        json!({"hash": stranger, "subpaas_id": id}),
    )
    .await
    .error(201, 400);
    update(&srv, &stranger, id, json!({"title": "Taken"}))
        .await
        .error(201, 400);
    assert_eq!(
        srv.post("/v2/panel/subpaas/list", json!({"hash": stranger}))
            .await
            .ok()["count"],
        0
    );
    // The sub-dealer cannot reach its parent's other sub-dealers either.
    let sibling = create(&srv, &hash, "Sibling").await;
    srv.store
        .set_dealer_block_status(DealerId(id), BlockStatus::NotBlocked)
        .await
        .unwrap();
    let own = srv.panel_session(DealerId(id), "sub-pass-1").await;
    srv.post(
        "/v2/panel/subpaas/read",
        json!({"hash": own, "subpaas_id": sibling}),
    )
    .await
    .error(201, 400);
    // A new password ends the sub-dealer's panel sessions.
    update(&srv, &hash, id, json!({"password": "new-pass-2"}))
        .await
        .ok();
    srv.post("/v2/panel/subpaas/list", json!({"hash": own}))
        .await
        .error(4, 400);
    srv.panel_session(DealerId(id), "new-pass-2").await;
    assert_eq!(
        srv.post(
            "/v2/panel/subpaas/read",
            json!({"hash": hash, "subpaas_id": id})
        )
        .await
        .ok()["value"]["title"],
        "Mine"
    );
}
