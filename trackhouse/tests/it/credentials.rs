//! Credentials can be taken back, through `trackhouse admin` while `serve`
//! runs: ingest tokens are listed and revoked and may be held to one user's
//! trackers; a new password ends the user's sessions; a deactivated user,
//! and every sub-user of a deactivated master, is refused.

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::serve::Api;
use crate::support::{Proc, admin_async};

async fn id(dir: &std::path::Path, args: &[&str], key: &str) -> String {
    admin_async(dir, args).await[key].to_string()
}

async fn intake(api: &Api, token: &str, lines: &[Value]) -> (u16, Value) {
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let response = api
        .client
        .post(format!("{}/ingest/v1/messages", api.base))
        .header("Authorization", format!("Bearer {token}"))
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn credentials_are_revoked_restricted_and_refused_while_serve_runs() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let (_server, addr) = Proc::serve(d);
    let api = Api::new(addr);
    let dealer = id(
        d,
        &[
            "dealer",
            "create",
            "--title",
            "C",
            "--panel-password",
            "secret123",
        ],
        "dealer_id",
    )
    .await;
    let ann = id(
        d,
        &[
            "user",
            "create",
            "--dealer-id",
            &dealer,
            "--login",
            "ann@example.com",
            "--password",
            "old-password",
        ],
        "user_id",
    )
    .await;
    let bob = id(
        d,
        &[
            "user",
            "create",
            "--dealer-id",
            &dealer,
            "--login",
            "bob@example.com",
            "--password",
            "bob-password",
        ],
        "user_id",
    )
    .await;
    let ann_tracker = id(
        d,
        &[
            "tracker",
            "create",
            "--user-id",
            &ann,
            "--label",
            "A",
            "--device-id",
            "111",
        ],
        "tracker_id",
    )
    .await;
    let bob_tracker = id(
        d,
        &[
            "tracker",
            "create",
            "--user-id",
            &bob,
            "--label",
            "B",
            "--device-id",
            "222",
        ],
        "tracker_id",
    )
    .await;
    let sub = id(
        d,
        &[
            "subuser",
            "create",
            "--user-id",
            &ann,
            "--login",
            "sub@example.com",
            "--password",
            "sub-pass",
            "--trackers",
            &ann_tracker,
        ],
        "subuser_id",
    )
    .await;
    let key =
        admin_async(d, &["api-key", "create", "--user-id", &ann, "--title", "k"]).await["hash"]
            .as_str()
            .unwrap()
            .to_owned();

    // A token held to Ann's trackers: Bob's line is 204, Ann's stored.
    let held = admin_async(
        d,
        &[
            "ingest-token",
            "create",
            "--title",
            "ann only",
            "--user-id",
            &ann,
        ],
    )
    .await;
    assert_eq!(held["user_id"].to_string(), ann);
    let held_token = held["token"].as_str().unwrap().to_owned();
    let lines = [
        json!({"tracker_id": ann_tracker.parse::<i64>().unwrap(), "msg_time": "2026-01-01T00:00:00Z"}),
        json!({"tracker_id": bob_tracker.parse::<i64>().unwrap(), "msg_time": "2026-01-01T00:00:00Z"}),
    ];
    let (status, answer) = intake(&api, &held_token, &lines).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["accepted"], 1, "{answer}");
    assert_eq!(answer["rejected"][0]["line"], 2, "{answer}");
    assert_eq!(answer["rejected"][0]["code"], 204, "{answer}");
    let any = admin_async(d, &["ingest-token", "create", "--title", "any"]).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, answer) = intake(&api, &any, &lines).await;
    assert_eq!(
        (answer["accepted"].as_i64(), answer["duplicates"].as_i64()),
        (Some(1), Some(1)),
        "{answer}"
    );

    // Listed without secrets; revoked, the token is refused at once (code 2).
    let listed = admin_async(d, &["ingest-token", "list"]).await;
    let tokens = listed["tokens"].as_array().unwrap();
    assert_eq!(tokens.len(), 2, "{listed}");
    assert!(!listed.to_string().contains(&held_token), "{listed}");
    let held_id = held["token_id"].to_string();
    let revoked = admin_async(d, &["ingest-token", "revoke", "--token-id", &held_id]).await;
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    let (status, answer) = intake(&api, &held_token, &lines[..1]).await;
    assert_eq!(
        (status, answer["status"]["code"].as_i64()),
        (403, Some(2)),
        "{answer}"
    );
    let (status, _) = intake(&api, &any, &lines[..1]).await;
    assert_eq!(status, 200);

    // A new password ends Ann's sessions; her API key stays.
    let session = api
        .ok(
            "/v2/user/auth",
            json!({"login": "ann@example.com", "password": "old-password"}),
        )
        .await["hash"]
        .clone();
    api.ok("/v2/api/key/list", json!({"hash": session})).await;
    admin_async(
        d,
        &[
            "user",
            "set-password",
            "--user-id",
            &ann,
            "--password",
            "new-password",
        ],
    )
    .await;
    api.fails("/v2/api/key/list", json!({"hash": session}), 400, 4)
        .await;
    api.fails(
        "/v2/user/auth",
        json!({"login": "ann@example.com", "password": "old-password"}),
        400,
        102,
    )
    .await;
    api.ok(
        "/v2/user/auth",
        json!({"login": "ann@example.com", "password": "new-password"}),
    )
    .await;
    api.ok("/v2/subuser/list", json!({"hash": key})).await;

    // Deactivating Ann refuses her key and her sub-user's session and login.
    let sub_session = api
        .ok(
            "/v2/user/auth",
            json!({"login": "sub@example.com", "password": "sub-pass"}),
        )
        .await["hash"]
        .clone();
    let read = |hash: &Value| json!({"hash": hash, "tracker_id": ann_tracker.parse::<i64>().unwrap(), "interval": "2026-01-01T00:00:00Z/P1D", "columns": ["lat"]});
    let csv = api
        .client
        .post(format!("{}/dwh/v1/tracker/raw_data/read", api.base))
        .json(&read(&sub_session))
        .send()
        .await
        .unwrap();
    assert_eq!(csv.status().as_u16(), 200);
    admin_async(d, &["user", "deactivate", "--user-id", &ann]).await;
    api.fails("/v2/subuser/list", json!({"hash": key}), 400, 103)
        .await;
    api.fails(
        "/dwh/v1/tracker/raw_data/read",
        read(&sub_session),
        400,
        103,
    )
    .await;
    api.fails(
        "/v2/user/auth",
        json!({"login": "sub@example.com", "password": "sub-pass"}),
        400,
        103,
    )
    .await;
    admin_async(d, &["user", "activate", "--user-id", &ann]).await;
    api.ok("/v2/subuser/list", json!({"hash": key})).await;
    let _ = sub;
}
