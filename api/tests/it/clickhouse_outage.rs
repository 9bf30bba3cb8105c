//! ClickHouse stops during ingest: intake keeps acknowledging into the WAL
//! up to `max_unflushed_rows`, then answers 503 code 8; once ClickHouse is
//! back every acknowledged message is exported exactly once. Runs its own
//! ClickHouse (whatever `TRACKHOUSE_TEST_STORAGE` says), so it can stop it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use api::ApiConfig;
use serde_json::{Value, json};

use crate::raw_data::csv;
use crate::{Account, Answer, TestServer};

/// `n` messages of the account's first tracker, one second apart from `first` (s after 2024-06-01T06:00Z).
fn messages(acc: &Account, first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| {
            let line = json!({"tracker_id": acc.trackers[0].0,
                "msg_time": format!("2024-06-01T{:02}:{:02}:{:02}Z", 6 + i / 3600, i / 60 % 60, i % 60),
                "speed": i, "inputs": {"lls_level_1": i}});
            format!("{line}\n")
        })
        .collect()
}

async fn post(srv: &TestServer, token: &str, body: String) -> Answer {
    srv.send(
        srv.client()
            .post(srv.url("/ingest/v1/messages"))
            .header("authorization", format!("Bearer {token}"))
            .body(body),
    )
    .await
}

/// Flushes on a blocking thread (a flush waits for ClickHouse).
async fn flush(srv: &TestServer) -> Result<(), ingest::Error> {
    let ingest = srv.ingest.clone();
    tokio::task::spawn_blocking(move || ingest.flush())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clickhouse_down_then_back_loses_and_duplicates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut clickhouse = ingest::clickhouse::LocalServer::start(dir.path()).unwrap();
    let url = clickhouse.url().to_owned();
    let srv = TestServer::start_full(ApiConfig::default(), |c| ingest::IngestConfig {
        max_unflushed_rows: 600,
        flush_interval: Duration::from_millis(100),
        clickhouse: Some(ingest::ClickHouseConfig {
            backoff: ingest::clickhouse::Backoff {
                first: Duration::from_millis(20),
                max: Duration::from_millis(200),
                give_up_after: Some(Duration::from_millis(500)),
            },
            query_timeout: Duration::from_millis(500),
            ..ingest::ClickHouseConfig::new(schemas::ClickHouseTable {
                url: url.clone(),
                database: "outage".into(),
                user: None,
                password: None,
                cluster: None,
            })
        }),
        ..c
    })
    .await;
    let acc = srv.account("outage@example.com").await;
    let token = srv
        .store
        .create_ingest_token("t", false)
        .await
        .unwrap()
        .1
        .expose()
        .to_owned();

    // Stored before the outage.
    assert_eq!(
        post(&srv, &token, messages(&acc, 0, 200)).await.ok()["accepted"],
        200
    );
    flush(&srv).await.unwrap();
    let mut expected: BTreeSet<usize> = (0..200).collect();

    // Down: acknowledged into the WAL up to the bound, then 503 code 8.
    clickhouse.stop();
    let mut acknowledged = 200;
    let mut refused = None;
    for round in 0..20 {
        let answer = post(&srv, &token, messages(&acc, 200 + round * 100, 100)).await;
        if answer.status == 503 {
            refused = Some(answer);
            break;
        }
        assert_eq!(answer.ok()["accepted"], 100, "{answer:?}");
        acknowledged += 100;
        expected.extend(200 + round * 100..300 + round * 100);
    }
    let refused = refused.expect("intake refuses once 600 rows wait for ClickHouse");
    refused.error(8, 503);
    assert!(refused.headers.contains_key("retry-after"));
    assert!(
        (800..=900).contains(&acknowledged),
        "acknowledged {acknowledged}: the 200 stored and up to the 600-row bound (+ one write) while down"
    );
    assert!(
        flush(&srv).await.is_err(),
        "nothing can be flushed while ClickHouse is down"
    );
    let read = json!({"hash": acc.key, "tracker_id": acc.trackers[0].0, "from": "2024-06-01T00:00:00Z",
        "to": "2024-06-02T00:00:00Z", "columns": ["speed", "inputs.*"]});
    // Reads need ClickHouse: refused as unavailable, not answered in part.
    let (status, body) = csv(&srv, read.clone()).await;
    assert_eq!(status, 503, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["status"]["code"], 14, "{body}");

    // Back: the flusher's retries store everything, the WAL is truncated.
    clickhouse.launch().unwrap();
    let mut flushed = false;
    for _ in 0..100 {
        if flush(&srv).await.is_ok() {
            flushed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(flushed, "the flush succeeds once ClickHouse is back");
    assert_eq!(
        post(&srv, &token, messages(&acc, 5_000, 10)).await.ok()["accepted"],
        10,
        "intake accepts again"
    );
    acknowledged += 10;
    expected.extend(5_000..5_010);
    flush(&srv).await.unwrap();

    let (status, csv) = csv(&srv, read).await;
    assert_eq!(status, 200, "{csv}");
    let mut rows = csv.lines();
    assert_eq!(
        rows.next(),
        Some("\"msg_time\",\"speed\",\"inputs.lls_level_1\"")
    );
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for row in rows {
        *seen.entry(row.to_owned()).or_default() += 1;
    }
    assert_eq!(
        seen.len(),
        acknowledged,
        "every acknowledged message is there"
    );
    assert!(
        seen.values().all(|n| *n == 1),
        "none is there twice: {:?}",
        seen.iter().find(|(_, n)| **n > 1)
    );
    let speeds: BTreeSet<usize> = seen
        .keys()
        .map(|row| row.split(',').nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(speeds, expected, "exactly the acknowledged messages");

    // In ClickHouse itself: each message once after read-time deduplication.
    let counted = clickhouse_count(
        &url,
        "SELECT count() FROM (SELECT msg_time FROM outage.telemetry \
         ORDER BY msg_time, content_hash, server_time LIMIT 1 BY msg_time, content_hash)",
    )
    .await;
    assert_eq!(counted, acknowledged as u64);
}

async fn clickhouse_count(url: &str, sql: &str) -> u64 {
    crate::server::http_client()
        .post(url)
        .body(sql.to_owned())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}
