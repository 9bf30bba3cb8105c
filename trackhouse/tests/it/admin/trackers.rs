//! `admin plan features`, `tracker plan` and `tracker clone`; their effect
//! on a running server.

use serde_json::json;
use tempfile::TempDir;

use super::{code, only_id};
use crate::serve::Api;
use crate::support::{Proc, admin, admin_async, admin_error, master_user};

/// A plan of `dealer` with `features` (comma-separated), storing data for
/// 100 years: its id.
fn plan(dir: &std::path::Path, dealer: &str, name: &str, features: &str) -> String {
    let mut args = vec![
        "plan",
        "create",
        "--dealer-id",
        dealer,
        "--name",
        name,
        "--store-period",
        "100y",
    ];
    if !features.is_empty() {
        args.extend(["--features", features]);
    }
    only_id(&admin(dir, &args), "plan_id").to_string()
}

/// A tracker of `user` on `plan`: its id.
fn tracker(dir: &std::path::Path, user: &str, device: &str, plan: &str) -> String {
    only_id(
        &admin(
            dir,
            &[
                "tracker",
                "create",
                "--user-id",
                user,
                "--label",
                "Truck",
                "--device-id",
                device,
                "--plan-id",
                plan,
            ],
        ),
        "tracker_id",
    )
    .to_string()
}

/// A master user of `dealer`: its id.
fn user(dir: &std::path::Path, dealer: &str, login: &str) -> String {
    only_id(
        &admin(
            dir,
            &[
                "user",
                "create",
                "--dealer-id",
                dealer,
                "--login",
                login,
                "--password",
                "pw",
            ],
        ),
        "user_id",
    )
    .to_string()
}

/// Asserts the command fails with `expected` and a description naming `names`.
fn refused(dir: &std::path::Path, args: &[&str], expected: i64, names: &str) {
    let error = admin_error(dir, args);
    assert_eq!(code(&error), expected, "admin {args:?}: {error}");
    let description = error["status"]["description"].as_str().unwrap_or_default();
    assert!(
        description.contains(names),
        "admin {args:?}: {description:?} should name {names:?}"
    );
}

#[test]
fn plan_features_and_a_trackers_plan_are_set() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let (dealer, owner) = master_user(dir, "plans@example.com");
    let (dealer, owner) = (dealer.to_string(), owner.to_string());
    let basic = plan(dir, &dealer, "Basic", "multilevel_access");
    let set = |features: &str| {
        admin(
            dir,
            &[
                "plan",
                "features",
                "--plan-id",
                &basic,
                "--features",
                features,
            ],
        )
    };
    let id: i64 = basic.parse().unwrap();
    assert_eq!(
        set("weblocator, multilevel_access,weblocator"),
        json!({"plan_id": id, "features": ["multilevel_access", "weblocator"]}),
        "each once, in the platform's order"
    );
    assert_eq!(set(""), json!({"plan_id": id, "features": []}));
    refused(
        dir,
        &[
            "plan",
            "features",
            "--plan-id",
            &basic,
            "--features",
            "teleportation",
        ],
        7,
        "`features`",
    );
    refused(
        dir,
        &[
            "plan",
            "features",
            "--plan-id",
            "999",
            "--features",
            "weblocator",
        ],
        201,
        "plan 999",
    );

    let truck = tracker(dir, &owner, "356307042441013", &basic);
    let premium = plan(dir, &dealer, "Premium", "multilevel_access,weblocator");
    assert_eq!(
        admin(
            dir,
            &[
                "tracker",
                "plan",
                "--tracker-id",
                &truck,
                "--plan-id",
                &premium
            ]
        ),
        json!({"tracker_id": truck.parse::<i64>().unwrap(), "plan_id": premium.parse::<i64>().unwrap()})
    );
    let (stranger, _) = master_user(dir, "stranger@example.com");
    let foreign = plan(dir, &stranger.to_string(), "Foreign", "");
    refused(
        dir,
        &[
            "tracker",
            "plan",
            "--tracker-id",
            &truck,
            "--plan-id",
            &foreign,
        ],
        201,
        &format!("plan {foreign} of dealer {dealer}"),
    );
    refused(
        dir,
        &[
            "tracker",
            "plan",
            "--tracker-id",
            "999",
            "--plan-id",
            &premium,
        ],
        201,
        "tracker 999",
    );
}

#[test]
fn clones_are_made_for_other_master_users_only() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let (dealer, owner) = master_user(dir, "owner@example.com");
    let (dealer, owner) = (dealer.to_string(), owner.to_string());
    let viewer = user(dir, &dealer, "viewer@example.com");
    let basic = plan(dir, &dealer, "Basic", "");
    let source = tracker(dir, &owner, "356307042441013", &basic);
    let clone = admin(
        dir,
        &[
            "tracker",
            "clone",
            "--tracker-id",
            &source,
            "--user-id",
            &viewer,
            "--label",
            "Leased truck",
        ],
    );
    let clone_id = clone["tracker_id"].as_i64().unwrap();
    assert_eq!(
        clone,
        json!({"tracker_id": clone_id, "clone_of": source.parse::<i64>().unwrap(),
               "user_id": viewer.parse::<i64>().unwrap()})
    );
    let clone_id = clone_id.to_string();
    let subuser = admin(
        dir,
        &[
            "subuser",
            "create",
            "--user-id",
            &viewer,
            "--login",
            "sub@example.com",
            "--password",
            "pw1234",
        ],
    )["subuser_id"]
        .to_string();
    let clone_of = |tracker: &str, user: &str| {
        vec![
            "tracker".to_owned(),
            "clone".into(),
            "--tracker-id".into(),
            tracker.into(),
            "--user-id".into(),
            user.into(),
        ]
    };
    let cases = [
        (clone_of(&source, &viewer), 247, format!("clone {clone_id}")),
        (
            clone_of(&clone_id, &owner),
            219,
            format!("tracker {clone_id} is a clone"),
        ),
        (clone_of(&source, &owner), 7, "`user_id`".to_owned()),
        (clone_of(&source, &subuser), 7, "`user_id`".to_owned()),
        (clone_of(&source, "999"), 201, "user 999".to_owned()),
        (clone_of("999", &viewer), 201, "tracker 999".to_owned()),
    ];
    for (args, expected, names) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(dir, &args, *expected, names);
    }
    // A clone has no sensors or movement settings of its own: its source's serve it.
    refused(
        dir,
        &[
            "sensor",
            "create",
            "--tracker-id",
            &clone_id,
            "--name",
            "Tank",
            "--input",
            "lls_level_1",
        ],
        219,
        "is a clone",
    );
    refused(
        dir,
        &["tracker", "movement", "--tracker-id", &clone_id],
        219,
        "is a clone",
    );
    // Its plan (the features its viewer has) is its own.
    let other = plan(dir, &dealer, "Other", "weblocator");
    admin(
        dir,
        &[
            "tracker",
            "plan",
            "--tracker-id",
            &clone_id,
            "--plan-id",
            &other,
        ],
    );
}

#[tokio::test]
async fn plan_and_clone_changes_take_effect_while_serve_runs() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let (dealer, owner) = master_user(dir, "owner@example.com");
    let (dealer, owner) = (dealer.to_string(), owner.to_string());
    let plan = plan(dir, &dealer, "Fleet", "multilevel_access");
    let bare = self::plan(dir, &dealer, "Bare", "");
    let device = "356307042441013";
    let source = tracker(dir, &owner, device, &plan);
    let key = |user: &str| {
        admin(
            dir,
            &["api-key", "create", "--user-id", user, "--title", "k"],
        )["hash"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let with_key = json!({"hash": key(&owner)});
    let (_server, addr) = Proc::serve(dir);
    let api = Api::new(addr);

    // Code 236 on sub-user calls follows the plan's features at once…
    api.ok("/v2/subuser/list", with_key.clone()).await;
    let features = |features: &'static str| {
        let plan = plan.clone();
        async move {
            admin_async(
                dir,
                &[
                    "plan",
                    "features",
                    "--plan-id",
                    &plan,
                    "--features",
                    features,
                ],
            )
            .await
        }
    };
    features("weblocator").await;
    api.fails("/v2/subuser/list", with_key.clone(), 402, 236)
        .await;
    features("multilevel_access,weblocator").await;
    api.ok("/v2/subuser/list", with_key.clone()).await;
    // …and the plan the tracker is on.
    let move_to = |to: String| {
        let source = source.clone();
        async move {
            admin_async(
                dir,
                &["tracker", "plan", "--tracker-id", &source, "--plan-id", &to],
            )
            .await
        }
    };
    move_to(bare.clone()).await;
    api.fails("/v2/subuser/list", with_key.clone(), 402, 236)
        .await;
    move_to(plan.clone()).await;
    api.ok("/v2/subuser/list", with_key.clone()).await;

    // A clone made while the server runs reads what the device sends.
    let viewer = user(dir, &dealer, "viewer@example.com");
    let clone = admin_async(
        dir,
        &[
            "tracker",
            "clone",
            "--tracker-id",
            &source,
            "--user-id",
            &viewer,
        ],
    )
    .await["tracker_id"]
        .as_i64()
        .unwrap();
    let token = admin_async(dir, &["ingest-token", "create", "--title", "t"]).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let line = json!({"device_id": device, "msg_time": "2024-06-01T06:00:00Z", "lat": 43.25, "lng": 76.95});
    let sent = api
        .client
        .post(format!("{}/ingest/v1/messages", api.base))
        .header("authorization", format!("Bearer {token}"))
        .body(format!("{line}\n"))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status().as_u16(), 200);
    let sent: serde_json::Value = sent.json().await.unwrap();
    assert_eq!(sent["accepted"], 1, "{sent}");
    let read = json!({"hash": key(&viewer), "tracker_id": clone, "interval": "2024-06-01T00:00:00Z/P1D",
                      "columns": ["lat", "lng"], "time_zone": "UTC"});
    let csv = api
        .client
        .post(format!("{}/dwh/v1/tracker/raw_data/read", api.base))
        .json(&read)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        csv,
        "\"msg_time\",\"lat\",\"lng\"\n\"2024-06-01T06:00:00Z\",43.25,76.95\n"
    );
}
