//! Snapshots of the raw data CSV export (`/dwh/v1/tracker/raw_data/read`,
//! spec document 3 and clarifications 13-20) on data sent through the real
//! intake. Every read runs twice, from the memtable and, after a flush, from
//! Parquet, and both answers must be the same bytes.

use serde_json::{Value, json};

use crate::TestServer;

mod property;
pub(crate) mod support;

use support::{ingest, read, read_both, zoned_account};

const SIMPLE: [&str; 17] = [
    "server_time",
    "gps_fix_type",
    "lat",
    "lng",
    "speed",
    "alt",
    "satellites",
    "heading",
    "precision",
    "hdop",
    "pdop",
    "event_id",
    "mn_name",
    "mn_roaming",
    "mn_code",
    "mn_csq",
    "mn_type",
];

#[tokio::test]
async fn every_simple_column_with_quoting_and_nulls() {
    let srv = TestServer::start().await;
    let acc = srv.account("simple@example.com").await;
    let t = acc.trackers[0].0;
    ingest(&srv, true, &[
        json!({"tracker_id": t, "msg_time": "2024-06-01T06:00:00Z", "server_time": "2024-06-01T06:00:05.999Z",
               "gps_fix_type": "HAS_FIX", "lat": 43.25, "lng": 76.95, "speed": 12.5, "alt": 780, "satellites": 9,
               "heading": 359, "precision": 5, "hdop": 0.8, "pdop": 1.25, "event_id": 12_345_678_901_i64,
               "mn_name": "Beeline, \"KZ\"\nline 2", "mn_roaming": 0, "mn_code": 40101, "mn_csq": 23, "mn_type": "LTE"}),
        json!({"tracker_id": t, "msg_time": "2024-06-01T06:00:01Z", "server_time": "2024-06-01T06:00:06Z",
               "lat": null, "mn_name": null, "gps_fix_type": null}),
        json!({"tracker_id": t, "msg_time": "2024-06-01T06:00:02Z", "server_time": "2024-06-01T06:00:07Z",
               "gps_fix_type": "LAST_KNOWN_POSITION", "lat": -33.8688, "lng": 151.2093, "speed": 0.1, "alt": -28,
               "satellites": -1, "heading": 0, "precision": 0, "hdop": -1, "pdop": 24296.444, "event_id": 0,
               "mn_name": "", "mn_roaming": -1, "mn_code": 1, "mn_csq": 99, "mn_type": "NR"}),
    ])
    .await;
    // In the spec's order, then reversed: the header follows the request.
    let reversed: Vec<&str> = SIMPLE.iter().rev().copied().collect();
    let requests = [
        json!({"hash": acc.key, "tracker_id": t, "interval": "2024-06-01T00:00:00Z/P1D", "columns": SIMPLE}),
        json!({"hash": acc.key, "tracker_id": t, "interval": "2024-06-01T00:00:00Z/P1D", "columns": reversed}),
    ];
    let bodies = read_both(&srv, &requests).await;
    insta::assert_snapshot!("simple_columns", bodies[0]);
    insta::assert_snapshot!("simple_columns_reversed", bodies[1]);
}

#[tokio::test]
async fn complex_columns_inner_values_and_maps() {
    let srv = TestServer::start().await;
    let acc = srv.account("complex@example.com").await;
    let t = acc.trackers[0].0;
    ingest(&srv, false, &[
        json!({"tracker_id": t, "msg_time": "2024-06-01T06:00:00Z", "flags": 5,
               "inputs": {"x": 1.5, "lls_level_1": 512, "board_voltage": 13.8},
               "states": {"mode": "eco, \"fast\"\nnext", "ignition": true, "odometer": 12345.6},
               "discrete_inputs": {"1": 1, "2": 0, "10": 1}, "discrete_outputs": {"3": 1, "1": 0}}),
        json!({"tracker_id": t, "msg_time": "2024-06-01T06:00:10Z", "flags": 2, "inputs": {"x": 0},
               "states": {"ignition": false}, "discrete_inputs": {"2": 1}}),
        json!({"tracker_id": t, "msg_time": "2024-06-01T06:00:20Z", "lat": 1}),
    ])
    .await;
    let columns = json!([
        "flags",
        "flags.location_valid",
        "flags.lbs",
        "flags.soft_lbs",
        "flags.nope",
        "inputs.x",
        "inputs",
        "states",
        "states.mode",
        "states.ignition",
        "states.odometer",
        "discrete_inputs.2",
        "discrete_outputs",
        "discrete_inputs",
        "inputs.unknown",
        "states.unknown",
        "discrete_outputs.7"
    ]);
    let requests = [
        json!({"hash": acc.key, "tracker_id": t, "interval": "2024-06-01T00:00:00Z/P1D", "columns": columns}),
    ];
    let bodies = read_both(&srv, &requests).await;
    insta::assert_snapshot!("complex_columns", bodies[0]);
}

#[tokio::test]
async fn star_expands_in_place_alphabetically_over_the_range_only() {
    let srv = TestServer::start().await;
    let acc = srv.account("star@example.com").await;
    let t = acc.trackers[0].0;
    ingest(&srv, false, &[
        // Two days before the range: its names must not be listed.
        json!({"tracker_id": t, "msg_time": "2024-05-29T06:00:00Z", "inputs": {"old_input": 1}, "states": {"old_state": 1},
               "discrete_outputs": {"4": 1}}),
        json!({"tracker_id": t, "msg_time": "2024-06-01T06:00:00Z", "speed": 3, "lat": 10.5,
               "discrete_inputs": {"1": 1, "10": 0, "2": 1}, "states": {"b": "x", "a": 2}}),
        json!({"tracker_id": t, "msg_time": "2024-06-01T07:00:00Z", "discrete_inputs": {"2": 0}, "states": {"c": true}}),
        // Another tracker of the same account: never listed.
        json!({"tracker_id": acc.trackers[1].0, "msg_time": "2024-06-01T06:30:00Z", "inputs": {"secret": 1},
               "discrete_outputs": {"9": 1}}),
    ])
    .await;
    let range = "2024-06-01T00:00:00Z/2024-06-01T12:00:00Z";
    let requests = [
        json!({"hash": acc.key, "tracker_id": t, "interval": range,
               "columns": ["speed", "discrete_inputs.*", "lat", "states.*", "discrete_outputs.*", "inputs.*", "flags.*"]}),
        json!({"hash": acc.key, "tracker_id": t, "interval": range, "columns": ["inputs.*"]}),
    ];
    let bodies = read_both(&srv, &requests).await;
    insta::assert_snapshot!("star_expansion", bodies[0]);
    assert_eq!(
        bodies[1], "\"msg_time\"\n\"2024-06-01T15:00:00+0900\"\n\"2024-06-01T16:00:00+0900\"\n",
        "`.*` with no match adds no column"
    );
}

#[tokio::test]
async fn berlin_account_across_the_spring_dst_change() {
    let srv = TestServer::start().await;
    let (key, t) = zoned_account(&srv, "berlin@example.com", "Europe/Berlin").await;
    let times = [
        "2024-03-30T23:00:00Z",
        "2024-03-31T00:59:59Z",
        "2024-03-31T01:00:00Z",
        "2024-03-31T01:30:00Z",
        "2024-03-31T02:00:00Z",
        // April 1, 00:30 CEST: outside the 23-hour day of March 31.
        "2024-03-31T22:30:00Z",
    ];
    let lines: Vec<Value> = times
        .iter()
        .enumerate()
        .map(|(i, m)| json!({"tracker_id": t, "msg_time": m, "server_time": m, "speed": i}))
        .collect();
    ingest(&srv, true, &lines).await;
    let columns = json!(["server_time", "speed"]);
    let base = json!({"hash": key, "tracker_id": t, "columns": columns,
                      "from": "2024-03-31T00:00:00+01:00", "to": "2024-03-31T05:00:00+0200"});
    let with = |extra: Value| {
        let mut params = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        params
    };
    let requests = [
        base.clone(),
        with(json!({"time_zone": "UTC"})),
        with(json!({"time_zone": "Asia/Kolkata"})),
        // Wall clock in the account's zone, both ways; 02:30 is in the gap
        // and reads as 03:00 CEST (decision 44).
        with(
            json!({"iso_datetime": false, "from": "2024-03-31 00:00:00", "to": "2024-03-31 02:30:00"}),
        ),
        with(
            json!({"iso_datetime": false, "from": "2024-03-31 02:30:00", "to": "2024-03-31 04:00:00"}),
        ),
        // Days are calendar days in the account's zone: 23 h on this one.
        with(json!({"from": null, "to": null, "interval": "2024-03-31T00:00:00+01:00/P1D"})),
        with(json!({"from": null, "to": null, "interval": "PT2H/2024-03-31T03:30:00+02"})),
    ];
    let bodies = read_both(&srv, &requests).await;
    for (name, body) in [
        "berlin_dst",
        "berlin_dst_utc",
        "berlin_dst_kolkata",
        "berlin_dst_wall_clock_before_gap",
        "berlin_dst_wall_clock_from_gap",
        "berlin_dst_p1d",
        "berlin_dst_duration_end",
    ]
    .iter()
    .zip(&bodies)
    {
        insta::assert_snapshot!(*name, body);
    }
}

#[tokio::test]
async fn every_interval_form_selects_the_same_rows() {
    let srv = TestServer::start().await;
    let acc = srv.account("interval@example.com").await;
    let t = acc.trackers[0].0;
    let times = [
        "2024-05-31T23:59:59Z",
        "2024-06-01T00:00:00Z",
        "2024-06-01T03:00:00Z",
        "2024-06-01T05:59:59.999Z",
        "2024-06-01T06:00:00Z",
    ];
    let lines: Vec<Value> = times
        .iter()
        .enumerate()
        .map(|(i, m)| json!({"tracker_id": t, "msg_time": m, "alt": i}))
        .collect();
    ingest(&srv, false, &lines).await;
    let forms = [
        json!({"from": "2024-06-01T00:00:00Z", "to": "2024-06-01T06:00:00Z"}),
        json!({"from": "2024-06-01T09:00+09:00", "to": "2024-06-01T15:00:00.000+0900"}),
        json!({"interval": "2024-06-01T00:00:00Z/2024-06-01T06:00:00Z"}),
        json!({"interval": "2024-06-01T00:00:00Z/PT6H"}),
        json!({"interval": "PT6H/2024-06-01T06:00:00Z"}),
        json!({"interval": "PT360M/2024-06-01T15:00:00+09"}),
        json!({"iso_datetime": false, "from": "2024-06-01 09:00:00", "to": "2024-06-01 15:00:00"}),
        json!({"iso_datetime": false, "interval": "2024-06-01 09:00:00/PT6H"}),
    ];
    let requests: Vec<Value> = forms
        .iter()
        .map(|form| {
            let mut params = form.clone();
            params["hash"] = json!(acc.key);
            params["tracker_id"] = json!(t);
            params["columns"] = json!(["alt"]);
            params
        })
        .collect();
    let bodies = read_both(&srv, &requests).await;
    insta::assert_snapshot!("interval_forms", bodies[0]);
    for (form, body) in forms.iter().zip(&bodies).take(6) {
        assert_eq!(body, &bodies[0], "{form}");
    }
    insta::assert_snapshot!("interval_forms_wall_clock", bodies[6]);
    assert_eq!(bodies[7], bodies[6], "wall-clock interval");
}

#[tokio::test]
async fn server_time_filter_forms_select_the_late_batch() {
    let srv = TestServer::start().await;
    let acc = srv.account("server-time@example.com").await;
    let t = acc.trackers[0].0;
    // The middle one was buffered on the device on May 31 and uploaded on June 1.
    // One body in message-time order: see the report on memtable ordering.
    ingest(&srv, true, &[
        json!({"tracker_id": t, "msg_time": "2024-05-31T10:00:00Z", "server_time": "2024-05-31T10:00:01Z", "lat": 1.5,
               "inputs": {"on_time": 1}}),
        json!({"tracker_id": t, "msg_time": "2024-05-31T11:00:00Z", "server_time": "2024-06-01T07:30:00Z", "lat": 2.5,
               "inputs": {"late": 2}}),
        json!({"tracker_id": t, "msg_time": "2024-05-31T12:00:00Z", "server_time": "2024-05-31T12:00:02Z", "lat": 3.5}),
    ])
    .await;
    let base = json!({"hash": acc.key, "tracker_id": t, "interval": "2024-05-31T00:00:00Z/P1D",
                      "columns": ["lat", "server_time", "inputs.late", "inputs.on_time"]});
    let filtered = |filter: Value| {
        let mut params = base.clone();
        params["server_time_filter"] = filter;
        params
    };
    let requests = [
        base.clone(),
        filtered(json!("2024-06-01T00:00:00Z/2024-06-02T00:00:00Z")),
        filtered(json!({"from": "2024-06-01T00:00:00Z", "to": "2024-06-02T00:00:00Z"})),
        filtered(json!({"interval": "2024-06-01T00:00:00Z/P1D"})),
        filtered(json!({"interval": "P1D/2024-06-01T00:00:00Z"})),
    ];
    let bodies = read_both(&srv, &requests).await;
    insta::assert_snapshot!("server_time_all", bodies[0]);
    insta::assert_snapshot!("server_time_late", bodies[1]);
    assert_eq!(bodies[2], bodies[1], "{{from, to}}");
    assert_eq!(bodies[3], bodies[1], "{{interval}}");
    insta::assert_snapshot!("server_time_on_time", bodies[4]);
}

#[tokio::test]
async fn errors_7_201_204_208() {
    let srv = TestServer::start().await;
    let acc = srv.account("errors@example.com").await;
    let other = srv.account("errors-other@example.com").await;
    let t = acc.trackers[0].0;
    ingest(
        &srv,
        false,
        &[json!({"tracker_id": t, "msg_time": "2024-06-01T06:00:00Z", "lat": 1})],
    )
    .await;
    let params = |hash: &str, tracker: i64, from: &str, to: &str| json!({"hash": hash, "tracker_id": tracker, "from": from, "to": to, "columns": ["lat"]});
    let (from, to) = ("2024-06-01T00:00:00Z", "2024-06-02T00:00:00Z");
    for (from, to) in [(to, from), (from, from)] {
        let answer = srv
            .post(
                "/dwh/v1/tracker/raw_data/read",
                params(&acc.key, t, from, to),
            )
            .await;
        answer.error(7, 400);
        assert_eq!(answer.body["errors"][0]["parameter"], "to", "{answer:?}");
    }
    let path = "/dwh/v1/tracker/raw_data/read";
    srv.post(path, params(&acc.key, 987_654, from, to))
        .await
        .error(201, 400);
    srv.post(path, params(&other.key, t, from, to))
        .await
        .error(204, 404);
    let sub = srv
        .subuser(&acc, "errors-sub@example.com", Vec::new())
        .await;
    let (status, body) = read(&srv, &params(&sub, t, from, to)).await;
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            "\"msg_time\",\"lat\"\n\"2024-06-01T15:00:00+0900\",1\n"
        )
    );
    srv.post(path, params(&sub, acc.trackers[1].0, from, to))
        .await
        .error(204, 404);
    srv.store
        .set_tracker_blocked(acc.trackers[0], true)
        .await
        .unwrap();
    srv.post(path, params(&acc.key, t, from, to))
        .await
        .error(208, 403);
}
