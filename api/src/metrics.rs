//! Prometheus metrics and the per-request span (request id, route, status).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tracing::Instrument;

use crate::AppState;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    limit: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    code: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LookupLabels {
    kind: &'static str,
}

/// What the intake's look-ups of tokens and trackers cost (`platform::IntakeLookup`).
#[derive(Debug, Default)]
struct IntakeCacheMetrics {
    hits: Family<LookupLabels, Counter>,
    misses: Family<LookupLabels, Counter>,
    queries: Family<LookupLabels, Counter>,
    invalidations: Counter,
    evictions: Counter,
    entries: Gauge,
}

/// What an intake look-up was about.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LookupKind {
    /// The request's ingest token.
    IngestToken,
    /// The trackers its lines name.
    Trackers,
}

impl LookupKind {
    const fn label(self) -> &'static str {
        match self {
            Self::IngestToken => "ingest_token",
            Self::Trackers => "tracker",
        }
    }
}

type HistogramFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

/// The platform error code an answer carried, left on the response for the metrics layer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AnsweredCode(pub(crate) u16);

/// The API's metrics.
#[derive(Debug)]
pub(crate) struct Metrics {
    requests: Family<RequestLabels, Counter>,
    durations: HistogramFamily,
    errors: Family<CodeLabels, Counter>,
    cuts: Family<LimitLabels, Counter>,
    intake_cache: IntakeCacheMetrics,
    /// Intake requests holding a slot (`--max-intake-requests`).
    pub(crate) intake_in_flight: Gauge,
    /// Intake requests waiting for a slot (`--intake-queue-ms`).
    pub(crate) intake_waiting: Gauge,
    /// Intake bodies being parsed and prepared (at most `--intake-parse-tasks`).
    pub(crate) intake_parsing: Gauge,
    /// Intake bodies read and waiting for a parse task (`--intake-parse-tasks`).
    pub(crate) intake_parse_waiting: Gauge,
    /// Where an intake body's time goes, by stage.
    intake_stages: Family<StageLabels, Histogram, fn() -> Histogram>,
}

/// A stage of an intake body's way to its answer.
#[derive(Debug, Clone, Copy)]
pub(crate) enum IntakeStage {
    /// From the request's slot to the body's last byte.
    Receive,
    /// From the body's last byte until every chunk is parsed and prepared.
    Parse,
    /// From the last chunk prepared until every chunk is durable and visible.
    Commit,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StageLabels {
    stage: &'static str,
}

fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_25, 2.0, 16))
}

impl Metrics {
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            requests: Family::default(),
            durations: Family::new_with_constructor(latency_histogram),
            errors: Family::default(),
            cuts: Family::default(),
            intake_cache: IntakeCacheMetrics::default(),
            intake_in_flight: Gauge::default(),
            intake_waiting: Gauge::default(),
            intake_parsing: Gauge::default(),
            intake_parse_waiting: Gauge::default(),
            intake_stages: Family::new_with_constructor(latency_histogram),
        };
        registry.register(
            "trackhouse_intake_requests_in_flight",
            "Intake requests being read, parsed or stored (at most --max-intake-requests)",
            metrics.intake_in_flight.clone(),
        );
        registry.register(
            "trackhouse_intake_requests_waiting",
            "Intake requests waiting for a slot (at most --intake-queue-ms each, then 503)",
            metrics.intake_waiting.clone(),
        );
        registry.register(
            "trackhouse_intake_parsing",
            "Intake bodies being parsed, resolved and prepared (at most --intake-parse-tasks)",
            metrics.intake_parsing.clone(),
        );
        registry.register(
            "trackhouse_intake_parse_waiting",
            "Intake bodies read and waiting for one of the --intake-parse-tasks that parse and prepare them",
            metrics.intake_parse_waiting.clone(),
        );
        registry.register(
            "trackhouse_intake_stage_seconds",
            "Time of each stage of an intake body, by stage: receive (from its request slot to its last byte), \
             parse (from its last byte until every chunk is parsed, resolved and prepared), \
             commit (from the last chunk prepared until every chunk is durable and visible; trackhouse_ingest_stage_seconds splits it)",
            metrics.intake_stages.clone(),
        );
        registry.register(
            "trackhouse_http_requests",
            "HTTP requests answered",
            metrics.requests.clone(),
        );
        registry.register(
            "trackhouse_http_request_duration_seconds",
            "Time to answer an HTTP request (to the first byte of the body)",
            metrics.durations.clone(),
        );
        registry.register(
            "trackhouse_api_errors",
            "Error answers by platform error code",
            metrics.errors.clone(),
        );
        registry.register(
            "trackhouse_api_limit_cuts",
            "Answers cut short by a configured limit (the answer says so), by limit",
            metrics.cuts.clone(),
        );
        let cache = &metrics.intake_cache;
        registry.register(
            "trackhouse_intake_cache_hits",
            "Intake answers about ingest tokens and trackers taken from memory, by kind",
            cache.hits.clone(),
        );
        registry.register(
            "trackhouse_intake_cache_misses",
            "Intake answers about ingest tokens and trackers read from the platform store, by kind",
            cache.misses.clone(),
        );
        registry.register(
            "trackhouse_intake_lookup_queries",
            "Statements the intake's look-ups ran on the platform store (reads of the change counter included), by kind",
            cache.queries.clone(),
        );
        registry.register(
            "trackhouse_intake_cache_invalidations",
            "Times the intake's answers were dropped because a token or tracker changed in the platform store",
            cache.invalidations.clone(),
        );
        registry.register(
            "trackhouse_intake_cache_evictions",
            "Intake answers dropped to keep within --intake-cache-entries",
            cache.evictions.clone(),
        );
        registry.register(
            "trackhouse_intake_cache_entries",
            "Intake answers about ingest tokens and trackers held in memory",
            cache.entries.clone(),
        );
        metrics
    }

    /// Notes that an intake body's `stage` took from `since` until now.
    pub(crate) fn observe_intake_stage(&self, stage: IntakeStage, since: std::time::Instant) {
        let stage = match stage {
            IntakeStage::Receive => "receive",
            IntakeStage::Parse => "parse",
            IntakeStage::Commit => "commit",
        };
        self.intake_stages
            .get_or_create(&StageLabels { stage })
            .observe(since.elapsed().as_secs_f64());
    }

    /// Counts an answer cut short by `limit` (its configuration name).
    pub(crate) fn count_cut(&self, limit: &'static str) {
        self.cuts.get_or_create(&LimitLabels { limit }).inc();
    }

    /// Counts what an intake look-up did; `entries`: what the cache holds after it.
    pub(crate) fn count_lookup(
        &self,
        kind: LookupKind,
        stats: &platform::LookupStats,
        entries: usize,
    ) {
        let cache = &self.intake_cache;
        let labels = LookupLabels { kind: kind.label() };
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        cache.hits.get_or_create(&labels).inc_by(count(stats.hits));
        cache
            .misses
            .get_or_create(&labels)
            .inc_by(count(stats.misses));
        cache
            .queries
            .get_or_create(&labels)
            .inc_by(count(stats.queries));
        if stats.invalidated {
            cache.invalidations.inc();
        }
        cache.evictions.inc_by(count(stats.evicted));
        cache
            .entries
            .set(i64::try_from(entries).unwrap_or(i64::MAX));
    }
}

static NEXT_REQUEST: AtomicU64 = AtomicU64::new(1);

/// Gives each request an id and a span, and counts it once answered.
pub(crate) async fn observe(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = request.method().as_str().to_owned();
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(
            || format!("{:x}", NEXT_REQUEST.fetch_add(1, Ordering::Relaxed)),
            str::to_owned,
        );
    let span = tracing::info_span!("request", request_id = %request_id, %method, %route);
    let mut response = next.run(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    let metrics = &state.inner.metrics;
    metrics
        .requests
        .get_or_create(&RequestLabels {
            route: route.clone(),
            method,
            status,
        })
        .inc();
    metrics
        .durations
        .get_or_create(&RouteLabels { route })
        .observe(started.elapsed().as_secs_f64());
    if let Some(AnsweredCode(code)) = response.extensions().get::<AnsweredCode>().copied() {
        metrics.errors.get_or_create(&CodeLabels { code }).inc();
    }
    span.in_scope(|| {
        tracing::debug!(
            status,
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            "answered"
        )
    });
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}
