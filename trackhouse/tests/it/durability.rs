//! Acknowledged messages survive `kill -9`: a killed server, restarted on the
//! same data directory, still has every message it answered for, exactly
//! once, on Parquet, on ClickHouse (`--storage clickhouse`) and on a
//! ClickHouse cluster (`--clickhouse-cluster`).

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::{Account, Proc};

fn lines(tracker: i64, n: usize) -> String {
    (0..n)
        .map(|i| {
            let line = json!({"tracker_id": tracker, "msg_time": format!("2024-06-01T{:02}:{:02}:{:02}Z", i / 3600, (i / 60) % 60, i % 60),
                "lat": 43.2 + i as f64 * 1e-5, "inputs": {"lls_level_1": i}});
            format!("{line}\n")
        })
        .collect()
}

async fn post(client: &reqwest::Client, url: &str, token: &str, body: String) -> Value {
    let response = client
        .post(url)
        .header("authorization", format!("Bearer {token}"))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    response.json().await.unwrap()
}

#[tokio::test]
async fn acknowledged_messages_survive_kill_9() {
    survive_kill_9(&[]).await;
}

#[tokio::test]
async fn acknowledged_messages_survive_kill_9_on_clickhouse() {
    let dir = TempDir::new().unwrap();
    let clickhouse = ingest::clickhouse::LocalServer::start(dir.path()).unwrap();
    survive_kill_9_on_clickhouse(clickhouse.url(), &[]).await;
}

#[tokio::test]
async fn acknowledged_messages_survive_kill_9_on_a_clickhouse_cluster() {
    let dir = TempDir::new().unwrap();
    let cluster = ingest::clickhouse::LocalCluster::start(dir.path(), 2, 1, None).unwrap();
    let name = ingest::clickhouse::LocalCluster::NAME;
    survive_kill_9_on_clickhouse(cluster.url(), &["--clickhouse-cluster", name]).await;
    for url in cluster.urls() {
        let engines = clickhouse_query(
            url,
            "SELECT name, engine FROM system.tables WHERE database = 'kill9' ORDER BY name FORMAT TSV",
        )
        .await;
        assert_eq!(
            engines,
            "inner_columns\tDistributed\ninner_columns_local\tReplicatedReplacingMergeTree\n\
             telemetry\tDistributed\ntelemetry_local\tReplicatedReplacingMergeTree\n",
            "{url}: the binary created cluster.sql's tables on every node"
        );
    }
}

/// The answer of ClickHouse's HTTP interface at `url` to `sql`.
async fn clickhouse_query(url: &str, sql: &str) -> String {
    let response = crate::support::http_client()
        .post(url)
        .body(sql.to_owned())
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{sql}");
    response.text().await.unwrap()
}

async fn survive_kill_9_on_clickhouse(url: &str, flags: &[&str]) {
    // Flushing every 50 ms once 500 rows wait: the first half reaches ClickHouse before the kill, the rest only the WAL.
    let mut all = vec![
        "--storage",
        "clickhouse",
        "--clickhouse-url",
        url,
        "--clickhouse-database",
        "kill9",
        "--flush-interval-ms",
        "50",
        "--clickhouse-min-insert-rows",
        "500",
    ];
    all.extend_from_slice(flags);
    survive_kill_9(&all).await;
    let stored = clickhouse_query(url, "SELECT uniqExact(msg_time) FROM kill9.telemetry").await;
    let stored: u64 = stored.trim().parse().unwrap();
    assert!(
        (1000..=2000).contains(&stored),
        "ClickHouse holds at least the half flushed before the kill: {stored}"
    );
}

async fn survive_kill_9(flags: &[&str]) {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let Account {
        tracker,
        key,
        token,
    } = Account::create(d, "k@example.com", "356307042441099");
    let client = crate::support::http_client();

    let (server, addr) = Proc::serve_with(d, flags);
    let intake = format!("http://{addr}/ingest/v1/messages");
    let body = lines(tracker, 2000);
    let (early, late) = body.split_at(body.match_indices('\n').nth(999).unwrap().0 + 1);
    let first = post(&client, &intake, &token, early.to_owned()).await;
    // With a short flush interval the first half is flushed meanwhile.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let second = post(&client, &intake, &token, late.to_owned()).await;
    assert_eq!(
        [first, second].map(|a| (a["accepted"].as_u64(), a["duplicates"].as_u64())),
        [(Some(1000), Some(0)); 2]
    );
    // SIGKILL at once: the second half (with the default 5 s interval, all) is only in the WAL.
    drop(server);

    let (_server, addr) = Proc::serve_with(d, flags);
    let intake = format!("http://{addr}/ingest/v1/messages");
    let again = post(&client, &intake, &token, body).await;
    assert_eq!(
        (again["accepted"].as_u64(), again["duplicates"].as_u64()),
        (Some(0), Some(2000)),
        "nothing acknowledged was lost"
    );
    let read = client
        .post(format!("http://{addr}/dwh/v1/tracker/raw_data/read"))
        .json(&json!({"hash": key, "tracker_id": tracker, "interval": "2024-06-01T00:00:00Z/P1D", "columns": ["inputs.lls_level_1"], "time_zone": "UTC"}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let rows: Vec<&str> = read.lines().collect();
    assert_eq!(rows.len(), 2001, "header and every message");
    assert_eq!(rows[1], "\"2024-06-01T00:00:00Z\",0");
    assert_eq!(rows[2000], "\"2024-06-01T00:33:19Z\",1999");
}
