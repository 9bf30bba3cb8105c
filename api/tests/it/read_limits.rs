//! Limits of the heavy reads through the real server: columns of a raw data
//! read (after expansion, repeats written once), and reads running at once,
//! per user (429) and in all (503), a streamed export holding its slot until
//! its last chunk is sent or its client goes away.

use api::ApiConfig;
use serde_json::{Value, json};

use crate::server::generous_limits;
use crate::{Account, TestServer};

async fn ingest(srv: &TestServer, lines: &[Value]) {
    let token = srv.ingest_token(false).await;
    for chunk in lines.chunks(20_000) {
        let answer = srv.intake(&token, chunk).await;
        assert_eq!(answer.ok()["rejected"], json!([]), "{answer:?}");
    }
}

/// One message a second from 2024-06-01T00:00Z, with inputs `a`, `b`, `c`
/// and, when `wide`, thirty more.
fn rows(acc: &Account, n: usize, wide: bool) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let time = chrono::DateTime::from_timestamp(1_717_200_000 + i as i64, 0).unwrap();
            let mut inputs = json!({"a": i, "b": 1, "c": 2});
            if wide {
                for k in 0..30 {
                    inputs[format!("extra_{k:02}")] = json!(123_456.789 + k as f64);
                }
            }
            json!({"tracker_id": acc.trackers[0].0, "msg_time": time.to_rfc3339(), "lat": 43.25, "lng": 76.95,
                   "speed": 40.5, "inputs": inputs, "states": {"ignition": true}})
        })
        .collect()
}

fn read(acc: &Account, columns: Value) -> Value {
    json!({"hash": acc.key, "tracker_id": acc.trackers[0].0, "interval": "2024-06-01T00:00:00Z/P1D",
           "columns": columns, "time_zone": "UTC"})
}

#[tokio::test]
async fn columns_beyond_the_limit_are_7_and_repeats_are_written_once() {
    let srv = TestServer::start_with(ApiConfig {
        rate_limits: generous_limits(),
        raw_data_max_columns: 4,
        ..ApiConfig::default()
    })
    .await;
    let acc = srv.account("columns@example.com").await;
    ingest(&srv, &rows(&acc, 3, false)).await;
    let (status, csv) = crate::raw_data::csv(
        &srv,
        read(&acc, json!(["inputs.b", "lat", "inputs.*", "lat"])),
    )
    .await;
    assert_eq!(status, 200, "{csv}");
    assert_eq!(
        csv.lines().next(),
        Some("\"msg_time\",\"inputs.b\",\"lat\",\"inputs.a\",\"inputs.c\"")
    );
    for columns in [json!(["lat", "lng", "inputs.*"]), json!(vec!["lat"; 5])] {
        let answer = srv
            .post("/dwh/v1/tracker/raw_data/read", read(&acc, columns.clone()))
            .await;
        let description = answer.error(7, 400);
        assert!(
            description.contains("`columns`"),
            "{columns}: {description}"
        );
        assert!(
            description.contains("at most 4"),
            "{columns}: {description}"
        );
        assert_eq!(answer.body["errors"][0]["parameter"], "columns");
    }
}

#[tokio::test]
async fn reads_at_once_are_held_per_user_and_in_all() {
    let srv = TestServer::start_with(ApiConfig {
        rate_limits: generous_limits(),
        max_reads: 1,
        max_reads_per_user: 1,
        ..ApiConfig::default()
    })
    .await;
    let acc = srv.account("first@example.com").await;
    let other = srv.account("second@example.com").await;
    // 60,000 wide rows: some 25 MiB of CSV, more than the sockets hold.
    ingest(&srv, &rows(&acc, 60_000, true)).await;
    let everything = read(&acc, json!(["lat", "lng", "speed", "inputs.*", "states.*"]));
    let mut held = srv
        .client()
        .post(srv.url("/dwh/v1/tracker/raw_data/read"))
        .json(&everything)
        .send()
        .await
        .unwrap();
    assert_eq!(held.status(), 200);
    assert!(held.chunk().await.unwrap().is_some(), "the export started");

    // The same user again: 429 while the first export is being sent.
    let again = srv
        .post("/dwh/v1/tracker/raw_data/read", read(&acc, json!(["lat"])))
        .await;
    again.error(15, 429);
    assert_eq!(again.headers["retry-after"], "1");
    let resampling = srv
        .post(
            &format!("/eco_fleet/v1/trackers/{}/resampling", acc.trackers[0].0),
            json!({"hash": acc.key, "interval": "2024-06-01T00:00:00Z/2024-06-01T01:00:00Z", "step_size": 15,
                   "resampling_props": [{"data_type": "SPEED", "resampling_method": "PREVIOUS"}]}),
        )
        .await;
    resampling.error(15, 429);
    // Another user finds the one slot of the server taken: 503.
    let full = srv
        .post(
            "/dwh/v1/tracker/raw_data/read",
            read(&other, json!(["lat"])),
        )
        .await;
    full.error(8, 503);
    assert_eq!(full.headers["retry-after"], "1");
    // Gone, a read gives its slot back.
    drop(held);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let answer = srv
            .post("/dwh/v1/tracker/raw_data/read", read(&acc, json!(["lat"])))
            .await;
        if answer.status == 200 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{answer:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
