//! The fuel resampling load generator (issue 5): one tracker's week of 1 Hz
//! data resampled onto a one-minute grid through the real server over real
//! HTTP, and the same computation done by Polars from the same Parquet files.
//!
//! [`Fixture::start`] prepares the account and data with
//! [`Prepared::create`](crate::export::Prepared::create), gives the tracker
//! a calibrated fuel sensor ([`SENSOR_NAME`] on `inputs.`[`FUEL_INPUT`],
//! table [`CALIBRATION`]), reopens the engine on the settled files and serves
//! the API in process on `127.0.0.1:0`. [`Fixture::resample`] then calls
//! `POST /eco_fleet/v1/trackers/{id}/resampling` over the whole span with
//! all five data types ([`request_body`]), timing the first body chunk and
//! the whole body.
//!
//! - [`polars`]: runs `benches/python/resample_polars.py`, the same
//!   computation in Polars, in a `python3` subprocess.
//! - [`compare`]: checks that the two CSVs agree cell by cell.

pub mod compare;
pub mod polars;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use api::ApiConfig;
use platform::Calibration;
use schemas::TrackerId;
use serde_json::{Value, json};

use crate::export::{self, InProcessServer, Prepared};
use crate::layout::IngestSummary;

/// The fuel sensor's name: the CSV's fuel column.
pub const SENSOR_NAME: &str = "Tank";
/// The input the fuel sensor reads (`inputs.lls_level_1`).
pub const FUEL_INPUT: &str = "lls_level_1";
/// The sensor's calibration table, `raw:litres,...`; covers the simulated
/// sensor's whole range, 0 to 4095.
pub const CALIBRATION: &str = "0:0,1000:80,2000:170,4095:400";
/// The grid step in minutes.
pub const STEP_MINUTES: i64 = 1;
/// The half-width of the FUEL and SPEED windows, in seconds: [T-30 s, T+30 s].
pub const DELTA_SECONDS: i64 = 30;

/// The request body: FUEL median and SPEED average in a window of
/// ±[`DELTA_SECONDS`], MOVEMENT following, LNG and LAT previous.
pub fn request_body() -> Value {
    let rule = |data_type: &str, method: &str, delta: Option<i64>| {
        json!({
            "data_type": data_type,
            "resampling_method": method,
            "delta": delta,
            "fixed_value": null,
        })
    };
    json!({
        "step_size": STEP_MINUTES,
        "resampling_props": [
            rule("FUEL", "MEDIAN_IN_WINDOW", Some(DELTA_SECONDS)),
            rule("SPEED", "AVERAGE_IN_WINDOW", Some(DELTA_SECONDS)),
            rule("MOVEMENT", "FOLLOWING", None),
            rule("LNG", "PREVIOUS", None),
            rule("LAT", "PREVIOUS", None),
        ],
    })
}

/// A running server over one tracker's ingested data with a fuel sensor.
#[derive(Debug)]
pub struct Fixture {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The API key of the tracker's owner.
    pub key: String,
    /// The tracker resampled.
    pub tracker: TrackerId,
    /// The message-time span of the data, `[from, to)` in ms: the interval asked.
    pub span_ms: (i64, i64),
    /// What the ingest produced.
    pub ingest: IngestSummary,
    /// Absolute paths of the Parquet files that may hold the tracker.
    pub files: Vec<PathBuf>,
    /// The calibration table as `(raw, litres)` points.
    pub calibration: Vec<(f64, f64)>,
    /// The tracker's idle speed threshold (km/h) for MOVEMENT.
    pub idle_speed_threshold_kmh: f64,
    /// The tracker's ignition column for MOVEMENT (`states.ignition`).
    pub ignition_source: String,
    server: InProcessServer,
    client: reqwest::Client,
}

/// One resampling call, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RequestRun {
    /// Request sent → first body chunk.
    pub first_byte: Duration,
    /// Request sent → end of body.
    pub total: Duration,
    /// Body bytes.
    pub bytes: u64,
    /// Data rows (lines after the header).
    pub rows: u64,
}

impl Fixture {
    /// Creates the account in `data_dir`, ingests `days` of one simulated
    /// tracker at 1 Hz, adds the fuel sensor and starts the server.
    pub async fn start(data_dir: &Path, days: u32, batch_messages: usize) -> anyhow::Result<Self> {
        let Prepared {
            store,
            key,
            tracker,
            span_ms,
            ingest,
            files,
        } = Prepared::create(data_dir, days, batch_messages, None).await?;
        let calibration = Calibration::parse("calibration", CALIBRATION)?;
        let points = calibration.0.clone();
        store
            .create_fuel_sensor(tracker, SENSOR_NAME, FUEL_INPUT, Some(calibration))
            .await?;
        let settings = store
            .tracker(tracker)
            .await?
            .with_context(|| format!("tracker {} vanished", tracker.0))?;
        let server = InProcessServer::start(
            data_dir,
            store,
            ApiConfig {
                resampling_max_span_days: days + 1,
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
            calibration: points,
            idle_speed_threshold_kmh: settings.idle_speed_threshold_kmh,
            ignition_source: settings.ignition_source,
            server,
            client: reqwest::Client::new(),
        })
    }

    /// The `interval` query parameter: the whole span, `<from>/<to>` in UTC.
    pub fn interval(&self) -> String {
        format!(
            "{}/{}",
            export::iso(self.span_ms.0),
            export::iso(self.span_ms.1)
        )
    }

    /// Resamples the whole span and reads the whole body.
    pub async fn resample(&self) -> anyhow::Result<(RequestRun, String)> {
        let url = format!(
            "{}/eco_fleet/v1/trackers/{}/resampling",
            self.base, self.tracker.0
        );
        let request = self
            .client
            .post(url)
            .query(&[("interval", self.interval())])
            .header("authorization", format!("NVX {}", self.key))
            .json(&request_body());
        let started = Instant::now();
        let mut response = request.send().await?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            bail!("the resampling call answered {status}: {text}");
        }
        let mut run = RequestRun::default();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.context("reading the body")? {
            if body.is_empty() {
                run.first_byte = started.elapsed();
            }
            body.extend_from_slice(&chunk);
        }
        run.total = started.elapsed();
        run.bytes = body.len() as u64;
        let newlines = body.iter().filter(|&&b| b == b'\n').count() as u64;
        run.rows = newlines.saturating_sub(1);
        Ok((run, String::from_utf8(body)?))
    }

    /// Stops the server and the engine.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.server.stop().await
    }
}

/// The median of `values` (the upper middle of an even count); zero when empty.
pub fn median_duration(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}
