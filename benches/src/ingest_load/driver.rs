//! The load itself: `connections` workers, each with an HTTP client of its
//! own (one keep-alive connection), posting pre-rendered bodies in pool
//! order. Closed loop: a worker sends its next body as soon as the previous
//! one is answered. Open loop (`rate`): body `i` is due at `i × lines /
//! rate` after the start, and its latency counts from that moment, so a
//! server that falls behind is charged for the wait too.
//!
//! A 503 or 429, or a connection that fails without an answer, is counted
//! and the same body is sent again after `retry_delay` (the server stored
//! nothing); its latency runs from the first attempt (or the due time) to
//! the 200. Any other answer fails the body (counted, not retried); so does
//! no answer by `drain` after the point's end.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;

use super::workload::Body;

/// How answers are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The intake's `{"success":true,"accepted":…,"duplicates":…,"rejected_total":…}`.
    Intake,
    /// ClickHouse's empty 200: every row of the body was inserted.
    ClickHouse,
}

/// Where and how bodies are posted.
#[derive(Debug, Clone)]
pub struct Target {
    /// The whole URL (ClickHouse's carries the INSERT as `query`).
    pub url: String,
    /// `Authorization: Bearer …`, if any.
    pub bearer: Option<String>,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// `Content-Encoding`, if the bodies are compressed.
    pub content_encoding: Option<&'static str>,
    /// How answers are read.
    pub answer: Answer,
}

/// How one point is driven.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Concurrent connections.
    pub connections: usize,
    /// No body is started after this.
    pub duration: Duration,
    /// Open loop at this many lines a second; closed loop without.
    pub rate: Option<f64>,
    /// Wait before sending a body again after a 503 or 429.
    pub retry_delay: Duration,
    /// After `duration`, refused bodies are retried for this long at most.
    pub retry_grace: Duration,
    /// After `duration`, answers are awaited this long at most; a body
    /// still unanswered then is abandoned (failed, status 0).
    pub drain: Duration,
}

/// What became of one body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Answered 200.
    Acked {
        /// New messages stored (ClickHouse: every row).
        accepted: u64,
        /// Lines recognised as already stored.
        duplicates: u64,
        /// Lines refused.
        rejected: u64,
    },
    /// Not acknowledged: the last status (0: no answer) and what came back.
    Failed {
        /// HTTP status, 0 when the request itself failed.
        status: u16,
        /// The answer or the error, cut short.
        detail: String,
    },
}

/// Attempts of one body before its final answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tries {
    /// Answered 503 or 429.
    pub refusals: u32,
    /// The connection failed without an answer.
    pub connection_errors: u32,
    /// The first such failure.
    pub first_connection_error: Option<String>,
}

/// One body sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// Its index in the bodies.
    pub body: usize,
    /// What became of it.
    pub outcome: Outcome,
    /// Due (or first sent) → final answer read.
    pub latency: Duration,
    /// Attempts before the final answer.
    pub tries: Tries,
    /// Start of the point → final answer read.
    pub answered_at: Duration,
}

/// One point, as the workers saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Start → last answer.
    pub elapsed: Duration,
    /// Every body sent, in no particular order.
    pub sent: Vec<Sent>,
    /// The pool ran out before the duration did.
    pub exhausted: bool,
}

/// Drives one point; returns once every body started has its answer.
pub async fn run(target: &Target, bodies: Arc<Vec<Body>>, plan: &Plan) -> anyhow::Result<Run> {
    let next = Arc::new(AtomicUsize::new(0));
    let exhausted = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let deadline = started + plan.duration;
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..plan.connections.max(1) {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .tcp_nodelay(true)
            .timeout(Duration::from_secs(600))
            .build()
            .context("building an HTTP client")?;
        let (target, bodies, next, exhausted, plan) = (
            target.clone(),
            bodies.clone(),
            next.clone(),
            exhausted.clone(),
            *plan,
        );
        workers.spawn(async move {
            let mut sent = Vec::new();
            loop {
                if plan.rate.is_none() && Instant::now() >= deadline {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(body) = bodies.get(i) else {
                    exhausted.store(true, Ordering::Relaxed);
                    break;
                };
                let due = match plan.rate {
                    Some(rate) => {
                        let lines_before =
                            body.first_line - bodies.first().map_or(0, |b| b.first_line);
                        let due = started + Duration::from_secs_f64(lines_before as f64 / rate);
                        if due >= deadline {
                            break;
                        }
                        tokio::time::sleep_until(due.into()).await;
                        due
                    }
                    None => Instant::now(),
                };
                let (outcome, tries) =
                    post_until_answered(&client, &target, body, &plan, deadline).await;
                let now = Instant::now();
                sent.push(Sent {
                    body: i,
                    outcome,
                    latency: now - due,
                    tries,
                    answered_at: now - started,
                });
            }
            sent
        });
    }
    let mut sent = Vec::new();
    while let Some(done) = workers.join_next().await {
        sent.extend(done.context("a load worker panicked")?);
    }
    let elapsed = sent
        .iter()
        .map(|s| s.answered_at)
        .max()
        .unwrap_or_else(|| started.elapsed());
    Ok(Run {
        elapsed,
        sent,
        exhausted: exhausted.load(Ordering::Relaxed),
    })
}

/// Posts `body` until it is answered with something other than 503/429
/// (or the grace after the deadline is over).
async fn post_until_answered(
    client: &reqwest::Client,
    target: &Target,
    body: &Body,
    plan: &Plan,
    deadline: Instant,
) -> (Outcome, Tries) {
    let mut tries = Tries::default();
    loop {
        let patience = (deadline + plan.drain)
            .saturating_duration_since(Instant::now())
            .max(Duration::from_secs(1));
        let mut request = client
            .post(&target.url)
            .timeout(patience)
            .header(reqwest::header::CONTENT_TYPE, target.content_type);
        if let Some(token) = &target.bearer {
            request = request.bearer_auth(token);
        }
        if let Some(encoding) = target.content_encoding {
            request = request.header(reqwest::header::CONTENT_ENCODING, encoding);
        }
        let answered = match request.body(body.bytes.clone()).send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                match response.text().await {
                    Ok(text) => Ok((status, text)),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        };
        let (status, text) = match answered {
            Ok(answer) => answer,
            Err(e) if e.is_timeout() => {
                let detail = format!(
                    "no answer within the drain time ({} s after the point)",
                    plan.drain.as_secs()
                );
                return (Outcome::Failed { status: 0, detail }, tries);
            }
            Err(e) => {
                // The connection failed (a server that answers 503 before
                // reading a body closes it under the client's feet): sent
                // again, as a gateway would; if the server had stored it
                // after all, the exact checks of the point say so.
                tries.connection_errors += 1;
                if tries.first_connection_error.is_none() {
                    tries.first_connection_error = Some(error_chain(&e));
                }
                if Instant::now() < deadline + plan.retry_grace {
                    tokio::time::sleep(plan.retry_delay).await;
                    continue;
                }
                return (
                    Outcome::Failed {
                        status: 0,
                        detail: error_chain(&e),
                    },
                    tries,
                );
            }
        };
        if matches!(status, 429 | 503) && Instant::now() < deadline + plan.retry_grace {
            tries.refusals += 1;
            tokio::time::sleep(plan.retry_delay).await;
            continue;
        }
        let outcome = if status == 200 {
            read_answer(target.answer, &text, body.lines as u64)
        } else {
            Outcome::Failed {
                status,
                detail: text.chars().take(300).collect(),
            }
        };
        return (outcome, tries);
    }
}

/// An error with its sources, `: `-separated.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// A 200's counts.
fn read_answer(answer: Answer, text: &str, lines: u64) -> Outcome {
    match answer {
        Answer::ClickHouse => Outcome::Acked {
            accepted: lines,
            duplicates: 0,
            rejected: 0,
        },
        Answer::Intake => {
            let parsed: Option<Value> = serde_json::from_str(text).ok();
            let field = |name: &str| parsed.as_ref().and_then(|v| v.get(name)?.as_u64());
            match (field("accepted"), field("duplicates")) {
                (Some(accepted), Some(duplicates))
                    if parsed.as_ref().and_then(|v| v.get("success")?.as_bool()) == Some(true) =>
                {
                    Outcome::Acked {
                        accepted,
                        duplicates,
                        rejected: field("rejected_total").unwrap_or(0),
                    }
                }
                _ => Outcome::Failed {
                    status: 200,
                    detail: format!(
                        "not an intake answer: {}",
                        text.chars().take(300).collect::<String>()
                    ),
                },
            }
        }
    }
}

/// Sums of a run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Totals {
    /// Bodies answered 200.
    pub acked_bodies: u64,
    /// Lines of those bodies.
    pub acked_lines: u64,
    /// `accepted` summed.
    pub accepted: u64,
    /// `duplicates` summed.
    pub duplicates: u64,
    /// `rejected_total` summed.
    pub rejected: u64,
    /// Bytes sent in acknowledged bodies (as sent, compressed or not).
    pub acked_bytes: u64,
    /// 503 and 429 answers (retried).
    pub refusals: u64,
    /// Connections that failed without an answer (retried).
    pub connection_errors: u64,
    /// The first of those.
    pub first_connection_error: Option<String>,
    /// Bodies that failed otherwise, and the first failure.
    pub failed: u64,
    /// The first failure's status and detail.
    pub first_failure: Option<(u16, String)>,
    /// Acknowledgement latencies of the bodies answered 200, sorted.
    pub latencies: Vec<Duration>,
    /// Fewest lines acknowledged in one whole second of the load, the
    /// first second left out (stalls, e.g. while a flush runs).
    pub slowest_second_lines: Option<u64>,
}

impl Totals {
    /// Sums `run` over `bodies`; `duration` is the point's load time.
    pub fn of(run: &Run, bodies: &[Body], duration: Duration) -> Self {
        let mut totals = Self::default();
        let seconds = run.elapsed.min(duration).as_secs() as usize;
        let mut per_second = vec![0u64; seconds + 1];
        for sent in &run.sent {
            totals.refusals += u64::from(sent.tries.refusals);
            totals.connection_errors += u64::from(sent.tries.connection_errors);
            if totals.first_connection_error.is_none() {
                totals
                    .first_connection_error
                    .clone_from(&sent.tries.first_connection_error);
            }
            match &sent.outcome {
                Outcome::Acked {
                    accepted,
                    duplicates,
                    rejected,
                } => {
                    let body = bodies.get(sent.body);
                    let lines = body.map_or(0, |b| b.lines as u64);
                    totals.acked_bodies += 1;
                    totals.acked_lines += lines;
                    totals.acked_bytes += body.map_or(0, |b| b.bytes.len() as u64);
                    totals.accepted += accepted;
                    totals.duplicates += duplicates;
                    totals.rejected += rejected;
                    totals.latencies.push(sent.latency);
                    if let Some(slot) = per_second.get_mut(sent.answered_at.as_secs() as usize) {
                        *slot += lines;
                    }
                }
                Outcome::Failed { status, detail } => {
                    totals.failed += 1;
                    if totals.first_failure.is_none() {
                        totals.first_failure = Some((*status, detail.clone()));
                    }
                }
            }
        }
        totals.latencies.sort();
        // Whole seconds only: not the last, partial one.
        totals.slowest_second_lines = per_second
            .get(..seconds)
            .and_then(|s| s.iter().min().copied());
        totals
    }

    /// The `q` quantile of the latencies (nearest rank), if any.
    pub fn latency(&self, q: f64) -> Option<Duration> {
        if self.latencies.is_empty() {
            return None;
        }
        let rank = (q * self.latencies.len() as f64).ceil() as usize;
        self.latencies
            .get(rank.clamp(1, self.latencies.len()) - 1)
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intake_answers_are_read_and_others_fail() {
        let ok = r#"{"success":true,"accepted":9,"duplicates":1,"rejected":[],"rejected_total":0}"#;
        assert_eq!(
            read_answer(Answer::Intake, ok, 10),
            Outcome::Acked {
                accepted: 9,
                duplicates: 1,
                rejected: 0
            }
        );
        assert!(matches!(
            read_answer(Answer::Intake, "{}", 10),
            Outcome::Failed { status: 200, .. }
        ));
        assert_eq!(
            read_answer(Answer::ClickHouse, "", 10),
            Outcome::Acked {
                accepted: 10,
                duplicates: 0,
                rejected: 0
            }
        );
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let totals = Totals {
            latencies: (1..=1000).map(Duration::from_millis).collect(),
            ..Totals::default()
        };
        assert_eq!(totals.latency(0.5), Some(Duration::from_millis(500)));
        assert_eq!(totals.latency(0.99), Some(Duration::from_millis(990)));
        assert_eq!(totals.latency(0.999), Some(Duration::from_millis(999)));
        assert_eq!(Totals::default().latency(0.5), None);
    }
}
