use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use ingest::Ingest;
use platform::Store;
use prometheus_client::registry::Registry;
use schemas::ErrorCode;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::answer::{Answer, Done, Media, MediaKind, Success};
use crate::limits::RateLimits;
use crate::metrics::Metrics;
use crate::route::{CallDoc, Route};
use crate::{ApiError, RateLimitConfig, route};

/// Settings of the HTTP interfaces.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Largest request body accepted (after which: HTTP 412, code 9).
    pub max_request_bytes: usize,
    /// Whether user session hashes still work on calls other than API key
    /// management (deprecated; answered with `Deprecation: true`).
    pub allow_session_auth: bool,
    /// Request rate limits.
    pub rate_limits: RateLimitConfig,
    /// Largest intake body (`/ingest/v1/messages`), compressed and decompressed alike.
    pub max_ingest_bytes: usize,
    /// Longest message-time span of one raw data read (longer: code 211).
    pub raw_data_max_span_days: u32,
    /// Longest `interval` of one fuel resampling call (longer: code 211).
    pub resampling_max_span_days: u32,
    /// Intake requests processed at once (their bodies read, parsed and
    /// stored), so memory stays bounded; more wait for a slot, before their
    /// bodies are read, up to `intake_queue_wait`, and are then answered 503
    /// (code 8).
    pub max_intake_requests: usize,
    /// Longest wait of an intake request for a slot.
    pub intake_queue_wait: Duration,
    /// Intake bodies parsed and prepared at once, on blocking threads: the
    /// CPU-bound part of a request, bounded by the cores so that the
    /// writer and the flusher keep their share (eight parses at once left
    /// the flusher a tenth of the machine, and the memtable overflowed).
    pub intake_parse_tasks: usize,
    /// An intake body longer than this is stored in chunks of whole lines
    /// about this long, parsed in parallel as they arrive and committed
    /// together once all are prepared (decision 119).
    pub intake_chunk_bytes: usize,
    /// Most columns of one raw data read, after `.*` expansion (more: code 7).
    pub raw_data_max_columns: usize,
    /// Raw data exports and fuel resamplings running at once, in all (more: 503, code 8).
    pub max_reads: usize,
    /// ... and of one user (more: 429, code 15).
    pub max_reads_per_user: usize,
    /// Longest wait for a request's body (a slow or stalling client then gets code 5).
    pub request_body_timeout: Duration,
    /// Longest wait for a request's headers on a connection (it is then closed).
    pub header_read_timeout: Duration,
    /// When set, `/metrics` answers only `Authorization: Bearer <token>` (else code 2).
    pub metrics_token: Option<String>,
    /// Rejected intake lines listed in an answer (all are counted in `rejected_total`).
    pub max_listed_rejections: usize,
    /// Ingest-token and tracker answers the intake keeps in memory
    /// (`platform::IntakeLookup`); 0 keeps none.
    pub intake_cache_entries: usize,
    /// Most entries of one complex member (`inputs`, `states`, `discrete_*`)
    /// of an intake line; more: the line is refused with code 7.
    pub max_inner_entries: usize,
    /// How old an intake line's `msg_time` may be, in days; older: code 7.
    pub max_message_age_days: u32,
    /// Plugins available to users with none enabled for them or their
    /// dealer (`plugin/list`; 29 is billing).
    pub default_plugins: Vec<i64>,
    /// The base of a bill's `link` (the bill's id is appended).
    pub billing_orders_base_url: String,
    /// What `file/upload` keeps: size of a file, of an XLSX inflated, files
    /// per account, how long.
    pub uploads: platform::UploadRules,
    /// Lines `vehicle/batch_convert` converts (clarification 35: 500); more
    /// are cut and `limit_exceeded` is true.
    pub batch_convert_max_lines: usize,
    /// Data rows `panel/user/upload` takes (more: the file is refused, code 7).
    pub max_upload_users: usize,
    /// Places `geocoder/search_address` answers at most for a name.
    pub geocoder_results: usize,
    /// Geo links an account holds at most (268 beyond).
    pub geo_link_quota: u32,
    /// The map tiles of the geo link page: a Leaflet URL template (`{z}`, `{x}`, `{y}`, `{s}`).
    pub map_tiles_url: String,
    /// Requests under `/links/` (the public geo link pages, their feed and
    /// files) per client address; more: 429, code 15.
    pub link_rate: crate::Rate,
    /// Reverse proxies in front of the server that append to `X-Forwarded-For`;
    /// the client address is the entry this many places from the right. 0 uses
    /// the socket peer and ignores the header (which clients could forge).
    pub trusted_proxy_hops: usize,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            max_request_bytes: 16 * 1024 * 1024,
            allow_session_auth: true,
            rate_limits: RateLimitConfig::default(),
            trusted_proxy_hops: 0,
            map_tiles_url: DEFAULT_MAP_TILES_URL.to_owned(),
            link_rate: crate::limits::DEFAULT_LINK_RATE,
            max_ingest_bytes: 64 * 1024 * 1024,
            max_intake_requests: 8,
            intake_queue_wait: Duration::from_secs(2),
            intake_parse_tasks: std::thread::available_parallelism().map_or(2, usize::from),
            intake_chunk_bytes: 1024 * 1024,
            raw_data_max_span_days: 31,
            resampling_max_span_days: 31,
            raw_data_max_columns: 1_024,
            max_listed_rejections: 1_000,
            intake_cache_entries: 1_000_000,
            metrics_token: None,
            request_body_timeout: Duration::from_secs(60),
            header_read_timeout: Duration::from_secs(30),
            max_reads: 16,
            max_reads_per_user: 4,
            max_inner_entries: ingest::intake::DEFAULT_MAX_INNER_ENTRIES,
            max_message_age_days: ingest::intake::DEFAULT_MAX_MESSAGE_AGE_DAYS,
            default_plugins: vec![1, 2],
            billing_orders_base_url: String::new(),
            uploads: platform::UploadRules::default(),
            batch_convert_max_lines: 500,
            max_upload_users: 10_000,
            geocoder_results: 10,
            geo_link_quota: platform::DEFAULT_GEO_LINK_QUOTA,
        }
    }
}

/// The map tiles of the geo link page unless configured: OpenStreetMap's.
pub const DEFAULT_MAP_TILES_URL: &str = "https://tile.openstreetmap.org/{z}/{x}/{y}.png";

/// What every request shares: the store, settings, rate limiters and metrics.
#[derive(Debug, Clone)]
pub struct AppState {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) store: Store,
    pub(crate) ingest: Arc<Ingest>,
    pub(crate) intake_slots: tokio::sync::Semaphore,
    /// The `intake_parse_tasks`, oldest body first.
    pub(crate) intake_parse_slots: crate::intake::ParseGate,
    /// The buffers intake bodies are cut into, kept across requests.
    pub(crate) intake_chunks: Arc<ingest::intake::ChunkBuffers>,
    /// The intake's ingest-token and tracker answers, kept across requests.
    pub(crate) intake_lookup: platform::IntakeLookup,
    /// DataFusion's task context shared by every read.
    pub(crate) query_context: Arc<query::TaskContext>,
    /// The task context of the series reads behind resampling (large batches).
    pub(crate) series_context: Arc<query::TaskContext>,
    /// Gathering buffers of resampling, kept across requests.
    pub(crate) resampling_scratch: crate::resampling::ScratchPool,
    /// Slots of the heavy reads (exports and resampling).
    pub(crate) reads: crate::reads::ReadSlots,
    pub(crate) config: ApiConfig,
    pub(crate) limits: RateLimits,
    /// The platform's views of geo links, each reused for a second.
    pub(crate) link_views: crate::links_page::LinkViews,
    pub(crate) metrics: Metrics,
    registry: Registry,
    /// `/openapi.json`, made on first request.
    openapi: OnceLock<Bytes>,
}

impl AppState {
    /// Builds the shared state of a server over its components; `registry`
    /// already holds the components' metrics and gets the API's.
    pub fn new(
        store: Store,
        ingest: Arc<Ingest>,
        config: ApiConfig,
        mut registry: Registry,
    ) -> Self {
        let metrics = Metrics::register(&mut registry);
        // The geocoder's places (a third of a second to index, once per
        // process): ready before the first geocoder call asks for them.
        std::thread::spawn(|| {
            geocoder::bundled();
        });
        let reads = crate::reads::ReadSlots::new(
            config.max_reads,
            config.max_reads_per_user,
            &mut registry,
        );
        let limits = RateLimits::new(&config.rate_limits, config.link_rate);
        let intake_slots = tokio::sync::Semaphore::new(config.max_intake_requests.max(1));
        Self {
            inner: Arc::new(Inner {
                store,
                ingest,
                intake_slots,
                intake_parse_slots: crate::intake::ParseGate::new(config.intake_parse_tasks),
                // As many idle as the requests and parse tasks can be
                // between chunks at once: about 10 MiB by default.
                intake_chunks: Arc::new(ingest::intake::ChunkBuffers::new(
                    config.intake_chunk_bytes,
                    config.max_intake_requests + config.intake_parse_tasks,
                )),
                intake_lookup: platform::IntakeLookup::new(config.intake_cache_entries),
                query_context: query::task_context(),
                series_context: query::task_context_with_batch_size(query::series::BATCH_ROWS),
                resampling_scratch: crate::resampling::ScratchPool::default(),
                reads,
                config,
                limits,
                link_views: crate::links_page::LinkViews::default(),
                metrics,
                registry,
                openapi: OnceLock::new(),
            }),
        }
    }

    /// The ingest engine.
    pub fn ingest(&self) -> &Arc<Ingest> {
        &self.inner.ingest
    }

    /// The platform store.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The OpenAPI document, as served.
    pub(crate) fn openapi_document(&self) -> &Bytes {
        self.inner
            .openapi
            .get_or_init(|| Bytes::from(openapi_text().into_bytes()))
    }
}

/// Every call the server answers, each declared once: mounted by [`app`] and
/// described by [`openapi_document`] from the same list.
pub(crate) fn routes() -> Vec<Route> {
    [
        crate::v2::routes(),
        crate::panel::routes(),
        crate::raw_data::routes(),
        crate::resampling::routes(),
        crate::intake::routes(),
        crate::links_page::routes(),
        service_routes(),
        crate::openapi::routes(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The OpenAPI 3.1 document of every call the server answers.
pub fn openapi_document() -> serde_json::Value {
    crate::openapi::document(&routes())
}

/// [`openapi_document`] as `docs/openapi.json` holds it: pretty, with a final newline.
pub fn openapi_text() -> String {
    let mut text = serde_json::to_string_pretty(&openapi_document()).unwrap_or_default();
    text.push('\n');
    text
}

/// The router of every interface, with its state.
pub fn app(state: AppState) -> Router {
    let router = routes()
        .into_iter()
        .fold(Router::new(), |router, route| route.mount(router));
    router
        .fallback(route::unknown_path)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::metrics::observe,
        ))
        .with_state(state)
}

/// `/healthz` and `/metrics`.
fn service_routes() -> Vec<Route> {
    vec![
        Route::custom(
            "/healthz",
            get(healthz),
            CallDoc::plain_get(
                "Health",
                "Answers `{\"success\":true}` while the server can reach its platform store and its write-ahead log takes writes. \
                 While the log's disk is full or failing, code 8 (HTTP 503, with `Retry-After`) saying what failed: intake refuses \
                 messages meanwhile, and both recover by themselves once the disk takes writes again.",
                vec![
                    ErrorCode::Database,
                    ErrorCode::DatabaseUnavailable,
                    ErrorCode::QueueUnavailable,
                ],
                Success::<Done>::describe,
            ),
        ),
        Route::custom(
            "/metrics",
            get(metrics),
            CallDoc::plain_get(
                "Prometheus metrics",
                "Requests and errors by code, intake, WAL, flushes, files, compactions, limits: the Prometheus text format. \
                 With `--metrics-token` set, only `Authorization: Bearer <metrics token>` is answered (else code 2).",
                vec![ErrorCode::ServiceAuth],
                Media::<PrometheusText>::describe,
            ),
        ),
    ]
}

#[derive(Debug)]
struct PrometheusText;

impl MediaKind for PrometheusText {
    const DESCRIPTION: &'static str = "The Prometheus text exposition format (version 0.0.4).";
    fn content() -> serde_json::Value {
        serde_json::json!({ "text/plain": { "schema": { "type": "string" } } })
    }
}

async fn healthz(State(state): State<AppState>) -> Result<Success<Done>, ApiError> {
    state.inner.store.ping().await?;
    if let Some(problem) = state.inner.ingest.storage_problem() {
        return Err(ApiError::with_description(
            ErrorCode::QueueUnavailable,
            format!(
                "Storage degraded: the write-ahead log cannot take writes ({problem}); intake refuses messages until it heals"
            ),
        )
        .retry_after(1));
    }
    Ok(Success::done())
}

async fn metrics(State(state): State<AppState>, headers: axum::http::HeaderMap) -> Response {
    if let Some(expected) = &state.inner.config.metrics_token {
        let given = crate::params::bearer_token(&headers).map(str::as_bytes);
        let matches = given.is_some_and(|given| {
            use subtle::ConstantTimeEq;
            given.len() == expected.len() && bool::from(given.ct_eq(expected.as_bytes()))
        });
        if !matches {
            return ApiError::with_description(
                ErrorCode::ServiceAuth,
                "Service Auth error: /metrics needs `Authorization: Bearer <metrics token>`",
            )
            .into_response();
        }
    }
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, &state.inner.registry) {
        Ok(()) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "encoding metrics failed");
            ApiError::new(ErrorCode::Unexpected).into_response()
        }
    }
}

/// Tells ingest each tracker's retention cutoff (its plan's store period).
async fn push_retention(state: &AppState) {
    let store = &state.inner.store;
    match store.retention_cutoffs(store.clock().now()).await {
        Ok(cutoffs) => {
            let cutoffs = cutoffs
                .into_iter()
                .map(|(tracker, cutoff)| (tracker.0, cutoff.timestamp_millis()))
                .collect();
            state.inner.ingest.set_retention(cutoffs);
        }
        Err(e) => {
            tracing::warn!(error = %e, "reading retention cutoffs failed; retried in ten minutes")
        }
    }
}

/// A bound listener with the router, ready to serve.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    state: AppState,
}

impl Server {
    /// Binds the listener (port 0 picks a free port).
    pub async fn bind(addr: SocketAddr, state: AppState) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        Ok(Self { listener, state })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` is cancelled, then finishes the requests in flight.
    pub async fn run(self, shutdown: CancellationToken) -> io::Result<()> {
        let warming = self.state.clone();
        tokio::spawn(async move {
            let inner = &warming.inner;
            match inner.intake_lookup.warm(&inner.store).await {
                Ok(trackers) => tracing::info!(trackers, "intake look-ups read ahead"),
                Err(e) => {
                    tracing::warn!(error = %e, "reading trackers ahead for the intake failed; each is read at its first request")
                }
            }
        });
        let state = self.state.clone();
        let housekeeping = shutdown.child_token();
        let sweeper = housekeeping.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            let mut minutes = 0u64;
            loop {
                tokio::select! {
                    () = sweeper.cancelled() => break,
                    _ = tick.tick() => {
                        state.inner.limits.forget_idle();
                        // Retention cutoffs at start and every ten minutes.
                        if minutes % 10 == 0 {
                            push_retention(&state).await;
                        }
                        minutes += 1;
                    }
                }
            }
        });
        let header_read_timeout = self.state.inner.config.header_read_timeout;
        let served = serve(
            self.listener,
            app(self.state),
            header_read_timeout,
            shutdown,
        )
        .await;
        housekeeping.cancel();
        served
    }
}

/// Accepts HTTP/1.1 connections until `shutdown`, then lets the requests in
/// flight finish. Unlike `axum::serve`, a connection whose request headers
/// do not arrive within `header_read_timeout` is closed (a client trickling
/// them, one byte at a time, would otherwise hold it open forever); each
/// request carries the peer's address as `ConnectInfo`.
async fn serve(
    listener: TcpListener,
    router: Router,
    header_read_timeout: Duration,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        let (stream, peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait, as a server must, and go on.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = tower::ServiceBuilder::new()
            .map_request(move |request: axum::http::Request<hyper::body::Incoming>| {
                let mut request = request.map(axum::body::Body::new);
                request
                    .extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                request
            })
            .service(router.clone());
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(header_read_timeout)
            .serve_connection(
                hyper_util::rt::TokioIo::new(stream),
                hyper_util::service::TowerToHyperService::new(service),
            );
        let watched = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = watched.await {
                tracing::debug!(error = %e, %peer, "a connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
