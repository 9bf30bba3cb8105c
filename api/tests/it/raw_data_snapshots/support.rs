//! Helpers of the raw data snapshot tests: intake, reads, accounts in a chosen zone.

use platform::{NewTracker, NewUser};
use serde_json::{Value, json};

use crate::TestServer;

/// Sends NDJSON `lines` through `POST /ingest/v1/messages`; `backfill` tokens may set `server_time`.
pub(crate) async fn ingest(srv: &TestServer, backfill: bool, lines: &[Value]) {
    let token = srv
        .store
        .create_ingest_token("t", backfill)
        .await
        .unwrap()
        .1
        .expose()
        .to_owned();
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let answer = srv
        .send(
            srv.client()
                .post(srv.url("/ingest/v1/messages"))
                .header("authorization", format!("Bearer {token}"))
                .body(body),
        )
        .await;
    assert_eq!(answer.ok()["rejected"], json!([]), "{answer:?}");
}

/// One read: the HTTP status and the body; a 200 must be `text/csv` with LF-ended rows.
pub(crate) async fn read(srv: &TestServer, params: &Value) -> (u16, String) {
    let response = srv
        .client()
        .post(srv.url("/dwh/v1/tracker/raw_data/read"))
        .json(params)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = response.text().await.unwrap();
    if status == 200 {
        assert!(content_type.starts_with("text/csv"), "{content_type}");
        assert!(body.ends_with('\n') && !body.contains('\r'), "{body:?}");
    }
    (status, body)
}

/// Runs every read from the memtable, flushes, runs them again from Parquet,
/// asserts the answers are the same, and returns the bodies (all must be 200).
pub(crate) async fn read_both(srv: &TestServer, requests: &[Value]) -> Vec<String> {
    let mut memtable = Vec::new();
    for params in requests {
        memtable.push(read(srv, params).await);
    }
    srv.ingest.flush().unwrap();
    let mut bodies = Vec::new();
    for (params, before) in requests.iter().zip(memtable) {
        let after = read(srv, params).await;
        assert_eq!(before, after, "memtable and Parquet differ for {params}");
        assert_eq!(after.0, 200, "{params}: {}", after.1);
        bodies.push(after.1);
    }
    bodies
}

/// A user in `zone` with an API key and one tracker: (API key, tracker id).
pub(crate) async fn zoned_account(srv: &TestServer, login: &str, zone: &str) -> (String, i64) {
    let (dealer, _) = srv.dealer(None).await;
    let user = srv
        .store
        .create_user(NewUser {
            dealer_id: dealer,
            login: login.into(),
            password: "user-pass-1".into(),
            time_zone: Some(zone.into()),
            activated: true,
            legal_type: platform::LegalType::Individual,
            first_name: "Zoe".into(),
            last_name: "Zone".into(),
        })
        .await
        .unwrap();
    let key = srv
        .store
        .create_api_key(user, "fixture")
        .await
        .unwrap()
        .hash
        .expose()
        .to_owned();
    let tracker = srv
        .store
        .create_tracker(NewTracker {
            user_id: user,
            label: "Zoned".into(),
            device_id: format!("49{:013}", user.0),
            model: "fmb920".into(),
            plan_id: None,
            store_period: None,
            time_zone: None,
        })
        .await
        .unwrap();
    (key, tracker.0)
}
