//! Reads while the intake is loaded (Trackhouse points, `--read-every-ms`):
//! one raw data export at a time, the way a fleet's CSV export reads, to
//! see what the load does to a query's latency.
//!
//! Each read is `POST /dwh/v1/tracker/raw_data/read` of the account's first
//! tracker, every column (`export::full_columns`, inner maps expanded),
//! over the two UTC days around the stream's midnight: every row of it sent
//! so far, from the memtable and the files flushed. The next read starts
//! `every` after the last one ended (reads never pile up).

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::export::{full_columns, read_body, timed_body};

/// What the reads of a point found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reads {
    /// Latencies of the reads answered 200 (request → end of body), sorted.
    pub latencies: Vec<Duration>,
    /// Reads that failed, and the first failure.
    pub failed: u64,
    /// The first failure.
    pub first_failure: Option<String>,
    /// Data rows of the last read answered.
    pub last_rows: u64,
}

impl Reads {
    /// The `q` quantile of the latencies (nearest rank), if any.
    pub fn latency(&self, q: f64) -> Option<Duration> {
        super::driver::nearest_rank(&self.latencies, q)
    }
}

/// What to read and how often.
#[derive(Debug, Clone)]
pub struct ReadSpec {
    /// The server (`http://host:port`).
    pub base: String,
    /// The trackers' owner's API key.
    pub key: String,
    /// The tracker read.
    pub tracker: i64,
    /// The stream's UTC midnight: the read spans the day before and after.
    pub midnight_ms: i64,
    /// Pause between the end of one read and the start of the next.
    pub every: Duration,
}

/// Reads until `stop`, one at a time.
pub fn start(spec: ReadSpec, stop: CancellationToken) -> tokio::task::JoinHandle<Reads> {
    tokio::spawn(async move {
        let client = reqwest::Client::new();
        let span = (spec.midnight_ms - 86_400_000, spec.midnight_ms + 86_400_000);
        let body = read_body(&spec.key, spec.tracker, span, &full_columns());
        let url = format!("{}/dwh/v1/tracker/raw_data/read", spec.base);
        let mut reads = Reads::default();
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(spec.every) => {}
            }
            let started = Instant::now();
            let answered = match client.post(&url).json(&body).send().await {
                Ok(response) => timed_body(response, started).await,
                Err(e) => Err(e.into()),
            };
            match answered {
                Ok((run, _header)) => {
                    reads.latencies.push(run.total);
                    reads.last_rows = run.rows;
                }
                Err(e) => {
                    reads.failed += 1;
                    reads.first_failure.get_or_insert_with(|| format!("{e:#}"));
                }
            }
        }
        reads.latencies.sort_unstable();
        reads
    })
}
