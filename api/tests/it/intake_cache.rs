//! The intake's answers about tokens and trackers kept in memory
//! (`platform::IntakeLookup`, decisions.md 107): a change made between two
//! requests, in this process or by another on the same database, is
//! answered by the next; many trackers cost one read; the bound holds.

use std::sync::Arc;

use api::ApiConfig;
use platform::{NewTracker, Store, StoreConfig};
use schemas::{TrackerId, UserId};
use serde_json::{Value, json};

use crate::server::generous_limits;
use crate::{Answer, TestServer};

/// One line for a tracker named by id or by device id, at a second of its own.
fn line(tracker: &Value, second: usize) -> Value {
    let mut line = json!({
        "msg_time": format!("2024-06-01T07:{:02}:{:02}Z", second / 60 % 60, second % 60),
        "lat": 43.25, "lng": 76.95,
    });
    match tracker {
        Value::Number(id) => line["tracker_id"] = Value::Number(id.clone()),
        device => line["device_id"] = device.clone(),
    }
    line
}

/// Sends one line per tracker; the answer's rejections as (line, code, description).
async fn send(
    srv: &TestServer,
    token: &str,
    trackers: &[Value],
    second: &mut usize,
) -> (u64, Vec<(u64, u64, String)>) {
    let lines: Vec<Value> = trackers
        .iter()
        .map(|t| {
            *second += 1;
            line(t, *second)
        })
        .collect();
    let answer = srv.intake(token, &lines).await;
    let body = answer.ok();
    let rejected = body["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().unwrap(),
                r["code"].as_u64().unwrap(),
                r["description"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (body["accepted"].as_u64().unwrap(), rejected)
}

async fn new_tracker(store: &Store, user: UserId, device: &str) -> TrackerId {
    store
        .create_tracker(NewTracker {
            user_id: user,
            label: format!("Unit {device}"),
            device_id: device.into(),
            model: String::new(),
            plan_id: None,
            store_period: None,
            time_zone: None,
        })
        .await
        .unwrap()
}

/// The value of the sample `series` (name and labels, as written) in `/metrics`.
async fn metric(srv: &TestServer, series: &str) -> f64 {
    let text = srv.metrics_text().await;
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {series} in {text}"))
}

/// Blocks, deletes, clones and revokes through `changer` (the server's own
/// store, or another process's on the same file) between requests, each
/// answered by the very next request.
async fn changes_are_answered_by_the_next_request(srv: &TestServer, changer: &Store) {
    let acc = srv.account("owner@example.com").await;
    let viewer = srv.user(acc.dealer, "viewer@example.com").await;
    let token = srv.ingest_token(false).await;
    let (first, second) = (acc.trackers[0], acc.trackers[1]);
    let device = srv.store.tracker(second).await.unwrap().unwrap().device_id;
    let next_id = TrackerId(second.0 + 1);
    let trackers = [json!(first.0), json!(device), json!(next_id.0)];
    let mut at = 0;
    let no_tracker = format!(
        "Not found in database: no tracker with tracker_id {}",
        next_id.0
    );
    // Twice: the second answer comes from memory.
    for _ in 0..2 {
        assert_eq!(
            send(srv, &token, &trackers, &mut at).await,
            (2, vec![(3, 201, no_tracker.clone())])
        );
    }
    assert!(metric(srv, r#"trackhouse_intake_cache_hits_total{kind="tracker"}"#).await >= 3.0);

    changer.set_tracker_blocked(first, true).await.unwrap();
    // Twice: read from the store, then from memory on the parse's thread
    // (no statement: the token's look-up read the generation).
    let hits = metric(srv, r#"trackhouse_intake_cache_hits_total{kind="tracker"}"#).await;
    let queries = r#"trackhouse_intake_lookup_queries_total{kind="tracker"}"#;
    let mut read = Vec::new();
    for _ in 0..2 {
        assert_eq!(
            send(srv, &token, &trackers, &mut at).await,
            (
                1,
                vec![
                    (
                        1,
                        208,
                        format!("Device blocked: tracker {} is blocked", first.0)
                    ),
                    (3, 201, no_tracker.clone())
                ]
            )
        );
        read.push(metric(srv, queries).await);
    }
    assert_eq!(
        metric(srv, r#"trackhouse_intake_cache_hits_total{kind="tracker"}"#).await,
        hits + 3.0,
        "the second body's three lines answered from memory"
    );
    assert_eq!(read[0], read[1], "the second body ran no statement");

    changer.set_tracker_blocked(first, false).await.unwrap();
    let clone = changer.clone_tracker(first, viewer, None).await.unwrap();
    assert_eq!(
        clone, next_id,
        "the id the earlier requests found no tracker for"
    );
    assert_eq!(
        send(srv, &token, &trackers, &mut at).await,
        (
            2,
            vec![(
                3,
                219,
                format!(
                    "Not allowed for clones of the device: tracker {} is a clone of tracker {}; send for the source",
                    clone.0, first.0
                )
            )]
        )
    );

    changer.corrupt_tracker(second).await.unwrap();
    let with_id = [json!(first.0), json!(device), json!(second.0)];
    assert_eq!(
        send(srv, &token, &with_id, &mut at).await,
        (
            1,
            vec![
                (
                    2,
                    201,
                    format!("Not found in database: no tracker with device_id {device:?}")
                ),
                (
                    3,
                    201,
                    format!("Not found in database: tracker {} is deleted", second.0)
                )
            ]
        )
    );
    assert!(metric(srv, "trackhouse_intake_cache_invalidations_total").await >= 3.0);

    let token_id = changer.list_ingest_tokens().await.unwrap()[0].token_id;
    changer
        .revoke_ingest_token(schemas::IngestTokenId(token_id))
        .await
        .unwrap();
    let refused: Answer = srv.intake(&token, &[line(&json!(first.0), 0)]).await;
    assert_eq!(
        refused.error(2, 403),
        "Service Auth error: unknown or revoked ingest token"
    );
}

#[tokio::test]
async fn a_change_through_the_servers_store_is_answered_by_the_next_request() {
    let srv = TestServer::start().await;
    let store = srv.store.clone();
    changes_are_answered_by_the_next_request(&srv, &store).await;
}

#[tokio::test]
async fn a_change_by_another_process_on_the_database_is_answered_by_the_next_request() {
    let srv = TestServer::start().await;
    // What `trackhouse admin` does: its own connections to the same file.
    let other = Store::open(
        StoreConfig::new(srv.store.config().data_dir.clone()),
        Arc::new(schemas::SystemClock),
    )
    .await
    .unwrap();
    changes_are_answered_by_the_next_request(&srv, &other).await;
}

#[tokio::test]
async fn many_trackers_are_read_in_one_statement_then_from_memory() {
    let srv = TestServer::start().await;
    let acc = srv.account("fleet@example.com").await;
    let token = srv.ingest_token(false).await;
    let mut trackers = Vec::new();
    for n in 0..300 {
        let device = format!("fleet-{n}");
        let id = new_tracker(&srv.store, acc.user, &device).await;
        trackers.push(if n % 2 == 0 {
            json!(id.0)
        } else {
            json!(device)
        });
    }
    let mut at = 0;
    assert_eq!(send(&srv, &token, &trackers, &mut at).await, (300, vec![]));
    let tracker_queries = r#"trackhouse_intake_lookup_queries_total{kind="tracker"}"#;
    assert_eq!(
        metric(&srv, tracker_queries).await,
        3.0,
        "the change counter, then 150 ids in one statement and 150 device ids in another"
    );
    assert_eq!(
        metric(
            &srv,
            r#"trackhouse_intake_cache_misses_total{kind="tracker"}"#
        )
        .await,
        300.0
    );
    assert_eq!(send(&srv, &token, &trackers, &mut at).await, (300, vec![]));
    assert_eq!(
        metric(&srv, tracker_queries).await,
        3.0,
        "none: memory held every tracker at the generation the token's look-up read"
    );
    assert_eq!(
        metric(
            &srv,
            r#"trackhouse_intake_cache_hits_total{kind="tracker"}"#
        )
        .await,
        300.0
    );
    assert_eq!(
        metric(
            &srv,
            r#"trackhouse_intake_lookup_queries_total{kind="ingest_token"}"#
        )
        .await,
        3.0,
        "the counter twice, the token once"
    );
    assert_eq!(
        metric(
            &srv,
            r#"trackhouse_intake_cache_hits_total{kind="ingest_token"}"#
        )
        .await,
        1.0
    );
    assert_eq!(metric(&srv, "trackhouse_intake_cache_entries").await, 301.0);
}

#[tokio::test]
async fn a_tiny_cache_or_none_answers_the_same() {
    for entries in [3, 0] {
        let srv = TestServer::start_with(ApiConfig {
            rate_limits: generous_limits(),
            intake_cache_entries: entries,
            ..ApiConfig::default()
        })
        .await;
        let acc = srv.account("tiny@example.com").await;
        let token = srv.ingest_token(false).await;
        let mut ids = acc.trackers.clone();
        for n in 0..8 {
            ids.push(new_tracker(&srv.store, acc.user, &format!("tiny-{n}")).await);
        }
        let trackers: Vec<Value> = ids.iter().map(|id| json!(id.0)).collect();
        let mut at = 0;
        for _ in 0..3 {
            assert_eq!(send(&srv, &token, &trackers, &mut at).await, (10, vec![]));
            let held = metric(&srv, "trackhouse_intake_cache_entries").await;
            assert!(
                held <= entries as f64,
                "{held} entries held, at most {entries}"
            );
        }
        srv.store.set_tracker_blocked(ids[9], true).await.unwrap();
        let (accepted, rejected) = send(&srv, &token, &trackers, &mut at).await;
        assert_eq!((accepted, rejected[0].0, rejected[0].1), (9, 10, 208));
        if entries == 0 {
            assert_eq!(
                metric(
                    &srv,
                    r#"trackhouse_intake_cache_hits_total{kind="tracker"}"#
                )
                .await,
                0.0
            );
        } else {
            assert!(metric(&srv, "trackhouse_intake_cache_evictions_total").await > 0.0);
        }
    }
}
