//! `admin zone|place`: the zones and places of a master user.

use serde_json::{Value, json};
use tempfile::TempDir;

use super::{code, only_id};
use crate::support::{admin, admin_error, master_user};

/// Owned arguments.
fn args(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

/// Runs each refused command: (arguments, code, text the description names).
fn refused(dir: &std::path::Path, cases: &[(Vec<String>, i64, &str)]) {
    for (args, expected, names) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let error = admin_error(dir, &args);
        assert_eq!(code(&error), *expected, "admin {args:?}: {error}");
        let description = error["status"]["description"].as_str().unwrap_or_default();
        assert!(
            description.contains(names),
            "admin {args:?}: {description:?} should name {names:?}"
        );
    }
}

#[test]
fn zones_are_created_listed_and_deleted() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let (_, user) = master_user(dir, "zones@example.com");
    let user_arg = user.to_string();
    let circle = only_id(
        &admin(
            dir,
            &[
                "zone",
                "create",
                "--user-id",
                &user_arg,
                "--label",
                " Depot ",
                "--circle",
                "-33.92,18.42,500",
            ],
        ),
        "zone_id",
    );
    let polygon = only_id(
        &admin(
            dir,
            &[
                "zone",
                "create",
                "--user-id",
                &user_arg,
                "--label",
                "Old town",
                "--polygon",
                "43.20 76.90, 43.30 76.90,43.30 77.00,43.20 77.00",
                "--color",
                "ff8800",
                "--address",
                "Almaty",
            ],
        ),
        "zone_id",
    );
    let listed = admin(dir, &["zone", "list", "--user-id", &user_arg]);
    assert_eq!(
        listed,
        json!({"zones": [
            {"id": circle, "label": "Depot", "address": "", "color": "27A9E3",
             "type": "circle", "center": {"lat": -33.92, "lng": 18.42}, "radius": 500},
            {"id": polygon, "label": "Old town", "address": "Almaty", "color": "ff8800",
             "type": "polygon", "points": [
                {"lat": 43.2, "lng": 76.9}, {"lat": 43.3, "lng": 76.9},
                {"lat": 43.3, "lng": 77.0}, {"lat": 43.2, "lng": 77.0}]},
        ]})
    );
    // Another user's list does not show them.
    let (_, other) = master_user(dir, "other@example.com");
    assert_eq!(
        admin(dir, &["zone", "list", "--user-id", &other.to_string()]),
        json!({"zones": []})
    );
    let id = circle.to_string();
    assert_eq!(
        admin(dir, &["zone", "delete", "--zone-id", &id]),
        json!({"zone_id": circle, "deleted": true})
    );
    let remaining = admin(dir, &["zone", "list", "--user-id", &user_arg]);
    assert_eq!(
        remaining["zones"].as_array().map(Vec::len),
        Some(1),
        "{remaining}"
    );
    let again = admin_error(dir, &["zone", "delete", "--zone-id", &id]);
    assert_eq!(code(&again), 201, "{again}");
}

#[test]
fn bad_zones_are_refused_with_the_member_named() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let (_, user) = master_user(dir, "zones@example.com");
    let user = user.to_string();
    let subuser = admin(
        dir,
        &[
            "subuser",
            "create",
            "--user-id",
            &user,
            "--login",
            "sub@example.com",
            "--password",
            "pw1234",
        ],
    )["subuser_id"]
        .to_string();
    let too_many: Vec<String> = (0..1_001)
        .map(|i| {
            format!(
                "{} {}",
                43.0 + f64::from(i) / 10_000.0,
                76.0 + f64::from(i % 2) / 100.0
            )
        })
        .collect();
    let too_many = too_many.join(",");
    let create = |owner: &str, label: &str, shape: &[&str]| -> Vec<String> {
        let mut create = args(&["zone", "create", "--user-id", owner, "--label", label]);
        create.extend(args(shape));
        create
    };
    refused(
        dir,
        &[
            (
                create(&user, "Z", &["--polygon", "1 1,2 2"]),
                284,
                "`zone.points`",
            ),
            (
                create(&user, "Z", &["--polygon", &too_many]),
                202,
                "`zone.points`",
            ),
            (
                create(&user, "Z", &["--polygon", "1 1,2 2,91 3"]),
                7,
                "`zone.points[2].lat`",
            ),
            (
                create(&user, "Z", &["--polygon", "0 179,1 -179,1 179.5"]),
                7,
                "antimeridian",
            ),
            (
                create(&user, "Z", &["--polygon", "1 1,2 2,3"]),
                7,
                "`polygon`",
            ),
            (create(&user, "Z", &["--circle", "1,2"]), 7, "`circle`"),
            (
                create(&user, "Z", &["--circle", "1,2,0"]),
                7,
                "`zone.radius`",
            ),
            (
                create(&user, "Z", &["--circle", "1,2,100001"]),
                7,
                "`zone.radius`",
            ),
            (create(&user, "Z", &["--circle", "1,2,2.5"]), 7, "`circle`"),
            (
                create(&user, "Z", &["--circle", "90.5,2,10"]),
                7,
                "`zone.center.lat`",
            ),
            (
                create(&user, "Z", &["--circle", "1,-181,10"]),
                7,
                "`zone.center.lng`",
            ),
            (
                create(&user, "Z", &["--circle", "1,2,10", "--color", "#ff0000"]),
                7,
                "`zone.color`",
            ),
            (
                create(&user, "  ", &["--circle", "1,2,10"]),
                7,
                "`zone.label`",
            ),
            (create("999", "Z", &["--circle", "1,2,10"]), 201, "user 999"),
            (
                create(&subuser, "Z", &["--circle", "1,2,10"]),
                7,
                "`user_id`",
            ),
            (args(&["zone", "list", "--user-id", "999"]), 201, "user 999"),
        ],
    );
    // Nothing was stored.
    assert_eq!(
        admin(dir, &["zone", "list", "--user-id", &user]),
        json!({"zones": []})
    );
}

#[test]
fn places_are_created_listed_and_deleted() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let (_, user) = master_user(dir, "places@example.com");
    let user_arg = user.to_string();
    let office = only_id(
        &admin(
            dir,
            &[
                "place",
                "create",
                "--user-id",
                &user_arg,
                "--label",
                "Office",
                "--location",
                "43.2567,76.9286,150",
                "--address",
                " Abay Ave 52 ",
                "--description",
                "Main entrance from the yard",
            ],
        ),
        "place_id",
    );
    let pin = only_id(
        &admin(
            dir,
            &[
                "place",
                "create",
                "--user-id",
                &user_arg,
                "--label",
                "Pin",
                "--location",
                "-12.5,-45",
            ],
        ),
        "place_id",
    );
    let listed: Value = admin(dir, &["place", "list", "--user-id", &user_arg]);
    assert_eq!(
        listed,
        json!({"places": [
            {"id": office, "label": "Office", "description": "Main entrance from the yard",
             "location": {"lat": 43.2567, "lng": 76.9286, "address": "Abay Ave 52", "radius": 150}},
            {"id": pin, "label": "Pin", "description": null,
             "location": {"lat": -12.5, "lng": -45.0, "address": "", "radius": null}},
        ]})
    );
    let id = pin.to_string();
    assert_eq!(
        admin(dir, &["place", "delete", "--place-id", &id]),
        json!({"place_id": pin, "deleted": true})
    );
    let remaining = admin(dir, &["place", "list", "--user-id", &user_arg]);
    assert_eq!(
        remaining["places"].as_array().map(Vec::len),
        Some(1),
        "{remaining}"
    );

    let create = |owner: &str, label: &str, location: &str| {
        args(&[
            "place",
            "create",
            "--user-id",
            owner,
            "--label",
            label,
            "--location",
            location,
        ])
    };
    let mut long_description = create(&user_arg, "P", "1,2");
    long_description.extend(args(&["--description", &"x".repeat(1_025)]));
    refused(
        dir,
        &[
            (create(&user_arg, "P", "1,181"), 7, "`place.location.lng`"),
            (create(&user_arg, "P", "-91,1"), 7, "`place.location.lat`"),
            (
                create(&user_arg, "P", "1,2,0"),
                7,
                "`place.location.radius`",
            ),
            (
                create(&user_arg, "P", "1,2,100001"),
                7,
                "`place.location.radius`",
            ),
            (create(&user_arg, "P", "1;2"), 7, "`location`"),
            (create(&user_arg, " ", "1,2"), 7, "`place.label`"),
            (long_description, 7, "`place.description`"),
            (create("999", "P", "1,2"), 201, "user 999"),
            (
                args(&["place", "delete", "--place-id", "999"]),
                201,
                "place 999",
            ),
            (
                args(&["place", "list", "--user-id", "999"]),
                201,
                "user 999",
            ),
        ],
    );
}
