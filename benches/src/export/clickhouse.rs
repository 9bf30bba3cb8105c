//! The same export by a ClickHouse server over its HTTP interface.
//!
//! ClickHouse reads its own MergeTree storage, not our Parquet files (the
//! oldest server we test, Debian's 18.16, has no Parquet input), so
//! [`ClickHouse::load`] first copies the tracker's rows into a table: one
//! column per column of the server's CSV header (times as `DateTime`, every
//! other column `Nullable`), ordered by (tracker, message time), partitioned
//! by month, filled from the server's own export (`iso_datetime: false`).
//! [`ClickHouse::export`] then times
//! `SELECT … WHERE tracker_id = … AND time in span ORDER BY msg_time FORMAT CSVWithNames`
//! streamed over HTTP exactly as the server's export is timed, times
//! formatted as the server writes them in UTC.

use anyhow::Context;
use schemas::columns::{FLAGS, MESSAGE_TIME, SERVER_TIME, SIMPLE_COLUMNS, SimpleType};

use super::{ExportRun, Fixture};
use crate::backends::clickhouse::{ClickHouseHttp, ident};

/// The benchmark's database and table.
const TABLE: &str = "trackhouse_bench.export";
/// Rows per `INSERT` while loading.
const INSERT_ROWS: usize = 200_000;

/// A ClickHouse server reached over HTTP, holding the export's table.
#[derive(Debug, Clone)]
pub struct ClickHouse {
    http: ClickHouseHttp,
    /// `SELECT version()`.
    pub version: String,
}

impl ClickHouse {
    /// Connects to `url` (`http://127.0.0.1:8123`); `Err` says why not.
    pub async fn connect(url: &str) -> Result<Self, String> {
        let http = ClickHouseHttp::connect(url)
            .await
            .map_err(|e| format!("{e:#}"))?;
        Ok(Self {
            version: http.version.clone(),
            http,
        })
    }

    /// Runs one statement with `body` as its input data (none if empty);
    /// answers the output.
    async fn sql(&self, query: &str, body: Vec<u8>) -> anyhow::Result<String> {
        // A statement without data travels as the body (the server wants a
        // length on every POST); an INSERT's rows do, with the statement in the URL.
        if body.is_empty() {
            self.http.sql(query).await
        } else {
            self.http.insert(query, body).await
        }
    }

    /// (Re)creates the table for the export columns `names` (the server's
    /// header) and copies the fixture's rows into it; answers the rows loaded.
    pub async fn load(&self, fixture: &Fixture, names: &[String]) -> anyhow::Result<u64> {
        self.sql("CREATE DATABASE IF NOT EXISTS trackhouse_bench", Vec::new())
            .await?;
        self.sql(&format!("DROP TABLE IF EXISTS {TABLE}"), Vec::new())
            .await?;
        let mut columns = vec![format!("tracker_id Int64 DEFAULT {}", fixture.tracker.0)];
        columns.extend(
            names
                .iter()
                .map(|name| format!("{} {}", stored_ident(name), column_type(name))),
        );
        self.sql(
            &format!(
                "CREATE TABLE {TABLE} ({}) ENGINE = MergeTree PARTITION BY toYYYYMM(t_msg) \
                 ORDER BY (tracker_id, t_msg)",
                columns.join(", ")
            ),
            Vec::new(),
        )
        .await?;
        let insert = format!(
            "INSERT INTO {TABLE} ({}) FORMAT CSV",
            names
                .iter()
                .map(|n| stored_ident(n))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut response = fixture
            .export_response(names, serde_json::json!({ "iso_datetime": false }))
            .await?;
        let (mut pending, mut rows_pending, mut loaded) = (Vec::new(), 0usize, 0u64);
        let mut header_seen = false;
        while let Some(chunk) = response.chunk().await.context("reading the export")? {
            let mut chunk = &chunk[..];
            if !header_seen {
                match chunk.iter().position(|&b| b == b'\n') {
                    Some(end) => {
                        header_seen = true;
                        chunk = &chunk[end + 1..];
                    }
                    None => continue,
                }
            }
            rows_pending += chunk.iter().filter(|&&b| b == b'\n').count();
            pending.extend_from_slice(chunk);
            if rows_pending >= INSERT_ROWS {
                // Cut at the last complete line.
                let cut = pending
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                let rest = pending.split_off(cut);
                loaded += pending.iter().filter(|&&b| b == b'\n').count() as u64;
                self.sql(&insert, std::mem::replace(&mut pending, rest))
                    .await?;
                rows_pending = pending.iter().filter(|&&b| b == b'\n').count();
            }
        }
        if !pending.is_empty() {
            loaded += pending.iter().filter(|&&b| b == b'\n').count() as u64;
            self.sql(&insert, pending).await?;
        }
        self.sql(&format!("OPTIMIZE TABLE {TABLE} FINAL"), Vec::new())
            .await?;
        Ok(loaded)
    }

    /// The export of `names` over `span_ms`, streamed and timed as the server's is.
    pub async fn export(
        &self,
        names: &[String],
        tracker: i64,
        span_ms: (i64, i64),
    ) -> anyhow::Result<(ExportRun, String)> {
        let select: Vec<String> = names.iter().map(|n| select_item(n)).collect();
        let query = format!(
            "SELECT {} FROM {TABLE} WHERE tracker_id = {tracker} AND t_msg >= toDateTime({}) \
             AND t_msg < toDateTime({}) ORDER BY t_msg FORMAT CSVWithNames",
            select.join(", "),
            span_ms.0.div_euclid(1000),
            span_ms.1.div_euclid(1000),
        );
        self.http.timed_select(query).await
    }
}

/// The table's column for an export column: the times are stored under
/// other names so that the formatted output can take theirs.
fn stored_ident(name: &str) -> String {
    match name {
        MESSAGE_TIME => "t_msg".to_owned(),
        SERVER_TIME => "t_server".to_owned(),
        _ => ident(name),
    }
}

/// The select item writing `name` as the server does.
fn select_item(name: &str) -> String {
    match name {
        MESSAGE_TIME | SERVER_TIME => format!(
            "formatDateTime({}, '%Y-%m-%dT%H:%M:%SZ', 'UTC') AS {}",
            stored_ident(name),
            ident(name)
        ),
        _ => ident(name),
    }
}

/// The ClickHouse type of an export column.
fn column_type(name: &str) -> &'static str {
    if name == MESSAGE_TIME || name == SERVER_TIME {
        return "DateTime";
    }
    if name == FLAGS {
        return "Nullable(Int64)";
    }
    if let Some((_, ty)) = SIMPLE_COLUMNS.iter().find(|(n, _)| *n == name) {
        return match ty {
            // Enum numbers are written as their names.
            SimpleType::UInt8 | SimpleType::Utf8 => "Nullable(String)",
            SimpleType::Int32 => "Nullable(Int32)",
            SimpleType::Int64 => "Nullable(Int64)",
            SimpleType::Float64 => "Nullable(Float64)",
        };
    }
    match name.split_once('.') {
        Some(("inputs", _)) => "Nullable(Float64)",
        Some(("discrete_inputs" | "discrete_outputs", _)) => "Nullable(UInt8)",
        _ => "Nullable(String)",
    }
}
