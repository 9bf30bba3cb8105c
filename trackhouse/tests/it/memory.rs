//! Memory stays bounded by the data sent, through the real binary: 200,000
//! ordinary messages and, among them, one at the limit of inner columns
//! (1,024: 256 each of inputs, states, discrete inputs and outputs) take
//! under [`BOUND_MIB`] at intake, and again when a restart replays them from
//! the WAL and flushes them to Parquet.
//!
//! Before the limits, the wide message gave its whole write group (and every
//! flush and replay of it) a column per name across every row: about
//! 200,000 x 1,024 cells, gigabytes, on every restart.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::{Account, Proc, metric};

/// Peak resident memory the server may reach, in MiB.
const BOUND_MIB: u64 = 400;
const ROWS: usize = 200_000;

fn body(tracker: i64, rows: std::ops::Range<usize>, wide: bool) -> String {
    let mut lines: Vec<String> = rows
        .map(|i| {
            // Every 400 ms from 2024-06-01T00:00Z: one UTC day.
            let ms = 1_717_200_000_000_i64 + i as i64 * 400;
            let time = chrono::DateTime::from_timestamp_millis(ms)
                .unwrap()
                .format("%Y-%m-%dT%H:%M:%S%.3fZ");
            json!({"tracker_id": tracker, "msg_time": time.to_string(), "lat": 43.25, "lng": 76.95,
                   "speed": 40.0, "inputs": {"a000": i, "a001": 1}, "states": {"s000": true},
                   "discrete_inputs": {"1": 1}})
            .to_string()
        })
        .collect();
    if wide {
        let names = |prefix: &str| -> Value {
            (0..256)
                .map(|i| (format!("{prefix}{i:03}"), json!(1)))
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        let discrete: Value = (1..=256)
            .map(|i| (i.to_string(), json!(1)))
            .collect::<serde_json::Map<_, _>>()
            .into();
        let line = json!({"tracker_id": tracker, "msg_time": "2024-06-01T23:00:00Z",
                          "inputs": names("a"), "states": names("s"),
                          "discrete_inputs": discrete, "discrete_outputs": discrete});
        lines.insert(lines.len() / 2, line.to_string());
    }
    lines.join("\n")
}

#[tokio::test]
async fn a_message_at_the_column_limit_among_200k_stays_within_bounds_after_a_restart() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let Account {
        tracker,
        key,
        token,
    } = Account::create(d, "m@example.com", "356307042441077");
    let client = crate::support::http_client();

    // Intake, nothing flushed: everything stays in memory and the WAL.
    let (server, addr) = Proc::serve_with(d, &["--flush-interval-ms", "3600000"]);
    let base = format!("http://{addr}");
    for part in 0..10 {
        let rows = part * ROWS / 10..(part + 1) * ROWS / 10;
        let answer: Value = client
            .post(format!("{base}/ingest/v1/messages"))
            .header("Authorization", format!("Bearer {token}"))
            .body(body(tracker, rows, part == 4))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let expected = ROWS / 10 + usize::from(part == 4);
        assert_eq!(answer["accepted"], expected, "{answer}");
    }
    let intake_mib = server.peak_rss_kib() / 1024;
    drop(server); // SIGKILL: the restart replays the WAL.

    let (server, addr) = Proc::serve_with(d, &["--flush-interval-ms", "100"]);
    let base = format!("http://{addr}");
    let deadline = Instant::now() + Duration::from_secs(300);
    while metric(&client, &base, "trackhouse_parquet_files")
        .await
        .unwrap_or(0.0)
        < 1.0
        || metric(&client, &base, "trackhouse_ingest_unflushed_rows")
            .await
            .unwrap_or(0.0)
            > 0.0
    {
        assert!(Instant::now() < deadline, "no flush after the restart");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let replay_mib = server.peak_rss_kib() / 1024;
    eprintln!("peak RSS: intake {intake_mib} MiB, replay and flush {replay_mib} MiB");
    assert!(intake_mib < BOUND_MIB, "intake peaked at {intake_mib} MiB");
    assert!(
        replay_mib < BOUND_MIB,
        "replay and flush peaked at {replay_mib} MiB"
    );

    // Every message is there, the wide one whole. The export of every
    // column is about 200 MB of CSV (200,000 rows of 1,024 cells), which a
    // debug build sharing two cores with other tests may take minutes to
    // write: a longer deadline than the tests' 120 s for these two reads.
    let read = |columns: Value| {
        client
            .post(format!("{base}/dwh/v1/tracker/raw_data/read"))
            .timeout(std::time::Duration::from_secs(900))
            .json(
                &json!({"hash": key, "tracker_id": tracker, "interval": "2024-06-01T00:00:00Z/P1D",
                          "columns": columns, "time_zone": "UTC"}),
            )
            .send()
    };
    let csv = read(json!(["inputs.a000"]))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        csv.lines().count(),
        ROWS + 2,
        "header, 200,000 rows and the wide one"
    );
    let wide = read(json!([
        "inputs.*",
        "states.*",
        "discrete_inputs.*",
        "discrete_outputs.*"
    ]))
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    let header = wide.lines().next().unwrap_or_default();
    assert_eq!(
        header.split(',').count(),
        1 + 1_024,
        "msg_time and the 1,024 columns"
    );
    let last = wide.lines().last().unwrap_or_default();
    assert!(last.starts_with("\"2024-06-01T23:00:00Z\""), "{last}");
    assert!(
        !last.contains("\\N"),
        "the wide message has all its values: {last}"
    );
}
