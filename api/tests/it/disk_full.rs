//! A full disk under the write-ahead log, for real: the data directory is a
//! small tmpfs mounted for the test and filled to the brim. Intake refuses
//! with 503 code 8 and `Retry-After`, `/healthz` says the storage is
//! degraded, nothing acknowledged is lost (on reads, and on replay of the
//! log as it was left), and both recover by themselves once space is freed.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::raw_data::csv;
use crate::server::generous_limits;
use crate::{Account, TestServer};

/// A tmpfs of its own, unmounted (lazily) when dropped. Mounting needs
/// root or passwordless sudo, which `test.sh` has (it installs packages
/// the same way).
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(bytes: u64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let args = [
            "mount",
            "-t",
            "tmpfs",
            "-o",
            &format!("size={bytes}"),
            "tmpfs",
            dir.path().to_str().unwrap(),
        ];
        let mounted = Command::new(args[0])
            .args(&args[1..])
            .status()
            .is_ok_and(|s| s.success())
            || Command::new("sudo")
                .arg("-n")
                .args(args)
                .status()
                .is_ok_and(|s| s.success());
        assert!(
            mounted,
            "mounting a tmpfs needs root or passwordless sudo (test.sh runs with either)"
        );
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let path = self.dir.path().to_str().unwrap().to_owned();
        let unmounted = Command::new("umount")
            .args(["-l", &path])
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            let _ = Command::new("sudo")
                .args(["-n", "umount", "-l", &path])
                .status();
        }
    }
}

/// Fills the file system holding `path` to the brim; the filler's path.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).unwrap();
    let block = vec![0xA5u8; 64 * 1024];
    loop {
        if let Err(e) = file.write_all(&block).and_then(|()| file.sync_all()) {
            assert_eq!(e.raw_os_error(), Some(28), "ENOSPC, got {e}");
            break;
        }
    }
    // What is left is less than a block: fill it byte by byte.
    while file.write_all(&[0xA5]).is_ok() {}
    path
}

/// Messages `range` of the test: one a second from 2024-06-01T00:00Z,
/// `inputs.seq` naming each.
fn lines(acc: &Account, range: std::ops::Range<i64>) -> Vec<Value> {
    let t = acc.trackers[0].0;
    range
        .map(|i| {
            let time = chrono::DateTime::from_timestamp(1_717_200_000 + i, 0).unwrap();
            json!({"tracker_id": t, "msg_time": time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                   "lat": 43.25, "speed": i % 90, "inputs": {"seq": i, "fuel": 400.5}})
        })
        .collect()
}

/// The `inputs.seq` of every row raw data export answers.
async fn stored(srv: &TestServer, acc: &Account) -> BTreeSet<i64> {
    let params = json!({"hash": acc.key, "tracker_id": acc.trackers[0].0,
        "from": "2024-06-01T00:00:00Z", "to": "2024-06-02T00:00:00Z", "columns": ["inputs.seq"]});
    let (status, body) = csv(srv, params).await;
    assert_eq!(status, 200, "{body}");
    body.lines()
        .skip(1)
        .map(|row| row.rsplit(',').next().unwrap().parse().unwrap())
        .collect()
}

/// Sends test messages through the intake.
struct Sender<'a> {
    srv: &'a TestServer,
    acc: &'a Account,
    token: &'a str,
}

impl Sender<'_> {
    /// Sends messages `range`; adds them to `acknowledged` when answered 200.
    async fn lines(
        &self,
        acknowledged: &mut BTreeSet<i64>,
        range: std::ops::Range<i64>,
    ) -> crate::Answer {
        let answer = self
            .srv
            .intake(self.token, &lines(self.acc, range.clone()))
            .await;
        if answer.status == 200 {
            assert_eq!(
                answer.body["accepted"],
                range.end - range.start,
                "{answer:?}"
            );
            acknowledged.extend(range);
        }
        answer
    }
}

async fn metric(srv: &TestServer, name: &str) -> String {
    let text = srv.metrics_text().await;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ').map(str::to_owned))
        .unwrap_or_else(|| panic!("{name} in\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_intake_cleanly_and_intake_resumes_when_space_is_freed() {
    let disk = Tmpfs::mount(4 << 20);
    let data = disk.path().join("data");
    let srv = TestServer::start_full(
        api::ApiConfig {
            rate_limits: generous_limits(),
            ..api::ApiConfig::default()
        },
        |c| ingest::IngestConfig {
            data_dir: data.clone(),
            // Nothing leaves the WAL unless the test flushes.
            flush_interval: std::time::Duration::from_secs(3600),
            ..c
        },
    )
    .await;
    let acc = srv.account("full@example.com").await;
    let token = srv.ingest_token(false).await;
    let mut acknowledged = BTreeSet::new();
    let send = Sender {
        srv: &srv,
        acc: &acc,
        token: &token,
    };
    send.lines(&mut acknowledged, 0..1_000).await.ok();
    assert_eq!(srv.get("/healthz", &[]).await.ok()["success"], true);

    let filler = fill(disk.path());
    // The WAL's last page may still take a little: send until refused.
    let mut next = 1_000;
    let refusal = loop {
        let answer = send.lines(&mut acknowledged, next..next + 200).await;
        next += 200;
        if answer.status != 200 {
            break answer;
        }
        assert!(next < 20_000, "a full disk never refused a write");
    };
    let description = refusal.error(8, 503);
    assert!(
        description.contains("No space left on device"),
        "{description}"
    );
    assert!(
        !description.contains(disk.path().to_str().unwrap()),
        "no path is shown to callers: {description}"
    );
    assert_eq!(refusal.headers["retry-after"], "1");
    // Still full: still refused, and the service says it is degraded.
    send.lines(&mut acknowledged, next..next + 10)
        .await
        .error(8, 503);
    next += 10;
    let health = srv.get("/healthz", &[]).await;
    assert!(
        health.error(8, 503).contains("write-ahead log"),
        "{health:?}"
    );
    assert_eq!(health.headers["retry-after"], "1");
    assert_eq!(metric(&srv, "trackhouse_wal_unavailable").await, "1");
    assert_eq!(
        stored(&srv, &acc).await,
        acknowledged,
        "every acknowledged message is readable, none of the refused ones"
    );

    // Space is back: the log heals by itself, without a write to try it.
    std::fs::remove_file(filler).unwrap();
    let mut healthy = false;
    for _ in 0..100 {
        if srv.get("/healthz", &[]).await.status == 200 {
            healthy = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(healthy, "/healthz recovers once space is freed");
    assert_eq!(metric(&srv, "trackhouse_wal_unavailable").await, "0");
    assert_eq!(metric(&srv, "trackhouse_wal_failures_total").await, "1");
    send.lines(&mut acknowledged, next..next + 500).await.ok();
    next += 500;
    // A refused message sent again is stored like any other.
    let retried = next - 700..next - 500;
    send.lines(&mut acknowledged, retried).await.ok();

    // Replayed from the log as it is now (a copy, as if the server had
    // crashed): exactly the acknowledged messages, the cut segment included.
    let copy = tempfile::tempdir().unwrap();
    std::fs::create_dir(copy.path().join("wal")).unwrap();
    for entry in std::fs::read_dir(data.join("wal")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(
            &path,
            copy.path().join("wal").join(path.file_name().unwrap()),
        )
        .unwrap();
    }
    let mut registry = prometheus_client::registry::Registry::default();
    let replayed =
        ingest::Ingest::open(ingest::IngestConfig::new(copy.path()), &mut registry).unwrap();
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains(&format!(
            "trackhouse_ingest_unflushed_rows {}\n",
            acknowledged.len()
        )),
        "{} acknowledged; replayed:\n{text}",
        acknowledged.len()
    );
    drop(replayed);

    let ingest = srv.ingest.clone();
    tokio::task::spawn_blocking(move || ingest.flush())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored(&srv, &acc).await, acknowledged, "and after a flush");
}
