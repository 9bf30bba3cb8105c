use serde::Deserialize;
use serde_json::json;

use super::*;

#[derive(Debug, Deserialize, PartialEq)]
struct Inner {
    login: String,
    age: Option<u8>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Fast,
    Slow,
}

#[derive(Debug, Deserialize, PartialEq)]
struct Params {
    tracker_id: i64,
    password: String,
    ids: Vec<i64>,
    flag: bool,
    ratio: f64,
    #[serde(default)]
    mode: Option<Mode>,
    user: Option<Inner>,
}

fn read(value: serde_json::Value) -> Result<Params, ParamError> {
    from_value(value)
}

#[test]
fn json_values_read_as_they_are() {
    let p = read(
        json!({"tracker_id": 5, "password": "x", "ids": [1, 2], "flag": true, "ratio": 0.5,
        "mode": "fast", "user": {"login": "a@b.c", "age": 7}}),
    )
    .unwrap();
    assert_eq!(p.tracker_id, 5);
    assert_eq!(p.ids, vec![1, 2]);
    assert_eq!(p.mode, Some(Mode::Fast));
    assert_eq!(
        p.user,
        Some(Inner {
            login: "a@b.c".into(),
            age: Some(7)
        })
    );
}

#[test]
fn text_values_read_as_their_types() {
    let p = read(
        json!({"tracker_id": "123", "password": 1234, "ids": "[1, 2 ,3]", "flag": "false",
        "ratio": "2.5", "mode": "slow", "user": "{\"login\": \"x@y.z\", \"age\": \"9\"}"}),
    )
    .unwrap();
    assert_eq!(p.tracker_id, 123);
    assert_eq!(p.password, "1234");
    assert_eq!(p.ids, vec![1, 2, 3]);
    assert!(!p.flag);
    assert_eq!(p.ratio, 2.5);
    assert_eq!(p.mode, Some(Mode::Slow));
    assert_eq!(
        p.user,
        Some(Inner {
            login: "x@y.z".into(),
            age: Some(9)
        })
    );
}

#[test]
fn errors_name_the_parameter() {
    let base = json!({"tracker_id": 1, "password": "x", "ids": [], "flag": true, "ratio": 1});
    let with = |key: &str, value: serde_json::Value| {
        let mut v = base.clone();
        v[key] = value;
        read(v).unwrap_err()
    };
    let e = with("tracker_id", json!("12a"));
    assert_eq!(e.parameter(), "tracker_id");
    assert!(e.message().contains("integer"), "{e}");
    assert_eq!(with("ids", json!("[1, \"x\"]")).parameter(), "ids[1]");
    assert_eq!(with("ids", json!("[1,")).parameter(), "ids");
    assert_eq!(with("flag", json!("yes")).parameter(), "flag");
    assert_eq!(with("ratio", json!("NaN")).parameter(), "ratio");
    assert_eq!(with("mode", json!("medium")).parameter(), "mode");
    assert_eq!(with("user", json!({"age": 1})).parameter(), "user.login");
    assert_eq!(
        with("user", json!({"login": "a", "age": 300})).parameter(),
        "user.age"
    );
    assert_eq!(with("password", json!(true)).parameter(), "password");

    let missing = read(json!({"password": "x", "ids": [], "flag": true, "ratio": 1})).unwrap_err();
    assert_eq!(missing.parameter(), "tracker_id");
    assert_eq!(missing.message(), "is required");
}

#[test]
fn unknown_parameters_are_ignored() {
    let p = read(
        json!({"tracker_id": 1, "password": "x", "ids": [], "flag": 1, "ratio": 1, "hash2": "?"}),
    )
    .unwrap();
    assert!(p.flag);
}
