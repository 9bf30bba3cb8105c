//! The server under test: the real `trackhouse serve` binary as a child
//! process of its own (its CPU and memory are its own), on a fresh copy of
//! a data directory prepared in process through the `platform` crate's
//! `Store`: a dealer, a user, the trackers with distinct device ids and an
//! ingest token (a gateway's: no backfill, so the server stamps its time).
//! The crash test starts it again and again on one directory
//! ([`TrackhouseServer::start_in`]) and kills it ([`TrackhouseServer::kill`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use platform::{NewTracker, Store, StoreConfig, StorePeriod};
use schemas::{SystemClock, TrackerId};

use super::workload::Device;
use crate::export::Account;

/// A data directory with the account, copied for every point.
#[derive(Debug)]
pub struct Template {
    dir: tempfile::TempDir,
    /// The trackers, in order of creation.
    pub devices: Vec<Device>,
    /// The ingest token.
    pub token: String,
    /// The API key of the trackers' owner (reads during the load).
    pub key: String,
}

impl Template {
    /// Creates the account with `trackers` trackers under `root`, then
    /// closes the store.
    pub async fn create(root: &Path, trackers: usize) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("ingest-load-template-")
            .tempdir_in(root)?;
        let store = Store::open(StoreConfig::new(dir.path()), Arc::new(SystemClock)).await?;
        let account = Account::create(&store).await?;
        let first = store
            .tracker(account.tracker)
            .await?
            .context("the account's tracker")?;
        let planned = planned_devices(trackers);
        let mut devices = vec![Device {
            tracker: account.tracker,
            device_id: first.device_id.clone(),
        }];
        for (i, device) in planned.iter().enumerate().skip(1) {
            let tracker = store
                .create_tracker(NewTracker {
                    user_id: first.user_id,
                    label: format!("Truck {i:05}"),
                    device_id: device.device_id.clone(),
                    model: "fmb920".into(),
                    plan_id: None,
                    store_period: Some(StorePeriod::Years(10)),
                    time_zone: None,
                })
                .await?;
            devices.push(Device {
                tracker,
                device_id: device.device_id.clone(),
            });
        }
        ensure!(
            devices == planned,
            "the store gave other tracker ids or device ids than planned"
        );
        let token = store
            .create_ingest_token("ingest_load", false)
            .await?
            .1
            .expose()
            .to_owned();
        store.close().await;
        Ok(Self {
            dir,
            devices,
            token,
            key: account.key,
        })
    }

    /// A fresh data directory under `root` holding a copy of the template's files.
    pub fn copy(&self, root: &Path) -> anyhow::Result<tempfile::TempDir> {
        let dir = tempfile::Builder::new()
            .prefix("ingest-load-point-")
            .tempdir_in(root)?;
        for entry in std::fs::read_dir(self.dir.path())? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                std::fs::copy(entry.path(), dir.path().join(entry.file_name()))?;
            }
        }
        Ok(dir)
    }
}

/// The trackers [`Template::create`] makes, in order: ids from 1 in a
/// fresh store, the first with the device id of `export::Account`, the
/// others `3563070425NNNNN`. The ClickHouse rows name the same trackers.
pub fn planned_devices(trackers: usize) -> Vec<Device> {
    (0..trackers.max(1))
        .map(|i| Device {
            tracker: TrackerId(i as i64 + 1),
            device_id: if i == 0 {
                ACCOUNT_DEVICE_ID.to_owned()
            } else {
                format!("3563070425{i:05}")
            },
        })
        .collect()
}

/// The device id of the tracker `export::Account::create` makes.
const ACCOUNT_DEVICE_ID: &str = "356307042440001";

/// How the binary is run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerOptions {
    /// The `trackhouse` binary.
    pub bin: PathBuf,
    /// Arguments added after `serve --data-dir … --listen …`.
    pub args: Vec<String>,
    /// CPUs it is pinned to (`taskset -c`), if any.
    pub cpus: Option<String>,
}

/// `trackhouse serve --help`, to see which flags the binary has.
pub fn serve_help(bin: &Path) -> anyhow::Result<String> {
    let output = Command::new(bin)
        .args(["serve", "--help"])
        .output()
        .with_context(|| format!("running {} serve --help", bin.display()))?;
    ensure!(
        output.status.success(),
        "{} serve --help failed: {}",
        bin.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Starts a shell that waits until this process or `pid` has exited; if
/// this process is gone (killed mid-run), it kills `pid` and removes
/// `dir`, so that nothing is left running or on disk. The caller reaps it.
pub fn guard(pid: Option<u32>, dir: Option<&Path>) -> anyhow::Result<Child> {
    let me = std::process::id();
    let alive = match pid {
        Some(pid) => format!("kill -0 {me} 2>/dev/null && kill -0 {pid} 2>/dev/null"),
        None => format!("kill -0 {me} 2>/dev/null"),
    };
    let mut cleanup = String::new();
    if let Some(pid) = pid {
        cleanup.push_str(&format!("kill -KILL {pid} 2>/dev/null; "));
    }
    if let Some(dir) = dir {
        let dir = dir.to_string_lossy().replace('\'', "'\\''");
        cleanup.push_str(&format!("rm -rf '{dir}'; "));
    }
    let script =
        format!("while {alive}; do sleep 1; done; if ! kill -0 {me} 2>/dev/null; then {cleanup}fi");
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting the cleanup guard")
}

/// A server's data directory.
#[derive(Debug)]
pub enum DataDir {
    /// A copy of the template, removed when dropped.
    Owned(tempfile::TempDir),
    /// The caller's (the crash test's, kept across rounds).
    Kept(PathBuf),
}

impl DataDir {
    /// Where it is.
    pub fn path(&self) -> &Path {
        match self {
            Self::Owned(dir) => dir.path(),
            Self::Kept(path) => path,
        }
    }
}

/// How long a server may take to answer `/healthz` after it is started.
pub const READY_PATIENCE: Duration = Duration::from_secs(120);

/// The allocator settings of `deploy/systemd/trackhouse.service`
/// (docs/decisions.md, decisions 114 and 135), given to every server these
/// benchmarks start unless the caller's environment sets them.
pub const DEPLOYED_ALLOCATOR_ENV: [(&str, &str); 3] = [
    ("MIMALLOC_PURGE_DELAY", "50"),
    ("MIMALLOC_ALLOW_THP", "0"),
    (
        "GLIBC_TUNABLES",
        "glibc.malloc.mmap_threshold=4194304:glibc.malloc.trim_threshold=33554432",
    ),
];

/// A running `trackhouse serve`.
#[derive(Debug)]
pub struct TrackhouseServer {
    child: Option<Child>,
    guard: Option<Child>,
    /// Its process id.
    pub pid: u32,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// Started → `/healthz` answered 200 (on a directory with a WAL: its
    /// recovery, which comes before the listener).
    pub ready_after: Duration,
    /// Taken by [`Self::stop`].
    dir: Option<DataDir>,
}

/// A server stopped.
#[derive(Debug)]
pub struct Stopped {
    /// SIGTERM → exit (the final flush of what is still in memory).
    pub shutdown: Duration,
    /// How it exited.
    pub status: ExitStatus,
    /// Its data directory, still there until this is dropped.
    pub dir: DataDir,
}

impl TrackhouseServer {
    /// Starts the binary on a copy of `template` under `root` and waits
    /// until `/healthz` answers 200.
    pub async fn start(
        template: &Template,
        root: &Path,
        options: &ServerOptions,
    ) -> anyhow::Result<Self> {
        let dir = template.copy(root)?;
        Self::start_in(DataDir::Owned(dir), options, READY_PATIENCE).await
    }

    /// Starts the binary on `dir` as it is (after a kill: the server
    /// recovers its WAL first) and waits until `/healthz` answers 200, for
    /// `patience` at most. Its output is appended to `dir/server.log`.
    pub async fn start_in(
        dir: DataDir,
        options: &ServerOptions,
        patience: Duration,
    ) -> anyhow::Result<Self> {
        let started = Instant::now();
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("server.log"))?;
        writeln!(
            log,
            "=== ingest_load: trackhouse serve on port {port}, {} ms after the Unix epoch ===",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis())
        )?;
        let mut command = match &options.cpus {
            Some(cpus) => {
                let mut c = Command::new("taskset");
                c.args(["-c", cpus]).arg(&options.bin);
                c
            }
            None => Command::new(&options.bin),
        };
        // As deploy/systemd/trackhouse.service runs it: mimalloc returns
        // freed memory after 50 ms instead of a second and maps no
        // transparent huge pages, and glibc's malloc (zstd's contexts)
        // keeps what it freed (the peak RSS measured is the deployed one);
        // the caller's settings win.
        for (option, deployed) in DEPLOYED_ALLOCATOR_ENV {
            if std::env::var_os(option).is_none() {
                command.env(option, deployed);
            }
        }
        command
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.path())
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .args(&options.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = command
            .spawn()
            .with_context(|| format!("starting {}", options.bin.display()))?;
        let pid = child.id();
        let mut server = Self {
            pid,
            guard: Some(guard(Some(pid), None)?),
            child: Some(child),
            base: format!("http://127.0.0.1:{port}"),
            ready_after: Duration::ZERO,
            dir: Some(dir),
        };
        server.wait_ready(patience).await?;
        server.ready_after = started.elapsed();
        Ok(server)
    }

    async fn wait_ready(&mut self, patience: Duration) -> anyhow::Result<()> {
        let client = reqwest::Client::new();
        let deadline = Instant::now() + patience;
        while Instant::now() < deadline {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                bail!(
                    "trackhouse serve exited with {status} before answering: {}",
                    self.log_tail()
                );
            }
            let healthy = client
                .get(format!("{}/healthz", self.base))
                .timeout(Duration::from_secs(2))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if healthy {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!(
            "trackhouse serve did not answer /healthz within {} s: {}",
            patience.as_secs(),
            self.log_tail()
        )
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), DataDir::path)
    }

    /// Its exit status if it has exited (by itself).
    pub fn exited(&mut self) -> anyhow::Result<Option<ExitStatus>> {
        match self.child.as_mut() {
            Some(child) => Ok(child.try_wait()?),
            None => bail!("the server was already stopped"),
        }
    }

    /// SIGKILL now (no flush, no shutdown of any kind), and waits until the
    /// process is gone.
    pub async fn kill(mut self) -> anyhow::Result<ExitStatus> {
        let Some(mut child) = self.child.take() else {
            bail!("the server was already stopped");
        };
        child.kill().context("sending SIGKILL")?;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        self.reap_guard();
        Ok(status)
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.data_dir().join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    /// SIGTERM, then waits for the graceful exit (the server flushes what
    /// it holds in memory); SIGKILL after `patience`.
    pub async fn stop(mut self, patience: Duration) -> anyhow::Result<Stopped> {
        let started = Instant::now();
        let Some(mut child) = self.child.take() else {
            bail!("the server was already stopped");
        };
        let signalled = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()
            .context("running kill -TERM")?;
        ensure!(signalled.success(), "kill -TERM {} failed", self.pid);
        loop {
            if let Some(status) = child.try_wait()? {
                self.reap_guard();
                let dir = self.dir.take().context("the data directory")?;
                return Ok(Stopped {
                    shutdown: started.elapsed(),
                    status,
                    dir,
                });
            }
            if started.elapsed() > patience {
                child.kill()?;
                child.wait()?;
                bail!(
                    "trackhouse serve did not stop within {} s of SIGTERM: {}",
                    patience.as_secs(),
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl TrackhouseServer {
    fn reap_guard(&mut self) {
        if let Some(mut guard) = self.guard.take() {
            let _ = guard.kill();
            let _ = guard.wait();
        }
    }
}

impl Drop for TrackhouseServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.reap_guard();
    }
}
