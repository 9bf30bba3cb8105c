//! A throwaway ClickHouse server on 127.0.0.1, started by
//! `deploy/clickhouse/local-server.sh` (Debian's `clickhouse-server`; no
//! system service, all state under one directory): what the tests of every
//! crate and the benchmarks run against.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A server started on free ports; stopped when dropped.
#[derive(Debug)]
pub struct LocalServer {
    dir: PathBuf,
    ports: (u16, u16),
    watch: Option<u32>,
    url: String,
    pid: Option<u32>,
}

impl LocalServer {
    /// Starts a server with its state under `dir`, on free (HTTP, TCP) ports.
    pub fn start(dir: &Path) -> std::io::Result<Self> {
        Self::start_watching(dir, None)
    }

    /// [`Self::start`]; with `watch`, the server also stops once that
    /// process has exited (a server shared by a test process's tests, which
    /// is never dropped).
    pub fn start_watching(dir: &Path, watch: Option<u32>) -> std::io::Result<Self> {
        let mut server = Self {
            dir: dir.to_owned(),
            ports: (free_port()?, free_port()?),
            watch,
            url: String::new(),
            pid: None,
        };
        server.launch()?;
        Ok(server)
    }

    /// The HTTP interface, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Starts the server again on the same directory and ports, after [`Self::stop`].
    pub fn launch(&mut self) -> std::io::Result<()> {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/clickhouse/local-server.sh");
        let mut command = Command::new("bash");
        command
            .arg(script)
            .arg(&self.dir)
            .arg(self.ports.0.to_string())
            .arg(self.ports.1.to_string())
            .env(
                "PATH",
                format!(
                    "{}:/usr/sbin:/usr/bin:/sbin:/bin",
                    std::env::var("PATH").unwrap_or_default()
                ),
            );
        if let Some(pid) = self.watch {
            command.env("WATCH_PID", pid.to_string());
        }
        let output = command.output()?;
        self.pid = std::fs::read_to_string(self.dir.join("pid"))
            .ok()
            .and_then(|pid| pid.trim().parse().ok());
        if !output.status.success() {
            return Err(std::io::Error::other(format!(
                "clickhouse-server did not start (install Debian's clickhouse-server; .ci/run does): {}",
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        self.url = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        Ok(())
    }

    /// Stops the server and waits (up to 30 s) until it has exited.
    pub fn stop(&mut self) {
        let Some(pid) = self.pid.take() else {
            return;
        };
        let _ = Command::new("kill").arg(pid.to_string()).status();
        for _ in 0..600 {
            let alive = Command::new("kill")
                .args(["-0", &pid.to_string()])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success());
            if !alive {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        tracing::warn!(pid, "clickhouse-server did not exit within 30 s");
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A port nothing listens on now.
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
