//! `trackhouse admin`: each command prints one documented JSON object on
//! stdout; bad input exits non-zero with the error object on stderr.

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::{admin, admin_error, is_secret, master_user};

mod geo;
mod panel;
mod trackers;

/// The id under `key`, checking it is the object's only member.
fn only_id(answer: &Value, key: &str) -> i64 {
    let object = answer.as_object().expect("an object");
    assert_eq!(
        object.keys().collect::<Vec<_>>(),
        [key],
        "unexpected members in {answer}"
    );
    let id = answer[key].as_i64().expect("a numeric id");
    assert!(id > 0, "{answer}");
    id
}

/// Borrows owned arguments.
fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// The numeric code of an error object.
fn code(error: &Value) -> i64 {
    error["status"]["code"].as_i64().expect("a numeric code")
}

#[test]
fn dealer_commands_print_their_objects() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let dealer = only_id(
        &admin(
            dir,
            &[
                "dealer",
                "create",
                "--title",
                "T",
                "--panel-password",
                "secret123",
            ],
        ),
        "dealer_id",
    );
    let chosen = admin(
        dir,
        &[
            "dealer",
            "create",
            "--title",
            "Chosen id",
            "--panel-login",
            "500",
            "--panel-password",
            "secret123",
            "--contract-type",
            "PARTNER",
            "--permissions",
            "base:get_dealer_info",
            "--time-zone",
            "Europe/Berlin",
        ],
    );
    assert_eq!(chosen, json!({"dealer_id": 500}));
    let id = dealer.to_string();
    assert_eq!(
        admin(dir, &["dealer", "block", "--dealer-id", &id]),
        json!({"dealer_id": dealer, "block_status": "CLIENTS_BLOCKED"})
    );
    assert_eq!(
        admin(
            dir,
            &[
                "dealer",
                "block",
                "--dealer-id",
                &id,
                "--status",
                "BLOCK_LOGIN"
            ]
        ),
        json!({"dealer_id": dealer, "block_status": "BLOCK_LOGIN"})
    );
    assert_eq!(
        admin(dir, &["dealer", "unblock", "--dealer-id", &id]),
        json!({"dealer_id": dealer, "block_status": "NOT_BLOCKED"})
    );
}

#[test]
fn account_commands_print_their_objects() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let dealer = only_id(
        &admin(
            dir,
            &[
                "dealer",
                "create",
                "--title",
                "T",
                "--panel-password",
                "secret123",
            ],
        ),
        "dealer_id",
    )
    .to_string();
    let plan = only_id(
        &admin(
            dir,
            &[
                "plan",
                "create",
                "--dealer-id",
                &dealer,
                "--name",
                "Long",
                "--store-period",
                "1y",
                "--features",
                "multilevel_access,weblocator",
            ],
        ),
        "plan_id",
    )
    .to_string();
    let user = only_id(
        &admin(
            dir,
            &[
                "user",
                "create",
                "--dealer-id",
                &dealer,
                "--login",
                "ann@example.com",
                "--password",
                "pw1",
                "--time-zone",
                "Asia/Almaty",
            ],
        ),
        "user_id",
    )
    .to_string();
    let tracker = only_id(
        &admin(
            dir,
            &[
                "tracker",
                "create",
                "--user-id",
                &user,
                "--label",
                "Truck 1",
                "--device-id",
                "356307042441013",
                "--plan-id",
                &plan,
            ],
        ),
        "tracker_id",
    );
    let by_period = only_id(
        &admin(
            dir,
            &[
                "tracker",
                "create",
                "--user-id",
                &user,
                "--label",
                "Truck 2",
                "--device-id",
                "356307042441021",
                "--store-period",
                "2h",
            ],
        ),
        "tracker_id",
    );
    assert_ne!(tracker, by_period);
    let id = tracker.to_string();
    assert_eq!(
        admin(dir, &["tracker", "block", "--tracker-id", &id]),
        json!({"tracker_id": tracker, "blocked": true})
    );
    assert_eq!(
        admin(dir, &["tracker", "unblock", "--tracker-id", &id]),
        json!({"tracker_id": tracker, "blocked": false})
    );
    for calibration in [Some("0:0,4095:600"), None] {
        let mut args = vec![
            "sensor",
            "create",
            "--tracker-id",
            &id,
            "--name",
            "Main tank",
            "--input",
            "lls_level_1",
        ];
        args.extend(calibration.iter().flat_map(|c| ["--calibration", c]));
        only_id(&admin(dir, &args), "sensor_id");
    }
    only_id(
        &admin(
            dir,
            &[
                "subuser",
                "create",
                "--user-id",
                &user,
                "--login",
                "driver@example.com",
                "--password",
                "secret12",
                "--rights",
                "vehicle_update,employee_update",
                "--trackers",
                &id,
            ],
        ),
        "subuser_id",
    );
    let key = admin(
        dir,
        &["api-key", "create", "--user-id", &user, "--title", "CI"],
    );
    assert_eq!(key.as_object().map(|o| o.len()), Some(1), "{key}");
    assert!(is_secret(key["hash"].as_str().unwrap_or_default()), "{key}");
    for backfill in [true, false] {
        let mut args = vec!["ingest-token", "create", "--title", "devices"];
        if backfill {
            args.push("--backfill");
        }
        let token = admin(dir, &args);
        let object = token.as_object().expect("an object");
        assert_eq!(
            object.keys().collect::<Vec<_>>(),
            ["token", "token_id", "backfill", "user_id"],
            "{token}"
        );
        assert!(
            is_secret(token["token"].as_str().unwrap_or_default()),
            "{token}"
        );
        assert!(
            token["token_id"].as_i64().is_some_and(|id| id > 0),
            "{token}"
        );
        assert_eq!(token["backfill"], backfill, "{token}");
    }
}

#[test]
fn bad_input_prints_the_error_object_with_its_code() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let dealer = only_id(
        &admin(
            dir,
            &[
                "dealer",
                "create",
                "--title",
                "T",
                "--panel-password",
                "secret123",
            ],
        ),
        "dealer_id",
    )
    .to_string();
    let new_user = |login: &'static str| {
        [
            "user",
            "create",
            "--dealer-id",
            &dealer,
            "--login",
            login,
            "--password",
            "pw1",
        ]
        .map(str::to_owned)
    };
    let user = only_id(
        &admin(dir, &as_strs(&new_user("ann@example.com"))),
        "user_id",
    )
    .to_string();
    let new_tracker = [
        "tracker",
        "create",
        "--user-id",
        &user,
        "--label",
        "Truck",
        "--device-id",
        "356307042441013",
    ];
    let tracker = only_id(&admin(dir, &new_tracker), "tracker_id").to_string();

    // (arguments, code, text the description must contain)
    let bad_login = new_user("not-an-e-mail");
    let taken_login = new_user("ANN@example.com");
    let cases: Vec<(Vec<&str>, i64, &str)> = vec![
        (as_strs(&bad_login), 7, "`login`"),
        (
            vec![
                "sensor",
                "create",
                "--tracker-id",
                &tracker,
                "--name",
                "Tank",
                "--input",
                "lls_level_1",
                "--calibration",
                "5:0,1:1",
            ],
            7,
            "`calibration`",
        ),
        (new_tracker.to_vec(), 224, "356307042441013"),
        (as_strs(&taken_login), 206, "ann@example.com"),
        (
            vec![
                "dealer",
                "create",
                "--title",
                "T",
                "--panel-password",
                "short",
            ],
            7,
            "`panel_password`",
        ),
        (
            vec![
                "dealer",
                "block",
                "--dealer-id",
                &dealer,
                "--status",
                "NOPE",
            ],
            7,
            "`status`",
        ),
        (
            vec![
                "plan",
                "create",
                "--dealer-id",
                &dealer,
                "--name",
                "P",
                "--features",
                "teleportation",
            ],
            7,
            "`features`",
        ),
        (vec!["dealer", "unblock", "--dealer-id", "999"], 201, "999"),
    ];
    // An ignition source is spelled as the intake stores columns.
    let mut cases = cases;
    for source in [
        "discrete_inputs.+1",
        "discrete_inputs.01",
        "discrete_inputs.0",
        "inputs.a-b",
    ] {
        cases.push((
            vec![
                "tracker",
                "movement",
                "--tracker-id",
                &tracker,
                "--ignition-source",
                source,
            ],
            7,
            "`ignition_source`",
        ));
    }
    // Unknown ingest tokens and users are 201.
    cases.push((
        vec!["ingest-token", "revoke", "--token-id", "42"],
        201,
        "42",
    ));
    cases.push((vec!["user", "deactivate", "--user-id", "4242"], 201, "4242"));
    cases.push((
        vec![
            "ingest-token",
            "create",
            "--title",
            "t",
            "--user-id",
            "4242",
        ],
        201,
        "4242",
    ));
    for (args, expected, names) in cases {
        let error = admin_error(dir, &args);
        assert_eq!(code(&error), expected, "admin {args:?}: {error}");
        let description = error["status"]["description"].as_str().unwrap_or_default();
        assert!(
            description.contains(names),
            "admin {args:?}: {description:?} should name {names:?}"
        );
    }
}

#[test]
fn an_unusable_data_dir_is_a_database_error() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    let error = admin_error(
        &file,
        &[
            "dealer",
            "create",
            "--title",
            "T",
            "--panel-password",
            "secret123",
        ],
    );
    assert_eq!(code(&error), 1, "{error}");
}

#[test]
fn service_task_commands_name_what_does_not_exist() {
    // The success path (open, 261, close) is `api/tests/it/vehicles.rs`,
    // through the same store functions: a vehicle needs the API to exist.
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let missing = admin_error(
        dir,
        &[
            "service-task",
            "create",
            "--vehicle-id",
            "999",
            "--description",
            "Oil",
        ],
    );
    assert_eq!(code(&missing), 201, "{missing}");
    let blank = admin_error(
        dir,
        &[
            "service-task",
            "create",
            "--vehicle-id",
            "1",
            "--description",
            " ",
        ],
    );
    assert_eq!(code(&blank), 7, "{blank}");
    let closed = admin_error(dir, &["service-task", "close", "--task-id", "999"]);
    assert_eq!(code(&closed), 201, "{closed}");
}

#[test]
fn the_retranslator_quota_is_set_per_master_user() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let (_, user) = master_user(dir, "q@example.com");
    let user_arg = user.to_string();
    assert_eq!(
        admin(
            dir,
            &[
                "retranslator",
                "quota",
                "--user-id",
                &user_arg,
                "--max",
                "25"
            ]
        ),
        json!({"user_id": user, "retranslator_quota": 25})
    );
    assert_eq!(
        admin(dir, &["retranslator", "quota", "--user-id", &user_arg]),
        json!({"user_id": user, "retranslator_quota": 10}),
        "back to the default"
    );
    let missing = admin_error(
        dir,
        &["retranslator", "quota", "--user-id", "999", "--max", "1"],
    );
    assert_eq!(code(&missing), 201, "{missing}");
}

#[test]
fn plugins_are_enabled_for_a_user_or_a_dealer() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let (dealer, user) = master_user(dir, "p@example.com");
    let dealer_arg = dealer.to_string();
    let user_arg = user.to_string();
    assert_eq!(
        admin(
            dir,
            &[
                "plugin",
                "enable",
                "--plugin-id",
                "29",
                "--user-id",
                &user_arg
            ]
        ),
        json!({"plugin_id": 29, "user_id": user, "enabled": true})
    );
    assert_eq!(
        admin(
            dir,
            &[
                "plugin",
                "disable",
                "--plugin-id",
                "29",
                "--dealer-id",
                &dealer_arg
            ]
        ),
        json!({"plugin_id": 29, "dealer_id": dealer, "enabled": false})
    );
    for bad in [
        vec![
            "plugin",
            "enable",
            "--plugin-id",
            "999",
            "--user-id",
            user_arg.as_str(),
        ],
        vec![
            "plugin",
            "enable",
            "--plugin-id",
            "29",
            "--dealer-id",
            "999",
        ],
    ] {
        let error = admin_error(dir, &bad);
        assert_eq!(code(&error), 201, "{bad:?}: {error}");
    }
}
