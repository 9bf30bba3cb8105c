//! The same export by DuckDB (PyPI `duckdb`, in a `python3` subprocess)
//! from the same Parquet files; ClickHouse, which reads its own tables, is in
//! [`clickhouse`](super::clickhouse).
//!
//! Both select the columns of the server's CSV header in its order, times
//! formatted as the server writes them in UTC (`2024-06-01T00:00:00Z`,
//! seconds truncated), `gps_fix_type` and `mn_type` as their names, the
//! tracker's rows in the span, ordered by message time. DuckDB writes CSV
//! with `\N` nulls to a temporary file and times only the `COPY` statement.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use schemas::{GpsFixType, MnType};
use serde_json::{Value, json};

/// One export by a peer.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PeerRun {
    /// Time of the statement (DuckDB: the `COPY` alone; ClickHouse: the
    /// query as the client reports it).
    pub elapsed: Duration,
    /// Rows written.
    pub rows: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Peak RSS of the peer's process so far, when known.
    pub peak_rss: Option<u64>,
}

impl PeerRun {
    /// Rows per second.
    pub fn rows_per_s(&self) -> f64 {
        self.rows as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// MB (10^6 bytes) per second.
    pub fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// What the peers are asked: the tracker's rows in the span from `files`.
#[derive(Debug, Clone)]
pub struct PeerQuery {
    /// Absolute paths of the Parquet files.
    pub files: Vec<PathBuf>,
    /// The tracker.
    pub tracker: i64,
    /// The message-time span, `[from, to)` in ms.
    pub span_ms: (i64, i64),
}

fn names_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    format!("[{}]", quoted.join(", "))
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// DuckDB's select list for the server's header `names`, and the columns to force-quote
/// (those the server quotes: times, names, text).
fn duckdb_select(names: &[String]) -> (Vec<String>, Vec<String>) {
    let gps: Vec<&str> = GpsFixType::ALL.iter().map(|v| v.as_str()).collect();
    let mn: Vec<&str> = MnType::ALL.iter().map(|v| v.as_str()).collect();
    let mut select = Vec::new();
    let mut quoted = Vec::new();
    for name in names {
        let id = quote_ident(name);
        let expression = match name.as_str() {
            "msg_time" | "server_time" => {
                quoted.push(id.clone());
                format!("strftime({id}, '%Y-%m-%dT%H:%M:%SZ') AS {id}")
            }
            "gps_fix_type" => {
                quoted.push(id.clone());
                format!("{}[{id} + 1] AS {id}", names_list(&gps))
            }
            "mn_type" => {
                quoted.push(id.clone());
                format!("{}[{id} + 1] AS {id}", names_list(&mn))
            }
            "mn_name" => {
                quoted.push(id.clone());
                id
            }
            _ => id,
        };
        select.push(expression);
    }
    (select, quoted)
}

const DUCKDB_SCRIPT: &str = r#"
import json, os, sys, tempfile, time
try:
    import duckdb
except Exception as e:
    print(json.dumps({"skip": "import duckdb failed: %s" % e}))
    sys.exit(0)
def vm_hwm():
    # Not ru_maxrss: on Linux it keeps the parent's peak across fork and exec.
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None
cfg = json.load(sys.stdin)
con = duckdb.connect()
con.execute("SET TimeZone = 'UTC'")
con.execute("SET enable_progress_bar = false")
files = "[" + ", ".join("'%s'" % f for f in cfg["files"]) + "]"
out = os.path.join(tempfile.mkdtemp(), "out.csv")
results = {"version": duckdb.__version__, "threads": con.execute("SELECT current_setting('threads')").fetchone()[0], "exports": []}
for export in cfg["exports"]:
    runs = []
    force = ""
    if export["quoted"]:
        force = ", FORCE_QUOTE (%s)" % ", ".join(export["quoted"])
    sql = ("COPY (SELECT %s FROM read_parquet(%s, union_by_name = true) "
           "WHERE tracker_id = %d AND msg_time >= epoch_ms(%d) AND msg_time < epoch_ms(%d) ORDER BY msg_time) "
           "TO '%s' (FORMAT CSV, HEADER, NULLSTR '\\N'%s)") % (
        ", ".join(export["select"]), files, cfg["tracker"], cfg["from_ms"], cfg["to_ms"], out, force)
    for _ in range(cfg["runs"]):
        started = time.perf_counter()
        rows = con.execute(sql).fetchone()[0]
        elapsed = time.perf_counter() - started
        runs.append({"elapsed_s": elapsed, "rows": rows, "bytes": os.path.getsize(out),
                     "peak_rss": vm_hwm()})
        os.remove(out)
    results["exports"].append(runs)
print(json.dumps(results))
"#;

/// DuckDB's answer: its version and thread count, then per export its runs.
#[derive(Debug, Clone)]
pub enum DuckDbOutcome {
    /// DuckDB could not run; why.
    Skipped(String),
    /// The runs of each export, in the order asked.
    Ran {
        /// `duckdb.__version__`.
        version: String,
        /// DuckDB's `threads` setting.
        threads: String,
        /// Per export, its runs.
        exports: Vec<Vec<PeerRun>>,
    },
}

/// Runs each export (given as the server's header names) `runs` times in DuckDB.
pub fn duckdb(
    query: &PeerQuery,
    exports: &[Vec<String>],
    runs: usize,
) -> anyhow::Result<DuckDbOutcome> {
    let exports: Vec<Value> = exports
        .iter()
        .map(|names| {
            let (select, quoted) = duckdb_select(names);
            json!({"select": select, "quoted": quoted})
        })
        .collect();
    let input = json!({
        "files": query.files,
        "tracker": query.tracker,
        "from_ms": query.span_ms.0,
        "to_ms": query.span_ms.1,
        "runs": runs,
        "exports": exports,
    });
    let child = Command::new("python3")
        .arg("-c")
        .arg(DUCKDB_SCRIPT)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => {
            return Ok(DuckDbOutcome::Skipped(format!(
                "python3 did not start: {e}"
            )));
        }
    };
    child
        .stdin
        .take()
        .context("python3's stdin")?
        .write_all(input.to_string().as_bytes())?;
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!(
            "the DuckDB script failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let answer: Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "DuckDB's answer: {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })?;
    if let Some(skip) = answer["skip"].as_str() {
        return Ok(DuckDbOutcome::Skipped(skip.to_owned()));
    }
    let run = |r: &Value| PeerRun {
        elapsed: Duration::from_secs_f64(r["elapsed_s"].as_f64().unwrap_or(0.0)),
        rows: r["rows"].as_u64().unwrap_or(0),
        bytes: r["bytes"].as_u64().unwrap_or(0),
        peak_rss: r["peak_rss"].as_u64(),
    };
    let exports = answer["exports"]
        .as_array()
        .map(|exports| {
            exports
                .iter()
                .map(|runs| {
                    runs.as_array()
                        .map(|r| r.iter().map(run).collect())
                        .unwrap_or_default()
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(DuckDbOutcome::Ran {
        version: answer["version"].as_str().unwrap_or("?").to_owned(),
        threads: answer["threads"].to_string(),
        exports,
    })
}
