//! `/v2/panel/user/*` (spec document 2, clarification 48): users read back
//! as stored with their read-only members, discount and default plan; 206;
//! limits at their edges; `users: global` and sub-dealers; passwords
//! ending sessions; sessions for support; `corrupt` with 252; lists;
//! permissions; isolation between dealers.

use platform::{BlockStatus, NewTracker, Permission};
use schemas::{DealerId, TrackerId, UserId};
use serde_json::{Value, json};

use crate::{Account, TestServer};

fn customer(login: &str) -> Value {
    json!({
        "activated": true,
        "login": login,
        "first_name": "Dana",
        "middle_name": "",
        "last_name": "Seitkali",
        "legal_name": "Fleet Ops LLP",
        "legal_type": "legal_entity",
        "phone": "77011234567",
        "post_country": "Kazakhstan",
        "post_index": "050000",
        "post_region": "Almaty",
        "post_city": "Almaty",
        "post_street_address": "Abay Ave 52",
        "registered_country": "Kazakhstan",
        "registered_index": "050000",
        "registered_region": "Almaty",
        "registered_city": "Almaty",
        "registered_street_address": "Abay Ave 52",
        "state_reg_num": "123456789012345",
        "tin": "990140000385",
        "okpo_code": "12345678",
        "iec": "77-01"
    })
}

async fn panel(srv: &TestServer, acc: &Account) -> String {
    srv.panel_session(acc.dealer, &acc.dealer_password).await
}

async fn create(srv: &TestServer, hash: &str, params: Value) -> crate::Answer {
    let mut params = params;
    params["hash"] = json!(hash);
    srv.post("/v2/panel/user/create", params).await
}

async fn read(srv: &TestServer, hash: &str, id: i64) -> crate::Answer {
    srv.post("/v2/panel/user/read", json!({"hash": hash, "user_id": id}))
        .await
}

#[tokio::test]
async fn a_user_reads_back_as_stored_and_can_log_in() {
    let srv = TestServer::start().await;
    let acc = srv.account("panel-users@example.com").await;
    let hash = panel(&srv, &acc).await;
    let discount = json!({"value": 12.5, "min_trackers": 3, "end_date": "2025-01-01 00:00:00", "strategy": "sum_with_progressive"});
    let answer = create(
        &srv,
        &hash,
        json!({"user": customer(" Ops@Customer.Example "), "password": "secret-1", "discount": discount, "comment": " VIP "}),
    )
    .await;
    let id = answer.ok()["id"].as_i64().unwrap();
    let answer = read(&srv, &hash, id).await;
    let mut expected = customer("ops@customer.example");
    expected["id"] = json!(id);
    expected["dealer_id"] = json!(acc.dealer.0);
    expected["verified"] = json!(true);
    expected["balance"] = json!(0.0);
    expected["bonus"] = json!(0.0);
    expected["creation_date"] = json!("2024-06-01 08:00:00");
    expected["trackers_count"] = json!(0);
    expected["comment"] = json!("VIP");
    assert_eq!(answer.ok()["value"], expected);
    assert_eq!(answer.ok()["discount"], discount);
    assert_eq!(answer.ok()["default_tariff_id"], Value::Null);
    // The dealer's default user zone (UTC here); the user logs in with its password.
    let session = srv.login("ops@customer.example", "secret-1").await;
    srv.post("/v2/vehicle/list", json!({"hash": session}))
        .await
        .ok();

    // A deactivated user is not verified unless told so; and the login is taken now.
    let mut inactive = customer("inactive@customer.example");
    inactive["activated"] = json!(false);
    let id = create(
        &srv,
        &hash,
        json!({"user": inactive, "password": "secret-1"}),
    )
    .await
    .ok()["id"]
        .as_i64()
        .unwrap();
    assert_eq!(read(&srv, &hash, id).await.ok()["value"]["verified"], false);
    assert_eq!(read(&srv, &hash, id).await.ok()["discount"]["value"], 0.0);
    create(
        &srv,
        &hash,
        json!({"user": customer("OPS@customer.example"), "password": "secret-1"}),
    )
    .await
    .error(206, 400);
}

#[tokio::test]
async fn members_and_parameters_are_checked_at_their_edges() {
    let srv = TestServer::start().await;
    let acc = srv.account("panel-users-edges@example.com").await;
    let hash = panel(&srv, &acc).await;
    let mut n = 0;
    let mut attempt = |params: Value| {
        n += 1;
        let mut params = params;
        if params["user"].is_null() {
            params["user"] = customer(&format!("edge{n}@customer.example"));
        }
        if params["password"].is_null() {
            params["password"] = json!("secret-1");
        }
        params
    };
    for (params, ok, field) in [
        (json!({"password": "12345"}), false, "password"),
        (json!({"password": "123456"}), true, ""),
        (json!({"password": "p".repeat(20)}), true, ""),
        (json!({"password": "p".repeat(21)}), false, "password"),
        (json!({"comment": "c".repeat(255)}), true, ""),
        (json!({"comment": "c".repeat(256)}), false, "comment"),
        (json!({"discount": {"value": 100}}), true, ""),
        (
            json!({"discount": {"value": 100.5}}),
            false,
            "discount.value",
        ),
        (
            json!({"discount": {"value": 5, "end_date": "tomorrow"}}),
            false,
            "discount.end_date",
        ),
        (
            json!({"discount": {"value": 5, "strategy": "max"}}),
            false,
            "discount.strategy",
        ),
        (json!({"time_zone": "Mars/Olympus"}), false, "time_zone"),
        (json!({"default_tariff_id": 999_999}), false, ""),
    ] {
        let answer = create(&srv, &hash, attempt(params.clone())).await;
        if ok {
            answer.ok();
        } else if field.is_empty() {
            answer.error(201, 400);
        } else {
            let description = answer.error(7, 400).to_owned();
            assert!(description.contains(field), "{params}: {description}");
        }
    }
    for (member, value) in [
        ("phone", json!("+77011234567")),
        ("login", json!("not-an-email")),
        ("state_reg_num", json!("1234567890123456")),
    ] {
        let mut user = customer("member@customer.example");
        user[member] = value;
        let description = create(&srv, &hash, json!({"user": user, "password": "secret-1"}))
            .await
            .error(7, 400)
            .to_owned();
        assert!(
            description.contains(&format!("user.{member}")),
            "{description}"
        );
    }
    // An individual has no legal name, IEC or OKPO code.
    for member in ["legal_name", "iec", "okpo_code"] {
        let mut user = customer("individual@customer.example");
        user["legal_type"] = json!("individual");
        for other in ["legal_name", "iec", "okpo_code"] {
            if other != member {
                user[other] = if other == "legal_name" {
                    json!("")
                } else {
                    Value::Null
                };
            }
        }
        let description = create(&srv, &hash, json!({"user": user, "password": "secret-1"}))
            .await
            .error(7, 400)
            .to_owned();
        assert!(
            description.contains(&format!("user.{member}")),
            "{description}"
        );
    }
}

#[tokio::test]
async fn update_keeps_the_legal_type_and_change_password_ends_sessions() {
    let srv = TestServer::start().await;
    let acc = srv.account("panel-users-update@example.com").await;
    let hash = panel(&srv, &acc).await;
    let id = create(
        &srv,
        &hash,
        json!({"user": customer("up@customer.example"), "password": "secret-1"}),
    )
    .await
    .ok()["id"]
        .as_i64()
        .unwrap();
    create(
        &srv,
        &hash,
        json!({"user": customer("taken@customer.example"), "password": "secret-1"}),
    )
    .await
    .ok();
    let session = srv.login("up@customer.example", "secret-1").await;

    let mut changed = customer("Renamed@customer.example");
    changed["id"] = json!(id);
    changed["legal_type"] = json!("individual");
    changed["first_name"] = json!("Aigerim");
    srv.post(
        "/v2/panel/user/update",
        json!({"hash": hash, "user": changed, "discount": {"value": 5}, "comment": "moved"}),
    )
    .await
    .ok();
    let value = read(&srv, &hash, id).await.ok().clone();
    assert_eq!(
        (
            &value["value"]["login"],
            &value["value"]["legal_type"],
            &value["value"]["first_name"],
            &value["value"]["comment"],
            &value["discount"]["value"]
        ),
        (
            &json!("renamed@customer.example"),
            &json!("legal_entity"),
            &json!("Aigerim"),
            &json!("moved"),
            &json!(5.0)
        )
    );
    let mut clash = customer("taken@customer.example");
    clash["id"] = json!(id);
    srv.post(
        "/v2/panel/user/update",
        json!({"hash": hash, "user": clash}),
    )
    .await
    .error(206, 400);
    let mut unknown = customer("x@customer.example");
    unknown["id"] = json!(999_999);
    srv.post(
        "/v2/panel/user/update",
        json!({"hash": hash, "user": unknown}),
    )
    .await
    .error(201, 400);

    for (password, ok) in [("12345", false), ("new-pass", true)] {
        let answer = srv
            .post(
                "/v2/panel/user/change_password",
                json!({"hash": hash, "user_id": id, "password": password}),
            )
            .await;
        if ok {
            answer.ok();
        } else {
            answer.error(7, 400);
        }
    }
    srv.post("/v2/vehicle/list", json!({"hash": session}))
        .await
        .error(4, 400);
    srv.login("renamed@customer.example", "new-pass").await;
    // Deactivated: its sessions are refused from their next call.
    let session = srv.login("renamed@customer.example", "new-pass").await;
    let mut off = customer("renamed@customer.example");
    off["id"] = json!(id);
    off["activated"] = json!(false);
    srv.post("/v2/panel/user/update", json!({"hash": hash, "user": off}))
        .await
        .ok();
    srv.post("/v2/vehicle/list", json!({"hash": session}))
        .await
        .error(103, 400);
}

#[tokio::test]
async fn support_sessions_act_as_the_user() {
    let srv = TestServer::start().await;
    let acc = srv.account("panel-users-support@example.com").await;
    let hash = panel(&srv, &acc).await;
    let answer = srv
        .post(
            "/v2/panel/user/session/create",
            json!({"hash": hash, "user_id": acc.user.0}),
        )
        .await;
    let session = answer.hash();
    let keys = srv.post("/v2/api/key/list", json!({"hash": session})).await;
    assert!(keys.ok()["list"].as_array().is_some());
    srv.store.set_user_activated(acc.user, false).await.unwrap();
    srv.post(
        "/v2/panel/user/session/create",
        json!({"hash": hash, "user_id": acc.user.0}),
    )
    .await
    .error(103, 400);
    let (no_perm, password) = srv.dealer(Some(vec![Permission::UsersRead])).await;
    let limited = srv.panel_session(no_perm, &password).await;
    srv.post(
        "/v2/panel/user/session/create",
        json!({"hash": limited, "user_id": acc.user.0}),
    )
    .await
    .error(13, 403);
}

async fn tracker(srv: &TestServer, user: UserId, n: u32) -> TrackerId {
    srv.store
        .create_tracker(NewTracker {
            user_id: user,
            label: format!("Truck {n}"),
            device_id: format!("35200000000{n:04}"),
            model: String::new(),
            plan_id: None,
            store_period: None,
            time_zone: None,
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn corrupt_removes_the_user_its_sub_users_and_trackers() {
    let srv = TestServer::start().await;
    let acc = srv.account("panel-users-corrupt@example.com").await;
    let hash = panel(&srv, &acc).await;
    let sub = srv.subuser(&acc, "corrupt-sub@example.com", vec![]).await;
    let n_before = srv
        .post("/v2/panel/user/list", json!({"hash": hash}))
        .await
        .ok()["count"]
        .clone();
    let description = srv
        .post(
            "/v2/panel/user/corrupt",
            json!({"hash": hash, "user_id": acc.user.0, "login": "someone@else.example"}),
        )
        .await
        .error(7, 400)
        .to_owned();
    assert!(description.contains("login"), "{description}");
    srv.post(
        "/v2/panel/user/corrupt",
        json!({"hash": hash, "user_id": acc.user.0, "login": acc.login.to_uppercase()}),
    )
    .await
    .ok();
    // Gone: the user, its session, its sub-user's session, its key; its trackers' ids are free.
    read(&srv, &hash, acc.user.0).await.error(201, 400);
    srv.post("/v2/vehicle/list", json!({"hash": acc.session}))
        .await
        .error(4, 400);
    srv.post("/v2/vehicle/list", json!({"hash": sub}))
        .await
        .error(4, 400);
    srv.post("/v2/api/key/list", json!({"hash": acc.key}))
        .await
        .error(4, 400);
    let count = srv
        .post("/v2/panel/user/list", json!({"hash": hash}))
        .await
        .ok()["count"]
        .clone();
    assert_eq!(count.as_i64().unwrap(), n_before.as_i64().unwrap() - 1);
    // The count without a filter is kept by triggers (migration 0017): it
    // is the number of users a filter matching every login finds.
    let counted = srv
        .post("/v2/panel/user/list", json!({"hash": hash, "filter": "@"}))
        .await
        .ok()["count"]
        .clone();
    assert_eq!(count, counted);
    srv.post(
        "/v2/panel/user/corrupt",
        json!({"hash": hash, "user_id": acc.user.0, "login": acc.login}),
    )
    .await
    .error(201, 400);

    // 252: a tracker of the user is already corrupted.
    let other = srv.user(acc.dealer, "corrupt-2@example.com").await;
    let t = tracker(&srv, other, 1).await;
    tracker(&srv, other, 2).await;
    srv.store.corrupt_tracker(t).await.unwrap();
    srv.post(
        "/v2/panel/user/corrupt",
        json!({"hash": hash, "user_id": other.0, "login": "corrupt-2@example.com"}),
    )
    .await
    .error(252, 400);
}

#[tokio::test]
async fn lists_are_filtered_ordered_paged_and_scoped() {
    let srv = TestServer::start().await;
    let acc = srv.account("panel-list@example.com").await;
    let hash = panel(&srv, &acc).await;
    for (login, first, legal) in [
        ("b@list.example", "Борис", "legal_entity"),
        ("c@list.example", "Carol", "individual"),
        ("a@list.example", "Anna", "sole_trader"),
    ] {
        let mut user = customer(login);
        user["first_name"] = json!(first);
        user["legal_type"] = json!(legal);
        if legal != "legal_entity" {
            user["legal_name"] = json!("");
            user["iec"] = Value::Null;
        }
        if legal == "individual" {
            user["okpo_code"] = Value::Null;
        }
        create(&srv, &hash, json!({"user": user, "password": "secret-1"}))
            .await
            .ok();
    }
    let list = |params: Value| {
        let srv = &srv;
        let hash = hash.clone();
        async move {
            let mut params = params;
            params["hash"] = json!(hash);
            let answer = srv.post("/v2/panel/user/list", params).await;
            let body = answer.ok().clone();
            let logins: Vec<String> = body["list"]
                .as_array()
                .unwrap()
                .iter()
                .map(|u| u["login"].as_str().unwrap().to_owned())
                .collect();
            (logins, body["count"].as_i64().unwrap())
        }
    };
    let (logins, count) = list(json!({})).await;
    assert_eq!(count, 4, "{logins:?}");
    assert_eq!(logins[0], acc.login, "by id");
    assert_eq!(
        list(json!({"order_by": "login", "limit": 2})).await.0,
        ["a@list.example", "b@list.example"]
    );
    assert_eq!(
        list(json!({"order_by": "login", "ascending": false, "offset": 3}))
            .await
            .0,
        ["a@list.example"]
    );
    // Descending is the ascending order reversed, ties (by id) included:
    // every user has the same balance.
    let (mut by_id, _) = list(json!({})).await;
    by_id.reverse();
    assert_eq!(list(json!({"ascending": false})).await.0, by_id, "by id");
    for property in ["balance", "login", "creation_date"] {
        let (mut up, _) = list(json!({"order_by": property})).await;
        let (down, _) = list(json!({"order_by": property, "ascending": false})).await;
        up.reverse();
        assert_eq!(down, up, "{property}");
    }
    assert_eq!(
        list(json!({"filter": "БОР"})).await,
        (vec!["b@list.example".to_owned()], 1)
    );
    assert_eq!(
        list(json!({"filter": "list.example", "limit": 1})).await.1,
        3
    );
    assert_eq!(list(json!({"filter": "7701123"})).await.1, 3, "phone");
    srv.post(
        "/v2/panel/user/list",
        json!({"hash": hash, "order_by": "trackers"}),
    )
    .await
    .error(7, 400);

    // Another dealer sees none of them and touches none of them.
    let other = srv.account("panel-list-other@example.com").await;
    let theirs = panel(&srv, &other).await;
    let (their_logins, _) = {
        let answer = srv
            .post("/v2/panel/user/list", json!({"hash": theirs}))
            .await;
        let body = answer.ok().clone();
        let logins: Vec<String> = body["list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["login"].as_str().unwrap().to_owned())
            .collect();
        (logins, ())
    };
    assert_eq!(their_logins, std::slice::from_ref(&other.login));
    read(&srv, &theirs, acc.user.0).await.error(201, 400);
    for (path, params) in [
        (
            "change_password",
            json!({"user_id": acc.user.0, "password": "hijack-1"}),
        ),
        ("session/create", json!({"user_id": acc.user.0})),
        (
            "corrupt",
            json!({"user_id": acc.user.0, "login": acc.login}),
        ),
    ] {
        let mut params = params;
        params["hash"] = json!(theirs);
        srv.post(&format!("/v2/panel/user/{path}"), params)
            .await
            .error(201, 400);
    }
    srv.login(&acc.login, &acc.password).await;
}

#[tokio::test]
async fn users_global_reaches_sub_dealers_and_nothing_else() {
    let srv = TestServer::start().await;
    let (dealer, password) = srv.dealer(None).await;
    let hash = srv.panel_session(dealer, &password).await;
    let sub = srv
        .post(
            "/v2/panel/subpaas/create",
            json!({"hash": hash, "password": "sub-pass-1", "title": "Sub", "email": "s@sub.example", "link_monitoring": "sub.example"}),
        )
        .await
        .ok()["id"]
        .as_i64()
        .unwrap();
    let mut user = customer("global@customer.example");
    user["dealer_id"] = json!(sub);
    let id = create(
        &srv,
        &hash,
        json!({"user": user.clone(), "password": "secret-1"}),
    )
    .await
    .ok()["id"]
        .as_i64()
        .unwrap();
    assert_eq!(read(&srv, &hash, id).await.ok()["value"]["dealer_id"], sub);
    // The sub-dealer's own panel reaches it too.
    srv.store
        .set_dealer_block_status(DealerId(sub), BlockStatus::NotBlocked)
        .await
        .unwrap();
    let sub_hash = srv.panel_session(DealerId(sub), "sub-pass-1").await;
    read(&srv, &sub_hash, id).await.ok();
    // Not the parent's own users: only down the tree.
    let (stranger, stranger_password) = srv.dealer(None).await;
    user["login"] = json!("nowhere@customer.example");
    user["dealer_id"] = json!(stranger.0);
    create(
        &srv,
        &hash,
        json!({"user": user.clone(), "password": "secret-1"}),
    )
    .await
    .error(201, 400);
    // Without `users: global`: 13, and the sub-dealer's users are out of reach.
    let limited_perms = vec![Permission::UsersCorrupt, Permission::UsersRead];
    let (limited, limited_password) = srv.dealer(Some(limited_perms)).await;
    let limited_hash = srv.panel_session(limited, &limited_password).await;
    user["dealer_id"] = json!(stranger.0);
    create(
        &srv,
        &limited_hash,
        json!({"user": user, "password": "secret-1"}),
    )
    .await
    .error(13, 403);
    let stranger_hash = srv.panel_session(stranger, &stranger_password).await;
    read(&srv, &stranger_hash, id).await.error(201, 400);
}

#[tokio::test]
async fn clones_of_the_users_trackers_go_with_it_unless_told_not_to() {
    let srv = TestServer::start().await;
    let acc = srv.account("panel-users-clones@example.com").await;
    let hash = panel(&srv, &acc).await;
    let holder = srv.user(acc.dealer, "clone-holder@example.com").await;
    let clone = srv
        .store
        .clone_tracker(acc.trackers[0], holder, Some("Leased"))
        .await
        .unwrap();
    let corrupt = |clones: bool| json!({"hash": hash, "user_id": acc.user.0, "login": acc.login, "corrupt_clones": clones});
    // 253: others hold clones and corrupt_clones is false; nothing changes.
    srv.post("/v2/panel/user/corrupt", corrupt(false))
        .await
        .error(253, 400);
    read(&srv, &hash, acc.user.0).await.ok();
    assert!(!srv.store.tracker(clone).await.unwrap().unwrap().deleted);
    // By default the clones go too.
    srv.post("/v2/panel/user/corrupt", corrupt(true)).await.ok();
    assert!(srv.store.tracker(clone).await.unwrap().unwrap().deleted);
    assert!(
        srv.store
            .tracker(acc.trackers[1])
            .await
            .unwrap()
            .unwrap()
            .deleted
    );
    read(&srv, &hash, holder.0).await.ok();
}
