//! ClickHouse refusing some rows for what they hold, through the real
//! server: intake stays open, every other row is exported, the refused
//! rows are in the dead-letter file as intake lines, counted on `/metrics`.
//! Runs its own ClickHouse (whatever `TRACKHOUSE_TEST_STORAGE` says), on
//! which a materialized view refuses latitude 66.6, as a constraint would
//! (18.16 has none).

use std::time::Duration;

use api::ApiConfig;
use serde_json::{Value, json};

use crate::TestServer;
use crate::raw_data::csv;

async fn clickhouse(url: &str, sql: &str) {
    let answer = crate::server::http_client()
        .post(url)
        .body(sql.to_owned())
        .send()
        .await
        .unwrap();
    assert!(
        answer.status().is_success(),
        "{sql}: {}",
        answer.text().await.unwrap()
    );
}

async fn flush(srv: &TestServer) -> Result<(), ingest::Error> {
    let ingest = srv.ingest.clone();
    tokio::task::spawn_blocking(move || ingest.flush())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_rows_go_to_the_dead_letter_file_and_intake_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let server = ingest::clickhouse::LocalServer::start(dir.path()).unwrap();
    let url = server.url().to_owned();
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().to_path_buf();
    let srv = TestServer::start_full(ApiConfig::default(), |c| ingest::IngestConfig {
        data_dir: data_dir.clone(),
        flush_interval: Duration::from_secs(3600),
        clickhouse: Some(ingest::ClickHouseConfig::new(schemas::ClickHouseTable {
            url: url.clone(),
            database: "refusals".into(),
            user: None,
            password: None,
            cluster: None,
        })),
        ..c
    })
    .await;
    clickhouse(
        &url,
        "CREATE TABLE refusals.trap (refused UInt8) ENGINE = Null",
    )
    .await;
    clickhouse(
        &url,
        "CREATE MATERIALIZED VIEW refusals.trap_view TO refusals.trap AS \
         SELECT throwIf(ifNull(lat, 0) = 66.6) AS refused FROM refusals.telemetry",
    )
    .await;
    let acc = srv.account("refusals@example.com").await;
    let token = srv.ingest_token(false).await;
    let lines: Vec<Value> = (0..500)
        .map(|i| {
            let lat = if i == 123 || i == 321 { 66.6 } else { 43.25 };
            json!({"tracker_id": acc.trackers[0].0,
                   "msg_time": format!("2024-06-01T06:{:02}:{:02}Z", i / 60, i % 60),
                   "lat": lat, "inputs": {"seq": i}})
        })
        .collect();
    assert_eq!(srv.intake(&token, &lines).await.ok()["accepted"], 500);
    flush(&srv)
        .await
        .expect("the flush stores what ClickHouse takes and sets the rest aside");

    // Every other row is exported (a refused row may have reached the
    // table before the view refused it: ClickHouse writes the table first).
    let params = json!({"hash": acc.key, "tracker_id": acc.trackers[0].0,
        "from": "2024-06-01T00:00:00Z", "to": "2024-06-02T00:00:00Z", "columns": ["lat", "inputs.seq"]});
    let (status, body) = csv(&srv, params).await;
    assert_eq!(status, 200, "{body}");
    let kept: Vec<&str> = body
        .lines()
        .skip(1)
        .filter(|row| !row.contains(",66.6,"))
        .collect();
    assert_eq!(kept.len(), 498, "{body}");

    let dead_letter = data_dir.join("clickhouse/dead-letter");
    let files: Vec<_> = std::fs::read_dir(&dead_letter)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let mut seqs: Vec<i64> = text
        .lines()
        .map(|l| {
            let entry: Value = serde_json::from_str(l).unwrap();
            assert_eq!(entry["error"]["code"], 395, "{entry}");
            assert_eq!(entry["line"]["tracker_id"], acc.trackers[0].0);
            entry["line"]["inputs"]["seq"].as_f64().unwrap() as i64
        })
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, [123, 321]);
    assert!(
        srv.metrics_text()
            .await
            .contains("trackhouse_clickhouse_dead_letter_rows_total 2\n")
    );

    // Intake never stalled: the next messages are taken and stored.
    let more: Vec<Value> = (0..10)
        .map(|i| {
            json!({"tracker_id": acc.trackers[0].0,
                        "msg_time": format!("2024-06-01T07:00:{i:02}Z"), "lat": 43.3})
        })
        .collect();
    assert_eq!(srv.intake(&token, &more).await.ok()["accepted"], 10);
    flush(&srv).await.unwrap();
    assert_eq!(std::fs::read_dir(&dead_letter).unwrap().count(), 1);
}
