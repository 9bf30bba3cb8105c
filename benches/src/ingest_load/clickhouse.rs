//! The peer: ClickHouse over HTTP, `INSERT INTO … FORMAT JSONEachRow` of
//! the same rows into the table of `deploy/clickhouse/schema.sql` (a fresh
//! database per point), on a throwaway server started with
//! `deploy/clickhouse/local-server.sh` (whose pid is known, so its CPU and
//! memory are read as the Trackhouse server's are) or on `--clickhouse-url`.
//!
//! ClickHouse answers an INSERT once the part is written, without fsync,
//! and stores copies as they come: the table is a `ReplacingMergeTree`
//! that folds rows of the same key only when parts happen to merge.

use std::path::Path;

use anyhow::Context;

use super::driver::{Answer, Target};
use crate::backends::clickhouse::ClickHouseHttp;

/// The ClickHouse server the rows go to.
#[derive(Debug)]
pub struct ClickHouseSide {
    /// Its HTTP interface.
    pub http: ClickHouseHttp,
    /// `clickhouse-server`'s pid when this program started it.
    pub pid: Option<u32>,
    local: Option<(ingest::clickhouse::LocalServer, tempfile::TempDir)>,
}

/// Rows of a point's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counted {
    /// `count()`: rows stored, copies included until merges fold them.
    pub rows: u64,
    /// `count()` with `FINAL`: rows once copies are folded.
    pub rows_final: u64,
    /// Distinct (tracker id, message time).
    pub distinct_keys: u64,
}

impl ClickHouseSide {
    /// Connects to `url`, or starts a throwaway server under `root`.
    pub async fn start(url: Option<&str>, root: &Path) -> anyhow::Result<Self> {
        if let Some(url) = url {
            return Ok(Self {
                http: ClickHouseHttp::connect(url).await?,
                pid: None,
                local: None,
            });
        }
        let dir = tempfile::Builder::new()
            .prefix("ingest-load-clickhouse-")
            .tempdir_in(root)?;
        let server =
            ingest::clickhouse::LocalServer::start_watching(dir.path(), Some(std::process::id()))?;
        let http = ClickHouseHttp::connect(server.url()).await?;
        let pid = local_pid(dir.path());
        Ok(Self {
            http,
            pid,
            local: Some((server, dir)),
        })
    }

    /// Drops the previous point's database, creates `database` with the
    /// tables of `schema.sql`, and waits for merges to settle.
    pub async fn fresh_database(
        &self,
        previous: Option<&str>,
        database: &str,
    ) -> anyhow::Result<()> {
        if let Some(previous) = previous {
            self.http.drop_database(previous).await?;
        }
        self.http.drop_database(database).await?;
        self.http.create_reference(database).await?;
        self.http.settle().await
    }

    /// Where the driver posts: `INSERT INTO database.telemetry FORMAT JSONEachRow`.
    pub fn target(
        &self,
        database: &str,
        content_encoding: Option<&'static str>,
    ) -> anyhow::Result<Target> {
        let insert = format!("INSERT INTO {database}.telemetry FORMAT JSONEachRow");
        let url =
            reqwest::Url::parse_with_params(&format!("{}/", self.http.url), [("query", insert)])
                .context("the INSERT's URL")?;
        Ok(Target {
            url: url.to_string(),
            bearer: None,
            content_type: "application/x-ndjson",
            content_encoding,
            answer: Answer::ClickHouse,
        })
    }

    /// Counts the point's rows.
    pub async fn count(&self, database: &str) -> anyhow::Result<Counted> {
        let table = format!("{database}.telemetry");
        Ok(Counted {
            rows: self
                .http
                .number(&format!("SELECT count() FROM {table}"))
                .await?,
            rows_final: self
                .http
                .number(&format!("SELECT count() FROM {table} FINAL"))
                .await?,
            distinct_keys: self
                .http
                .number(&format!(
                    "SELECT uniqExact(tracker_id, msg_time) FROM {table}"
                ))
                .await?,
        })
    }

    /// Drops `database` and stops the server if this program started it.
    pub async fn finish(self, database: Option<&str>) -> anyhow::Result<()> {
        if let Some(database) = database {
            self.http.drop_database(database).await?;
        }
        if let Some((mut server, dir)) = self.local {
            server.stop();
            drop(dir);
        }
        Ok(())
    }
}

/// The pid `local-server.sh` wrote for the attempt that started (the last
/// `attempt-N` directory whose process is alive).
fn local_pid(dir: &Path) -> Option<u32> {
    let mut attempts: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("attempt-"))
        })
        .collect();
    attempts.sort();
    attempts.iter().rev().find_map(|attempt| {
        let pid: u32 = std::fs::read_to_string(attempt.join("pid"))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        Path::new(&format!("/proc/{pid}")).exists().then_some(pid)
    })
}
