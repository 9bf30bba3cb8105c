//! Clients too slow to send a request, or stalling on purpose, give up their
//! connection: headers that do not arrive in time close it, a body that does
//! not arrive in time is answered with the error object (code 5). And
//! `/metrics` may be kept to a scraper holding its token.

use std::time::{Duration, Instant};

use api::ApiConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::TestServer;
use crate::server::generous_limits;

async fn slow_server() -> TestServer {
    TestServer::start_with(ApiConfig {
        rate_limits: generous_limits(),
        header_read_timeout: Duration::from_millis(300),
        request_body_timeout: Duration::from_millis(300),
        ..ApiConfig::default()
    })
    .await
}

fn address(srv: &TestServer) -> String {
    srv.url("").trim_start_matches("http://").to_owned()
}

/// Everything the server sends until it closes the connection, or `None`
/// when it keeps it open past `patience`.
async fn until_closed(stream: &mut TcpStream, patience: Duration) -> Option<String> {
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    let deadline = Instant::now() + patience;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Some(String::from_utf8_lossy(&answer).into_owned()),
            Ok(Ok(n)) => answer.extend_from_slice(&buffer[..n]),
            Err(_) => return None,
        }
    }
}

#[tokio::test]
async fn headers_that_trickle_in_lose_the_connection() {
    let srv = slow_server().await;
    let mut stream = TcpStream::connect(address(&srv)).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: trackhouse\r\n")
        .await
        .unwrap();
    // One more header byte now and then, never the end of the headers.
    let started = Instant::now();
    let mut closed = None;
    for _ in 0..20 {
        if stream.write_all(b"X").await.is_err() {
            closed = Some(String::new());
            break;
        }
        if let Some(answer) = until_closed(&mut stream, Duration::from_millis(100)).await {
            closed = Some(answer);
            break;
        }
    }
    assert!(
        closed.is_some(),
        "the connection is still open after {:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // The server still serves everyone else.
    assert_eq!(srv.get("/healthz", &[]).await.status, 200);
}

#[tokio::test]
async fn a_body_that_does_not_arrive_is_answered_with_code_5() {
    let srv = slow_server().await;
    let (_, token) = srv.store.create_ingest_token("slow", false).await.unwrap();
    for path in ["/v2/user/auth", "/ingest/v1/messages"] {
        let mut stream = TcpStream::connect(address(&srv)).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: trackhouse\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"login\":",
            token.expose()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let answer = until_closed(&mut stream, Duration::from_secs(5))
            .await
            .unwrap_or_default();
        assert!(answer.starts_with("HTTP/1.1 400"), "{path}: {answer}");
        assert!(answer.contains("\"code\":5"), "{path}: {answer}");
        assert!(
            answer.contains("did not arrive within 0.3 s"),
            "{path}: {answer}"
        );
    }
}

/// With a metrics token set, `/metrics` answers only its bearer.
#[tokio::test]
async fn metrics_may_need_a_token() {
    let srv = TestServer::start_with(ApiConfig {
        rate_limits: generous_limits(),
        metrics_token: Some("scrape-secret".to_owned()),
        ..ApiConfig::default()
    })
    .await;
    let open = srv.get("/metrics", &[]).await;
    open.error(2, 403);
    let wrong = srv
        .send(
            srv.client()
                .get(srv.url("/metrics"))
                .header("authorization", "Bearer scrape-secreT"),
        )
        .await;
    wrong.error(2, 403);
    let scraped = srv
        .client()
        .get(srv.url("/metrics"))
        .header("authorization", "Bearer scrape-secret")
        .send()
        .await
        .unwrap();
    assert_eq!(scraped.status(), 200);
    assert!(
        scraped
            .text()
            .await
            .unwrap()
            .contains("trackhouse_http_requests_total")
    );
}

/// An intake request beyond `max_intake_requests` waits for a slot before
/// its body is read: it is stored once a slot frees within
/// `intake_queue_wait`, and answered 503 code 8 with Retry-After if none
/// does. Both are counted on `/metrics` meanwhile.
#[tokio::test]
async fn intake_requests_beyond_the_slots_wait_for_one_then_get_503() {
    let srv = TestServer::start_with(ApiConfig {
        rate_limits: generous_limits(),
        max_intake_requests: 1,
        intake_queue_wait: Duration::from_millis(1_500),
        request_body_timeout: Duration::from_secs(30),
        ..ApiConfig::default()
    })
    .await;
    let token = srv.ingest_token(false).await;
    let account = srv.account("queued@example.com").await;
    let line = serde_json::json!({
        "tracker_id": account.trackers[0].0, "msg_time": "2024-06-01T07:00:00Z", "lat": 43.2, "lng": 76.9
    });
    // A request whose body stalls holds the only slot.
    let stall = || async {
        let mut stream = TcpStream::connect(address(&srv)).await.unwrap();
        let head = format!(
            "POST /ingest/v1/messages HTTP/1.1\r\nHost: trackhouse\r\nAuthorization: Bearer {token}\r\n\
             Content-Length: 1000\r\n\r\n{{\"tracker_id\":"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream
    };
    let held = stall().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let waiting = srv.intake(&token, std::slice::from_ref(&line));
    let metrics = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let text = srv.metrics_text().await;
        drop(held);
        text
    };
    let (answer, text) = tokio::join!(waiting, metrics);
    assert_eq!(answer.ok()["accepted"], 1, "stored once the slot freed");
    assert!(
        text.contains("trackhouse_intake_requests_in_flight 1")
            && text.contains("trackhouse_intake_requests_waiting 1"),
        "{text}"
    );

    let _held = stall().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let answer = srv.intake(&token, std::slice::from_ref(&line)).await;
    assert!(
        answer.error(8, 503).contains("too many intake requests"),
        "{answer:?}"
    );
    assert!(started.elapsed() >= Duration::from_millis(1_400));
    assert!(
        srv.metrics_text()
            .await
            .contains("trackhouse_intake_requests_waiting 0")
    );
}

/// Bodies are parsed and prepared by at most `intake_parse_tasks` at once
/// (the CPU-bound part): a body read while another is being parsed waits,
/// counted on `/metrics`, and is stored once the task frees. The same with
/// no intake cache, where every body's trackers are read from the store
/// between its parse and its preparation (each on a parse task).
#[tokio::test]
async fn bodies_beyond_the_parse_tasks_wait_for_one() {
    for intake_cache_entries in [ApiConfig::default().intake_cache_entries, 0] {
        parse_tasks_are_waited_for(ApiConfig {
            rate_limits: generous_limits(),
            intake_parse_tasks: 1,
            // One body, one parse: a body in chunks would wait for its own.
            intake_chunk_bytes: usize::MAX,
            intake_cache_entries,
            request_body_timeout: Duration::from_secs(60),
            ..ApiConfig::default()
        })
        .await;
    }
}

async fn parse_tasks_are_waited_for(config: ApiConfig) {
    let srv = TestServer::start_with(config).await;
    let token = srv.ingest_token(false).await;
    let account = srv.account("parsed@example.com").await;
    let tracker = account.trackers[0].0;
    // Long enough to parse that the second body arrives meanwhile.
    let start = chrono::DateTime::parse_from_rfc3339("2024-06-01T00:00:00Z").unwrap();
    let big: String = (0..200_000)
        .map(|step| {
            let at = start + chrono::Duration::milliseconds(100 * step);
            format!(
                "{{\"tracker_id\":{tracker},\"msg_time\":\"{}\",\"lat\":43.2,\"lng\":76.9}}\n",
                at.format("%Y-%m-%dT%H:%M:%S%.3fZ")
            )
        })
        .collect();
    let post = |body: String| {
        srv.client
            .post(srv.url("/ingest/v1/messages"))
            .header("authorization", format!("Bearer {token}"))
            .body(body)
            .send()
    };
    let big = tokio::spawn(post(big));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !srv
        .metrics_text()
        .await
        .contains("trackhouse_intake_parsing 1")
    {
        assert!(Instant::now() < deadline, "the big body never got parsed");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let small = post(format!(
        "{{\"tracker_id\":{tracker},\"msg_time\":\"2024-05-31T00:00:00Z\",\"lat\":1,\"lng\":1}}\n"
    ));
    let watch = async {
        let mut seen = false;
        while Instant::now() < deadline && !seen {
            let text = srv.metrics_text().await;
            seen = text.contains("trackhouse_intake_parse_waiting 1")
                && text.contains("trackhouse_intake_parsing 1");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        seen
    };
    let (small, seen) = tokio::join!(small, watch);
    let small: serde_json::Value = small.unwrap().json().await.unwrap();
    let big: serde_json::Value = big.await.unwrap().unwrap().json().await.unwrap();
    assert!(seen, "the small body never waited for the parse task");
    assert_eq!(
        (big["accepted"].clone(), small["accepted"].clone()),
        (200_000.into(), 1.into())
    );
    let text = srv.metrics_text().await;
    assert!(
        text.contains("trackhouse_intake_parse_waiting 0")
            && text.contains("trackhouse_intake_parsing 0"),
        "{text}"
    );
}

/// A long body's chunks are parsed as they arrive (decision 119), but none
/// is stored before the whole body has: a body that stalls after several
/// chunks' worth of lines is answered with code 5, one that goes beyond
/// the size limit after them with code 9, and neither stores a line (the
/// same lines sent again are all accepted, none a duplicate).
#[tokio::test]
async fn a_body_refused_midway_stores_none_of_its_chunks() {
    let srv = TestServer::start_with(ApiConfig {
        rate_limits: generous_limits(),
        request_body_timeout: Duration::from_millis(500),
        intake_chunk_bytes: 1_000,
        max_ingest_bytes: 20_000,
        ..ApiConfig::default()
    })
    .await;
    let acc = srv.account("midway@example.com").await;
    let (_, token) = srv
        .store
        .create_ingest_token("midway", false)
        .await
        .unwrap();
    let tracker = acc.trackers[0].0;
    let lines: String = (0..100)
        .map(|i| {
            format!(
                "{{\"tracker_id\":{tracker},\"msg_time\":\"2024-06-01T07:{:02}:{:02}Z\",\"lat\":43.25}}\n",
                i / 60,
                i % 60
            )
        })
        .collect();
    assert!(
        lines.len() > 5_000 && lines.len() < 20_000 && lines.len() * 4 > 20_000,
        "{}",
        lines.len()
    );

    // Several chunks' worth, then nothing more of the 20,000 bytes announced.
    let mut stream = TcpStream::connect(address(&srv)).await.unwrap();
    let head = format!(
        "POST /ingest/v1/messages HTTP/1.1\r\nHost: trackhouse\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/x-ndjson\r\nContent-Length: 20000\r\n\r\n{lines}",
        token.expose()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let answer = until_closed(&mut stream, Duration::from_secs(5))
        .await
        .unwrap_or_default();
    assert!(answer.contains("\"code\":5"), "{answer}");

    // The same lines and more, beyond the limit.
    let post = |body: String| {
        srv.client
            .post(srv.url("/ingest/v1/messages"))
            .header("authorization", format!("Bearer {}", token.expose()))
            .body(body)
            .send()
    };
    let too_large = post(lines.repeat(4)).await.unwrap();
    assert_eq!(too_large.status(), 412);
    let too_large: serde_json::Value = too_large.json().await.unwrap();
    assert_eq!(too_large["status"]["code"], 9, "{too_large}");

    let stored: serde_json::Value = post(lines).await.unwrap().json().await.unwrap();
    assert_eq!(
        (stored["accepted"].clone(), stored["duplicates"].clone()),
        (100.into(), 0.into()),
        "{stored}"
    );
}
