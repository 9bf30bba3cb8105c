//! Any data directory works: the default relative one, absolute, with `..`,
//! with spaces and characters URLs escape, non-ASCII, behind a symlink.
//!
//! Each case runs the real binary's demo in a fresh working directory, then,
//! after the telemetry is flushed to Parquet and a day's small files are
//! compacted, reads through the raw data export, `get_inputs` and fuel
//! resampling. The Parquet reads name files through DataFusion's object
//! store; a relative directory once became `%2E/…` there and every read
//! after the first flush failed with code 6.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{DurationRound, TimeDelta, Utc};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::Proc;

/// How a case names its data directory, relative to the working directory.
enum DataDir {
    /// No `--data-dir`: `./trackhouse-data`.
    Default,
    /// `--data-dir` as given; the directories of `prepare` are made first.
    Given {
        arg: &'static str,
        prepare: &'static [&'static str],
    },
    /// `--data-dir link`, a symlink to `target`.
    Symlink {
        link: &'static str,
        target: &'static str,
    },
    /// An absolute path: the working directory joined with this.
    Absolute(&'static str),
}

impl DataDir {
    /// Prepares the working directory; the `--data-dir` flags and where the data must land.
    fn prepare(&self, cwd: &Path) -> (Vec<String>, PathBuf) {
        match self {
            Self::Default => (Vec::new(), cwd.join("trackhouse-data")),
            Self::Given { arg, prepare } => {
                for dir in *prepare {
                    std::fs::create_dir_all(cwd.join(dir)).unwrap();
                }
                (
                    vec!["--data-dir".into(), (*arg).into()],
                    normalized(&cwd.join(arg)),
                )
            }
            Self::Symlink { link, target } => {
                std::fs::create_dir_all(cwd.join(target)).unwrap();
                std::os::unix::fs::symlink(target, cwd.join(link)).unwrap();
                (vec!["--data-dir".into(), (*link).into()], cwd.join(target))
            }
            Self::Absolute(name) => {
                let path = cwd.join(name);
                (
                    vec!["--data-dir".into(), path.to_str().unwrap().into()],
                    path,
                )
            }
        }
    }
}

/// `a/b/../c` as `a/c`, lexically (the test's own directories hold no symlink).
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A client of the demo server with its API key and ingest token.
struct Client {
    http: reqwest::Client,
    base: String,
    api_key: String,
    token: String,
}

impl Client {
    async fn post(&self, path: &str, body: Value) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.base))
            .header("Authorization", format!("NVX {}", self.api_key))
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"))
    }

    /// A call that must answer 200; its body.
    async fn ok_text(&self, path: &str, body: Value) -> String {
        let response = self.post(path, body).await;
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert_eq!(status, 200, "POST {path}: {text}");
        text
    }

    async fn metric(&self, name: &str) -> f64 {
        crate::support::metric(&self.http, &self.base, name)
            .await
            .unwrap_or_else(|| panic!("no {name} on /metrics"))
    }

    /// Waits until `name` on `/metrics` satisfies `done`; says why not after a minute.
    async fn wait_for(
        &self,
        what: &str,
        name: &str,
        done: impl Fn(f64) -> bool,
    ) -> Result<f64, String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let value = self.metric(name).await;
            if done(value) {
                return Ok(value);
            }
            if Instant::now() >= deadline {
                return Err(format!("{what}: {name} is {value} after a minute"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends NDJSON lines to the intake; all must be accepted.
    async fn ingest(&self, lines: &[String]) {
        let response = self
            .http
            .post(format!("{}/ingest/v1/messages", self.base))
            .header("Authorization", format!("Bearer {}", self.token))
            .header("Content-Type", "application/x-ndjson")
            .body(lines.join("\n"))
            .send()
            .await
            .unwrap();
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["accepted"], lines.len(), "{answer}");
    }

    async fn raw_rows(&self, tracker: i64, from: &str, to: &str) -> Vec<String> {
        let csv = self
            .ok_text(
                "/dwh/v1/tracker/raw_data/read",
                json!({"tracker_id": tracker, "from": from, "to": to,
                       "columns": ["lat", "lng", "inputs.*"]}),
            )
            .await;
        csv.lines().skip(1).map(str::to_owned).collect()
    }
}

async fn check(case: DataDir) {
    let cwd = TempDir::new().unwrap();
    let (flags, expected) = case.prepare(cwd.path());
    let mut args = vec![
        "demo",
        "--days",
        "1",
        "--listen",
        "127.0.0.1:0",
        "--log-format",
        "json",
        "--flush-interval-ms",
        "100",
    ];
    args.extend(flags.iter().map(String::as_str));
    let mut demo = Proc::start_in(cwd.path(), &args);
    let addr = demo.serving_addr();
    demo.stdout_until("Stop with Ctrl-C.");
    let accounts: Value =
        serde_json::from_str(&std::fs::read_to_string(expected.join("demo.json")).unwrap())
            .unwrap();
    let tracker = accounts["trackers"][0]["tracker_id"].as_i64().unwrap();
    let device = accounts["trackers"][0]["device_id"].as_str().unwrap();
    let client = Client {
        http: crate::support::http_client(),
        base: format!("http://{addr}"),
        api_key: accounts["api_key"].as_str().unwrap().to_owned(),
        token: accounts["ingest_token"].as_str().unwrap().to_owned(),
    };

    // Four flushes of one day three days back: four small files, then one merge.
    // Each batch is sent once the day's directory holds the file of the one
    // before, so each is a flush (and a file) of its own.
    let day = (Utc::now() - TimeDelta::days(3))
        .duration_trunc(TimeDelta::days(1))
        .unwrap();
    let day_dir = expected
        .join("telemetry")
        .join(format!("day={}", day.format("%Y-%m-%d")));
    let compactions = client.metric("trackhouse_compactions_total").await;
    for batch in 0..4 {
        let lines: Vec<String> = (0..25)
            .map(|i| {
                let at = day + TimeDelta::minutes(batch * 100 + i);
                json!({"device_id": device, "msg_time": at.to_rfc3339(),
                       "lat": 43.2, "lng": 76.9, "inputs": {"lls_level_1": 1000 + i}})
                .to_string()
            })
            .collect();
        client.ingest(&lines).await;
        if batch < 3 {
            let files = usize::try_from(batch + 1).unwrap();
            let deadline = Instant::now() + Duration::from_secs(60);
            while parquet_files(&day_dir) < files {
                if Instant::now() >= deadline {
                    let listed = listing(&expected.join("telemetry"));
                    panic!(
                        "batch {batch} not flushed to a file of its own; files:\n{listed}\nlog:\n{}",
                        demo.log_text()
                    );
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    let compacted = client
        .wait_for("a compaction", "trackhouse_compactions_total", |n| {
            n > compactions
        })
        .await;
    if let Err(why) = compacted {
        let files = listing(&expected.join("telemetry"));
        panic!("{why}; files:\n{files}\nlog:\n{}", demo.log_text());
    }
    // The data is where the directory names it, in Parquet, the day's four files merged into one.
    let deadline = Instant::now() + Duration::from_secs(60);
    while parquet_files(&day_dir) != 1 {
        assert!(
            Instant::now() < deadline,
            "{} Parquet files in {}",
            parquet_files(&day_dir),
            day_dir.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let from = day.to_rfc3339();
    let to = (day + TimeDelta::days(1)).to_rfc3339();
    let rows = client.raw_rows(tracker, &from, &to).await;
    assert_eq!(rows.len(), 100, "{rows:?}");
    // The demo's own day, flushed too, reads back.
    let recent = client
        .raw_rows(
            tracker,
            &(Utc::now() - TimeDelta::days(1)).to_rfc3339(),
            &Utc::now().to_rfc3339(),
        )
        .await;
    assert!(recent.len() > 100, "{} demo rows", recent.len());

    let inputs: Value = serde_json::from_str(
        &client
            .ok_text(
                "/dwh/v1/tracker/raw_data/get_inputs",
                json!({"tracker_id": tracker}),
            )
            .await,
    )
    .unwrap();
    assert!(
        inputs["inputs"].to_string().contains("lls_level_1"),
        "{inputs}"
    );

    let interval = format!(
        "{}/{}",
        day.format("%Y-%m-%dT%H:%M:%SZ"),
        (day + TimeDelta::hours(6)).format("%Y-%m-%dT%H:%M:%SZ")
    );
    let csv = client
        .ok_text(
            &format!("/eco_fleet/v1/trackers/{tracker}/resampling"),
            json!({"interval": interval, "step_size": 60, "resampling_props": [
                {"data_type": "FUEL", "resampling_method": "PREVIOUS", "delta": null, "fixed_value": null}]}),
        )
        .await;
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.first().copied(), Some("Time,Main tank"), "{csv}");
    assert_eq!(lines.len(), 7, "{csv}");
    assert!(
        lines[1..].iter().any(|l| !l.ends_with(',')),
        "no fuel value: {csv}"
    );

    let (status, log) = demo.terminate();
    assert!(status.success(), "exit status {status}; log:\n{log}");
    assert!(
        !log.contains("\"level\":\"ERROR\""),
        "errors were logged:\n{log}"
    );
}

/// Every file under `dir` with its size, a line each.
fn listing(dir: &Path) -> String {
    let mut lines = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = entry.metadata().map(|m| m.len()).unwrap_or(0);
                lines.push(format!("{} {bytes}", path.display()));
            }
        }
    }
    lines.sort();
    lines.join("\n")
}

fn parquet_files(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let path = e.path();
            if path.is_dir() {
                parquet_files(&path)
            } else {
                usize::from(path.extension().is_some_and(|x| x == "parquet"))
            }
        })
        .sum()
}

#[tokio::test]
async fn the_default_relative_data_dir() {
    check(DataDir::Default).await;
}

#[tokio::test]
async fn an_absolute_data_dir() {
    check(DataDir::Absolute("absolute")).await;
}

#[tokio::test]
async fn a_data_dir_with_dot_dot() {
    check(DataDir::Given {
        arg: "./work/../up/data",
        prepare: &["work"],
    })
    .await;
}

#[tokio::test]
async fn a_data_dir_with_spaces_and_url_escapes() {
    check(DataDir::Given {
        arg: "my data/100% #1 [a]?",
        prepare: &[],
    })
    .await;
}

#[tokio::test]
async fn a_non_ascii_data_dir() {
    check(DataDir::Given {
        arg: "données/数据",
        prepare: &[],
    })
    .await;
}

#[tokio::test]
async fn a_data_dir_behind_a_symlink() {
    check(DataDir::Symlink {
        link: "link",
        target: "real/place",
    })
    .await;
}
