//! Delivery of batches to the intake: zstd bodies, bounded concurrency, retries.
//!
//! Retrying is safe because the intake deduplicates: a batch stored by a
//! request whose answer was lost comes back as duplicates, not twice.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use platform::Secret;
use reqwest::header::{AUTHORIZATION, CONTENT_ENCODING, CONTENT_TYPE, RETRY_AFTER};
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::batch::{Batch, Origin};
use super::progress::Progress;

/// zstd level of request bodies: fast, and about 10× smaller than NDJSON.
const ZSTD_LEVEL: i32 = 3;
/// Rejected lines kept (and printed) one by one; the rest are only counted.
pub(crate) const MAX_REPORTED: usize = 20;
/// First retry delay; it doubles with every retry up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Longest `Retry-After` honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// Where and how to send.
#[derive(Debug, Clone)]
pub(crate) struct SenderConfig {
    /// The server's base URL (`http://host:port`), or the intake's own URL.
    pub(crate) url: String,
    /// Ingest token.
    pub(crate) token: Secret,
    /// Requests in flight at once.
    pub(crate) concurrency: usize,
    /// Retries of one request before its lines are given up.
    pub(crate) max_retries: u32,
    /// Whether HTTP proxies of the environment apply (not for a server of our own).
    pub(crate) env_proxy: bool,
}

/// Sends batches to one intake; [`Sender::send_all`] may be called repeatedly.
#[derive(Debug)]
pub(crate) struct Sender {
    shared: Arc<Shared>,
    concurrency: usize,
}

#[derive(Debug)]
struct Shared {
    client: reqwest::Client,
    endpoint: String,
    token: Secret,
    max_retries: u32,
    /// Names of the sources that [`Origin::source`] indexes.
    sources: Vec<String>,
    progress: Progress,
}

/// What a run of [`Sender::send_all`] achieved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    /// Lines handed to the sender.
    pub(crate) lines: u64,
    /// Lines stored.
    pub(crate) accepted: u64,
    /// Lines already stored before.
    pub(crate) duplicates: u64,
    /// Lines refused by the intake.
    pub(crate) rejected: u64,
    /// The first [`MAX_REPORTED`] refusals.
    pub(crate) rejections: Vec<Rejection>,
    /// HTTP requests made, retries included.
    pub(crate) requests: u64,
    /// Of which retries.
    pub(crate) retries: u64,
    /// Batches given up on.
    pub(crate) failed_batches: u64,
    /// Lines in them.
    pub(crate) undelivered: u64,
    /// Why sending stopped before the end (every further request would fail).
    pub(crate) fatal: Option<String>,
}

impl Totals {
    /// Adds the totals of a later run.
    pub(crate) fn merge(&mut self, later: Totals) {
        self.lines += later.lines;
        self.accepted += later.accepted;
        self.duplicates += later.duplicates;
        self.rejected += later.rejected;
        let room = MAX_REPORTED.saturating_sub(self.rejections.len());
        self.rejections
            .extend(later.rejections.into_iter().take(room));
        self.requests += later.requests;
        self.retries += later.retries;
        self.failed_batches += later.failed_batches;
        self.undelivered += later.undelivered;
        self.fatal = self.fatal.take().or(later.fatal);
    }

    /// Whether every line was delivered and none refused.
    pub(crate) fn clean(&self) -> bool {
        self.rejected == 0 && self.failed_batches == 0 && self.fatal.is_none()
    }
}

/// A line the intake refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    /// `source:line`.
    pub(crate) at: String,
    /// The platform error code (7 invalid field, 201 unknown tracker, 208 blocked).
    pub(crate) code: u16,
    /// The intake's description.
    pub(crate) description: String,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: code {}: {}", self.at, self.code, self.description)
    }
}

/// The intake's answer to a request it processed.
#[derive(Debug, Deserialize)]
struct Answer {
    success: bool,
    accepted: u64,
    duplicates: u64,
    #[serde(default)]
    rejected: Vec<RejectedLine>,
    /// Every line refused (the server lists only the first ones); absent
    /// from servers that list them all.
    #[serde(default)]
    rejected_total: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct RejectedLine {
    line: u64,
    code: u16,
    description: String,
}

/// One batch, delivered or given up.
#[derive(Debug)]
struct Delivery {
    batch: Batch,
    outcome: Outcome,
    requests: u64,
    retries: u64,
}

#[derive(Debug)]
enum Outcome {
    Answered(Answer),
    Failed { reason: String, fatal: bool },
}

/// What one request attempt came to.
#[derive(Debug)]
enum Attempt {
    Answered(Answer),
    Retry {
        after: Option<Duration>,
        reason: String,
    },
    Failed {
        reason: String,
        fatal: bool,
    },
}

impl Sender {
    /// A sender to `config.url`; `sources` names the sources that batch origins index.
    pub(crate) fn try_new(
        config: SenderConfig,
        sources: Vec<String>,
        progress: Progress,
    ) -> anyhow::Result<Self> {
        let mut client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            // An answer comes once the batch is durable; a stalled one is retried.
            .timeout(Duration::from_secs(600));
        if !config.env_proxy {
            client = client.no_proxy();
        }
        let client = client.build().context("building the HTTP client")?;
        Ok(Self {
            shared: Arc::new(Shared {
                client,
                endpoint: endpoint(&config.url),
                token: config.token,
                max_retries: config.max_retries,
                sources,
                progress,
            }),
            concurrency: config.concurrency.max(1),
        })
    }

    /// Sends every batch received, up to `concurrency` at a time, until the
    /// channel closes or a failure shows that no further request can succeed.
    pub(crate) async fn send_all(&self, mut batches: mpsc::Receiver<Batch>) -> Totals {
        let mut totals = Totals::default();
        let mut in_flight = JoinSet::new();
        let mut open = true;
        let mut next_id = 0u64;
        while totals.fatal.is_none() {
            tokio::select! {
                Some(done) = in_flight.join_next(), if !in_flight.is_empty() => match done {
                    Ok(delivery) => self.shared.fold(&mut totals, delivery),
                    Err(e) => totals.fatal = Some(format!("a sending task failed: {e}")),
                },
                batch = batches.recv(), if open && in_flight.len() < self.concurrency => match batch {
                    Some(batch) => {
                        next_id += 1;
                        totals.lines += batch.lines;
                        in_flight.spawn(self.shared.clone().deliver(next_id, batch));
                    }
                    None => open = false,
                },
                else => break,
            }
        }
        // After a fatal failure the requests still in flight are dropped, and
        // closing the channel tells the producer to stop.
        in_flight.abort_all();
        batches.close();
        totals
    }

    /// Sends `batches`, as [`Sender::send_all`] does.
    pub(crate) async fn send_batches(&self, batches: Vec<Batch>) -> Totals {
        let (tx, rx) = mpsc::channel(batches.len().max(1));
        for batch in batches {
            // The channel has room for every batch.
            let _ = tx.try_send(batch);
        }
        drop(tx);
        self.send_all(rx).await
    }
}

impl Shared {
    async fn deliver(self: Arc<Self>, id: u64, mut batch: Batch) -> Delivery {
        let body = std::mem::take(&mut batch.body);
        let compressed =
            tokio::task::spawn_blocking(move || zstd::bulk::compress(&body, ZSTD_LEVEL)).await;
        let body = match compressed {
            Ok(Ok(body)) => Bytes::from(body),
            Ok(Err(e)) => return Delivery::failed(batch, format!("compressing: {e}")),
            Err(e) => return Delivery::failed(batch, format!("compressing: {e}")),
        };
        let (mut requests, mut retries) = (0, 0);
        let outcome = loop {
            requests += 1;
            let (after, reason) = match self.post(body.clone()).await {
                Attempt::Answered(answer) => break Outcome::Answered(answer),
                Attempt::Failed { reason, fatal } => break Outcome::Failed { reason, fatal },
                Attempt::Retry { after, reason } => (after, reason),
            };
            if retries >= self.max_retries {
                let reason = format!("{reason} (gave up after {retries} retries)");
                break Outcome::Failed {
                    reason,
                    fatal: false,
                };
            }
            retries += 1;
            let delay = after.unwrap_or_else(|| backoff(retries, id));
            self.progress.note(&format!(
                "{}: {reason}; retry {retries} of {} in {:.1} s",
                self.span(&batch),
                self.max_retries,
                delay.as_secs_f64()
            ));
            tokio::time::sleep(delay).await;
        };
        Delivery {
            batch,
            outcome,
            requests,
            retries: u64::from(retries),
        }
    }

    async fn post(&self, body: Bytes) -> Attempt {
        let sent = self
            .client
            .post(&self.endpoint)
            .header(AUTHORIZATION, format!("Bearer {}", self.token.expose()))
            .header(CONTENT_TYPE, "application/x-ndjson")
            .header(CONTENT_ENCODING, "zstd")
            .body(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) if e.is_builder() => {
                return Attempt::Failed {
                    reason: format!("cannot send to {}: {}", self.endpoint, chain(&e)),
                    fatal: true,
                };
            }
            Err(e) => {
                return Attempt::Retry {
                    after: None,
                    reason: format!("no answer from {}: {}", self.endpoint, chain(&e)),
                };
            }
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|s| Duration::from_secs(s).min(MAX_RETRY_AFTER));
        let text = match response.text().await {
            Ok(text) => text,
            Err(e) => {
                return Attempt::Retry {
                    after: None,
                    reason: format!("reading the answer: {}", chain(&e)),
                };
            }
        };
        let (code, description) = error_object(&text);
        let reason = format!("HTTP {status}{description}");
        match status {
            200 => match serde_json::from_str::<Answer>(&text) {
                Ok(answer) if answer.success => Attempt::Answered(answer),
                _ => Attempt::Failed {
                    reason: format!("unexpected answer: {}", clip(&text)),
                    fatal: false,
                },
            },
            429 | 502 | 503 | 504 => Attempt::Retry {
                after: retry_after,
                reason,
            },
            // A refused token or a wrong URL fails every request alike.
            _ => Attempt::Failed {
                reason,
                fatal: matches!(status, 401 | 403 | 404 | 405) || matches!(code, Some(2 | 3)),
            },
        }
    }

    fn fold(&self, totals: &mut Totals, delivery: Delivery) {
        let Delivery {
            batch,
            outcome,
            requests,
            retries,
        } = delivery;
        totals.requests += requests;
        totals.retries += retries;
        match outcome {
            Outcome::Answered(answer) => {
                totals.accepted += answer.accepted;
                totals.duplicates += answer.duplicates;
                totals.rejected += answer
                    .rejected_total
                    .unwrap_or(answer.rejected.len() as u64);
                for line in answer.rejected {
                    if totals.rejections.len() >= MAX_REPORTED {
                        break;
                    }
                    let at = batch
                        .origin(line.line)
                        .map_or_else(|| format!("?:{}", line.line), |o| self.name(o));
                    let rejection = Rejection {
                        at,
                        code: line.code,
                        description: line.description,
                    };
                    self.progress.note(&rejection.to_string());
                    totals.rejections.push(rejection);
                }
                self.progress.advance(batch.source_bytes, batch.lines);
            }
            Outcome::Failed { reason, fatal } => {
                totals.failed_batches += 1;
                totals.undelivered += batch.lines;
                self.progress
                    .note(&format!("{}: not delivered: {reason}", self.span(&batch)));
                self.progress.advance(batch.source_bytes, 0);
                if fatal {
                    totals.fatal = Some(reason);
                }
            }
        }
    }

    /// `path:line`.
    fn name(&self, origin: Origin) -> String {
        let source = usize::try_from(origin.source)
            .ok()
            .and_then(|i| self.sources.get(i))
            .map_or("?", String::as_str);
        format!("{source}:{}", origin.line)
    }

    /// `a.ndjson:1` or `a.ndjson:1 to b.ndjson:20`: the lines of a batch.
    fn span(&self, batch: &Batch) -> String {
        match (batch.origin(1), batch.origin(batch.lines)) {
            (Some(first), Some(last)) if first == last => self.name(first),
            (Some(first), Some(last)) => format!("{} to {}", self.name(first), self.name(last)),
            _ => "an empty batch".to_owned(),
        }
    }
}

impl Delivery {
    fn failed(batch: Batch, reason: String) -> Self {
        Self {
            batch,
            outcome: Outcome::Failed {
                reason,
                fatal: false,
            },
            requests: 0,
            retries: 0,
        }
    }
}

/// The intake's URL: `url` itself if it names it, else `url/ingest/v1/messages`.
fn endpoint(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    if url.ends_with("/ingest/v1/messages") {
        url.to_owned()
    } else {
        format!("{url}/ingest/v1/messages")
    }
}

/// The delay before retry `retry` (from 1): doubling from [`FIRST_BACKOFF`]
/// up to [`MAX_BACKOFF`], spread by ±25% so that batches do not retry in step.
fn backoff(retry: u32, id: u64) -> Duration {
    let doubled = FIRST_BACKOFF.saturating_mul(1 << retry.saturating_sub(1).min(16));
    let base = doubled.min(MAX_BACKOFF);
    // splitmix64 of the batch and retry: a spread that needs no random source.
    let mut z = ((id << 8) ^ u64::from(retry)).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let spread = 0.75 + (z >> 11) as f64 / (1u64 << 53) as f64 * 0.5;
    base.mul_f64(spread)
}

/// `(code, ": code N: description")` of a platform error object; else a clip of the text.
fn error_object(text: &str) -> (Option<u64>, String) {
    let value: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    let status = &value["status"];
    match (status["code"].as_u64(), status["description"].as_str()) {
        (Some(code), Some(description)) => (Some(code), format!(": code {code}: {description}")),
        _ if text.trim().is_empty() => (None, String::new()),
        _ => (None, format!(": {}", clip(text))),
    }
}

fn clip(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(200) {
        Some((end, _)) => format!("{}…", text.get(..end).unwrap_or_default()),
        None => text.to_owned(),
    }
}

/// An error and its sources, `a: b: c`.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_derived_from_the_base_url() {
        assert_eq!(
            endpoint("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080/ingest/v1/messages"
        );
        assert_eq!(endpoint("http://h/"), "http://h/ingest/v1/messages");
        assert_eq!(
            endpoint("http://h/ingest/v1/messages/"),
            "http://h/ingest/v1/messages"
        );
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_a_spread() {
        for retry in 1..=20 {
            let base = FIRST_BACKOFF
                .saturating_mul(1 << (retry - 1).min(16))
                .min(MAX_BACKOFF);
            let delay = backoff(retry, 7);
            assert!(delay >= base.mul_f64(0.75) && delay <= base.mul_f64(1.25));
        }
        assert_ne!(backoff(1, 1), backoff(1, 2));
        assert!(backoff(30, 1) <= MAX_BACKOFF.mul_f64(1.25));
    }

    #[test]
    fn error_objects_are_described_by_code() {
        let text = r#"{"success":false,"status":{"code":8,"description":"busy"}}"#;
        assert_eq!(error_object(text), (Some(8), ": code 8: busy".to_owned()));
        assert_eq!(error_object("oops"), (None, ": oops".to_owned()));
        assert_eq!(error_object(""), (None, String::new()));
    }

    #[test]
    fn totals_merge_keeps_the_first_rejections() {
        let rejection = |n: u64| Rejection {
            at: format!("a:{n}"),
            code: 7,
            description: String::new(),
        };
        let mut first = Totals {
            rejected: 15,
            rejections: (1..=15).map(rejection).collect(),
            ..Totals::default()
        };
        first.merge(Totals {
            rejected: 10,
            rejections: (16..=25).map(rejection).collect(),
            fatal: Some("x".into()),
            ..Totals::default()
        });
        assert_eq!(first.rejected, 25);
        assert_eq!(first.rejections.len(), MAX_REPORTED);
        assert_eq!(first.rejections[19].at, "a:20");
        assert!(!first.clean());
    }
}
