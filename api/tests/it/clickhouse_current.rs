//! The ClickHouse backend on a current release: every statement Trackhouse
//! sends, checked on ClickHouse 26 against the oldest server we run on.
//!
//! Only Debian's clickhouse-server 18.16 can run as a server here, so the
//! workload below (intake, every raw data column form and format, both time
//! filters, `.*`, `get_inputs`, resampling, retention) runs on 18.16 with
//! every query logged. `clickhouse_current.py` then replays the log on chDB
//! (ClickHouse 26.9 embedded, from PyPI; `.ci/run` installs it) over the same
//! rows: Trackhouse's own CREATE statements, every SELECT compared for
//! column types and rows, every ALTER and column check accepted.

use std::time::Duration;

use serde_json::{Value, json};

use crate::TestServer;
use crate::raw_data::{csv, export};
use crate::raw_data_snapshots::support::ingest;
use crate::resampling::{TEN_MINUTES, account_with_readings, props, resample};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_statement_trackhouse_sends_answers_the_same_on_a_current_release() {
    let dir = tempfile::tempdir().unwrap();
    let clickhouse = ingest::clickhouse::LocalServer::start_logging_queries(dir.path()).unwrap();
    let database = "current";
    let srv = TestServer::start_full(
        api::ApiConfig {
            rate_limits: crate::server::generous_limits(),
            ..api::ApiConfig::default()
        },
        |c| ingest::IngestConfig {
            retention_interval: Duration::from_millis(100),
            clickhouse: Some(ingest::ClickHouseConfig {
                min_insert_rows: 1,
                ..ingest::ClickHouseConfig::new(schemas::ClickHouseTable {
                    url: clickhouse.url().to_owned(),
                    database: database.to_owned(),
                    user: None,
                    password: None,
                    cluster: None,
                })
            }),
            ..c
        },
    )
    .await;

    // Resampling's tracker and readings, and a second account's tracker
    // with every kind of value, late messages among them.
    let (key, fuel_tracker) = account_with_readings(&srv).await;
    let acc = srv.account("current@example.com").await;
    let t = acc.trackers[0].0;
    ingest(&srv, true, &[
        json!({"tracker_id": t, "msg_time": "2024-05-31T10:00:00Z", "server_time": "2024-05-31T10:00:01Z",
               "lat": 43.25, "lng": 76.95, "speed": 0, "gps_fix_type": "HAS_FIX", "mn_name": "Kcell", "flags": 5,
               "inputs": {"lls_level_1": 512, "board_voltage": 13.8}, "states": {"ignition": false, "mode": "eco"},
               "discrete_inputs": {"2": 1}, "discrete_outputs": {"3": 0}}),
        json!({"tracker_id": t, "msg_time": "2024-05-31T11:00:00Z", "server_time": "2024-06-01T07:30:00Z",
               "lat": 43.2501, "speed": 12.5, "inputs": {"lls_level_1": 511.5, "late": 2}, "states": {"ignition": true}}),
        json!({"tracker_id": t, "msg_time": "2024-06-01T12:00:00Z", "server_time": "2024-06-01T12:00:02Z",
               "hdop": 0.9, "satellites": 11, "inputs": {"noon": 3}}),
    ])
    .await;
    srv.ingest.flush().unwrap();

    let reads = [
        json!({"columns": ["lat", "lng", "speed", "gps_fix_type", "mn_name", "flags", "flags.soft_lbs",
                           "inputs.*", "states", "discrete_inputs.2", "discrete_outputs.*", "inputs.nope"]}),
        json!({"columns": ["inputs.*"], "server_time_filter": "2024-06-01T00:00:00Z/2024-06-02T00:00:00Z"}),
        json!({"columns": ["states.ignition", "hdop", "satellites", "inputs.lls_level_1"]}),
    ];
    for read in reads {
        let mut params = json!({"hash": acc.key, "tracker_id": t,
            "from": "2024-05-31T00:00:00Z", "to": "2024-06-02T00:00:00Z", "time_zone": "UTC"});
        params
            .as_object_mut()
            .unwrap()
            .extend(read.as_object().unwrap().clone());
        let (status, body) = csv(&srv, params.clone()).await;
        assert_eq!(status, 200, "{params}: {body}");
        assert!(body.lines().count() > 1, "{params}: {body}");
        let ndjson = export(&srv, params.clone(), "application/x-ndjson").await;
        params["format"] = json!("parquet");
        let parquet = export(&srv, params, "*/*").await;
        for ((status, content_type, _), expected) in [
            (ndjson, "application/x-ndjson"),
            (parquet, "application/vnd.apache.parquet"),
        ] {
            assert_eq!((status, content_type.as_str()), (200, expected));
        }
    }
    let inputs = srv
        .post(
            "/dwh/v1/tracker/raw_data/get_inputs",
            json!({"hash": acc.key, "tracker_id": t}),
        )
        .await;
    assert_eq!(
        inputs.ok()["inputs"],
        json!(["board_voltage", "late", "lls_level_1", "noon"])
    );
    let body = json!({"step_size": 2, "resampling_props": props(&[
        ("LAT", "PREVIOUS", None, None),
        ("FUEL", "MEDIAN_IN_WINDOW", Some(60), Some(-1.0)),
        ("MOVEMENT", "FOLLOWING", None, None),
    ])});
    let (status, resampled) = resample(&srv, &key, fuel_tracker, Some(TEN_MINUTES), &body).await;
    assert_eq!(status, 200, "{resampled}");

    // Retention: the second account's tracker keeps from 2024-06-01 (its
    // rows and then its names go, each by a mutation).
    srv.ingest
        .set_retention([(t, 1_717_200_000_000)].into_iter().collect());
    let expected = "\"msg_time\",\"inputs.noon\"\n\"2024-06-01T12:00:00Z\",3\n";
    let mut kept = String::new();
    for _ in 0..100 {
        kept = csv(
            &srv,
            json!({"hash": acc.key, "tracker_id": t, "from": "2024-05-31T00:00:00Z",
            "to": "2024-06-02T00:00:00Z", "time_zone": "UTC", "columns": ["inputs.*"]}),
        )
        .await
        .1;
        if kept == expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(kept, expected);

    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/clickhouse_current.py");
    let output = std::process::Command::new("python3")
        .arg(&script)
        .arg(clickhouse.url())
        .arg(database)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{} (chDB is `pip install chdb`; .ci/run installs it)",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    assert!(
        summary["old"].as_str().unwrap().starts_with("18.16"),
        "{summary}"
    );
    assert!(
        summary["new"].as_str().unwrap().starts_with("26."),
        "{summary}"
    );
    assert_eq!(summary["differences"], json!([]), "{summary}");
    // The database and its two tables; both copied; the scans, spans, names
    // and counts; the column checks and retention's mutations; the rows and
    // names.
    for (what, at_least) in [
        ("created", 3),
        ("compared", 8),
        ("executed", 4),
        ("inserts", 2),
    ] {
        assert!(
            summary[what].as_u64().unwrap() >= at_least,
            "{what}: {summary}"
        );
    }
}
