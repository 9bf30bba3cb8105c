//! The same resampling by Polars (PyPI `polars` and `numpy`), running
//! `benches/python/resample_polars.py` in a `python3` subprocess on the same
//! Parquet files.
//!
//! [`start`] hands the script a [`PolarsQuery`] as one line of JSON on stdin
//! and waits while it warms up; then each [`PolarsSession::run`] asks for one
//! timed run (the scan to the CSV text in memory, not the interpreter start
//! or the imports), so the caller can interleave Polars' runs with the
//! server's and both see the same load. [`PolarsSession::finish`] collects
//! the last run's CSV from [`PolarsQuery::csv_out`]. A missing `polars` or
//! `numpy` is a skip, not an error.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

/// The script, relative to the `benches` crate.
pub const SCRIPT: &str = "python/resample_polars.py";

/// The default path of the script: `<benches>/python/resample_polars.py`.
pub fn default_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(SCRIPT)
}

/// How to install what the script needs.
pub const INSTALL_HINT: &str = "python3 -m pip install polars numpy";

/// What Polars is asked: the same tracker, span, sensor and rules as the server.
#[derive(Debug, Clone)]
pub struct PolarsQuery {
    /// Absolute paths of the Parquet files.
    pub files: Vec<PathBuf>,
    /// The tracker.
    pub tracker: i64,
    /// The interval, `[from, to)` in ms.
    pub span_ms: (i64, i64),
    /// The grid step in ms.
    pub step_ms: i64,
    /// The window half-width in ms.
    pub delta_ms: i64,
    /// The fuel sensor's name (the CSV column).
    pub sensor_name: String,
    /// The fuel sensor's storage column (`inputs.lls_level_1`).
    pub fuel_column: String,
    /// The calibration table's `(raw, litres)` points.
    pub calibration: Vec<(f64, f64)>,
    /// The ignition column (`states.ignition`).
    pub ignition_column: String,
    /// The idle speed threshold, km/h.
    pub idle_speed_threshold_kmh: f64,
    /// Untimed runs before the timed ones.
    pub warmup: usize,
    /// Where the script writes the last run's CSV.
    pub csv_out: PathBuf,
}

/// One timed run of the script, split into its phases.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PolarsRun {
    /// Scan → CSV text in memory.
    pub total: Duration,
    /// Reading, filtering and sorting the readings.
    pub read: Duration,
    /// Calibration, movement, windows and as-of joins.
    pub compute: Duration,
    /// Formatting `Time` and writing the CSV text.
    pub csv: Duration,
    /// Readings read.
    pub readings: u64,
    /// CSV data rows.
    pub rows: u64,
    /// CSV bytes.
    pub bytes: u64,
}

/// A running Polars script, warmed up, taking one run at a time.
#[derive(Debug)]
pub struct PolarsSession {
    /// `polars.__version__`.
    pub version: String,
    /// `numpy.__version__`.
    pub numpy: String,
    /// Polars' thread pool size.
    pub threads: u64,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    csv_out: PathBuf,
}

/// What starting the script gave.
#[derive(Debug)]
pub enum Started {
    /// Polars could not run; why.
    Skipped(String),
    /// The script is warmed up and waits for runs.
    Ready(PolarsSession),
}

/// What the session leaves when it ends.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The last run's CSV.
    pub csv: String,
    /// The Python process's peak RSS (`VmHWM`), when known.
    pub peak_rss: Option<u64>,
}

/// Starts `script` with `python` on `query` in its interactive mode and waits
/// until its `query.warmup` untimed runs are done.
pub fn start(python: &str, script: &Path, query: &PolarsQuery) -> anyhow::Result<Started> {
    if !script.is_file() {
        return Ok(Started::Skipped(format!(
            "the script {} does not exist",
            script.display()
        )));
    }
    let config = json!({
        "interactive": true,
        "files": query.files,
        "tracker": query.tracker,
        "from_ms": query.span_ms.0,
        "to_ms": query.span_ms.1,
        "step_ms": query.step_ms,
        "delta_ms": query.delta_ms,
        "sensor_name": query.sensor_name,
        "fuel_column": query.fuel_column,
        "calibration": query.calibration,
        "ignition_column": query.ignition_column,
        "idle_speed_threshold_kmh": query.idle_speed_threshold_kmh,
        "warmup": query.warmup,
        "csv_out": query.csv_out,
    });
    // stderr is inherited: a traceback shows where it happened.
    let child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => return Ok(Started::Skipped(format!("{python} did not start: {e}"))),
    };
    let mut stdin = child.stdin.take().context("the script's stdin")?;
    let stdout = BufReader::new(child.stdout.take().context("the script's stdout")?);
    writeln!(stdin, "{config}")?;
    stdin.flush()?;
    let mut session = PolarsSession {
        version: String::new(),
        numpy: String::new(),
        threads: 0,
        child,
        stdin,
        stdout,
        csv_out: query.csv_out.clone(),
    };
    let answer = session.answer()?;
    if let Some(skip) = answer["skip"].as_str() {
        session.child.wait()?;
        return Ok(Started::Skipped(skip.to_owned()));
    }
    ensure!(
        answer["ready"] == true,
        "the Polars script did not get ready: {answer}"
    );
    session.version = answer["polars"].as_str().unwrap_or("?").to_owned();
    session.numpy = answer["numpy"].as_str().unwrap_or("?").to_owned();
    session.threads = answer["threads"].as_u64().unwrap_or(0);
    Ok(Started::Ready(session))
}

impl PolarsSession {
    /// Times one run.
    pub fn run(&mut self) -> anyhow::Result<PolarsRun> {
        writeln!(self.stdin, "run")?;
        self.stdin.flush()?;
        let r = self.answer()?;
        ensure!(r["total_s"].is_number(), "the Polars run failed: {r}");
        let seconds = |v: &Value| Duration::from_secs_f64(v.as_f64().unwrap_or(0.0).max(0.0));
        Ok(PolarsRun {
            total: seconds(&r["total_s"]),
            read: seconds(&r["read_s"]),
            compute: seconds(&r["compute_s"]),
            csv: seconds(&r["csv_s"]),
            readings: r["readings"].as_u64().unwrap_or(0),
            rows: r["rows"].as_u64().unwrap_or(0),
            bytes: r["bytes"].as_u64().unwrap_or(0),
        })
    }

    /// Ends the script and reads the last run's CSV.
    pub fn finish(mut self) -> anyhow::Result<Finished> {
        writeln!(self.stdin, "done")?;
        self.stdin.flush()?;
        let answer = self.answer()?;
        let status = self.child.wait()?;
        ensure!(status.success(), "the Polars script ended with {status}");
        let csv = std::fs::read_to_string(&self.csv_out)
            .with_context(|| format!("Polars' CSV {}", self.csv_out.display()))?;
        Ok(Finished {
            csv,
            peak_rss: answer["peak_rss"].as_u64(),
        })
    }

    /// The script's next line of JSON.
    fn answer(&mut self) -> anyhow::Result<Value> {
        let mut line = String::new();
        let read = self.stdout.read_line(&mut line)?;
        if read == 0 {
            let status = self.child.wait()?;
            bail!("the Polars script ended ({status}) without answering");
        }
        serde_json::from_str(&line)
            .with_context(|| format!("the Polars script's answer: {}", line.trim_end()))
    }
}
