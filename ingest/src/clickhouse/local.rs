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
    ///
    /// A port can be taken between its choice and the server's bind (by
    /// another test's server), so a start that fails is tried again on other
    /// ports, five times in all.
    pub fn start_watching(dir: &Path, watch: Option<u32>) -> std::io::Result<Self> {
        let mut errors = Vec::new();
        for attempt in 0..START_ATTEMPTS {
            let mut server = Self {
                dir: dir.join(format!("attempt-{attempt}")),
                ports: free_ports()?,
                watch,
                url: String::new(),
                pid: None,
            };
            match server.launch() {
                Ok(()) => return Ok(server),
                Err(error) => {
                    server.stop();
                    errors.push(format!(
                        "on ports {} and {}: {error}",
                        server.ports.0, server.ports.1
                    ));
                }
            }
        }
        Err(std::io::Error::other(errors.join("\n")))
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

/// How many port pairs [`LocalServer::start`] tries.
const START_ATTEMPTS: usize = 5;

/// Two distinct ports nothing listens on now, below Linux's ephemeral range
/// (32768-60999), so that no client connection's local port takes them
/// before the server binds, or between a [`LocalServer::stop`] and the next
/// [`LocalServer::launch`].
fn free_ports() -> std::io::Result<(u16, u16)> {
    use std::hash::{BuildHasher, RandomState};
    let random = RandomState::new();
    let mut held = Vec::with_capacity(2);
    for n in 0u32..1_000 {
        let port = 20_000 + (random.hash_one(n) % 12_000) as u16;
        if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            held.push(listener);
            if let [http, tcp] = &held[..] {
                return Ok((http.local_addr()?.port(), tcp.local_addr()?.port()));
            }
        }
    }
    Err(std::io::Error::other("no two free ports in 20000-31999"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_two_distinct_ports_outside_the_ephemeral_range() {
        for _ in 0..200 {
            let (http, tcp) = free_ports().unwrap();
            assert_ne!(http, tcp);
            assert!((20_000..32_000).contains(&http) && (20_000..32_000).contains(&tcp));
            std::net::TcpListener::bind(("127.0.0.1", http)).unwrap();
        }
    }
}
