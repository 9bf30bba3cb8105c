//! `trackhouse import` against a really started `serve`: rejected lines are
//! reported as `file:line`, a rerun finds duplicates only, and the exit status
//! tells whether every line was stored (0), some were not (1), or the command
//! was wrong (2).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use chrono::{Duration, Utc};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::{Proc, admin, trackhouse};

/// A running server with a tracker and a backfill ingest token.
struct Setup {
    dir: TempDir,
    _server: Proc,
    url: String,
    token: String,
    tracker_id: i64,
}

impl Setup {
    fn start() -> Self {
        let dir = TempDir::new().unwrap();
        let (server, addr) = Proc::serve(dir.path());
        let path = dir.path();
        let dealer = admin(
            path,
            &[
                "dealer",
                "create",
                "--title",
                "Importers",
                "--panel-password",
                "secret123",
            ],
        );
        let dealer = dealer["dealer_id"].to_string();
        let user = admin(
            path,
            &[
                "user",
                "create",
                "--dealer-id",
                &dealer,
                "--login",
                "import@example.com",
                "--password",
                "pw-import",
            ],
        );
        let user = user["user_id"].to_string();
        let tracker = admin(
            path,
            &[
                "tracker",
                "create",
                "--user-id",
                &user,
                "--label",
                "Imported",
                "--device-id",
                "356000000000017",
            ],
        );
        let token = admin(
            path,
            &["ingest-token", "create", "--title", "import", "--backfill"],
        );
        Self {
            url: format!("http://{addr}"),
            token: token["token"].as_str().unwrap().to_owned(),
            tracker_id: tracker["tracker_id"].as_i64().unwrap(),
            _server: server,
            dir,
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A valid message `n` seconds after a start two days ago (so `n` picks a distinct message).
    fn line(&self, n: i64) -> String {
        let start = Utc::now().date_naive() - chrono::Days::new(2);
        let time = start.and_hms_opt(6, 0, 0).unwrap().and_utc() + Duration::seconds(n);
        json!({
            "tracker_id": self.tracker_id,
            "msg_time": time.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "server_time": (time + Duration::seconds(2)).format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "gps_fix_type": "HAS_FIX",
            "lat": 43.2 + n as f64 * 1e-4,
            "lng": 76.9,
            "speed": 40.5,
            "flags": 1,
            "inputs": {"lls_level_1": 2000 - n},
            "states": {"ignition": true, "mode": "eco"},
        })
        .to_string()
    }

    /// Runs `trackhouse import ARGS... --url URL --token TOKEN` in the temp dir.
    fn import(&self, args: &[&str], stdin: Option<&str>) -> Outcome {
        let mut cmd = trackhouse();
        cmd.arg("import")
            .args(args)
            .args(["--url", &self.url, "--token", &self.token]);
        run(cmd, self.path(), stdin)
    }
}

/// What an import printed and how it exited.
#[derive(Debug)]
struct Outcome {
    code: Option<i32>,
    summary: Value,
    stderr: String,
}

fn run(mut cmd: Command, dir: &Path, stdin: Option<&str>) -> Outcome {
    // The server is local: no proxy of the environment may stand in between.
    for proxy in ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"] {
        cmd.env_remove(proxy);
    }
    cmd.current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd.spawn().expect("starting trackhouse import");
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(text.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary = match stdout.lines().collect::<Vec<_>>().as_slice() {
        [] => Value::Null,
        [line] => serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("summary {line:?} is not JSON: {e}; stderr:\n{stderr}")),
        more => panic!("more than one line on stdout: {more:?}"),
    };
    Outcome {
        code: out.status.code(),
        summary,
        stderr,
    }
}

/// The summary's counts, in the documented order, without `seconds`.
fn counts(outcome: &Outcome) -> [i64; 7] {
    let summary = &outcome.summary;
    let keys = [
        "files",
        "lines",
        "accepted",
        "duplicates",
        "rejected",
        "requests",
        "retries",
    ];
    let names: Vec<&String> = summary.as_object().expect("a summary").keys().collect();
    assert_eq!(names, [&keys[..], &["seconds"]].concat(), "{summary}");
    assert!(summary["seconds"].as_f64().is_some_and(|s| s >= 0.0));
    keys.map(|key| summary[key].as_i64().expect(key))
}

/// `line` with `member` set to `value`.
fn with_member(line: &str, member: &str, value: Value) -> String {
    let mut object: Value = serde_json::from_str(line).unwrap();
    object[member] = value;
    object.to_string()
}

fn write_gzip(path: &Path, text: &str) {
    let file = std::fs::File::create(path).unwrap();
    let mut gzip = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    gzip.write_all(text.as_bytes()).unwrap();
    gzip.finish().unwrap();
}

#[test]
fn rejected_lines_are_named_by_file_and_line_and_a_rerun_finds_duplicates() {
    let setup = Setup::start();
    // a.ndjson: 120 messages, a blank line 50 (still counted), line 38 out of range.
    let mut a: Vec<String> = (0..120).map(|n| setup.line(n)).collect();
    a[37] = with_member(&a[37], "lat", json!(91));
    a.insert(49, String::new());
    std::fs::write(setup.path().join("a.ndjson"), a.join("\n") + "\n").unwrap();
    // b.ndjson.gz: 80 messages, line 12 not JSON; no final line feed.
    let mut b: Vec<String> = (1000..1080).map(|n| setup.line(n)).collect();
    b[11] = "not json".to_owned();
    write_gzip(&setup.path().join("b.ndjson.gz"), &b.join("\n"));

    // Small batches, several at once: rejections must map back across batches.
    let args = [
        "a.ndjson",
        "b.ndjson.gz",
        "--batch-lines",
        "25",
        "--concurrency",
        "3",
    ];
    let first = setup.import(&args, None);
    assert_eq!(first.code, Some(1), "{first:?}");
    // files, lines, accepted, duplicates, rejected, requests, retries.
    assert_eq!(counts(&first), [2, 200, 198, 0, 2, 8, 0], "{first:?}");
    let reported: Vec<&str> = first
        .stderr
        .lines()
        .filter(|l| l.contains(": code "))
        .collect();
    assert_eq!(reported.len(), 2, "{}", first.stderr);
    assert!(
        reported
            .iter()
            .any(|l| l.starts_with("a.ndjson:38: code 7: lat")),
        "{}",
        first.stderr
    );
    assert!(
        reported
            .iter()
            .any(|l| l.starts_with("b.ndjson.gz:12: code 7: ")),
        "{}",
        first.stderr
    );

    // The same files again: everything is a duplicate, and the two bad lines still fail.
    let again = setup.import(&args, None);
    assert_eq!(again.code, Some(1), "{again:?}");
    assert_eq!(counts(&again), [2, 200, 0, 198, 2, 8, 0], "{again:?}");
    assert!(again.stderr.contains("a.ndjson:38: code 7: lat"));
}

#[test]
fn clean_input_exits_zero_from_a_file_and_from_stdin() {
    let setup = Setup::start();
    let lines: Vec<String> = (0..300).map(|n| setup.line(n)).collect();
    std::fs::write(setup.path().join("clean.ndjson"), lines.join("\n") + "\n").unwrap();
    let outcome = setup.import(&["clean.ndjson"], None);
    assert_eq!(outcome.code, Some(0), "{outcome:?}");
    assert_eq!(counts(&outcome), [1, 300, 300, 0, 0, 1, 0], "{outcome:?}");

    // Standard input; half of it already stored: duplicates are not failures.
    let more: Vec<String> = (150..450).map(|n| setup.line(n)).collect();
    let piped = setup.import(&["-"], Some(&more.join("\n")));
    assert_eq!(piped.code, Some(0), "{piped:?}");
    assert_eq!(counts(&piped), [1, 300, 150, 150, 0, 1, 0], "{piped:?}");
}

#[test]
fn usage_errors_exit_two_and_refusals_exit_one() {
    let setup = Setup::start();
    std::fs::write(setup.path().join("one.ndjson"), setup.line(1) + "\n").unwrap();

    let missing = setup.import(&["one.ndjson", "missing.ndjson"], None);
    assert_eq!(missing.code, Some(2), "{missing:?}");
    assert!(missing.stderr.contains("missing.ndjson"), "{missing:?}");
    assert_eq!(missing.summary, Value::Null, "nothing is sent");

    let mut bad_token = trackhouse();
    bad_token.args(["import", "one.ndjson", "--token", "not-a-token"]);
    let bad_token = run(bad_token, setup.path(), None);
    assert_eq!(bad_token.code, Some(2), "{bad_token:?}");
    assert!(bad_token.stderr.contains("32 hexadecimal"), "{bad_token:?}");

    // A well-formed token the server does not know: 403, code 2, and no retry.
    let mut unknown = trackhouse();
    unknown.args(["import", "one.ndjson", "--url", &setup.url]);
    unknown.args(["--token", "0123456789abcdef0123456789abcdef"]);
    let unknown = run(unknown, setup.path(), None);
    assert_eq!(unknown.code, Some(1), "{unknown:?}");
    assert_eq!(counts(&unknown), [1, 1, 0, 0, 0, 1, 0], "{unknown:?}");
    assert!(unknown.stderr.contains("HTTP 403: code 2"), "{unknown:?}");

    // Nobody listening: retried with backoff, then given up.
    let mut dead = trackhouse();
    dead.args(["import", "one.ndjson", "--url", "http://127.0.0.1:1"]);
    dead.args(["--token", &setup.token, "--max-retries", "2"]);
    let dead = run(dead, setup.path(), None);
    assert_eq!(dead.code, Some(1), "{dead:?}");
    assert_eq!(counts(&dead), [1, 1, 0, 0, 0, 3, 2], "{dead:?}");
    assert!(dead.stderr.contains("gave up after 2 retries"), "{dead:?}");
}
