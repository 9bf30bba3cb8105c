//! The ClickHouse side: a server over HTTP (a throwaway local one when none
//! is given), the reference table (the DDL of `deploy/clickhouse/schema.sql`
//! in a database of its own) and its `CSVWithNames` export.

use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use schemas::columns::{FLAGS, MESSAGE_TIME, SERVER_TIME, SIMPLE_COLUMNS};
use schemas::{GpsFixType, MnType};

use crate::export::{ExportRun, timed_body};

/// A ClickHouse server reached over HTTP.
#[derive(Debug, Clone)]
pub struct ClickHouseHttp {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    client: reqwest::Client,
    /// `SELECT version()`.
    pub version: String,
}

impl ClickHouseHttp {
    /// Connects to `url`.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        let mut connected = Self {
            url: url.trim_end_matches('/').to_owned(),
            client: reqwest::Client::new(),
            version: String::new(),
        };
        let version = connected
            .sql("SELECT version()")
            .await
            .with_context(|| format!("no ClickHouse server answers at {url}"))?;
        connected.version = version.trim().to_owned();
        Ok(connected)
    }

    /// Runs one statement; answers its output.
    pub async fn sql(&self, query: &str) -> anyhow::Result<String> {
        let response = self
            .client
            .post(&self.url)
            .body(query.to_owned())
            .timeout(Duration::from_secs(600))
            .send()
            .await?;
        let status = response.status();
        let text = response.text().await?;
        if !status.is_success() {
            bail!(
                "ClickHouse answered {status} to `{query:.200}`: {}",
                text.trim()
            );
        }
        Ok(text)
    }

    /// Runs an INSERT whose rows are `body` (the statement travels in the
    /// URL); answers its output.
    pub async fn insert(&self, query: &str, body: Vec<u8>) -> anyhow::Result<String> {
        let response = self
            .client
            .post(&self.url)
            .query(&[("query", query)])
            .body(body)
            .timeout(Duration::from_secs(600))
            .send()
            .await?;
        let status = response.status();
        let text = response.text().await?;
        if !status.is_success() {
            bail!("ClickHouse answered {status}: {}", text.trim());
        }
        Ok(text)
    }

    /// Sends a SELECT, answering as soon as the response starts (an export
    /// may stream for long).
    async fn select(&self, query: String) -> anyhow::Result<reqwest::Response> {
        Ok(self
            .client
            .post(&self.url)
            .body(query)
            .timeout(Duration::from_secs(3600))
            .send()
            .await?)
    }

    /// A SELECT's answer streamed and timed as Trackhouse's exports are.
    pub async fn timed_select(&self, query: String) -> anyhow::Result<(ExportRun, String)> {
        let started = Instant::now();
        let response = self.select(query).await?;
        timed_body(response, started).await
    }

    /// A number a query answers.
    pub async fn number(&self, query: &str) -> anyhow::Result<u64> {
        let text = self.sql(query).await?;
        text.trim()
            .parse()
            .with_context(|| format!("`{query}` answered {text:?}"))
    }

    /// Waits until no merge has run for a moment (at most ten minutes), so
    /// that one measurement does not pay for the previous one's merges.
    pub async fn settle(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(600);
        let mut quiet = 0;
        while quiet < 3 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if self.number("SELECT count() FROM system.merges").await? == 0 {
                quiet += 1;
            } else {
                quiet = 0;
            }
        }
        Ok(())
    }

    /// Active parts of `database.telemetry`.
    pub async fn parts(&self, database: &str) -> anyhow::Result<u64> {
        self.number(&format!(
            "SELECT count() FROM system.parts WHERE database = '{database}' \
             AND table = 'telemetry' AND active"
        ))
        .await
    }

    /// Rows of `database.telemetry`.
    pub async fn rows(&self, database: &str) -> anyhow::Result<u64> {
        self.number(&format!("SELECT count() FROM {database}.telemetry"))
            .await
    }

    /// Compressed bytes of `database.telemetry`'s active parts.
    pub async fn bytes(&self, database: &str) -> anyhow::Result<u64> {
        self.number(&format!(
            "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = '{database}' \
             AND table = 'telemetry' AND active"
        ))
        .await
    }

    /// The server's query counters so far (`system.events`).
    pub async fn events(&self) -> anyhow::Result<Events> {
        let text = self
            .sql(
                "SELECT event, value FROM system.events WHERE event IN \
                 ('Query', 'InsertQuery', 'SelectQuery', 'InsertedRows') FORMAT TSV",
            )
            .await?;
        let mut events = Events::default();
        for line in text.lines() {
            let Some((event, value)) = line.split_once('\t') else {
                continue;
            };
            let value: u64 = value.trim().parse().unwrap_or(0);
            match event {
                "Query" => events.queries = value,
                "InsertQuery" => events.inserts = value,
                "SelectQuery" => events.selects = value,
                "InsertedRows" => events.inserted_rows = value,
                _ => {}
            }
        }
        Ok(events)
    }

    /// Creates `database` with the tables of `schema.sql`.
    pub async fn create_reference(&self, database: &str) -> anyhow::Result<()> {
        for statement in reference_ddl(database) {
            self.sql(&statement).await?;
        }
        Ok(())
    }

    /// Drops `database` if it exists.
    pub async fn drop_database(&self, database: &str) -> anyhow::Result<()> {
        self.sql(&format!("DROP DATABASE IF EXISTS {database}"))
            .await
            .map(drop)
    }

    /// Exports the reference table's rows of `tracker` in `span_ms` as
    /// `CSVWithNames` with the columns `names` (a Trackhouse export's
    /// header), streamed and timed as Trackhouse's export is.
    pub async fn export(
        &self,
        database: &str,
        names: &[String],
        tracker: i64,
        span_ms: (i64, i64),
    ) -> anyhow::Result<(ExportRun, String)> {
        self.timed_select(reference_select(database, names, tracker, span_ms)?)
            .await
    }

    /// The same export read whole, to compare.
    pub async fn export_body(
        &self,
        database: &str,
        names: &[String],
        tracker: i64,
        span_ms: (i64, i64),
    ) -> anyhow::Result<Vec<u8>> {
        let response = self
            .select(reference_select(database, names, tracker, span_ms)?)
            .await?;
        let status = response.status();
        let body = response.bytes().await?;
        ensure!(
            status.is_success(),
            "ClickHouse answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
        Ok(body.to_vec())
    }
}

/// Query counters of a ClickHouse server (`system.events`); a difference
/// of two readings is what happened between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Events {
    /// Queries of any kind.
    pub queries: u64,
    /// `INSERT` queries.
    pub inserts: u64,
    /// `SELECT` queries.
    pub selects: u64,
    /// Rows inserted (into every table).
    pub inserted_rows: u64,
}

impl Events {
    /// What happened since `before`, less the `SELECT` that read `self`.
    pub fn since(&self, before: &Self) -> Self {
        Self {
            queries: self.queries.saturating_sub(before.queries + 1),
            inserts: self.inserts.saturating_sub(before.inserts),
            selects: self.selects.saturating_sub(before.selects + 1),
            inserted_rows: self.inserted_rows.saturating_sub(before.inserted_rows),
        }
    }
}

/// The statements of `schema.sql` with `trackhouse` replaced by `database`,
/// as the engine applies them.
pub fn reference_ddl(database: &str) -> Vec<String> {
    ingest::clickhouse::schema_statements(database)
}

/// Backquoted name.
pub(crate) fn ident(name: &str) -> String {
    format!("`{}`", name.replace('\\', "\\\\").replace('`', "\\`"))
}

/// Single-quoted string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// An enum number as its spelling, as Trackhouse writes it.
fn spelled(column: &str, spellings: &[&str]) -> String {
    let list: Vec<String> = spellings.iter().map(|s| literal(s)).collect();
    format!(
        "if(isNull({column}), NULL, arrayElement([{}], toUInt32(assumeNotNull({column})) + 1))",
        list.join(", ")
    )
}

/// The `SELECT … FORMAT CSVWithNames` of the reference export: the columns
/// of a Trackhouse header, each written as Trackhouse writes it (times in
/// UTC to the second, enums spelled, an inner value picked out of its
/// `Nested` arrays as Trackhouse's own ClickHouse query does, text states
/// unwrapped from their JSON quotes), in message-time order. The times are
/// renamed in a subquery so that the filter and the order use the numbers.
pub fn reference_select(
    database: &str,
    names: &[String],
    tracker: i64,
    (from, to): (i64, i64),
) -> anyhow::Result<String> {
    let mut inner = vec![
        format!("{MESSAGE_TIME} AS t_msg"),
        format!("{SERVER_TIME} AS t_server"),
    ];
    let mut outer = Vec::new();
    for name in names {
        let quoted = ident(name);
        let time = |column: &str| {
            format!(
                "formatDateTime(toDateTime(intDiv({column}, 1000)), '%Y-%m-%dT%H:%M:%SZ', 'UTC') AS {quoted}"
            )
        };
        match name.as_str() {
            MESSAGE_TIME => outer.push(time("t_msg")),
            SERVER_TIME => outer.push(time("t_server")),
            _ => {
                let expression = match name.split_once('.') {
                    _ if name == FLAGS => name.clone(),
                    _ if name == "gps_fix_type" => spelled(
                        name,
                        &GpsFixType::ALL
                            .iter()
                            .map(|t| t.as_str())
                            .collect::<Vec<_>>(),
                    ),
                    _ if name == "mn_type" => spelled(
                        name,
                        &MnType::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
                    ),
                    _ if SIMPLE_COLUMNS.iter().any(|(n, _)| *n == name) => name.clone(),
                    Some((
                        prefix @ ("inputs" | "states" | "discrete_inputs" | "discrete_outputs"),
                        inner_name,
                    )) => {
                        let key = literal(inner_name);
                        let value = format!(
                            "if(has({prefix}.name, {key}), {prefix}.value[indexOf({prefix}.name, {key})], NULL)"
                        );
                        if prefix == "states" {
                            format!("replaceRegexpOne({value}, '^\"(.*)\"$', '\\\\1')")
                        } else {
                            value
                        }
                    }
                    _ => bail!("the reference export does not know the column `{name}`"),
                };
                inner.push(format!("{expression} AS {quoted}"));
                outer.push(quoted);
            }
        }
    }
    Ok(format!(
        "SELECT {} FROM (SELECT {} FROM {database}.telemetry WHERE tracker_id = {tracker} \
         AND msg_time >= {from} AND msg_time < {to}) ORDER BY t_msg FORMAT CSVWithNames",
        outer.join(", "),
        inner.join(", "),
    ))
}

/// A throwaway ClickHouse server (`ingest::clickhouse::LocalServer`) with
/// its state in a temporary directory; it stops when dropped or when this
/// process exits.
#[derive(Debug)]
pub struct LocalClickHouse {
    /// Its HTTP interface.
    pub url: String,
    server: ingest::clickhouse::LocalServer,
    _dir: tempfile::TempDir,
}

impl LocalClickHouse {
    /// Starts a server on free ports.
    pub fn start() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let server =
            ingest::clickhouse::LocalServer::start_watching(dir.path(), Some(std::process::id()))?;
        Ok(Self {
            url: server.url().to_owned(),
            server,
            _dir: dir,
        })
    }

    /// Stops the server and waits for it to exit.
    pub fn stop(mut self) {
        self.server.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_ddl_is_schema_sql_in_another_database() {
        let ddl = reference_ddl("ref_1");
        assert_eq!(ddl.len(), 3);
        assert_eq!(ddl[0], "CREATE DATABASE IF NOT EXISTS ref_1");
        assert!(ddl[1].starts_with("CREATE TABLE IF NOT EXISTS ref_1.telemetry"));
        assert!(ddl.iter().all(|s| !s.contains("trackhouse")));
    }
}
