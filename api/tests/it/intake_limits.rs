//! The intake's limits through the real server, on either backend: entries
//! per complex member, the age of `msg_time`, distinct inner columns per
//! tracker and day. A line beyond one is refused on its own (code 7, naming
//! the member), the rest is stored, and the refusal is counted on `/metrics`.

use api::ApiConfig;
use serde_json::{Value, json};

use crate::server::generous_limits;
use crate::{Answer, TestServer};

async fn send(srv: &TestServer, lines: &[Value]) -> Answer {
    let token = srv.ingest_token(false).await;
    srv.intake(&token, lines).await
}

/// `(line, code, description)` of each rejection.
fn rejections(answer: &Answer) -> Vec<(i64, i64, String)> {
    answer.ok()["rejected"]
        .as_array()
        .expect("rejected")
        .iter()
        .map(|r| {
            (
                r["line"].as_i64().unwrap_or(0),
                r["code"].as_i64().unwrap_or(0),
                r["description"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

async fn refusals(srv: &TestServer, limit: &str) -> f64 {
    let text = srv.metrics_text().await;
    let prefix = format!("trackhouse_limit_refusals_total{{limit=\"{limit}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix)?.parse().ok())
        .unwrap_or(0.0)
}

fn map(prefix: &str, n: usize) -> Value {
    Value::Object((0..n).map(|i| (format!("{prefix}{i}"), json!(1))).collect())
}

#[tokio::test]
async fn a_member_beyond_the_entry_limit_is_refused_by_name() {
    let srv = TestServer::start_with(ApiConfig {
        rate_limits: generous_limits(),
        max_inner_entries: 4,
        ..ApiConfig::default()
    })
    .await;
    let acc = srv.account("entries@example.com").await;
    let tracker = acc.trackers[0].0;
    let at = |minute: u32| format!("2024-06-01T07:{minute:02}:00Z");
    let discrete: Value = (1..=5)
        .map(|i| (i.to_string(), json!(1)))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let answer = send(
        &srv,
        &[
            json!({"tracker_id": tracker, "msg_time": at(0), "inputs": map("a", 4)}),
            json!({"tracker_id": tracker, "msg_time": at(1), "inputs": map("a", 5)}),
            json!({"tracker_id": tracker, "msg_time": at(2), "discrete_inputs": discrete}),
            json!({"tracker_id": tracker, "msg_time": at(3), "states": map("s", 4)}),
        ],
    )
    .await;
    assert_eq!(answer.ok()["accepted"], 2, "{answer:?}");
    let refused = rejections(&answer);
    assert_eq!(
        refused.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
        [(2, 7), (3, 7)]
    );
    assert!(
        refused[0].2.starts_with("inputs: more than 4 entries"),
        "{refused:?}"
    );
    assert!(
        refused[1].2.starts_with("discrete_inputs: more than 4"),
        "{refused:?}"
    );
    assert_eq!(refusals(&srv, "inner_entries").await, 2.0);
}

#[tokio::test]
async fn a_msg_time_older_than_the_limit_is_refused() {
    let srv = TestServer::start_with(ApiConfig {
        rate_limits: generous_limits(),
        max_message_age_days: 30,
        ..ApiConfig::default()
    })
    .await;
    let acc = srv.account("age@example.com").await;
    let tracker = acc.trackers[0].0;
    // The test clock reads 2024-06-01T08:00Z: thirty days back is 2024-05-02T08:00Z.
    let answer = send(
        &srv,
        &[
            json!({"tracker_id": tracker, "msg_time": "2024-05-02T07:59:59Z"}),
            json!({"tracker_id": tracker, "msg_time": "2024-05-02T08:00:00Z"}),
            json!({"tracker_id": tracker, "msg_time": "1970-01-01T00:00:00Z"}),
        ],
    )
    .await;
    assert_eq!(answer.ok()["accepted"], 1, "{answer:?}");
    let refused = rejections(&answer);
    assert_eq!(
        refused.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
        [(1, 7), (3, 7)]
    );
    assert!(refused[0].2.starts_with("msg_time: "), "{refused:?}");
    assert!(refused[0].2.contains("2024-05-02T08:00:00Z"), "{refused:?}");
    assert_eq!(refusals(&srv, "message_age").await, 2.0);
}

#[tokio::test]
async fn a_trackers_day_takes_at_most_the_limit_of_inner_columns() {
    let srv = TestServer::start_full(
        ApiConfig {
            rate_limits: generous_limits(),
            ..ApiConfig::default()
        },
        |c| ingest::IngestConfig {
            max_inner_names_per_day: 3,
            ..c
        },
    )
    .await;
    let acc = srv.account("columns@example.com").await;
    let (first, second) = (acc.trackers[0].0, acc.trackers[1].0);
    let answer = send(
        &srv,
        &[
            json!({"tracker_id": first, "msg_time": "2024-06-01T07:00:00Z", "inputs": {"a": 1, "b": 2}}),
            json!({"tracker_id": first, "msg_time": "2024-06-01T07:01:00Z", "states": {"c": true}}),
            json!({"tracker_id": first, "msg_time": "2024-06-01T07:02:00Z", "inputs": {"d": 4}}),
            json!({"tracker_id": first, "msg_time": "2024-06-01T07:03:00Z", "bogus": 1}),
            json!({"tracker_id": first, "msg_time": "2024-05-31T07:03:00Z", "inputs": {"d": 4}}),
            json!({"tracker_id": second, "msg_time": "2024-06-01T07:02:00Z", "inputs": {"d": 4}}),
            json!({"tracker_id": first, "msg_time": "2024-06-01T07:04:00Z", "inputs": {"a": 5}}),
        ],
    )
    .await;
    assert_eq!(answer.ok()["accepted"], 5, "{answer:?}");
    let refused = rejections(&answer);
    assert_eq!(
        refused.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
        [(3, 7), (4, 7)],
        "line 3 by the columns' limit, line 4 by its unknown member, in line order"
    );
    assert!(
        refused[0]
            .2
            .contains("at most 3 are kept per tracker and day"),
        "{refused:?}"
    );
    assert_eq!(refusals(&srv, "inner_names_per_day").await, 1.0);
    // Once flushed, the day's columns still count.
    srv.ingest.flush().unwrap();
    let again = send(
        &srv,
        &[json!({"tracker_id": first, "msg_time": "2024-06-01T07:05:00Z", "inputs": {"e": 1}})],
    )
    .await;
    assert_eq!(again.ok()["accepted"], 0, "{again:?}");
    assert_eq!(refusals(&srv, "inner_names_per_day").await, 2.0);
}

#[tokio::test]
async fn an_answer_lists_the_first_rejections_and_counts_them_all() {
    let srv = TestServer::start_with(ApiConfig {
        rate_limits: generous_limits(),
        max_listed_rejections: 2,
        ..ApiConfig::default()
    })
    .await;
    let acc = srv.account("listed@example.com").await;
    let tracker = acc.trackers[0].0;
    let answer = send(
        &srv,
        &[
            // Refused by the tracker (201), by the line (7), alternately.
            json!({"tracker_id": 999_999, "msg_time": "2024-06-01T07:00:00Z"}),
            json!({"tracker_id": tracker, "msg_time": "2024-06-01T07:01:00Z", "bogus": 1}),
            json!({"tracker_id": 999_999, "msg_time": "2024-06-01T07:02:00Z"}),
            json!({"tracker_id": tracker, "msg_time": "nope"}),
            json!({"tracker_id": tracker, "msg_time": "2024-06-01T07:04:00Z"}),
        ],
    )
    .await;
    let body = answer.ok();
    assert_eq!(body["accepted"], 1, "{body}");
    assert_eq!(body["rejected_total"], 4, "{body}");
    let listed = rejections(&answer);
    assert_eq!(
        listed.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
        [(1, 201), (2, 7)]
    );
}
