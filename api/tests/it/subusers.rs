//! `/v2/subuser/delete` and `/v2/subuser/session/create`: a master acts as
//! its sub-user with a session it creates; a deleted sub-user's sessions
//! end at once; neither reaches another account's sub-users.

use serde_json::json;

use crate::TestServer;

#[tokio::test]
async fn a_master_creates_a_session_of_its_sub_user() {
    let srv = TestServer::start().await;
    let acc = srv.account("acting@example.com").await;
    srv.subuser(&acc, "driver@example.com", vec![]).await;
    let list = srv.post("/v2/subuser/list", json!({"hash": acc.key})).await;
    let id = list.ok()["list"][0]["id"].as_i64().unwrap();

    let answer = srv
        .post(
            "/v2/subuser/session/create",
            json!({"hash": acc.key, "subuser_id": id}),
        )
        .await;
    let hash = answer.hash();
    assert_ne!(hash, acc.key);
    // The session is the sub-user's: its scope and rights, not the master's.
    srv.post("/v2/garage/list", json!({"hash": hash}))
        .await
        .ok();
    srv.post("/v2/subuser/list", json!({"hash": hash}))
        .await
        .error(13, 403);
    srv.post("/v2/garage/create", json!({"hash": hash, "garage": {}}))
        .await
        .error(13, 403);

    // A deactivated sub-user gets none.
    srv.store
        .set_user_activated(schemas::UserId(id), false)
        .await
        .unwrap();
    srv.post(
        "/v2/subuser/session/create",
        json!({"hash": acc.key, "subuser_id": id}),
    )
    .await
    .error(103, 400);
}

#[tokio::test]
async fn a_deleted_sub_user_is_gone_at_once() {
    let srv = TestServer::start().await;
    let acc = srv.account("deleting@example.com").await;
    let session = srv.subuser(&acc, "leaver@example.com", vec![]).await;
    srv.post("/v2/garage/list", json!({"hash": session}))
        .await
        .ok();
    let id = srv
        .post("/v2/subuser/list", json!({"hash": acc.key}))
        .await
        .ok()["list"][0]["id"]
        .as_i64()
        .unwrap();
    srv.post(
        "/v2/subuser/delete",
        json!({"hash": acc.key, "subuser_id": id}),
    )
    .await
    .ok();
    srv.post("/v2/garage/list", json!({"hash": session}))
        .await
        .error(4, 400);
    assert_eq!(
        srv.post("/v2/subuser/list", json!({"hash": acc.key}))
            .await
            .ok()["list"],
        json!([])
    );
    srv.post(
        "/v2/user/auth",
        json!({"login": "leaver@example.com", "password": "sub-pass-1"}),
    )
    .await
    .error(102, 400);
    // Irreversible: a second delete finds nothing.
    srv.post(
        "/v2/subuser/delete",
        json!({"hash": acc.key, "subuser_id": id}),
    )
    .await
    .error(201, 400);
}

#[tokio::test]
async fn another_accounts_sub_users_do_not_exist_for_the_caller() {
    let srv = TestServer::start().await;
    let owner = srv.account("sub-owner@example.com").await;
    let other = srv.account("sub-other@example.com").await;
    let session = srv.subuser(&owner, "kept@example.com", vec![]).await;
    let id = srv
        .post("/v2/subuser/list", json!({"hash": owner.key}))
        .await
        .ok()["list"][0]["id"]
        .as_i64()
        .unwrap();
    for path in ["/v2/subuser/session/create", "/v2/subuser/delete"] {
        srv.post(path, json!({"hash": other.key, "subuser_id": id}))
            .await
            .error(201, 400);
    }
    srv.post("/v2/garage/list", json!({"hash": session}))
        .await
        .ok();
}

fn profile(login: &str) -> serde_json::Value {
    json!({
        "activated": true,
        "login": login,
        "first_name": "Aigerim",
        "middle_name": "",
        "last_name": " Sadykova ",
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
        "legal_name": "Fleet LLP",
        "iec": null,
        "security_group_id": null
    })
}

async fn subusers(srv: &TestServer, hash: &str) -> Vec<serde_json::Value> {
    srv.list("/v2/subuser/list", hash).await
}

#[tokio::test]
async fn a_registered_sub_user_reads_back_as_stored_and_sees_no_tracker_until_given_some() {
    let srv = TestServer::start().await;
    let acc = srv.account("registering@example.com").await;
    let id = srv
        .post(
            "/v2/subuser/register",
            json!({"hash": acc.key, "user": profile("Dispatch@Example.com"), "password": 123456}),
        )
        .await
        .ok()["id"]
        .as_i64()
        .unwrap();
    let mut expected = profile("dispatch@example.com");
    expected["id"] = json!(id);
    expected["last_name"] = json!("Sadykova");
    expected["creation_date"] = json!("2024-06-01 17:00:00");
    assert_eq!(subusers(&srv, &acc.key).await, vec![expected]);

    // The numeric password is its decimal text; the scope is empty.
    let session = srv.login("dispatch@example.com", "123456").await;
    let inputs = |tracker: i64| {
        srv.post(
            "/dwh/v1/tracker/raw_data/get_inputs",
            json!({"hash": session, "tracker_id": tracker}),
        )
    };
    inputs(acc.trackers[0].0).await.error(204, 404);
    srv.post(
        "/v2/subuser/update",
        json!({"hash": acc.key, "user": {"id": id, "login": "dispatch@example.com"},
               "tracker_ids": [acc.trackers[0].0]}),
    )
    .await
    .ok();
    inputs(acc.trackers[0].0).await.ok();
    inputs(acc.trackers[1].0).await.error(204, 404);
    // update replaced the whole profile: members left out are empty again.
    let updated = &subusers(&srv, &acc.key).await[0];
    assert_eq!(updated["last_name"], "");
    assert_eq!(updated["legal_type"], "individual");

    // A tracker of another account, or of none, is 217 and changes nothing.
    let other = srv.account("registering-other@example.com").await;
    for foreign in [other.trackers[0].0, 999_999] {
        srv.post(
            "/v2/subuser/update",
            json!({"hash": acc.key, "user": {"id": id, "login": "renamed@example.com"},
                   "tracker_ids": [acc.trackers[1].0, foreign]}),
        )
        .await
        .error(217, 400);
    }
    assert_eq!(
        subusers(&srv, &acc.key).await[0]["login"],
        "dispatch@example.com"
    );
    inputs(acc.trackers[1].0).await.error(204, 404);

    // Deactivated through update: its session is refused from the next call.
    srv.post(
        "/v2/subuser/update",
        json!({"hash": acc.key, "user": {"id": id, "login": "dispatch@example.com", "activated": false}}),
    )
    .await
    .ok();
    inputs(acc.trackers[0].0).await.error(103, 400);
}

#[tokio::test]
async fn passwords_logins_and_members_are_checked_at_their_edges() {
    let srv = TestServer::start().await;
    let acc = srv.account("sub-checks@example.com").await;
    let register = |login: &str, password: serde_json::Value, user: serde_json::Value| {
        let mut user = user;
        user["login"] = json!(login);
        srv.post(
            "/v2/subuser/register",
            json!({"hash": acc.key, "user": user, "password": password}),
        )
    };
    for (n, ok) in [(5, false), (6, true), (20, true), (21, false)] {
        let login = format!("p{n}@example.com");
        let answer = register(&login, json!("x".repeat(n)), json!({})).await;
        if ok {
            answer.ok();
        } else {
            answer.error(7, 400);
            assert_eq!(answer.body["errors"][0]["parameter"], "password");
        }
    }
    register("sub-checks@example.com", json!("secret1"), json!({}))
        .await
        .error(206, 400);
    register("P6@Example.com", json!("secret1"), json!({}))
        .await
        .error(206, 400);
    for (user, path) in [
        (json!({"phone": "770112345"}), "user.phone"),
        (json!({"phone": "+77011234567"}), "user.phone"),
        (json!({"phone": "7701123456789012"}), "user.phone"),
        (json!({"legal_name": "Fleet LLP"}), "user.legal_name"),
        (
            json!({"legal_type": "individual", "iec": "123"}),
            "user.iec",
        ),
        (json!({"legal_type": "company"}), "user.legal_type"),
        (
            json!({"state_reg_num": "1234567890123456"}),
            "user.state_reg_num",
        ),
        (json!({"first_name": "a\u{0}b"}), "user.first_name"),
        (json!({"security_group_id": "x"}), "user.security_group_id"),
    ] {
        let answer = register("edge@example.com", json!("secret1"), user.clone()).await;
        answer.error(7, 400);
        assert_eq!(
            answer.body["errors"][0]["parameter"], path,
            "{user}: {answer:?}"
        );
    }
    register("bad-login", json!("secret1"), json!({}))
        .await
        .error(7, 400);
    register(
        "phone@example.com",
        json!("secret1"),
        json!({"phone": "7701123456", "legal_type": "legal_entity", "iec": "123"}),
    )
    .await
    .ok();
    let logins: Vec<String> = subusers(&srv, &acc.key)
        .await
        .iter()
        .map(|s| s["login"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        logins,
        ["p6@example.com", "p20@example.com", "phone@example.com"]
    );
}

#[tokio::test]
async fn a_security_group_must_be_the_accounts_and_grants_its_rights() {
    let srv = TestServer::start().await;
    let acc = srv.account("sub-groups@example.com").await;
    let other = srv.account("sub-groups-other@example.com").await;
    let srv = &srv;
    let group = |hash: String| async move {
        srv.post(
            "/v2/security_group/create",
            json!({"hash": hash, "security_group": {"label": "Fleet", "rights": ["vehicle_update"]}}),
        )
        .await
        .ok()["id"]
            .as_i64()
            .unwrap()
    };
    let mine = group(acc.key.clone()).await;
    let theirs = group(other.key.clone()).await;
    let mut user = profile("grouped@example.com");
    user["security_group_id"] = json!(theirs);
    srv.post(
        "/v2/subuser/register",
        json!({"hash": acc.key, "user": user, "password": "secret1"}),
    )
    .await
    .error(201, 400);
    user["security_group_id"] = json!(mine);
    let id = srv
        .post(
            "/v2/subuser/register",
            json!({"hash": acc.key, "user": user, "password": "secret1"}),
        )
        .await
        .ok()["id"]
        .as_i64()
        .unwrap();
    let session = srv.login("grouped@example.com", "secret1").await;
    srv.post("/v2/garage/create", json!({"hash": session, "garage": {}}))
        .await
        .ok();
    // Another account cannot update it, nor can a sub-user register others.
    srv.post(
        "/v2/subuser/update",
        json!({"hash": other.key, "user": {"id": id, "login": "grouped@example.com"}}),
    )
    .await
    .error(201, 400);
    srv.post(
        "/v2/subuser/register",
        json!({"hash": session, "user": profile("x@example.com"), "password": "secret1"}),
    )
    .await
    .error(13, 403);
}
