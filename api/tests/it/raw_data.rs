//! `/dwh/v1/tracker/raw_data/*` through the real server, on data sent through the real intake.

use platform::Right;
use schemas::TelemetrySource;
use serde_json::{Value, json};

use crate::{Account, TestServer};

async fn ingest(srv: &TestServer, backfill: bool, lines: &[Value]) {
    let token = srv.ingest_token(backfill).await;
    let answer = srv.intake(&token, lines).await;
    assert_eq!(answer.ok()["rejected"], json!([]), "{answer:?}");
}

pub(crate) async fn csv(srv: &TestServer, params: Value) -> (u16, String) {
    let response = srv
        .client()
        .post(srv.url("/dwh/v1/tracker/raw_data/read"))
        .json(&params)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

fn fixture(acc: &Account) -> Vec<Value> {
    let t = acc.trackers[0].0;
    vec![
        json!({"tracker_id": t, "msg_time": "2024-06-01T06:00:00Z", "lat": 43.25, "lng": 76.95, "speed": 0, "gps_fix_type": "HAS_FIX",
               "mn_name": "Kcell \"LTE\"", "flags": 5, "inputs": {"lls_level_1": 512, "board_voltage": 13.8},
               "states": {"ignition": false, "mode": "eco"}, "discrete_inputs": {"2": 1}}),
        json!({"tracker_id": t, "msg_time": "2024-06-01T06:00:10Z", "lat": 43.2501, "speed": 12.5, "inputs": {"lls_level_1": 511.5},
               "states": {"ignition": true}}),
        json!({"tracker_id": acc.trackers[1].0, "msg_time": "2024-06-01T06:00:05Z", "lat": 1.0, "inputs": {"secret_input": 1}}),
    ]
}

#[tokio::test]
async fn csv_is_exact_from_memory_and_from_parquet() {
    let srv = TestServer::start().await;
    let acc = srv.account("raw@example.com").await;
    ingest(&srv, false, &fixture(&acc)).await;
    let params = json!({"hash": acc.key, "tracker_id": acc.trackers[0].0, "from": "2024-06-01T00:00:00Z", "to": "2024-06-02T00:00:00Z",
        "columns": ["lat", "speed", "gps_fix_type", "mn_name", "flags", "flags.soft_lbs", "inputs.*", "states", "discrete_inputs.2", "inputs.nope"]});
    let expected = concat!(
        "\"msg_time\",\"lat\",\"speed\",\"gps_fix_type\",\"mn_name\",\"flags\",\"flags.soft_lbs\",\"inputs.board_voltage\",\"inputs.lls_level_1\",\"states\",\"discrete_inputs.2\",\"inputs.nope\"\n",
        "\"2024-06-01T15:00:00+0900\",43.25,0,\"HAS_FIX\",\"Kcell \"\"LTE\"\"\",5,1,13.8,512,\"{\"\"ignition\"\":false,\"\"mode\"\":\"\"eco\"\"}\",1,\\N\n",
        "\"2024-06-01T15:00:10+0900\",43.2501,12.5,\\N,\\N,\\N,\\N,\\N,511.5,\"{\"\"ignition\"\":true}\",\\N,\\N\n",
    );
    let (status, body) = csv(&srv, params.clone()).await;
    assert_eq!(
        (status, body.as_str()),
        (200, expected),
        "read-your-writes, from the memtable"
    );
    srv.ingest.flush().unwrap();
    let (status, body) = csv(&srv, params).await;
    assert_eq!(
        (status, body.as_str()),
        (200, expected),
        "the same bytes from Parquet"
    );
}

#[tokio::test]
async fn late_messages_are_found_by_message_time_and_selected_by_server_time() {
    let srv = TestServer::start().await;
    let acc = srv.account("late@example.com").await;
    let t = acc.trackers[0].0;
    // Buffered offline on May 30, uploaded June 1 at 07:30.
    ingest(&srv, true, &[json!({"tracker_id": t, "msg_time": "2024-05-30T10:00:00Z", "server_time": "2024-06-01T07:30:00Z", "lat": 1.5})]).await;
    ingest(&srv, true, &[json!({"tracker_id": t, "msg_time": "2024-05-30T11:00:00Z", "server_time": "2024-05-30T11:00:01Z", "lat": 2.5})]).await;
    srv.ingest.flush().unwrap();
    let base = json!({"hash": acc.key, "tracker_id": t, "interval": "2024-05-30T00:00:00Z/P1D", "columns": ["lat", "server_time"], "time_zone": "UTC"});
    let (_, all) = csv(&srv, base.clone()).await;
    assert_eq!(all.lines().count(), 3, "{all}");
    let mut late = base.clone();
    late["server_time_filter"] = json!("2024-06-01T00:00:00Z/2024-06-02T00:00:00Z");
    let (_, body) = csv(&srv, late).await;
    assert_eq!(
        body,
        "\"msg_time\",\"lat\",\"server_time\"\n\"2024-05-30T10:00:00Z\",1.5,\"2024-06-01T07:30:00Z\"\n"
    );
    let mut on_time = base;
    on_time["server_time_filter"] =
        json!({"to": "2024-06-01T00:00:00Z", "from": "2024-05-01T00:00:00Z"});
    let (_, body) = csv(&srv, on_time).await;
    assert_eq!(
        body,
        "\"msg_time\",\"lat\",\"server_time\"\n\"2024-05-30T11:00:00Z\",2.5,\"2024-05-30T11:00:01Z\"\n"
    );
}

#[tokio::test]
async fn another_accounts_tracker_is_204_unknown_201_blocked_208_and_sub_users_are_scoped() {
    let srv = TestServer::start().await;
    let acc = srv.account("owner@example.com").await;
    let other = srv.account("stranger@example.com").await;
    ingest(&srv, false, &fixture(&acc)).await;
    let read = |hash: &str, tracker: i64| json!({"hash": hash, "tracker_id": tracker, "interval": "2024-06-01T00:00:00Z/P1D", "columns": ["lat"]});
    let answer = srv
        .post(
            "/dwh/v1/tracker/raw_data/read",
            read(&other.key, acc.trackers[0].0),
        )
        .await;
    answer.error(204, 404);
    srv.post("/dwh/v1/tracker/raw_data/read", read(&acc.key, 999_999))
        .await
        .error(201, 400);
    let sub = srv
        .subuser(&acc, "scoped@example.com", vec![Right::VehicleUpdate])
        .await;
    let (status, _) = csv(&srv, read(&sub, acc.trackers[0].0)).await;
    assert_eq!(status, 200, "the sub-user sees its tracker");
    srv.post(
        "/dwh/v1/tracker/raw_data/read",
        read(&sub, acc.trackers[1].0),
    )
    .await
    .error(204, 404);
    srv.store
        .set_tracker_blocked(acc.trackers[0], true)
        .await
        .unwrap();
    srv.post(
        "/dwh/v1/tracker/raw_data/read",
        read(&acc.key, acc.trackers[0].0),
    )
    .await
    .error(208, 403);
    srv.post(
        "/dwh/v1/tracker/raw_data/get_inputs",
        json!({"hash": acc.key, "tracker_id": acc.trackers[0].0}),
    )
    .await
    .error(208, 403);
}

#[tokio::test]
async fn bad_parameters_are_7_naming_them() {
    let srv = TestServer::start().await;
    let acc = srv.account("params@example.com").await;
    let t = acc.trackers[0].0;
    let cases = [
        (
            json!({"interval": "2024-06-01T00:00:00Z/P1D", "columns": ["latitude"]}),
            "columns",
        ),
        (
            json!({"interval": "2024-06-01T00:00:00Z/P1D", "columns": []}),
            "columns",
        ),
        (
            json!({"from": "2024-06-02T00:00:00Z", "to": "2024-06-01T00:00:00Z", "columns": ["lat"]}),
            "to",
        ),
        (
            json!({"interval": "yesterday", "columns": ["lat"]}),
            "interval",
        ),
        (
            json!({"interval": "2024-06-01T00:00:00Z/P1D", "columns": ["lat"], "time_zone": "Mars/Base"}),
            "time_zone",
        ),
    ];
    for (mut params, parameter) in cases {
        params["hash"] = json!(acc.key);
        params["tracker_id"] = json!(t);
        let answer = srv.post("/dwh/v1/tracker/raw_data/read", params).await;
        answer.error(7, 400);
        assert_eq!(
            answer.body["errors"][0]["parameter"], parameter,
            "{answer:?}"
        );
    }
    let too_long = json!({"hash": acc.key, "tracker_id": t, "interval": "2024-01-01T00:00:00Z/P40D", "columns": ["lat"]});
    srv.post("/dwh/v1/tracker/raw_data/read", too_long)
        .await
        .error(211, 400);
}

#[tokio::test]
async fn get_inputs_lists_the_trackers_own_names_from_the_catalog() {
    let srv = TestServer::start().await;
    let acc = srv.account("inputs@example.com").await;
    let t = acc.trackers[0].0;
    let mut lines = fixture(&acc);
    lines.push(json!({"tracker_id": t, "msg_time": "2024-06-01T06:01:00Z", "inputs": {"lls_level_2": 3, "lls_level_10": 1}, "discrete_outputs": {"3": 0}}));
    ingest(&srv, false, &lines).await;
    let expected = json!({"success": true, "discrete_inputs": 2, "discrete_outputs": 3,
        "inputs": ["board_voltage", "lls_level_10"], "states": ["ignition", "mode"]});
    let answer = srv
        .post(
            "/dwh/v1/tracker/raw_data/get_inputs",
            json!({"hash": acc.key, "tracker_id": t}),
        )
        .await;
    assert_eq!(answer.ok().clone(), expected);
    srv.ingest.flush().unwrap();
    let answer = srv
        .post(
            "/dwh/v1/tracker/raw_data/get_inputs",
            json!({"hash": acc.key, "tracker_id": t}),
        )
        .await;
    assert_eq!(
        answer.ok().clone(),
        expected,
        "the same from the catalog: no other tracker's names"
    );
}

pub(crate) async fn export(
    srv: &TestServer,
    params: Value,
    accept: &str,
) -> (u16, String, Vec<u8>) {
    let response = srv
        .client()
        .post(srv.url("/dwh/v1/tracker/raw_data/read"))
        .header("accept", accept)
        .json(&params)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    (
        status,
        content_type,
        response.bytes().await.unwrap().to_vec(),
    )
}

#[tokio::test]
async fn parquet_and_ndjson_carry_the_same_rows_and_columns_as_csv() {
    use arrow::array::{AsArray, RecordBatch};
    use arrow::datatypes::{DataType, Float64Type, TimestampMillisecondType, UInt8Type};

    let srv = TestServer::start().await;
    let acc = srv.account("formats@example.com").await;
    ingest(&srv, false, &fixture(&acc)).await;
    srv.ingest.flush().unwrap();
    let mut params = json!({"hash": acc.key, "tracker_id": acc.trackers[0].0, "interval": "2024-06-01T00:00:00Z/P1D",
        "columns": ["lat", "gps_fix_type", "mn_name", "flags.soft_lbs", "inputs.*", "states", "inputs.nope"]});
    let (_, csv_text) = csv(&srv, params.clone()).await;
    let csv_header: Vec<String> = csv_text
        .lines()
        .next()
        .unwrap()
        .split(',')
        .map(|h| h.trim_matches('"').to_owned())
        .collect();

    params["format"] = json!("parquet");
    let (status, content_type, bytes) = export(&srv, params.clone(), "*/*").await;
    assert_eq!(
        (status, content_type.as_str()),
        (200, "application/vnd.apache.parquet")
    );
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        bytes::Bytes::from(bytes),
    )
    .unwrap()
    .build()
    .unwrap();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let batch = arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap();
    let names: Vec<String> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, csv_header, "the same columns, in the same order");
    assert_eq!(
        batch.num_rows(),
        csv_text.lines().count() - 1,
        "the same rows"
    );
    let times = batch.column(0).as_primitive::<TimestampMillisecondType>();
    assert_eq!(times.value(0), 1_717_221_600_000);
    assert_eq!(
        batch.schema().field(0).data_type(),
        &DataType::Timestamp(
            arrow::datatypes::TimeUnit::Millisecond,
            Some("Asia/Tokyo".into())
        )
    );
    assert_eq!(
        batch.column(1).as_primitive::<Float64Type>().value(1),
        43.2501
    );
    // Enums are their 0-based numbers (clarification 17): HAS_FIX = 2.
    assert_eq!(batch.column(2).as_primitive::<UInt8Type>().value(0), 2);
    assert_eq!(batch.column(3).as_string::<i32>().value(0), "Kcell \"LTE\"");
    assert_eq!(batch.column(4).as_primitive::<UInt8Type>().value(0), 1);
    assert_eq!(
        batch.column(7).as_string::<i32>().value(0),
        r#"{"ignition":false,"mode":"eco"}"#
    );
    assert!(
        arrow::array::Array::is_null(batch.column(8).as_ref(), 0),
        "unknown inner: null"
    );

    params["format"] = serde_json::Value::Null;
    let (status, content_type, bytes) = export(&srv, params, "application/x-ndjson").await;
    assert_eq!(
        (status, content_type.as_str()),
        (200, "application/x-ndjson")
    );
    let lines: Vec<Value> = String::from_utf8(bytes)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[0].to_string(),
        json!({"msg_time": "2024-06-01T15:00:00+0900", "lat": 43.25, "gps_fix_type": "HAS_FIX", "mn_name": "Kcell \"LTE\"",
               "flags.soft_lbs": 1, "inputs.board_voltage": 13.8, "inputs.lls_level_1": 512,
               "states": {"ignition": false, "mode": "eco"}, "inputs.nope": null})
        .to_string()
    );
    let keys: Vec<&String> = lines[1].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        csv_header.iter().collect::<Vec<_>>(),
        "keys in column order"
    );
}

#[tokio::test]
async fn rows_of_several_writes_come_out_in_message_time_order_before_and_after_a_flush() {
    let srv = TestServer::start().await;
    let acc = srv.account("order@example.com").await;
    let t = acc.trackers[0].0;
    ingest(
        &srv,
        false,
        &[json!({"tracker_id": t, "msg_time": "2024-06-01T06:00:00Z", "lat": 1})],
    )
    .await;
    ingest(
        &srv,
        false,
        &[json!({"tracker_id": t, "msg_time": "2024-06-01T05:00:00Z", "lat": 2})],
    )
    .await;
    ingest(
        &srv,
        false,
        &[json!({"tracker_id": t, "msg_time": "2024-06-01T05:30:00Z", "lat": 3})],
    )
    .await;
    let params = json!({"hash": acc.key, "tracker_id": t, "interval": "2024-06-01T00:00:00Z/P1D", "columns": ["lat"], "time_zone": "UTC"});
    let expected = "\"msg_time\",\"lat\"\n\"2024-06-01T05:00:00Z\",2\n\"2024-06-01T05:30:00Z\",3\n\"2024-06-01T06:00:00Z\",1\n";
    assert_eq!(csv(&srv, params.clone()).await.1, expected, "memtable");
    srv.ingest.flush().unwrap();
    ingest(
        &srv,
        false,
        &[json!({"tracker_id": t, "msg_time": "2024-06-01T05:15:00Z", "lat": 4})],
    )
    .await;
    let merged = "\"msg_time\",\"lat\"\n\"2024-06-01T05:00:00Z\",2\n\"2024-06-01T05:15:00Z\",4\n\"2024-06-01T05:30:00Z\",3\n\"2024-06-01T06:00:00Z\",1\n";
    assert_eq!(
        csv(&srv, params).await.1,
        merged,
        "a file and the memtable, merged"
    );
}

/// Files whose spans of the tracker follow each other are read one after
/// the other (a lane), a file that a late message reaches back over in
/// another lane; lanes and the memtable merge in message-time order.
#[tokio::test]
async fn rows_of_files_read_in_lanes_come_out_in_message_time_order() {
    let srv = TestServer::start().await;
    let acc = srv.account("lanes@example.com").await;
    let t = acc.trackers[0].0;
    let at = |time: &str, lat: i64| json!({"tracker_id": t, "msg_time": format!("2024-06-01T{time}:00Z"), "lat": lat});
    // Three files (compaction merges from four): 05:00-06:00, then
    // 05:15-06:30 over it, then 06:10-06:20 after the first; then the memtable.
    for lines in [
        [at("05:00", 1), at("06:00", 2)],
        [at("05:15", 3), at("06:30", 4)],
        [at("06:10", 5), at("06:20", 6)],
    ] {
        ingest(&srv, false, &lines).await;
        srv.ingest.flush().unwrap();
    }
    ingest(&srv, false, &[at("05:45", 7)]).await;
    let snapshot = srv.ingest.snapshot();
    if snapshot.clickhouse.is_none() {
        assert_eq!(snapshot.files.len(), 3, "three files");
    }
    let params = json!({"hash": acc.key, "tracker_id": t, "interval": "2024-06-01T00:00:00Z/P1D", "columns": ["lat"], "time_zone": "UTC"});
    let rows: Vec<String> = [
        ("05:00", 1),
        ("05:15", 3),
        ("05:45", 7),
        ("06:00", 2),
        ("06:10", 5),
        ("06:20", 6),
        ("06:30", 4),
    ]
    .iter()
    .map(|(time, lat)| format!("\"2024-06-01T{time}:00Z\",{lat}\n"))
    .collect();
    let expected = format!("\"msg_time\",\"lat\"\n{}", rows.concat());
    assert_eq!(csv(&srv, params).await.1, expected);
}

#[tokio::test]
async fn star_expansion_sees_only_rows_inside_both_ranges_also_in_files() {
    let srv = TestServer::start().await;
    let acc = srv.account("exact@example.com").await;
    let t = acc.trackers[0].0;
    ingest(&srv, true, &[
        json!({"tracker_id": t, "msg_time": "2024-05-31T10:00:00Z", "server_time": "2024-05-31T10:00:01Z", "inputs": {"on_time": 1}}),
        json!({"tracker_id": t, "msg_time": "2024-05-31T11:00:00Z", "server_time": "2024-06-01T07:30:00Z", "inputs": {"late": 2}}),
        json!({"tracker_id": t, "msg_time": "2024-05-31T12:00:00Z", "server_time": "2024-05-31T12:00:02Z", "inputs": {"noon": 3}}),
    ])
    .await;
    let by_server = json!({"hash": acc.key, "tracker_id": t, "interval": "2024-05-31T00:00:00Z/P1D", "time_zone": "UTC",
        "columns": ["inputs.*"], "server_time_filter": "2024-06-01T00:00:00Z/2024-06-02T00:00:00Z"});
    let by_message = json!({"hash": acc.key, "tracker_id": t, "from": "2024-05-31T11:30:00Z", "to": "2024-05-31T13:00:00Z",
        "time_zone": "UTC", "columns": ["inputs.*"]});
    for flushed in [false, true] {
        if flushed {
            srv.ingest.flush().unwrap();
        }
        assert_eq!(
            csv(&srv, by_server.clone()).await.1,
            "\"msg_time\",\"inputs.late\"\n\"2024-05-31T11:00:00Z\",2\n",
            "flushed: {flushed}"
        );
        assert_eq!(
            csv(&srv, by_message.clone()).await.1,
            "\"msg_time\",\"inputs.noon\"\n\"2024-05-31T12:00:00Z\",3\n",
            "flushed: {flushed}"
        );
    }
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_the_export() {
    let srv = TestServer::start().await;
    let acc = srv.account("gone@example.com").await;
    let t = acc.trackers[0].0;
    // About 20 MB of CSV: far more than the two chunks the encoder may run ahead.
    let lines: Vec<Value> = (0..40_000)
        .map(|i| {
            json!({"tracker_id": t, "msg_time": format!("2024-06-01T{:02}:{:02}:{:02}.{:03}Z", i / 7200, (i / 120) % 60, (i / 2) % 60, (i % 2) * 500),
                   "lat": 43.0 + f64::from(i) * 1e-6, "mn_name": "x".repeat(400)})
        })
        .collect();
    ingest(&srv, false, &lines).await;
    let before = query::export::exports_cancelled();
    let params = json!({"hash": acc.key, "tracker_id": t, "interval": "2024-06-01T00:00:00Z/P1D", "columns": ["lat", "mn_name"]});
    let mut response = srv
        .client()
        .post(srv.url("/dwh/v1/tracker/raw_data/read"))
        .json(&params)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let first = response.chunk().await.unwrap().unwrap();
    assert!(first.starts_with(b"\"msg_time\""), "the header comes first");
    drop(response);
    for _ in 0..200 {
        if query::export::exports_cancelled() > before {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the export was not cancelled after the client went away");
}
