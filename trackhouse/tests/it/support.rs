//! Shared helpers: run `trackhouse admin`, start `serve` or `demo` as a child
//! process that is killed when dropped, read its output, stop it with SIGTERM.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a started process may take to report that it serves.
const STARTUP: Duration = Duration::from_secs(60);

/// How long a process may take to exit after SIGTERM.
const SHUTDOWN: Duration = Duration::from_secs(30);

/// How long one HTTP exchange of a test may take: a server that stops
/// answering fails the test with the call named, instead of hanging the run.
const EXCHANGE: Duration = Duration::from_secs(120);

/// The tests' HTTP client: no proxy, and a deadline on every exchange.
pub(crate) fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(EXCHANGE)
        .build()
        .expect("an HTTP client")
}

/// A master user with one tracker (stored for 100 years), an API key and an
/// ingest token, all made with `trackhouse admin` in a data directory.
#[derive(Debug, Clone)]
pub(crate) struct Account {
    pub(crate) tracker: i64,
    pub(crate) key: String,
    pub(crate) token: String,
}

impl Account {
    /// Makes the dealer, the user `login` and the tracker `device_id` in `dir`.
    pub(crate) fn create(dir: &Path, login: &str, device_id: &str) -> Self {
        let (_, user) = master_user(dir, login);
        let user = user.to_string();
        let tracker = admin(
            dir,
            &[
                "tracker",
                "create",
                "--user-id",
                &user,
                "--label",
                "T",
                "--device-id",
                device_id,
                "--store-period",
                "100y",
            ],
        )["tracker_id"]
            .as_i64()
            .unwrap();
        let key = admin(
            dir,
            &["api-key", "create", "--user-id", &user, "--title", "k"],
        )["hash"]
            .as_str()
            .unwrap()
            .to_owned();
        let token = admin(dir, &["ingest-token", "create", "--title", "t"])["token"]
            .as_str()
            .unwrap()
            .to_owned();
        Self {
            tracker,
            key,
            token,
        }
    }
}

/// A dealer (password `secret123`) and its master user `login` (password
/// `pw`), made with `trackhouse admin` in `dir`: their ids.
pub(crate) fn master_user(dir: &Path, login: &str) -> (i64, i64) {
    let dealer = admin(
        dir,
        &[
            "dealer",
            "create",
            "--title",
            "D",
            "--panel-password",
            "secret123",
        ],
    )["dealer_id"]
        .as_i64()
        .unwrap();
    let user = admin(
        dir,
        &[
            "user",
            "create",
            "--dealer-id",
            &dealer.to_string(),
            "--login",
            login,
            "--password",
            "pw",
        ],
    )["user_id"]
        .as_i64()
        .unwrap();
    (dealer, user)
}

/// The value of the sample `name` (with its labels, if any) on the
/// server's `/metrics`; `None` when it is not there.
pub(crate) async fn metric(client: &reqwest::Client, base: &str, name: &str) -> Option<f64> {
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// The `trackhouse` binary, with no `TRACKHOUSE_*` variable of the caller's
/// environment, so that only the flags a test passes take effect, and none of
/// the `CARGO_*` ones `cargo test` sets, so that it runs as if started by hand
/// (under `cargo run` the demo prints `cargo run` commands).
pub(crate) fn trackhouse() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trackhouse"));
    for (key, _) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        if key_text.starts_with("TRACKHOUSE_") || key_text.starts_with("CARGO_") {
            cmd.env_remove(key);
        }
    }
    cmd.stdin(Stdio::null());
    cmd
}

/// Whether `text` looks like a credential: 32 lower-case hex characters.
pub(crate) fn is_secret(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Runs `trackhouse admin --data-dir DIR ARGS...` to completion.
pub(crate) fn admin_output(dir: &Path, args: &[&str]) -> Output {
    trackhouse()
        .arg("admin")
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .output()
        .expect("running trackhouse admin")
}

/// Runs an admin command that must succeed; returns the one JSON object it printed.
pub(crate) fn admin(dir: &Path, args: &[&str]) -> Value {
    let out = admin_output(dir, args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "admin {args:?} failed ({}): {stderr}",
        out.status
    );
    let lines: Vec<&str> = stdout.lines().collect();
    let [line] = lines.as_slice() else {
        panic!("admin {args:?} must print exactly one line, printed {stdout:?}");
    };
    let value: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("admin {args:?} printed {line:?}, not JSON: {e}"));
    assert!(value.is_object(), "admin {args:?} printed {value}");
    value
}

/// [`admin`] on a blocking thread, for async tests.
pub(crate) async fn admin_async(dir: &Path, args: &[&str]) -> Value {
    let dir = dir.to_owned();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        admin(&dir, &args)
    })
    .await
    .expect("admin thread")
}

/// Runs an admin command that must fail; returns the error object it printed on stderr.
///
/// The object must be `{"success":false,"status":{"code":N,"description":".."}}`
/// and stdout must stay empty, so that scripts never mistake an error for an answer.
pub(crate) fn admin_error(dir: &Path, args: &[&str]) -> Value {
    let out = admin_output(dir, args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "admin {args:?} should fail, printed {stdout}"
    );
    assert!(
        stdout.is_empty(),
        "admin {args:?} failed but printed {stdout:?}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    let [line] = lines.as_slice() else {
        panic!("admin {args:?} must print exactly one error line, printed {stderr:?}");
    };
    let error: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("admin {args:?} printed {line:?}, not JSON: {e}"));
    assert_eq!(error["success"], false, "{error}");
    assert!(error["status"]["code"].is_i64(), "{error}");
    let description = error["status"]["description"].as_str().unwrap_or_default();
    assert!(!description.is_empty(), "no description: {error}");
    error
}

/// The lines of a pipe, read on a thread of their own so the pipe never fills up.
fn lines_of(pipe: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// A running `trackhouse` child process; killed when dropped, so a failing
/// test never leaves a server behind.
#[derive(Debug)]
pub(crate) struct Proc {
    child: Child,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    /// The stderr lines read so far.
    log: Vec<String>,
}

impl Proc {
    /// Starts `trackhouse ARGS...` with stdout and stderr piped.
    pub(crate) fn start(args: &[&str]) -> Self {
        Self::start_command(trackhouse().args(args))
    }

    /// Starts `trackhouse ARGS...` in the working directory `cwd`.
    pub(crate) fn start_in(cwd: &Path, args: &[&str]) -> Self {
        Self::start_command(trackhouse().current_dir(cwd).args(args))
    }

    fn start_command(command: &mut Command) -> Self {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting trackhouse");
        let stdout = lines_of(child.stdout.take().expect("piped stdout"));
        let stderr = lines_of(child.stderr.take().expect("piped stderr"));
        Self {
            child,
            stdout,
            stderr,
            log: Vec::new(),
        }
    }

    /// Starts `trackhouse serve` on a free port of 127.0.0.1 and waits until it serves.
    pub(crate) fn serve(dir: &Path) -> (Self, SocketAddr) {
        Self::serve_with(dir, &[])
    }

    /// [`Self::serve`] with more flags.
    pub(crate) fn serve_with(dir: &Path, flags: &[&str]) -> (Self, SocketAddr) {
        let dir = dir.to_str().expect("UTF-8 temp dir");
        let mut args = vec![
            "serve",
            "--data-dir",
            dir,
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
        ];
        args.extend_from_slice(flags);
        let mut proc = Self::start(&args);
        let addr = proc.serving_addr();
        (proc, addr)
    }

    /// The address from the `serving` log line (the process must log JSON).
    ///
    /// Reading the bound address from the log, rather than choosing a port
    /// up front, leaves no window in which another process can take the port.
    pub(crate) fn serving_addr(&mut self) -> SocketAddr {
        let deadline = Instant::now() + STARTUP;
        loop {
            let line = match self
                .stderr
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) => line,
                Err(e) => panic!("no `serving` log line ({e}); log:\n{}", self.log.join("\n")),
            };
            self.log.push(line.clone());
            let Ok(entry) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if entry["fields"]["message"] == "serving" {
                let addr = entry["fields"]["addr"].as_str().unwrap_or_default();
                return addr
                    .parse()
                    .unwrap_or_else(|e| panic!("bad address in {line:?}: {e}"));
            }
        }
    }

    /// Reads stdout up to and including the first line equal to `last`.
    pub(crate) fn stdout_until(&mut self, last: &str) -> Vec<String> {
        let deadline = Instant::now() + STARTUP;
        let mut lines = Vec::new();
        loop {
            match self
                .stdout
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) => {
                    let done = line == last;
                    lines.push(line);
                    if done {
                        return lines;
                    }
                }
                Err(e) => panic!(
                    "stdout ended before {last:?} ({e}); stdout:\n{}\nlog:\n{}",
                    lines.join("\n"),
                    self.log_text()
                ),
            }
        }
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The process's peak resident memory so far (`VmHWM`), in KiB.
    pub(crate) fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no VmHWM in /proc/{}/status", self.child.id()))
    }

    /// The stderr lines read so far, joined.
    pub(crate) fn log_text(&mut self) -> String {
        while let Ok(line) = self.stderr.try_recv() {
            self.log.push(line);
        }
        self.log.join("\n")
    }

    /// Sends SIGTERM and waits for the exit; returns the status and the whole log.
    pub(crate) fn terminate(mut self) -> (ExitStatus, String) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("running kill");
        assert!(sent.success(), "kill -TERM {pid} failed: {sent}");
        let deadline = Instant::now() + SHUTDOWN;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("waiting for trackhouse") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "trackhouse did not exit within {SHUTDOWN:?} of SIGTERM; log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        // The process has exited: the reader thread sees the end of the pipe soon.
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(5)) {
            self.log.push(line);
        }
        (status, self.log.join("\n"))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
