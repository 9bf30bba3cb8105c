//! `POST /eco_fleet/v1/trackers/{tracker_id}/resampling` (spec document 3,
//! clarifications 21-28) against the real server, on data sent through the
//! real intake: CSV values worked out by hand, a snapshot, the memtable and
//! Parquet giving the same bytes, DST, defaults and every error.

use platform::{Calibration, NewTracker};
use schemas::HasCode;
use serde_json::{Value, json};

use crate::TestServer;
use crate::raw_data_snapshots::support::{ingest, zoned_account};

/// One call with `Authorization: NVX <key>`: status and body.
pub(crate) async fn resample(
    srv: &TestServer,
    key: &str,
    tracker: i64,
    interval: Option<&str>,
    body: &Value,
) -> (u16, String) {
    let mut request = srv
        .client()
        .post(srv.url(&format!("/eco_fleet/v1/trackers/{tracker}/resampling")))
        .header("authorization", format!("NVX {key}"))
        .header("accept", "text/csv")
        .json(body);
    if let Some(interval) = interval {
        request = request.query(&[("interval", interval)]);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let text = response.text().await.unwrap();
    if status == 200 {
        assert!(content_type.starts_with("text/csv"), "{content_type}");
    } else {
        assert!(
            content_type.starts_with("application/json"),
            "{content_type}"
        );
    }
    (status, text)
}

/// The error code and description of a JSON error body.
fn error(status: u16, body: &str) -> (u16, i64, String) {
    let value: Value = serde_json::from_str(body).unwrap();
    assert_eq!(value["success"], false, "{body}");
    (
        status,
        value["status"]["code"].as_i64().unwrap(),
        value["status"]["description"].as_str().unwrap().to_owned(),
    )
}

pub(crate) fn props(entries: &[(&str, &str, Option<i64>, Option<f64>)]) -> Value {
    let entries: Vec<Value> = entries
        .iter()
        .map(|(data_type, method, delta, fixed)| {
            json!({
                "data_type": data_type,
                "resampling_method": method,
                "delta": delta,
                "fixed_value": fixed,
            })
        })
        .collect();
    json!(entries)
}

async fn device_of(srv: &TestServer, tracker: i64) -> String {
    srv.store
        .tracker(schemas::TrackerId(tracker))
        .await
        .unwrap()
        .unwrap()
        .device_id
}

/// Readings of the first tracker of `account` on 2024-06-01 (UTC), at
/// irregular seconds: (second of the day, lls_level_1 raw, speed, ignition).
const READINGS: [(i64, f64, f64, bool); 8] = [
    (30, 2047.5, 0.0, false),   // 00:00:30
    (60, 2457.0, 0.0, true),    // 00:01:00, exactly on the grid
    (100, 4095.0, 2.0, true),   // 00:01:40
    (170, 1023.75, 10.0, true), // 00:02:50
    (185, 0.0, 40.0, true),     // 00:03:05
    (190, 2047.5, 50.0, true),  // 00:03:10
    (410, 3071.25, 0.0, false), // 00:06:50
    (540, 4095.0, 1.0, true),   // 00:09:00
];

fn reading_lines(device: &str) -> Vec<Value> {
    READINGS
        .iter()
        .map(|(second, level, speed, ignition)| {
            json!({
                "device_id": device,
                "msg_time": format!("2024-06-01T00:{:02}:{:02}Z", second / 60, second % 60),
                        "lat": 43.0 + *second as f64 / 1000.0,
                "lng": 76.0 + *second as f64 / 1000.0,
                "speed": speed,
                "inputs": {"lls_level_1": level},
                "states": {"ignition": ignition},
            })
        })
        .collect()
}

/// A UTC account with an API key, a tracker with the fuel sensor "Tank"
/// (calibration 0:0,4095:400 on `lls_level_1`) and [`READINGS`]: (key, tracker).
pub(crate) async fn account_with_readings(srv: &TestServer) -> (String, i64) {
    let (key, tracker) = zoned_account(srv, "resample@example.com", "UTC").await;
    srv.store
        .create_fuel_sensor(
            schemas::TrackerId(tracker),
            "Tank",
            "lls_level_1",
            Some(Calibration::parse("c", "0:0,4095:400").unwrap()),
        )
        .await
        .unwrap();
    let device = device_of(srv, tracker).await;
    ingest(srv, false, &reading_lines(&device)).await;
    (key, tracker)
}

pub(crate) const TEN_MINUTES: &str = "2024-06-01T00:00:00Z/2024-06-01T00:10:00Z";

#[tokio::test]
async fn every_data_type_on_a_two_minute_grid_matches_the_hand_computed_values() {
    let srv = TestServer::start().await;
    let (key, tracker) = account_with_readings(&srv).await;
    // The calibration is 0:0,4095:400, so litres = raw * 400 / 4095:
    // 2047.5 → 200, 2457 → 240, 4095 → 400, 1023.75 → 100, 0 → 0, 3071.25 → 300.
    let body = json!({
        "step_size": 2,
        "resampling_props": props(&[
            ("LAT", "PREVIOUS", None, None),
            ("FUEL", "MEDIAN_IN_WINDOW", Some(60), Some(-1.0)),
            ("MOVEMENT", "FOLLOWING", None, None),
            ("SPEED", "AVERAGE_IN_WINDOW", Some(30), None),
            ("LNG", "AVERAGE", None, None),
        ]),
    });
    let (status, csv) = resample(&srv, &key, tracker, Some(TEN_MINUTES), &body).await;
    assert_eq!(status, 200, "{csv}");
    // Grid 00:00, 00:02, 00:04, 00:06, 00:08.
    // FUEL median of [T-60 s, T+60 s]:
    //   00:00 → {00:00:30 200, 00:01:00 240} → 220
    //   00:02 → {00:01:00 240, 00:01:40 400, 00:02:50 100} → 240
    //   00:04 → {00:03:05 0, 00:03:10 200} → 100
    //   00:06 → {00:06:50 300} → 300
    //   00:08 → {00:09:00 400} → 400
    // SPEED mean of [T-30 s, T+30 s]: 00:00 → {00:00:30 0} → 0; 00:02 → {00:01:40 2} → 2;
    //   00:04, 00:06, 00:08 → none → \N (no fixed_value)
    // MOVEMENT per reading (threshold 3 km/h, ignition): 0,2,2,1,1,1,0,2; FOLLOWING:
    //   00:00 → first after: 00:00:30 → 0; 00:02 → 00:02:50 → 1; 00:04 → 00:06:50 → 0;
    //   00:06 → 00:06:50 → 0; 00:08 → 00:09:00 → 2
    // LAT PREVIOUS: 00:00 → before the first reading: the first; 00:02 → 00:01:40;
    //   00:04 → 00:03:10; 00:06 → 00:03:10; 00:08 → 00:06:50
    // LNG AVERAGE of the neighbours: 00:00 → head: the first; 00:02 → 00:01:40 and 00:02:50;
    //   00:04 and 00:06 → 00:03:10 and 00:06:50; 00:08 → 00:06:50 and 00:09:00
    let lat = |s: i64| 43.0 + s as f64 / 1000.0;
    let lng = |s: i64| 76.0 + s as f64 / 1000.0;
    let expected = format!(
        "Time,Tank,SPEED,MOVEMENT,LNG,LAT\n\
         2024-06-01T00:00,220,0,0,{},{}\n\
         2024-06-01T00:02,240,2,1,{},{}\n\
         2024-06-01T00:04,100,\\N,0,{},{}\n\
         2024-06-01T00:06,300,\\N,0,{},{}\n\
         2024-06-01T00:08,400,\\N,2,{},{}\n",
        lng(30),
        lat(30),
        (lng(100) + lng(170)) / 2.0,
        lat(100),
        (lng(190) + lng(410)) / 2.0,
        lat(190),
        (lng(190) + lng(410)) / 2.0,
        lat(190),
        (lng(410) + lng(540)) / 2.0,
        lat(410),
    );
    assert_eq!(csv, expected);
    // The same bytes once the rows are in Parquet.
    srv.ingest.flush().unwrap();
    let (_, from_parquet) = resample(&srv, &key, tracker, Some(TEN_MINUTES), &body).await;
    assert_eq!(from_parquet, csv);
}

#[tokio::test]
async fn every_method_with_and_without_delta_snapshot() {
    let srv = TestServer::start().await;
    let (key, tracker) = account_with_readings(&srv).await;
    let mut answers = String::new();
    for (method, delta) in [
        ("FOLLOWING", None),
        ("FOLLOWING", Some(45)),
        ("PREVIOUS", None),
        ("PREVIOUS", Some(45)),
        ("AVERAGE", None),
        ("AVERAGE", Some(45)),
        ("MEDIAN_IN_WINDOW", Some(45)),
        ("AVERAGE_IN_WINDOW", Some(45)),
    ] {
        for fixed in [None, Some(7.5)] {
            let body = json!({
                "step_size": 1,
                "resampling_props": props(&[
                    ("FUEL", method, delta, fixed),
                    ("SPEED", method, delta, fixed),
                ]),
            });
            let (status, csv) = resample(&srv, &key, tracker, Some(TEN_MINUTES), &body).await;
            assert_eq!(status, 200, "{csv}");
            answers.push_str(&format!(
                "## {method} delta={delta:?} fixed_value={fixed:?}\n{csv}\n"
            ));
        }
    }
    insta::assert_snapshot!("resampling_methods", answers);
}

#[tokio::test]
async fn default_interval_is_the_last_seven_days_ending_now() {
    let srv = TestServer::start().await;
    let (key, tracker) = account_with_readings(&srv).await;
    // The server's clock is 2024-06-01T08:00:00Z.
    let body =
        json!({"step_size": 60, "resampling_props": props(&[("FUEL", "PREVIOUS", None, None)])});
    let (status, csv) = resample(&srv, &key, tracker, None, &body).await;
    assert_eq!(status, 200, "{csv}");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 7 * 24, "{csv}");
    assert_eq!(lines[1], "2024-05-25T08:00,200");
    assert_eq!(lines.last().copied(), Some("2024-06-01T07:00,400"));
    // `P7D/<end>` names the same range.
    let (_, same) = resample(&srv, &key, tracker, Some("P7D/2024-06-01T08:00:00Z"), &body).await;
    assert_eq!(same, csv);
}

#[tokio::test]
async fn time_is_wall_clock_in_the_tracker_zone_across_dst_changes() {
    let srv = TestServer::start().await;
    let (key, tracker) = zoned_account(&srv, "berlin-resample@example.com", "Europe/Berlin").await;
    let body = json!({"step_size": 15, "resampling_props": props(&[("SPEED", "PREVIOUS", Some(60), None)])});
    // Spring forward: 02:00 local does not exist; rows stay 15 minutes apart.
    let (status, csv) = resample(
        &srv,
        &key,
        tracker,
        Some("2024-03-31T00:30:00Z/2024-03-31T01:30:00Z"),
        &body,
    )
    .await;
    assert_eq!(status, 200, "{csv}");
    assert_eq!(
        csv,
        "Time,SPEED\n2024-03-31T01:30,\\N\n2024-03-31T01:45,\\N\n2024-03-31T03:00,\\N\n2024-03-31T03:15,\\N\n"
    );
    // Fall back: 02:00-02:59 local happens twice; both are real minutes.
    let (_, csv) = resample(
        &srv,
        &key,
        tracker,
        Some("2024-10-27T00:30:00Z/2024-10-27T01:30:00Z"),
        &body,
    )
    .await;
    assert_eq!(
        csv,
        "Time,SPEED\n2024-10-27T02:30,\\N\n2024-10-27T02:45,\\N\n2024-10-27T02:00,\\N\n2024-10-27T02:15,\\N\n"
    );
    // A tracker's own zone wins over the owner's.
    let tokyo = srv
        .store
        .create_tracker(NewTracker {
            user_id: srv
                .store
                .tracker(schemas::TrackerId(tracker))
                .await
                .unwrap()
                .unwrap()
                .user_id,
            label: "Tokyo".into(),
            device_id: "490000000000777".into(),
            model: "fmb920".into(),
            plan_id: None,
            store_period: None,
            time_zone: Some("Asia/Tokyo".into()),
        })
        .await
        .unwrap();
    let (_, csv) = resample(
        &srv,
        &key,
        tokyo.0,
        Some("2024-03-31T00:30:00Z/PT15M"),
        &body,
    )
    .await;
    assert_eq!(csv, "Time,SPEED\n2024-03-31T09:30,\\N\n");
}

#[tokio::test]
async fn sensors_are_named_columns_and_need_a_calibration() {
    let srv = TestServer::start().await;
    let (key, tracker) = account_with_readings(&srv).await;
    let id = schemas::TrackerId(tracker);
    srv.store
        .create_fuel_sensor(
            id,
            "Tank \"B\", right",
            "lls_level_1",
            Some(Calibration::parse("c", "0:0,4095:100").unwrap()),
        )
        .await
        .unwrap();
    let body =
        json!({"step_size": 5, "resampling_props": props(&[("FUEL", "PREVIOUS", None, None)])});
    let (status, csv) = resample(&srv, &key, tracker, Some(TEN_MINUTES), &body).await;
    assert_eq!(status, 200, "{csv}");
    assert_eq!(
        csv,
        "Time,Tank,\"Tank \"\"B\"\", right\"\n2024-06-01T00:00,200,50\n2024-06-01T00:05,200,50\n"
    );
    // A tracker without sensors gets no fuel column.
    let bare = srv
        .store
        .create_tracker(NewTracker {
            user_id: srv.store.tracker(id).await.unwrap().unwrap().user_id,
            label: "No sensors".into(),
            device_id: "356307042449999".into(),
            model: "fmb920".into(),
            plan_id: None,
            store_period: None,
            time_zone: None,
        })
        .await
        .unwrap();
    let (status, csv) = resample(&srv, &key, bare.0, Some(TEN_MINUTES), &body).await;
    assert_eq!(
        (status, csv.as_str()),
        (200, "Time\n2024-06-01T00:00\n2024-06-01T00:05\n")
    );
    // A sensor with no calibration table: 235.
    srv.store
        .create_fuel_sensor(id, "Raw", "lls_level_2", None)
        .await
        .unwrap();
    let (status, body_text) = resample(&srv, &key, tracker, Some(TEN_MINUTES), &body).await;
    let (http, code, description) = error(status, &body_text);
    assert_eq!((http, code), (400, 235), "{description}");
    assert!(description.contains("Raw"), "{description}");
    // Without FUEL the uncalibrated sensor does not matter.
    let speed =
        json!({"step_size": 5, "resampling_props": props(&[("SPEED", "PREVIOUS", None, None)])});
    let (status, _) = resample(&srv, &key, tracker, Some(TEN_MINUTES), &speed).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn movement_follows_the_tracker_settings() {
    let srv = TestServer::start().await;
    let (key, tracker) = account_with_readings(&srv).await;
    let body = json!({"step_size": 1, "resampling_props": props(&[("MOVEMENT", "PREVIOUS", Some(0), None)])});
    // Readings on the grid: 00:01:00 (speed 0, ignition on) and 00:09:00 (speed 1, ignition on).
    let (_, csv) = resample(&srv, &key, tracker, Some(TEN_MINUTES), &body).await;
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[2], "2024-06-01T00:01,2");
    assert_eq!(rows[10], "2024-06-01T00:09,2");
    // Threshold 0.5 km/h: 1 km/h is moving.
    srv.store
        .set_tracker_movement(schemas::TrackerId(tracker), 0.5, "states.ignition")
        .await
        .unwrap();
    let (_, csv) = resample(&srv, &key, tracker, Some(TEN_MINUTES), &body).await;
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[2], "2024-06-01T00:01,2");
    assert_eq!(rows[10], "2024-06-01T00:09,1");
    // Settings are checked.
    let id = schemas::TrackerId(tracker);
    for (threshold, source) in [
        (-1.0, "states.ignition"),
        (f64::NAN, "states.ignition"),
        (3.0, "ignition"),
        (3.0, "discrete_inputs.0"),
        (3.0, "flags.lbs"),
    ] {
        let err = srv
            .store
            .set_tracker_movement(id, threshold, source)
            .await
            .unwrap_err();
        assert_eq!(
            err.code(),
            schemas::ErrorCode::InvalidParameters,
            "{source}"
        );
    }
    // An ignition source the tracker never reports: below the threshold is parking.
    srv.store
        .set_tracker_movement(schemas::TrackerId(tracker), 3.0, "discrete_inputs.4")
        .await
        .unwrap();
    let (_, csv) = resample(&srv, &key, tracker, Some(TEN_MINUTES), &body).await;
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[2], "2024-06-01T00:01,0");
    assert_eq!(rows[10], "2024-06-01T00:09,0");
}

#[tokio::test]
async fn bad_requests_name_the_failing_field() {
    let srv = TestServer::start().await;
    let (key, tracker) = account_with_readings(&srv).await;
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"resampling_props": props(&[("FUEL", "PREVIOUS", None, None)])}),
            "`step_size`",
        ),
        (
            json!({"step_size": 0, "resampling_props": props(&[("FUEL", "PREVIOUS", None, None)])}),
            "`step_size`",
        ),
        (
            json!({"step_size": 1.5, "resampling_props": props(&[("FUEL", "PREVIOUS", None, None)])}),
            "`step_size`",
        ),
        (json!({"step_size": 1}), "`resampling_props`"),
        (
            json!({"step_size": 1, "resampling_props": []}),
            "`resampling_props`",
        ),
        (
            json!({"step_size": 1, "resampling_props": props(&[("FUEL", "PREVIOUS", None, None), ("FUEL", "AVERAGE", None, None)])}),
            "`resampling_props[1].data_type`",
        ),
        (
            json!({"step_size": 1, "resampling_props": props(&[("SPEED", "MEDIAN_IN_WINDOW", None, None)])}),
            "`resampling_props[0].delta`",
        ),
        (
            json!({"step_size": 1, "resampling_props": props(&[("LAT", "PREVIOUS", None, None), ("SPEED", "AVERAGE_IN_WINDOW", None, Some(1.0))])}),
            "`resampling_props[1].delta`",
        ),
        (
            json!({"step_size": 1, "resampling_props": props(&[("SPEED", "PREVIOUS", Some(-5), None)])}),
            "`resampling_props[0].delta`",
        ),
        (
            json!({"step_size": 1, "resampling_props": props(&[("SPEED", "NEAREST", None, None)])}),
            "`resampling_props[0].resampling_method`",
        ),
        (
            json!({"step_size": 1, "resampling_props": props(&[("TEMPERATURE", "PREVIOUS", None, None)])}),
            "`resampling_props[0].data_type`",
        ),
        (
            json!({"step_size": 1, "resampling_props": [{"data_type": "SPEED", "resampling_method": "PREVIOUS", "delta": null, "fixed_value": "x"}]}),
            "`resampling_props[0].fixed_value`",
        ),
        (
            json!({"step_size": 1, "resampling_props": [{"data_type": "SPEED", "resampling_method": "PREVIOUS", "window": 5}]}),
            "`resampling_props[0].window`",
        ),
    ];
    for (body, field) in cases {
        let (status, text) = resample(&srv, &key, tracker, Some(TEN_MINUTES), &body).await;
        let (http, code, description) = error(status, &text);
        assert_eq!((http, code), (400, 7), "{body}: {description}");
        assert!(
            description.contains(field),
            "{body}: {description} should name {field}"
        );
    }
    // A malformed interval is code 7 naming it; a span over the limit is 211.
    let body =
        json!({"step_size": 1, "resampling_props": props(&[("SPEED", "PREVIOUS", None, None)])});
    let (status, text) = resample(&srv, &key, tracker, Some("yesterday"), &body).await;
    let (_, code, description) = error(status, &text);
    assert_eq!(code, 7, "{description}");
    assert!(description.contains("`interval`"), "{description}");
    let (status, text) = resample(
        &srv,
        &key,
        tracker,
        Some("P40D/2024-06-01T00:00:00Z"),
        &body,
    )
    .await;
    assert_eq!(error(status, &text).1, 211);
}

#[tokio::test]
async fn trackers_that_are_not_the_callers_or_blocked_are_refused() {
    let srv = TestServer::start().await;
    let (key, tracker) = account_with_readings(&srv).await;
    let other = srv.account("other-resample@example.com").await;
    let body =
        json!({"step_size": 1, "resampling_props": props(&[("SPEED", "PREVIOUS", None, None)])});
    // Someone else's tracker and an id that does not exist are both 204.
    for id in [other.trackers[0].0, 999_999] {
        let (status, text) = resample(&srv, &key, id, Some(TEN_MINUTES), &body).await;
        assert_eq!(error(status, &text).1, 204, "{text}");
    }
    srv.store
        .set_tracker_blocked(schemas::TrackerId(tracker), true)
        .await
        .unwrap();
    let (status, text) = resample(&srv, &key, tracker, Some(TEN_MINUTES), &body).await;
    assert_eq!(error(status, &text).1, 208, "{text}");
    // No credential, or a wrong one.
    let response = srv
        .client()
        .post(srv.url(&format!("/eco_fleet/v1/trackers/{tracker}/resampling")))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let (status, text) = resample(
        &srv,
        "0123456789abcdef0123456789abcdef",
        tracker,
        Some(TEN_MINUTES),
        &body,
    )
    .await;
    assert_ne!(status, 200, "{text}");
}
