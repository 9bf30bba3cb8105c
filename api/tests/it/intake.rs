//! `POST /ingest/v1/messages` through the real server: auth, encodings,
//! per-line rejections, deduplication of retries, limits, visibility.

use std::io::Write;

use api::ApiConfig;
use schemas::TelemetrySource;
use serde_json::{Value, json};

use crate::{Account, Answer, TestServer};

async fn post(srv: &TestServer, token: &str, body: Vec<u8>, encoding: Option<&str>) -> Answer {
    let mut request = srv
        .client()
        .post(srv.url("/ingest/v1/messages"))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/x-ndjson")
        .body(body);
    if let Some(encoding) = encoding {
        request = request.header("content-encoding", encoding);
    }
    srv.send(request).await
}

fn ndjson(lines: &[Value]) -> Vec<u8> {
    lines
        .iter()
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .into_bytes()
}

/// Messages one minute apart, from 2024-06-01T07:00Z (the test clock reads 08:00Z).
fn lines(acc: &Account, n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            json!({"tracker_id": acc.trackers[0].0, "msg_time": format!("2024-06-01T07:{:02}:00Z", i % 60),
                   "lat": 43.25, "lng": 76.95, "speed": 42.5, "inputs": {"lls_level_1": 1000 + i},
                   "states": {"ignition": true}, "discrete_inputs": {"1": 1}})
        })
        .collect()
}

/// The server times of the rows of the account's trackers, read through
/// the query layer (files or ClickHouse, and the memtable).
async fn stored(srv: &TestServer, acc: &Account) -> Vec<i64> {
    let mut times = Vec::new();
    for tracker in &acc.trackers {
        times.extend(stored_of(srv, tracker.0).await);
    }
    times
}

async fn stored_of(srv: &TestServer, tracker: i64) -> Vec<i64> {
    use futures::TryStreamExt;
    let request = query::scan::ScanRequest {
        tracker,
        message: (i64::MIN, i64::MAX),
        server: None,
        columns: Vec::new(),
        batch_size: 8192,
        with_server_time: true,
        string_views: false,
    };
    let batches: Vec<arrow::array::RecordBatch> =
        query::scan::scan(srv.ingest.snapshot(), request, query::task_context())
            .unwrap()
            .try_collect()
            .await
            .unwrap();
    batches
        .iter()
        .flat_map(|b| {
            let times = b
                .column(2)
                .as_any()
                .downcast_ref::<arrow::array::TimestampMillisecondArray>()
                .unwrap();
            times.values().to_vec()
        })
        .collect()
}

async fn stored_rows(srv: &TestServer, acc: &Account) -> usize {
    stored(srv, acc).await.len()
}

#[tokio::test]
async fn accepted_lines_are_visible_at_once_and_a_retry_is_all_duplicates() {
    let srv = TestServer::start().await;
    let acc = srv.account("intake@example.com").await;
    let token = srv.ingest_token(false).await;
    let body = ndjson(&lines(&acc, 30));
    let answer = post(&srv, &token, body.clone(), None).await;
    assert_eq!(
        answer.ok().clone(),
        json!({"success": true, "accepted": 30, "duplicates": 0, "rejected": [], "rejected_total": 0})
    );
    assert_eq!(
        stored_rows(&srv, &acc).await,
        30,
        "acknowledged means visible"
    );
    let retry = post(&srv, &token, body, None).await;
    assert_eq!(
        retry.ok().clone(),
        json!({"success": true, "accepted": 0, "duplicates": 30, "rejected": [], "rejected_total": 0})
    );
    assert_eq!(stored_rows(&srv, &acc).await, 30);
    let metrics = srv.metrics_text().await;
    assert!(
        metrics.contains(r#"trackhouse_ingest_messages_total{outcome="accepted"} 30"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"trackhouse_ingest_messages_total{outcome="duplicate"} 30"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn each_stage_of_a_body_is_timed_on_metrics() {
    let srv = TestServer::start().await;
    let acc = srv.account("stages@example.com").await;
    let token = srv.ingest_token(false).await;
    let sent = lines(&acc, 20);
    for half in sent.chunks(10) {
        let answer = post(&srv, &token, ndjson(half), None).await;
        assert_eq!(answer.ok()["accepted"], 10);
    }
    let metrics = srv.metrics_text().await;
    let count = |family: &str, stage: &str| {
        let series = format!(r#"{family}_count{{stage="{stage}"}} "#);
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(&series))
            .unwrap_or_else(|| panic!("no {series} in {metrics}"))
            .parse::<u64>()
            .unwrap()
    };
    for stage in ["receive", "parse", "commit"] {
        assert_eq!(
            count("trackhouse_intake_stage_seconds", stage),
            2,
            "{stage}"
        );
    }
    for stage in ["writer", "live"] {
        assert_eq!(
            count("trackhouse_ingest_stage_seconds", stage),
            2,
            "{stage}"
        );
    }
    // One group per body here (each waited for its answer), each storing rows.
    for stage in ["group_dedup_append", "group_memtable"] {
        assert_eq!(
            count("trackhouse_ingest_stage_seconds", stage),
            2,
            "{stage}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_phase_of_a_flush_is_timed_on_metrics() {
    let srv = TestServer::start().await;
    let acc = srv.account("flush-phases@example.com").await;
    let token = srv.ingest_token(false).await;
    let answer = post(&srv, &token, ndjson(&lines(&acc, 12)), None).await;
    assert_eq!(answer.ok()["accepted"], 12);
    let ingest = srv.ingest.clone();
    tokio::task::spawn_blocking(move || ingest.flush())
        .await
        .unwrap()
        .unwrap();
    let metrics = srv.metrics_text().await;
    for phase in ["write", "index", "release"] {
        let series = format!(r#"trackhouse_ingest_flush_seconds_count{{phase="{phase}"}} "#);
        let flushes: u64 = metrics
            .lines()
            .find_map(|line| line.strip_prefix(&series))
            .unwrap_or_else(|| panic!("no {series} in {metrics}"))
            .parse()
            .unwrap();
        assert!(flushes >= 1, "{phase}: {flushes}");
    }
    assert!(
        metrics.contains("trackhouse_ingest_unflushed_rows 0\n"),
        "{metrics}"
    );
}

#[tokio::test]
async fn bad_lines_are_rejected_one_by_one_and_the_rest_is_stored() {
    let srv = TestServer::start().await;
    let acc = srv.account("lines@example.com").await;
    let other = srv.account("other-lines@example.com").await;
    srv.store
        .set_tracker_blocked(other.trackers[1], true)
        .await
        .unwrap();
    let token = srv.ingest_token(false).await;
    let device = srv
        .store
        .tracker(acc.trackers[1])
        .await
        .unwrap()
        .unwrap()
        .device_id;
    let good = lines(&acc, 1).remove(0);
    let body = ndjson(&[
        good.clone(),
        json!({"tracker_id": acc.trackers[0].0, "msg_time": "2024-06-01T07:01:00Z", "lat": 91}),
        json!({"tracker_id": acc.trackers[0].0, "msg_time": "2024-06-01T07:02:00Z", "speeed": 3}),
        json!({"tracker_id": 999_999, "msg_time": "2024-06-01T07:03:00Z"}),
        json!({"tracker_id": other.trackers[1].0, "msg_time": "2024-06-01T07:04:00Z"}),
        json!({"device_id": device, "msg_time": "2024-06-01T07:05:00+06:00", "lng": -180}),
        json!({"device_id": "000000000000000", "msg_time": "2024-06-01T07:06:00Z"}),
        json!({"tracker_id": acc.trackers[0].0, "msg_time": "2024-06-03T07:00:00Z"}),
        json!({"tracker_id": acc.trackers[0].0, "msg_time": "2024-06-01T07:08:00Z", "server_time": "2024-06-01T07:08:01Z"}),
    ]);
    let mut body = body;
    body.extend_from_slice(b"{not json\n");
    let answer = post(&srv, &token, body, None).await;
    let body = answer.ok();
    assert_eq!(
        (body["accepted"].clone(), body["duplicates"].clone()),
        (json!(2), json!(0))
    );
    let rejected: Vec<(u64, u64)> = body["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["line"].as_u64().unwrap(), r["code"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        rejected,
        [
            (2, 7),
            (3, 7),
            (4, 201),
            (5, 208),
            (7, 201),
            (8, 7),
            (9, 7),
            (10, 7)
        ]
    );
    let description = |line: u64| {
        body["rejected"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["line"] == line)
            .unwrap()["description"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(description(2).contains("lat"));
    assert!(description(3).contains("speeed"));
    assert!(description(8).contains("msg_time"));
    assert!(description(9).contains("server_time"));
    assert_eq!(stored_rows(&srv, &acc).await, 2);
}

#[tokio::test]
async fn backfill_tokens_may_set_server_time() {
    let srv = TestServer::start().await;
    let acc = srv.account("backfill@example.com").await;
    let token = srv.ingest_token(true).await;
    let line = json!({"tracker_id": acc.trackers[0].0, "msg_time": "2024-05-20T10:00:00Z", "server_time": "2024-05-21T00:00:00Z"});
    assert_eq!(
        post(&srv, &token, ndjson(&[line]), None).await.ok()["accepted"],
        1
    );
    srv.ingest.flush().unwrap();
    assert_eq!(stored(&srv, &acc).await, vec![1_716_249_600_000]);
}

#[tokio::test]
async fn gzip_and_zstd_bodies_are_read() {
    let srv = TestServer::start().await;
    let acc = srv.account("encodings@example.com").await;
    let token = srv.ingest_token(false).await;
    let all = lines(&acc, 40);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&ndjson(&all[..20])).unwrap();
    assert_eq!(
        post(&srv, &token, gz.finish().unwrap(), Some("gzip"))
            .await
            .ok()["accepted"],
        20
    );
    let zst = zstd::encode_all(&ndjson(&all[20..])[..], 3).unwrap();
    assert_eq!(
        post(&srv, &token, zst, Some("zstd")).await.ok()["accepted"],
        20
    );
    post(&srv, &token, b"\x00garbage".to_vec(), Some("gzip"))
        .await
        .error(5, 400);
    post(&srv, &token, ndjson(&all), Some("br"))
        .await
        .error(5, 400);
}

#[tokio::test]
async fn bodies_over_the_limit_are_412_also_after_decompression() {
    let srv = TestServer::start_with(ApiConfig {
        max_ingest_bytes: 4096,
        ..ApiConfig::default()
    })
    .await;
    let acc = srv.account("limits@example.com").await;
    let token = srv.ingest_token(false).await;
    post(&srv, &token, vec![b'\n'; 5000], None)
        .await
        .error(9, 412);
    // 100 KB of newlines compress to a few hundred bytes: refused once decoded.
    let bomb = zstd::encode_all(&vec![b'\n'; 100_000][..], 19).unwrap();
    assert!(bomb.len() < 4096);
    post(&srv, &token, bomb, Some("zstd")).await.error(9, 412);
    assert_eq!(
        post(&srv, &token, ndjson(&lines(&acc, 2)), None).await.ok()["accepted"],
        2
    );
}

#[tokio::test]
async fn tokens_are_checked() {
    let srv = TestServer::start().await;
    let acc = srv.account("tokens@example.com").await;
    let body = ndjson(&lines(&acc, 1));
    let no_auth = srv
        .send(
            srv.client()
                .post(srv.url("/ingest/v1/messages"))
                .body(body.clone()),
        )
        .await;
    no_auth.error(3, 400);
    post(&srv, "xyz", body.clone(), None).await.error(3, 400);
    post(&srv, &"0".repeat(32), body.clone(), None)
        .await
        .error(2, 403);
    // A user's API key is not an ingest token.
    post(&srv, &acc.key, body.clone(), None).await.error(2, 403);
    srv.send(srv.client().get(srv.url("/ingest/v1/messages")))
        .await
        .error(112, 400);
}

/// A server whose writer falls behind after 5 rows (its memtable full, no
/// timed flush), until a flush.
async fn start_behind(api: ApiConfig) -> TestServer {
    TestServer::start_full(api, |c| ingest::IngestConfig {
        max_unflushed_rows: 5,
        flush_interval: std::time::Duration::from_secs(3600),
        ..c
    })
    .await
}

#[tokio::test]
async fn a_writer_that_falls_behind_answers_503_with_retry_after() {
    let srv = start_behind(ApiConfig::default()).await;
    let acc = srv.account("busy@example.com").await;
    let token = srv.ingest_token(false).await;
    let all = lines(&acc, 12);
    assert_eq!(
        post(&srv, &token, ndjson(&all[..6]), None).await.ok()["accepted"],
        6
    );
    let busy = post(&srv, &token, ndjson(&all[6..]), None).await;
    busy.error(8, 503);
    assert_eq!(busy.headers["retry-after"], "1");
    srv.ingest.flush().unwrap();
    assert_eq!(
        post(&srv, &token, ndjson(&all[6..]), None).await.ok()["accepted"],
        6
    );
}

/// A long body refused with 503 (the writer behind) stores none of its
/// chunks: the resend stores every line, none counted a duplicate.
#[tokio::test]
async fn a_long_body_answered_503_stores_none_of_its_chunks() {
    let srv = start_behind(ApiConfig {
        intake_chunk_bytes: 700,
        ..ApiConfig::default()
    })
    .await;
    let acc = srv.account("busy-chunks@example.com").await;
    let token = srv.ingest_token(false).await;
    let all = lines(&acc, 66);
    assert!(ndjson(&all[6..]).len() > 10 * 700, "a body of many chunks");
    assert_eq!(
        post(&srv, &token, ndjson(&all[..6]), None).await.ok()["accepted"],
        6
    );
    post(&srv, &token, ndjson(&all[6..]), None)
        .await
        .error(8, 503);
    assert_eq!(stored_rows(&srv, &acc).await, 6);
    srv.ingest.flush().unwrap();
    let answer = post(&srv, &token, ndjson(&all[6..]), None).await;
    assert_eq!(
        (
            answer.ok()["accepted"].clone(),
            answer.ok()["duplicates"].clone()
        ),
        (json!(60), json!(0))
    );
}

/// A body longer than `intake_chunk_bytes` is stored in chunks (decision
/// 119), each a write of its own handed to the writer in the body's order
/// as it is prepared (decision 137), and answered as one: the same accepted
/// and duplicate counts, the same rejections listed (the first by line
/// number, every one counted) and the same rows stored as a server that
/// takes the body whole, with bad lines, unknown trackers and copies of
/// lines of other chunks among its lines.
#[tokio::test]
async fn a_long_body_is_stored_in_chunks_and_answered_as_one() {
    let mut answers = Vec::new();
    for intake_chunk_bytes in [700, ApiConfig::default().intake_chunk_bytes] {
        let srv = TestServer::start_with(ApiConfig {
            intake_chunk_bytes,
            max_listed_rejections: 5,
            ..ApiConfig::default()
        })
        .await;
        let acc = srv.account("chunks@example.com").await;
        let token = srv.ingest_token(false).await;
        let tracker = acc.trackers[0].0;
        let line = |i: usize| match i {
            _ if i % 17 == 3 => {
                json!({"tracker_id": tracker, "msg_time": "2024-06-01T07:00:00Z", "lat": 91})
            }
            _ if i % 23 == 5 => json!({"tracker_id": 999_999, "msg_time": "2024-06-01T07:00:00Z"}),
            _ => {
                json!({"tracker_id": tracker, "msg_time": format!("2024-06-01T07:{:02}:{:02}Z", i / 60, i % 60),
                        "lat": 43.25, "inputs": {"fuel": i}})
            }
        };
        // Every tenth line from the 150th is a copy of a line 140 before.
        let body: Vec<Value> = (0..200)
            .map(|i| line(if i >= 150 && i % 10 == 0 { i - 140 } else { i }))
            .collect();
        let answer = post(&srv, &token, ndjson(&body), None).await;
        let answer = answer.ok().clone();
        let metrics = srv.metrics_text().await;
        let metric = |name: &str| {
            metrics
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
                .map(|n| n.parse::<f64>().unwrap())
                .unwrap()
        };
        let writes = metric("trackhouse_wal_group_writes_sum");
        answers.push((answer, stored_rows(&srv, &acc).await, writes));
    }
    let (chunked, whole) = (&answers[0], &answers[1]);
    assert_eq!(whole.2, 1.0, "one write for the body taken whole");
    assert!(
        chunked.2 > 10.0,
        "{} writes for the body in chunks",
        chunked.2
    );
    assert_eq!(chunked.0, whole.0);
    assert_eq!(chunked.1, whole.1);
    let answer = &chunked.0;
    // 200 lines: 12 bad (11 with i % 17 == 3, and line 161, a copy of
    // one), 9 of an unknown tracker (i % 23 == 5), 4 copies of kept lines
    // (lines 151, 171, 181 and 191 copy lines 11, 31, 41 and 51).
    assert_eq!(answer["rejected_total"], 21, "{answer}");
    assert_eq!(
        (answer["accepted"].clone(), answer["duplicates"].clone()),
        (json!(175), json!(4)),
        "{answer}"
    );
    let listed: Vec<(u64, u64)> = answer["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["line"].as_u64().unwrap(), r["code"].as_u64().unwrap()))
        .collect();
    assert_eq!(listed, [(4, 7), (6, 201), (21, 7), (29, 201), (38, 7)]);
    assert_eq!(chunked.1, 175);
}
