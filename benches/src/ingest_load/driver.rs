//! The load itself: `connections` workers, each with an HTTP client of its
//! own (one keep-alive connection), posting the stream's bodies in order as
//! a [`Feeder`] makes them ahead (on threads of its own: later epochs'
//! times written in, zstd compressed). Closed loop: a worker sends its next
//! body as soon as the previous one is answered. Open loop (`rate`): body
//! `i` is due at `i × lines / rate` after the start, and its latency counts
//! from that moment, so a server that falls behind is charged for the wait
//! too. A worker that finds no body ready waits for it, and the waits are
//! counted ([`Run::feeder_waits`]): the generator, not the server, held
//! the load back then.
//!
//! A 503 or 429, or a connection that fails without an answer, is counted
//! and the same body is sent again after `retry_delay` (the server stored
//! nothing); its latency runs from the first attempt (or the due time) to
//! the 200. Any other answer fails the body (counted, not retried); so does
//! no answer by `drain` after the point's end.
//!
//! A run may be stopped ([`run`]'s `stop`: the crash test kills the server
//! and then cancels it): no body is started after that, and a body whose
//! attempt fails then is not retried but failed (status 0, unanswered).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::workload::{Body, Compression, Pool};

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
    /// The first refusal: its status and answer, cut short.
    pub first_refusal: Option<String>,
}

/// One body sent (or taken and not sent: a stopped run's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// Its index in the stream's bodies.
    pub body: usize,
    /// Its first line in the stream.
    pub first_line: u64,
    /// Its lines.
    pub lines: usize,
    /// Its bytes as sent (compressed or not).
    pub bytes: usize,
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
    /// When the load started, as wall-clock time (a body's `answered_at`
    /// counts from it): for lining the bodies up with the server's events.
    pub started_at: std::time::SystemTime,
    /// Start → last answer.
    pub elapsed: Duration,
    /// Every body sent, in no particular order.
    pub sent: Vec<Sent>,
    /// The feeder had no more bodies before the duration was over.
    pub exhausted: bool,
    /// Bodies a worker had to wait for: not made yet when it wanted one.
    pub feeder_waits: u64,
    /// The time workers waited for them.
    pub feeder_wait: Duration,
}

/// What a [`Feeder`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedSpec {
    /// Lines per body.
    pub lines_per_body: usize,
    /// How bodies are compressed.
    pub compression: Compression,
    /// The first body made (a crash round goes on where the last one stopped).
    pub from: usize,
    /// No body from this one on (`None`: the stream is endless).
    pub until: Option<usize>,
    /// Threads that make bodies.
    pub threads: usize,
    /// Lines made ahead of the connections, at most (about: whole bodies,
    /// at least two per thread).
    pub ahead_lines: usize,
}

type Made = Result<Body, String>;

/// The bodies of a run, in order, made ahead of the connections on
/// threads of their own: some given bodies first (a crash round's
/// retransmissions), then the stream's from [`FeedSpec::from`] on. Each
/// thread makes every `threads`-th body into a bounded queue of its own,
/// so the memory held is the queues' and the bodies in flight.
#[derive(Debug)]
pub struct Feeder {
    state: tokio::sync::Mutex<Feed>,
    /// Where open-loop due times count from: the first line of the first
    /// body handed out.
    pub start_line: u64,
    per_queue: usize,
    stop: Arc<AtomicBool>,
    waits: AtomicU64,
    waited_ns: AtomicU64,
}

#[derive(Debug)]
struct Feed {
    again: VecDeque<Body>,
    next: usize,
    from: usize,
    until: Option<usize>,
    queues: Vec<mpsc::Receiver<Made>>,
}

impl Feeder {
    /// Makes `again` (body indices) at once, then starts the threads that
    /// make the stream's bodies of `spec`.
    pub fn start(pool: &Arc<Pool>, spec: FeedSpec, again: &[usize]) -> anyhow::Result<Self> {
        let again = again
            .iter()
            .map(|&i| pool.body(i, spec.lines_per_body, spec.compression))
            .collect::<anyhow::Result<VecDeque<Body>>>()?;
        let threads = spec.threads.max(1);
        let per_queue = (spec.ahead_lines / spec.lines_per_body.max(1) / threads).max(2);
        let stop = Arc::new(AtomicBool::new(false));
        let mut queues = Vec::with_capacity(threads);
        for k in 0..threads {
            let (sender, receiver) = mpsc::channel::<Made>(per_queue);
            queues.push(receiver);
            let (pool, stop) = (pool.clone(), stop.clone());
            std::thread::Builder::new()
                .name(format!("feeder-{k}"))
                .spawn(move || {
                    let mut index = spec.from + k;
                    while spec.until.is_none_or(|until| index < until)
                        && !stop.load(Ordering::Relaxed)
                    {
                        let made = pool
                            .body(index, spec.lines_per_body, spec.compression)
                            .map_err(|e| format!("making body {index}: {e:#}"));
                        if sender.blocking_send(made).is_err() {
                            break;
                        }
                        index += threads;
                    }
                })
                .context("starting a feeder thread")?;
        }
        let start_line = again
            .front()
            .map_or(spec.from as u64 * spec.lines_per_body as u64, |b| {
                b.first_line
            });
        Ok(Self {
            state: tokio::sync::Mutex::new(Feed {
                again,
                next: spec.from,
                from: spec.from,
                until: spec.until,
                queues,
            }),
            start_line,
            per_queue,
            stop,
            waits: AtomicU64::new(0),
            waited_ns: AtomicU64::new(0),
        })
    }

    /// Waits until the queues are full (or `patience` is over), so that a
    /// point starts with bodies ready.
    pub async fn fill(&self, patience: Duration) {
        let deadline = Instant::now() + patience;
        while Instant::now() < deadline {
            let full = {
                let feed = self.state.lock().await;
                let left = feed
                    .until
                    .map_or(usize::MAX, |u| u.saturating_sub(feed.next));
                let threads = feed.queues.len().max(1);
                feed.queues.iter().enumerate().all(|(k, q)| {
                    // What this queue can still get before the end.
                    let coming = left / threads + usize::from(k < left % threads);
                    q.len() >= self.per_queue.min(coming)
                })
            };
            if full {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The next body, or `None` when there are no more.
    pub async fn next(&self) -> anyhow::Result<Option<Body>> {
        let mut feed = self.state.lock().await;
        if let Some(body) = feed.again.pop_front() {
            return Ok(Some(body));
        }
        if feed.until.is_some_and(|until| feed.next >= until) {
            return Ok(None);
        }
        let threads = feed.queues.len().max(1);
        let k = (feed.next - feed.from) % threads;
        let Some(queue) = feed.queues.get_mut(k) else {
            return Ok(None);
        };
        let made = match queue.try_recv() {
            Ok(made) => Some(made),
            Err(mpsc::error::TryRecvError::Disconnected) => None,
            Err(mpsc::error::TryRecvError::Empty) => {
                let waited = Instant::now();
                let made = queue.recv().await;
                self.waits.fetch_add(1, Ordering::Relaxed);
                self.waited_ns
                    .fetch_add(waited.elapsed().as_nanos() as u64, Ordering::Relaxed);
                made
            }
        };
        let Some(made) = made else {
            anyhow::bail!("a feeder thread stopped before body {}", feed.next);
        };
        let body = made.map_err(anyhow::Error::msg)?;
        feed.next += 1;
        Ok(Some(body))
    }

    /// The first body of the stream not handed out yet: where a next
    /// round goes on.
    pub async fn next_fresh(&self) -> usize {
        self.state.lock().await.next
    }

    /// Bodies workers had to wait for, and how long they waited.
    pub fn waits(&self) -> (u64, Duration) {
        (
            self.waits.load(Ordering::Relaxed),
            Duration::from_nanos(self.waited_ns.load(Ordering::Relaxed)),
        )
    }
}

impl Drop for Feeder {
    fn drop(&mut self) {
        // The threads stop at their next body (or when their queue, dropped
        // with this, refuses one).
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Drives one point; returns once every body started has its answer.
/// After `stop` is cancelled no body is started and failed attempts are
/// not retried.
pub async fn run(
    target: &Target,
    feeder: Arc<Feeder>,
    plan: &Plan,
    stop: Option<CancellationToken>,
) -> anyhow::Result<Run> {
    let exhausted = Arc::new(AtomicBool::new(false));
    let (waits_before, waited_before) = feeder.waits();
    let started = Instant::now();
    let started_at = std::time::SystemTime::now();
    let deadline = started + plan.duration;
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..plan.connections.max(1) {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .tcp_nodelay(true)
            .timeout(Duration::from_secs(600))
            .build()
            .context("building an HTTP client")?;
        let (target, feeder, exhausted, plan, stop) = (
            target.clone(),
            feeder.clone(),
            exhausted.clone(),
            *plan,
            stop.clone(),
        );
        workers.spawn(async move {
            let mut sent = Vec::new();
            let stopped = || stop.as_ref().is_some_and(CancellationToken::is_cancelled);
            loop {
                if stopped() || (plan.rate.is_none() && Instant::now() >= deadline) {
                    break;
                }
                let Some(body) = feeder.next().await? else {
                    exhausted.store(true, Ordering::Relaxed);
                    break;
                };
                let due = match plan.rate {
                    Some(rate) => {
                        let lines_before = body.first_line.saturating_sub(feeder.start_line);
                        let due = started + Duration::from_secs_f64(lines_before as f64 / rate);
                        if due >= deadline {
                            break;
                        }
                        tokio::time::sleep_until(due.into()).await;
                        due
                    }
                    None => Instant::now(),
                };
                let (outcome, tries) = if stopped() {
                    let detail = "not sent: the load was stopped".to_owned();
                    (Outcome::Failed { status: 0, detail }, Tries::default())
                } else {
                    post_until_answered(&client, &target, &body, &plan, deadline, stop.as_ref())
                        .await
                };
                let now = Instant::now();
                sent.push(Sent {
                    body: body.index,
                    first_line: body.first_line,
                    lines: body.lines,
                    bytes: body.bytes.len(),
                    outcome,
                    latency: now - due,
                    tries,
                    answered_at: now - started,
                });
            }
            anyhow::Ok(sent)
        });
    }
    let mut sent = Vec::new();
    while let Some(done) = workers.join_next().await {
        sent.extend(done.context("a load worker panicked")??);
    }
    let elapsed = sent
        .iter()
        .map(|s| s.answered_at)
        .max()
        .unwrap_or_else(|| started.elapsed());
    let (waits, waited) = feeder.waits();
    Ok(Run {
        started_at,
        elapsed,
        sent,
        exhausted: exhausted.load(Ordering::Relaxed),
        feeder_waits: waits - waits_before,
        feeder_wait: waited.saturating_sub(waited_before),
    })
}

/// Posts `body` until it is answered with something other than 503/429
/// (or the grace after the deadline is over, or the run is stopped).
async fn post_until_answered(
    client: &reqwest::Client,
    target: &Target,
    body: &Body,
    plan: &Plan,
    deadline: Instant,
    stop: Option<&CancellationToken>,
) -> (Outcome, Tries) {
    let mut tries = Tries::default();
    let stopped = || stop.is_some_and(CancellationToken::is_cancelled);
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
                if !stopped() && Instant::now() < deadline + plan.retry_grace {
                    tokio::time::sleep(plan.retry_delay).await;
                    if !stopped() {
                        continue;
                    }
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
        if matches!(status, 429 | 503) && !stopped() && Instant::now() < deadline + plan.retry_grace
        {
            tries.refusals += 1;
            if tries.first_refusal.is_none() {
                let text: String = text.chars().take(300).collect();
                tries.first_refusal = Some(format!("{status}: {text}"));
            }
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
    /// The first 503 or 429: status and answer.
    pub first_refusal: Option<String>,
    /// Bodies that failed otherwise, and the first failure.
    pub failed: u64,
    /// The first failure's status and detail.
    pub first_failure: Option<(u16, String)>,
    /// Acknowledgement latencies of the bodies answered 200, sorted.
    pub latencies: Vec<Duration>,
    /// Fewest lines acknowledged in one whole second of the load, the
    /// first second left out (stalls, e.g. while a flush runs).
    pub slowest_second_lines: Option<u64>,
    /// Bodies the workers had to wait for (the generator was behind).
    pub feeder_waits: u64,
    /// How long they waited in all.
    pub feeder_wait: Duration,
}

impl Totals {
    /// Sums `run`; `duration` is the point's load time.
    pub fn of(run: &Run, duration: Duration) -> Self {
        let mut totals = Self {
            feeder_waits: run.feeder_waits,
            feeder_wait: run.feeder_wait,
            ..Self::default()
        };
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
            if totals.first_refusal.is_none() {
                totals.first_refusal.clone_from(&sent.tries.first_refusal);
            }
            match &sent.outcome {
                Outcome::Acked {
                    accepted,
                    duplicates,
                    rejected,
                } => {
                    let lines = sent.lines as u64;
                    totals.acked_bodies += 1;
                    totals.acked_lines += lines;
                    totals.acked_bytes += sent.bytes as u64;
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
        nearest_rank(&self.latencies, q)
    }
}

/// The `q` quantile of `sorted` by nearest rank, if any.
pub fn nearest_rank(sorted: &[Duration], q: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
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
