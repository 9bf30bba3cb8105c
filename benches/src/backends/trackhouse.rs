//! The real server in process on `127.0.0.1:0` on either storage backend,
//! with a fresh data directory, a fresh platform store (one account, one
//! tracker, a backfill ingest token) and, for ClickHouse, a fresh database.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::ensure;
use api::ApiConfig;
use ingest::{ClickHouseConfig, IngestConfig};
use platform::{Store, StoreConfig};
use schemas::{ClickHouseTable, SystemClock, TrackerId};
use serde_json::json;

use super::{Sent, Target, Workload, send_all};
use crate::export::{Account, ExportRun, InProcessServer, iso, timed_body};

/// Where the engine stores flushed rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// Parquet files under the data directory (the default).
    Parquet,
    /// A ClickHouse database (created, with its tables, when the engine opens).
    ClickHouse {
        /// The HTTP interface.
        url: String,
        /// The database.
        database: String,
    },
}

/// One ingest through the intake, as the clients saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IngestRun {
    /// First request sent → every body acknowledged (durable in the WAL).
    pub acknowledged: Duration,
    /// First request sent → `Ingest::flush` returned (in Parquet or ClickHouse).
    pub flushed: Duration,
    /// Requests answered 503 or 429 and sent again.
    pub retries: u64,
}

/// A running server over its own data directory.
#[derive(Debug)]
pub struct Trackhouse {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The tracker.
    pub tracker: TrackerId,
    key: String,
    token: String,
    server: InProcessServer,
    client: reqwest::Client,
    dir: tempfile::TempDir,
}

impl Trackhouse {
    /// Starts the server on `storage` with the engine's default flush
    /// settings (every 5 s or 1,000,000 rows, as `trackhouse serve`), reads
    /// allowed over `max_span_days`.
    pub async fn start(storage: &Storage, max_span_days: u32) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let store = Store::open(StoreConfig::new(dir.path()), Arc::new(SystemClock)).await?;
        let Account { tracker, key } = Account::create(&store).await?;
        let token = store
            .create_ingest_token("bench", true)
            .await?
            .1
            .expose()
            .to_owned();
        let ingest = IngestConfig {
            clickhouse: match storage {
                Storage::Parquet => None,
                Storage::ClickHouse { url, database } => {
                    Some(ClickHouseConfig::new(ClickHouseTable {
                        url: url.clone(),
                        database: database.clone(),
                        user: None,
                        password: None,
                        cluster: None,
                    }))
                }
            },
            ..IngestConfig::new(dir.path())
        };
        let server = InProcessServer::start_with(
            ingest,
            store,
            ApiConfig {
                raw_data_max_span_days: max_span_days.max(31),
                ..ApiConfig::default()
            },
        )
        .await?;
        Ok(Self {
            base: server.base.clone(),
            tracker,
            key,
            token,
            server,
            client: reqwest::Client::new(),
            dir,
        })
    }

    /// Sends `workload` through the intake with `clients` concurrent
    /// clients, then flushes; timed from the first request to the end of
    /// the flush.
    pub async fn ingest(&self, workload: &Workload, clients: usize) -> anyhow::Result<IngestRun> {
        ensure!(
            workload.tracker == self.tracker,
            "the workload is for tracker {}, the server's is {}",
            workload.tracker.0,
            self.tracker.0
        );
        let target = Target::Trackhouse {
            url: format!("{}/ingest/v1/messages", self.base),
            token: self.token.clone(),
        };
        let started = Instant::now();
        let Sent { elapsed, retries } = send_all(
            &self.client,
            &target,
            &workload.ndjson,
            &workload.lines,
            clients,
        )
        .await?;
        let engine = self.server.engine().clone();
        tokio::task::spawn_blocking(move || engine.flush()).await??;
        Ok(IngestRun {
            acknowledged: elapsed,
            flushed: started.elapsed(),
            retries,
        })
    }

    /// Bytes under the data directory's `telemetry/` (the Parquet files and
    /// their catalog; nothing with ClickHouse).
    pub fn telemetry_bytes(&self) -> u64 {
        dir_bytes(&self.dir.path().join("telemetry"))
    }

    async fn export_response(
        &self,
        columns: &[String],
        span_ms: (i64, i64),
    ) -> anyhow::Result<reqwest::Response> {
        let body = json!({
            "hash": self.key,
            "tracker_id": self.tracker.0,
            "from": iso(span_ms.0),
            "to": iso(span_ms.1),
            "columns": columns,
            "time_zone": "UTC",
        });
        Ok(self
            .client
            .post(format!("{}/dwh/v1/tracker/raw_data/read", self.base))
            .json(&body)
            .send()
            .await?)
    }

    /// Exports `columns` over `span_ms` as CSV, streaming and timing the body.
    pub async fn export(
        &self,
        columns: &[String],
        span_ms: (i64, i64),
    ) -> anyhow::Result<(ExportRun, String)> {
        let started = Instant::now();
        let response = self.export_response(columns, span_ms).await?;
        timed_body(response, started).await
    }

    /// The same export read whole, to compare.
    pub async fn export_body(
        &self,
        columns: &[String],
        span_ms: (i64, i64),
    ) -> anyhow::Result<Vec<u8>> {
        let response = self.export_response(columns, span_ms).await?;
        let status = response.status();
        let body = response.bytes().await?;
        ensure!(
            status.is_success(),
            "the export answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
        Ok(body.to_vec())
    }

    /// Stops the server and the engine; the data directory goes.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.server.stop().await?;
        drop(self.dir);
        Ok(())
    }
}

/// Bytes of the files under `dir`, recursively (0 when it does not exist).
fn dir_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&entry.path()),
            Ok(_) => entry.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}
