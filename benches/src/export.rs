//! The raw data export load generator: one tracker's month of 1 Hz data
//! exported as CSV through the real server over real HTTP, and the same rows
//! exported by DuckDB (and ClickHouse when it is installed) from the same
//! Parquet files.
//!
//! [`Fixture::start`] creates a platform store with one account and tracker
//! (a ten-year store period, so the simulated 2024 data is within it),
//! ingests the [`Fleet`](crate::fleet::Fleet) through `Ingest::write` with
//! [`layout::ingest_fleet`], reopens the engine on the settled files and
//! serves the API in process on `127.0.0.1:0`. [`Fixture::export`] then
//! streams `/dwh/v1/tracker/raw_data/read` with `reqwest`, timing the first
//! body chunk, the first data row and the whole body, while [`rss`] samples
//! the process's resident memory.

pub mod clickhouse;
pub mod peers;
pub mod rss;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use api::{ApiConfig, AppState, Server};
use ingest::{Ingest, IngestConfig};
use platform::{ContractType, NewDealer, NewTracker, NewUser, Store, StoreConfig, StorePeriod};
use prometheus_client::registry::Registry;
use schemas::{SystemClock, TrackerId};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::fleet::FleetConfig;
use crate::layout::{self, IngestSummary, LayoutConfig};

/// The columns of the narrow export.
pub const NARROW_COLUMNS: [&str; 3] = ["lat", "lng", "inputs.lls_level_1"];

/// The columns of the full export: every simple column, the flags bitmap and
/// every inner column the tracker has (`msg_time` is always written first).
pub fn full_columns() -> Vec<String> {
    let mut columns = vec![schemas::columns::SERVER_TIME.to_owned()];
    columns.extend(
        schemas::columns::SIMPLE_COLUMNS
            .iter()
            .map(|(name, _)| (*name).to_owned()),
    );
    columns.push(schemas::columns::FLAGS.to_owned());
    columns.extend(
        [
            "inputs.*",
            "states.*",
            "discrete_inputs.*",
            "discrete_outputs.*",
        ]
        .map(str::to_owned),
    );
    columns
}

/// A running server over one tracker's ingested data.
#[derive(Debug)]
pub struct Fixture {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The API key of the tracker's owner.
    pub key: String,
    /// The tracker exported.
    pub tracker: TrackerId,
    /// The message-time span of the data, `[from, to)` in ms.
    pub span_ms: (i64, i64),
    /// What the ingest produced.
    pub ingest: IngestSummary,
    /// Absolute paths of the Parquet files that may hold the tracker.
    pub files: Vec<PathBuf>,
    server: InProcessServer,
    client: reqwest::Client,
}

/// One export, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ExportRun {
    /// Request sent → first body chunk (the CSV header).
    pub first_byte: Duration,
    /// Request sent → the first chunk holding a data row.
    pub first_row: Duration,
    /// Request sent → end of body.
    pub total: Duration,
    /// Body bytes.
    pub bytes: u64,
    /// Data rows (lines after the header).
    pub rows: u64,
}

impl ExportRun {
    /// Data rows per second of the whole export.
    pub fn rows_per_s(&self) -> f64 {
        self.rows as f64 / self.total.as_secs_f64().max(1e-9)
    }

    /// Body MB (10^6 bytes) per second.
    pub fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.total.as_secs_f64().max(1e-9)
    }
}

impl Fixture {
    /// Creates the account in `data_dir`, ingests `days` of one simulated
    /// tracker at 1 Hz, and starts the server on it.
    pub async fn start(data_dir: &Path, days: u32, batch_messages: usize) -> anyhow::Result<Self> {
        let prepared = Prepared::create(data_dir, days, batch_messages, None).await?;
        let Prepared {
            store,
            key,
            tracker,
            span_ms,
            ingest,
            files,
        } = prepared;
        let server = InProcessServer::start(
            data_dir,
            store,
            ApiConfig {
                raw_data_max_span_days: days + 1,
                ..ApiConfig::default()
            },
        )
        .await?;
        Ok(Self {
            base: server.base.clone(),
            key,
            tracker,
            span_ms,
            ingest,
            files,
            server,
            client: reqwest::Client::new(),
        })
    }

    /// Exports `columns` over the whole span, streaming the body.
    pub async fn export(&self, columns: &[String]) -> anyhow::Result<(ExportRun, String)> {
        let body = read_body(&self.key, self.tracker.0, self.span_ms, columns);
        let started = Instant::now();
        let response = self
            .client
            .post(format!("{}/dwh/v1/tracker/raw_data/read", self.base))
            .json(&body)
            .send()
            .await?;
        timed_body(response, started).await
    }

    /// Starts an export of `columns` over the whole span with extra request
    /// members (`iso_datetime`, ...) and hands back the response unread.
    pub async fn export_response(
        &self,
        columns: &[String],
        extra: serde_json::Value,
    ) -> anyhow::Result<reqwest::Response> {
        let mut body = read_body(&self.key, self.tracker.0, self.span_ms, columns);
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        let response = self
            .client
            .post(format!("{}/dwh/v1/tracker/raw_data/read", self.base))
            .json(&body)
            .send()
            .await?;
        ensure!(
            response.status().is_success(),
            "the export answered {}",
            response.status()
        );
        Ok(response)
    }

    /// Stops the server and the engine.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.server.stop().await
    }
}

/// The real server in this process on `127.0.0.1:0`, over a prepared
/// directory's settled files; shared by the export and resampling fixtures.
#[derive(Debug)]
pub struct InProcessServer {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    engine: Arc<Ingest>,
    shutdown: CancellationToken,
}

impl InProcessServer {
    /// Opens a new engine on `data_dir` (the one that ingested is shut down)
    /// and serves `store` with `config`.
    pub async fn start(data_dir: &Path, store: Store, config: ApiConfig) -> anyhow::Result<Self> {
        Self::start_with(IngestConfig::new(data_dir), store, config).await
    }

    /// Opens a new engine with `ingest` (its storage, flush settings) and
    /// serves `store` with `config`.
    pub async fn start_with(
        ingest: IngestConfig,
        store: Store,
        config: ApiConfig,
    ) -> anyhow::Result<Self> {
        let mut registry = Registry::default();
        let engine = Arc::new(Ingest::open(ingest, &mut registry)?);
        let state = AppState::new(store, engine.clone(), config, registry);
        let server = Server::bind(SocketAddr::from(([127, 0, 0, 1], 0)), state).await?;
        let base = format!("http://{}", server.local_addr()?);
        let shutdown = CancellationToken::new();
        tokio::spawn(server.run(shutdown.clone()));
        Ok(Self {
            base,
            engine,
            shutdown,
        })
    }

    /// The engine behind the server (to flush it).
    pub fn engine(&self) -> &Arc<Ingest> {
        &self.engine
    }

    /// Stops the server, then the engine.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        let engine = self.engine;
        tokio::task::spawn_blocking(move || engine.shutdown()).await??;
        Ok(())
    }
}

/// Reads a streamed CSV body to its end, timing the first chunk, the first
/// chunk holding a data row and the whole body; answers the run and the header line.
pub async fn timed_body(
    mut response: reqwest::Response,
    started: Instant,
) -> anyhow::Result<(ExportRun, String)> {
    let status = response.status();
    if !status.is_success() {
        let text = response.text().await.unwrap_or_default();
        anyhow::bail!("the export answered {status}: {text}");
    }
    let mut run = ExportRun::default();
    let mut newlines = 0u64;
    let mut header = Vec::new();
    while let Some(chunk) = response.chunk().await.context("reading the body")? {
        if run.bytes == 0 {
            run.first_byte = started.elapsed();
        }
        if newlines == 0 {
            let end = chunk
                .iter()
                .position(|&b| b == b'\n')
                .unwrap_or(chunk.len());
            header.extend_from_slice(&chunk[..end]);
        }
        run.bytes += chunk.len() as u64;
        newlines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        if newlines > 1 && run.first_row.is_zero() {
            run.first_row = started.elapsed();
        }
    }
    run.total = started.elapsed();
    run.rows = newlines.saturating_sub(1);
    ensure!(!header.is_empty(), "the export has no header");
    Ok((run, String::from_utf8(header)?))
}

/// A data directory holding one account, its tracker and the tracker's
/// ingested, settled telemetry, ready to be served.
#[derive(Debug)]
pub struct Prepared {
    /// The platform store (open).
    pub store: Store,
    /// The API key of the tracker's owner.
    pub key: String,
    /// The tracker.
    pub tracker: TrackerId,
    /// The message-time span of the data, `[from, to)` in ms.
    pub span_ms: (i64, i64),
    /// What the ingest produced.
    pub ingest: IngestSummary,
    /// Absolute paths of the Parquet files that may hold the tracker.
    pub files: Vec<PathBuf>,
}

impl Prepared {
    /// Creates the account in `data_dir` and ingests `days` of one simulated
    /// tracker at 1 Hz from `start_ms` (the fleet's default start when `None`).
    pub async fn create(
        data_dir: &Path,
        days: u32,
        batch_messages: usize,
        start_ms: Option<i64>,
    ) -> anyhow::Result<Self> {
        let store = Store::open(StoreConfig::new(data_dir), Arc::new(SystemClock)).await?;
        let Account { tracker, key } = Account::create(&store).await?;
        let config = LayoutConfig {
            batch_messages,
            fleet: FleetConfig {
                first_tracker_id: tracker.0,
                start_ms: start_ms.unwrap_or(FleetConfig::default().start_ms),
                ..FleetConfig::default()
            },
            ..LayoutConfig::new(days, 1)
        };
        let summary = layout::ingest_fleet(&config, data_dir).await?;
        let span_ms = config.span_ms();
        let files = layout::files_of(&summary.catalog, tracker, span_ms)
            .into_iter()
            .map(|f| summary.root.join(f))
            .collect();
        Ok(Self {
            store,
            key,
            tracker,
            span_ms,
            ingest: summary,
            files,
        })
    }
}

/// The body of a `raw_data/read` of `tracker`'s `columns` over `span_ms`
/// (`[from, to)`, ms), in UTC.
pub fn read_body(
    key: &str,
    tracker: i64,
    span_ms: (i64, i64),
    columns: &[String],
) -> serde_json::Value {
    json!({
        "hash": key,
        "tracker_id": tracker,
        "from": iso(span_ms.0),
        "to": iso(span_ms.1),
        "columns": columns,
        "time_zone": "UTC",
    })
}

/// The benchmark's account in a platform store: a dealer, a user in UTC, one
/// tracker with a ten-year store period (so the simulated 2024 data is
/// within it) and the user's API key.
#[derive(Debug, Clone)]
pub struct Account {
    /// The tracker.
    pub tracker: TrackerId,
    /// The API key of the tracker's owner.
    pub key: String,
}

impl Account {
    /// Creates the account in `store` (in a fresh store, the tracker is 1).
    pub async fn create(store: &Store) -> anyhow::Result<Self> {
        let dealer = store
            .create_dealer(NewDealer {
                id: None,
                title: "Bench dealer".into(),
                panel_password: "bench-pass-1".into(),
                contract_type: ContractType::Paas,
                permissions: None,
                default_user_time_zone: "UTC".into(),
            })
            .await?;
        let user = store
            .create_user(NewUser {
                dealer_id: dealer,
                login: "bench@example.com".into(),
                password: "bench-pass-1".into(),
                time_zone: Some("UTC".into()),
                activated: true,
                legal_type: platform::LegalType::Individual,
                first_name: "Bench".into(),
                last_name: "Mark".into(),
            })
            .await?;
        let tracker = store
            .create_tracker(NewTracker {
                user_id: user,
                label: "Bench truck".into(),
                device_id: "356307042440001".into(),
                model: "fmb920".into(),
                plan_id: None,
                store_period: Some(StorePeriod::Years(10)),
                time_zone: None,
            })
            .await?;
        let key = store
            .create_api_key(user, "bench")
            .await?
            .hash
            .expose()
            .to_owned();
        Ok(Self { tracker, key })
    }
}

/// `ms` as `2024-06-01T00:00:00Z`.
pub fn iso(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let second_of_day = ms.rem_euclid(86_400_000) / 1000;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

/// Days since 1970-01-01 → (year, month, day), Howard Hinnant's algorithm.
pub(crate) fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Splits a CSV header line the server wrote (every name quoted) into names.
pub fn header_names(header: &str) -> Vec<String> {
    header
        .split(',')
        .map(|h| h.trim().trim_matches('"').to_owned())
        .collect()
}
