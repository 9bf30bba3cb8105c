//! Acknowledged messages survive `kill -9`: a killed server, restarted on the
//! same data directory, still has every message it answered for.

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::{Proc, admin};

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
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let dealer = admin(
        d,
        &[
            "dealer",
            "create",
            "--title",
            "D",
            "--panel-password",
            "secret123",
        ],
    )["dealer_id"]
        .to_string();
    let user = admin(
        d,
        &[
            "user",
            "create",
            "--dealer-id",
            &dealer,
            "--login",
            "k@example.com",
            "--password",
            "pw",
        ],
    )["user_id"]
        .to_string();
    let tracker = admin(
        d,
        &[
            "tracker",
            "create",
            "--user-id",
            &user,
            "--label",
            "T",
            "--device-id",
            "356307042441099",
            "--store-period",
            "100y",
        ],
    )["tracker_id"]
        .as_i64()
        .unwrap();
    let key = admin(
        d,
        &["api-key", "create", "--user-id", &user, "--title", "k"],
    )["hash"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = admin(d, &["ingest-token", "create", "--title", "t"])["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();

    let (server, addr) = Proc::serve(d);
    let intake = format!("http://{addr}/ingest/v1/messages");
    let body = lines(tracker, 2000);
    let first = post(&client, &intake, &token, body.clone()).await;
    assert_eq!(
        (first["accepted"].as_u64(), first["duplicates"].as_u64()),
        (Some(2000), Some(0))
    );
    // SIGKILL at once: the flush interval (5 s) has not passed, so the rows are only in the WAL.
    drop(server);

    let (_server, addr) = Proc::serve(d);
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
