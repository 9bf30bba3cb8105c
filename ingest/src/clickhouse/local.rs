//! Throwaway ClickHouse servers on 127.0.0.1, started by
//! `deploy/clickhouse/local-server.sh` (Debian's `clickhouse-server`; no
//! system service, all state under one directory): what the tests of every
//! crate and the benchmarks run against. [`LocalCluster`] adds a ZooKeeper
//! (`deploy/clickhouse/local-zookeeper.sh`, Debian's `zookeeper`) and runs
//! several servers as the shards and replicas of one cluster.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How many times a start is tried, each time on other ports.
const START_ATTEMPTS: usize = 5;

/// A server started on free ports; stopped when dropped.
#[derive(Debug)]
pub struct LocalServer {
    dir: PathBuf,
    ports: Ports,
    /// XML added to the server's configuration (a cluster member's).
    extra_config: String,
    /// Whether every query is logged in `system.query_log`.
    log_queries: bool,
    watch: Option<u32>,
    url: String,
    pid: Option<u32>,
}

/// The ports one server listens on.
#[derive(Debug, Clone, Copy)]
struct Ports {
    http: u16,
    tcp: u16,
    /// Replication's, on a cluster.
    interserver: Option<u16>,
}

impl LocalServer {
    /// Whether `clickhouse-server` is on the path the start script runs
    /// with, so a program can say so before it spends time on anything else.
    pub fn installed() -> bool {
        script_path()
            .split(':')
            .any(|dir| Path::new(dir).join("clickhouse-server").is_file())
    }

    /// Starts a server with its state under `dir`, on free (HTTP, TCP) ports.
    pub fn start(dir: &Path) -> std::io::Result<Self> {
        Self::start_watching(dir, None)
    }

    /// [`Self::start`]; with `watch`, the server also stops once that
    /// process has exited (a server shared by a test process's tests, which
    /// is never dropped), and its state under `dir` is then deleted.
    ///
    /// A port can be taken between its choice and the server's bind (by
    /// another test's server), so a start that fails is tried again on other
    /// ports, five times in all.
    pub fn start_watching(dir: &Path, watch: Option<u32>) -> std::io::Result<Self> {
        Self::start_with(dir, watch, false)
    }

    /// [`Self::start`], logging every query in `system.query_log`.
    pub fn start_logging_queries(dir: &Path) -> std::io::Result<Self> {
        Self::start_with(dir, None, true)
    }

    fn start_with(dir: &Path, watch: Option<u32>, log_queries: bool) -> std::io::Result<Self> {
        let mut errors = Vec::new();
        for attempt in 0..START_ATTEMPTS {
            let [http, tcp] = free_ports(2)?[..] else {
                unreachable!("two ports")
            };
            let mut server = Self::new(
                dir.join(format!("attempt-{attempt}")),
                Ports {
                    http,
                    tcp,
                    interserver: None,
                },
                String::new(),
                watch,
            );
            server.log_queries = log_queries;
            match server.launch() {
                Ok(()) => return Ok(server),
                Err(error) => {
                    server.stop();
                    errors.push(format!("on ports {http} and {tcp}: {error}"));
                }
            }
        }
        Err(std::io::Error::other(errors.join("\n")))
    }

    fn new(dir: PathBuf, ports: Ports, extra_config: String, watch: Option<u32>) -> Self {
        Self {
            dir,
            ports,
            extra_config,
            log_queries: false,
            watch,
            url: String::new(),
            pid: None,
        }
    }

    /// The HTTP interface, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Starts the server again on the same directory and ports, after [`Self::stop`].
    pub fn launch(&mut self) -> std::io::Result<()> {
        let mut command = script("local-server.sh");
        command
            .arg(&self.dir)
            .arg(self.ports.http.to_string())
            .arg(self.ports.tcp.to_string());
        if let Some(pid) = self.watch {
            // The directory goes with the watched process (a test process's
            // shared server; its temporary directory is never dropped).
            command
                .env("WATCH_PID", pid.to_string())
                .env("WATCH_REMOVE", "1");
        }
        if self.log_queries {
            command.env("LOG_QUERIES", "1");
        }
        if !self.extra_config.is_empty() {
            command
                .env("EXTRA_CONFIG", &self.extra_config)
                .env("WAIT_FOR_ZOOKEEPER", "1");
        }
        let output = command.output()?;
        self.pid = read_pid(&self.dir);
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
        if let Some(pid) = self.pid.take() {
            stop(pid, "clickhouse-server");
        }
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A ClickHouse cluster on this machine: a standalone ZooKeeper and
/// `shards × replicas` servers, each shard's replicas replicating through
/// ZooKeeper (`internal_replication`, as `deploy/README.md` asks), all of
/// them executing `ON CLUSTER` statements. Everything stops when dropped.
#[derive(Debug)]
pub struct LocalCluster {
    /// Shard by shard, replica by replica.
    servers: Vec<LocalServer>,
    zookeeper: Option<u32>,
}

impl LocalCluster {
    /// The cluster's name in the servers' `<remote_servers>`.
    pub const NAME: &'static str = "local_cluster";

    /// Starts ZooKeeper and the servers, with their state under `dir`; with
    /// `watch`, everything also stops once that process has exited. Tried on
    /// other ports, five times in all, if a start fails.
    pub fn start(
        dir: &Path,
        shards: usize,
        replicas: usize,
        watch: Option<u32>,
    ) -> std::io::Result<Self> {
        let mut errors = Vec::new();
        for attempt in 0..START_ATTEMPTS {
            match Self::start_once(
                &dir.join(format!("attempt-{attempt}")),
                shards,
                replicas,
                watch,
            ) {
                Ok(cluster) => return Ok(cluster),
                Err(error) => errors.push(error.to_string()),
            }
        }
        Err(std::io::Error::other(errors.join("\n")))
    }

    fn start_once(
        dir: &Path,
        shards: usize,
        replicas: usize,
        watch: Option<u32>,
    ) -> std::io::Result<Self> {
        // Every port at once, so that no two are the same.
        let mut free = free_ports(1 + 3 * shards * replicas)?.into_iter();
        let mut port = || free.next().unwrap_or_default();
        let zookeeper_port = port();
        let mut cluster = Self {
            servers: Vec::new(),
            zookeeper: None,
        };
        let mut command = script("local-zookeeper.sh");
        command
            .arg(dir.join("zookeeper"))
            .arg(zookeeper_port.to_string());
        if let Some(pid) = watch {
            command
                .env("WATCH_PID", pid.to_string())
                .env("WATCH_REMOVE", "1");
        }
        let output = command.output()?;
        cluster.zookeeper = read_pid(&dir.join("zookeeper"));
        if !output.status.success() {
            return Err(std::io::Error::other(format!(
                "zookeeper did not start (install Debian's zookeeper; .ci/run does): {}",
                String::from_utf8_lossy(&output.stderr)
            )));
        }

        let ports: Vec<Ports> = (0..shards * replicas)
            .map(|_| Ports {
                http: port(),
                tcp: port(),
                interserver: Some(port()),
            })
            .collect();
        let remote_servers: String = ports
            .chunks(replicas)
            .map(|shard| {
                let replicas: String = shard
                    .iter()
                    .map(|p| {
                        format!(
                            "<replica><host>127.0.0.1</host><port>{}</port></replica>",
                            p.tcp
                        )
                    })
                    .collect();
                format!(
                    "<shard><internal_replication>true</internal_replication>{replicas}</shard>"
                )
            })
            .collect();
        for (i, port) in ports.iter().enumerate() {
            let (shard, replica) = (i / replicas + 1, i % replicas + 1);
            let extra_config = format!(
                "<zookeeper><node><host>127.0.0.1</host><port>{zookeeper_port}</port></node></zookeeper>\
                 <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>\
                 <interserver_http_host>127.0.0.1</interserver_http_host>\
                 <interserver_http_port>{}</interserver_http_port>\
                 <macros><shard>{shard:02}</shard><replica>r{replica}</replica></macros>\
                 <remote_servers><{name}>{remote_servers}</{name}></remote_servers>",
                port.interserver.unwrap_or_default(),
                name = Self::NAME,
            );
            let mut server = LocalServer::new(
                dir.join(format!("shard{shard}-replica{replica}")),
                *port,
                extra_config,
                watch,
            );
            let launched = server.launch();
            cluster.servers.push(server);
            launched?;
        }
        Ok(cluster)
    }

    /// The HTTP interface of the first shard's first replica.
    pub fn url(&self) -> &str {
        self.servers[0].url()
    }

    /// The HTTP interface of every server, shard by shard, replica by replica.
    pub fn urls(&self) -> Vec<&str> {
        self.servers.iter().map(LocalServer::url).collect()
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for server in &mut self.servers {
            server.stop();
        }
        if let Some(pid) = self.zookeeper.take() {
            stop(pid, "zookeeper");
        }
    }
}

/// `bash deploy/clickhouse/<name>`, with the sbin directories on the path
/// (where Debian puts `clickhouse-server`).
fn script(name: &str) -> Command {
    let mut command = Command::new("bash");
    command
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../deploy/clickhouse")
                .join(name),
        )
        .env("PATH", script_path());
    command
}

/// The caller's path with the sbin directories after it.
fn script_path() -> String {
    format!(
        "{}:/usr/sbin:/usr/bin:/sbin:/bin",
        std::env::var("PATH").unwrap_or_default()
    )
}

fn read_pid(dir: &Path) -> Option<u32> {
    std::fs::read_to_string(dir.join("pid"))
        .ok()
        .and_then(|pid| pid.trim().parse().ok())
}

/// Sends `pid` SIGTERM and waits (up to 30 s) until it has exited.
fn stop(pid: u32, what: &str) {
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
    tracing::warn!(pid, what, "did not exit within 30 s");
}

/// `n` distinct ports nothing listens on now, below Linux's ephemeral range
/// (32768-60999), so that no client connection's local port takes them
/// before the server binds, or between a [`LocalServer::stop`] and the next
/// [`LocalServer::launch`].
fn free_ports(n: usize) -> std::io::Result<Vec<u16>> {
    use std::hash::{BuildHasher, RandomState};
    let random = RandomState::new();
    let mut held = Vec::with_capacity(n);
    for i in 0u32..10_000 {
        let port = 20_000 + (random.hash_one(i) % 12_000) as u16;
        if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            held.push(listener);
            if held.len() == n {
                return held
                    .iter()
                    .map(|listener| Ok(listener.local_addr()?.port()))
                    .collect();
            }
        }
    }
    Err(std::io::Error::other(
        "not enough free ports in 20000-31999",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct_and_outside_the_ephemeral_range() {
        for _ in 0..200 {
            let ports = free_ports(3).unwrap();
            assert!(ports[0] != ports[1] && ports[1] != ports[2] && ports[0] != ports[2]);
            for port in ports {
                assert!((20_000..32_000).contains(&port), "{port}");
                std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
            }
        }
    }
}
