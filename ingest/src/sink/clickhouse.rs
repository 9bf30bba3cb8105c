//! The distributed sink: rows go to ClickHouse (`deploy/clickhouse/schema.sql`)
//! through the official crate, in RowBinary INSERTs of at least 10,000 rows,
//! each retried with backoff until ClickHouse answers success. The WAL stays
//! in front (ClickHouse does not fsync an INSERT), and the last WAL segment
//! whose rows ClickHouse confirmed is recorded next to the WAL, so a restart
//! replays only what ClickHouse may not have. A replayed row ClickHouse did
//! have is folded by the table's dedup key, and readers deduplicate until
//! ClickHouse merges.

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow::array::{Array, RecordBatch};
use clickhouse::Row;
use prometheus_client::metrics::counter::Counter;
use schemas::columns::{self, InnerKind};
use schemas::{ClickHouseTable, FileEntry};
use serde::{Deserialize, Serialize};

use crate::batch::day_of;
use crate::clickhouse::{
    Backoff, RefusedRow, TelemetryRow, exception_code, insert, is_plain_identifier, rows_of,
    statements_for,
};
use crate::sink::{Rewrite, Sink};
use crate::{Error, Result};

/// Settings of the ClickHouse storage.
#[derive(Debug, Clone)]
pub struct ClickHouseConfig {
    /// Where the tables are.
    pub table: ClickHouseTable,
    /// Retries of one flush's INSERTs. A flush that gives up is retried
    /// whole at the next flush interval, the rows staying in the WAL and
    /// memory meanwhile (intake refuses writes beyond `max_unflushed_rows`).
    pub backoff: Backoff,
    /// Longest wait for a query the writer thread needs (stored keys for
    /// deduplication), so intake does not stall on an unresponsive server;
    /// also for the schema at the start.
    pub query_timeout: Duration,
    /// Longest wait in a flush or a retention pass: for each chunk of an
    /// INSERT to be sent and for its answer, and for each schema or
    /// mutation statement. A server that accepts connections but never
    /// answers then fails the attempt (retried with the backoff) instead
    /// of holding the flusher, and shutdown, forever.
    pub request_timeout: Duration,
    /// The flusher waits for this many rows before it flushes (at the flush
    /// interval), so an INSERT carries at least this many:
    /// [`crate::clickhouse::MIN_INSERT_ROWS`] unless set.
    pub min_insert_rows: usize,
    /// ... or until the oldest unflushed row has waited this long, so a
    /// quiet fleet's rows reach ClickHouse too.
    pub max_insert_delay: Duration,
}

impl ClickHouseConfig {
    /// Defaults for a database: INSERTs of at least 10,000 rows or after
    /// 30 s, retried from 100 ms up to 5 s apart for 30 s per flush, the
    /// writer's queries waited for 5 s, a flush's or retention's requests
    /// for 180 s (ClickHouse's own wait for an ON CLUSTER statement).
    pub fn new(table: ClickHouseTable) -> Self {
        Self {
            table,
            backoff: Backoff {
                first: Duration::from_millis(100),
                max: Duration::from_secs(5),
                give_up_after: Some(Duration::from_secs(30)),
            },
            query_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(180),
            min_insert_rows: crate::clickhouse::MIN_INSERT_ROWS,
            max_insert_delay: Duration::from_secs(30),
        }
    }
}

/// One row of `inner_columns`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Row, Serialize)]
struct InnerName {
    tracker_id: i64,
    day: i32,
    name: String,
}

/// A stored inner column name of a tracker and day.
#[derive(Debug, Row, Deserialize)]
struct StoredName {
    name: String,
}

/// A stored key, for deduplication.
#[derive(Debug, Row, Deserialize)]
struct Key {
    msg_time: i64,
    content_hash: u64,
}

/// ClickHouse tables and the record of what they confirmed.
pub(crate) struct ClickHouseSink {
    config: ClickHouseConfig,
    table: Arc<ClickHouseTable>,
    client: clickhouse::Client,
    /// Runs the client's futures for the engine's threads.
    runtime: Option<tokio::runtime::Runtime>,
    /// The file holding the last WAL segment ClickHouse confirmed.
    progress: PathBuf,
    /// Where rows ClickHouse refused are set aside, a file per flush.
    dead_letter: PathBuf,
    /// Rows set aside there, on `/metrics`.
    dead_letter_rows: Counter,
    flushed: AtomicU64,
    /// Whether the schema has been applied (at open, or at the first flush
    /// when ClickHouse was unreachable at open).
    migrated: AtomicBool,
    /// Inner column names known to be in `inner_columns`, so each is inserted once.
    names: Mutex<HashSet<InnerName>>,
    /// Until when stored keys are not asked for, after ClickHouse failed to
    /// give some: an unreachable server costs the writer one timeout, not
    /// one per new (tracker, day). Cleared by a flush ClickHouse confirmed.
    keys_unavailable_until: Mutex<Option<Instant>>,
}

/// How long the writer deduplicates against memory only after ClickHouse
/// failed to give stored keys, unless a flush succeeds first.
const KEYS_PAUSE: Duration = Duration::from_secs(30);

impl std::fmt::Debug for ClickHouseSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClickHouseSink")
            .field("table", &self.table)
            .field("progress", &self.progress)
            .field("flushed", &self.flushed)
            .finish_non_exhaustive()
    }
}

impl ClickHouseSink {
    /// Creates the database and tables if missing (the DDL is idempotent)
    /// and checks an existing table has every column; reads the confirmed
    /// WAL segment from `state_dir`. A ClickHouse that cannot be reached
    /// does not stop the start (intake acknowledges into the WAL meanwhile):
    /// the schema is then applied before the first flush. A schema that
    /// does not fit does.
    pub(crate) fn open(
        config: ClickHouseConfig,
        state_dir: PathBuf,
        dead_letter_rows: Counter,
    ) -> Result<Self> {
        let table = config.table.clone();
        let names = [
            ("database", Some(&table.database)),
            ("cluster", table.cluster.as_ref()),
        ];
        for (what, name) in names {
            if let Some(name) = name.filter(|name| !is_plain_identifier(name)) {
                return Err(Error::Config(format!(
                    "the ClickHouse {what} name `{name}` must be a letter or `_`, then letters, digits and `_`"
                )));
            }
        }
        let client = table.client();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ingest-clickhouse")
            .enable_all()
            .build()
            .map_err(Error::io("starting the ClickHouse runtime", &state_dir))?;
        std::fs::create_dir_all(&state_dir)
            .map_err(Error::io("creating the directory", &state_dir))?;
        let progress = state_dir.join("flushed_wal_segment");
        let flushed = match std::fs::read_to_string(&progress) {
            Ok(text) => text.trim().parse().map_err(|_| {
                Error::Config(format!("{} does not hold a number", progress.display()))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(Error::io("reading", &progress)(e)),
        };
        let sink = Self {
            table: Arc::new(table),
            client,
            runtime: Some(runtime),
            progress,
            dead_letter: state_dir.join("dead-letter"),
            dead_letter_rows,
            flushed: AtomicU64::new(flushed),
            migrated: AtomicBool::new(false),
            names: Mutex::new(HashSet::new()),
            keys_unavailable_until: Mutex::new(None),
            config,
        };
        // Bounded: a server that accepts connections but does not answer
        // must not hold the start.
        match sink.migrate(Some(sink.config.query_timeout)) {
            Ok(()) => {}
            Err(Error::ClickHouse {
                source:
                    error @ (clickhouse::error::Error::Network(_) | clickhouse::error::Error::TimedOut),
                ..
            }) => {
                tracing::warn!(%error, url = %sink.table.url, "ClickHouse is unreachable; intake goes on into the WAL, the schema is applied before the first flush");
            }
            Err(other) => return Err(other),
        }
        Ok(sink)
    }

    /// Applies `schema.sql`, or `cluster.sql` on a cluster (every statement
    /// is `IF NOT EXISTS`), and reads
    /// no row of each table with all the columns Trackhouse uses, which
    /// fails naming the column when an older table lacks one.
    /// With `timeout`, ClickHouse's silence for that long is
    /// [`clickhouse::error::Error::TimedOut`].
    fn migrate(&self, timeout: Option<Duration>) -> Result<()> {
        if self.migrated.load(Ordering::Acquire) {
            return Ok(());
        }
        // The database may not exist yet: name it in the statements only.
        let client = self.table.server_client();
        let statements = statements_for(&self.table);
        let telemetry = self.table.qualified(ClickHouseTable::TELEMETRY);
        let inner = self.table.qualified(ClickHouseTable::INNER_COLUMNS);
        let mut names: Vec<String> = columns::schema_with(&[])
            .fields()
            .iter()
            .filter(|f| InnerKind::split(f.name()).is_none())
            .map(|f| match f.name().as_str() {
                columns::CONTENT_HASH => "content_hash".to_owned(),
                name => name.to_owned(),
            })
            .collect();
        for kind in InnerKind::ALL {
            names.push(format!("{}.name", kind.prefix()));
            names.push(format!("{}.value", kind.prefix()));
        }
        let work = async move {
            for statement in statements {
                client
                    .query(&statement)
                    .execute()
                    .await
                    .map_err(Error::clickhouse("creating the schema"))?;
            }
            client
                .query(&format!(
                    "SELECT {} FROM {telemetry} LIMIT 0",
                    names.join(", ")
                ))
                .execute()
                .await
                .map_err(Error::clickhouse("checking the telemetry table's columns"))?;
            client
                .query(&format!(
                    "SELECT tracker_id, day, name FROM {inner} LIMIT 0"
                ))
                .execute()
                .await
                .map_err(Error::clickhouse(
                    "checking the inner_columns table's columns",
                ))
        };
        self.block_on(async move {
            match timeout {
                None => work.await,
                Some(timeout) => tokio::time::timeout(timeout, work)
                    .await
                    .unwrap_or_else(|_| {
                        Err(Error::ClickHouse {
                            what: "creating the schema",
                            source: clickhouse::error::Error::TimedOut,
                        })
                    }),
            }
        })?;
        self.migrated.store(true, Ordering::Release);
        Ok(())
    }

    /// Runs a future of the client to completion on the sink's runtime, from
    /// a plain thread or (at open) from inside another runtime.
    fn block_on<F: Future + Send>(&self, future: F) -> F::Output
    where
        F::Output: Send,
    {
        let Some(runtime) = self.runtime.as_ref() else {
            unreachable!("the runtime lives until the sink is dropped")
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return runtime.block_on(future);
        }
        std::thread::scope(|scope| {
            scope
                .spawn(|| runtime.block_on(future))
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// The inner column names of `batches` not yet known to be stored: per
    /// inner column, the distinct (tracker, day) of its values first (plain
    /// integers; a batch has few), then a name for each one not known.
    fn new_names(&self, batches: &[RecordBatch]) -> Result<Vec<InnerName>> {
        let known = self.names.lock().unwrap_or_else(|p| p.into_inner());
        let mut found = HashSet::new();
        let mut places: HashSet<(i64, i32)> = HashSet::new();
        for batch in batches {
            let keys = columns::key_columns(batch)
                .ok_or_else(|| Error::Layout("lacks its key columns".into()))?;
            for (field, array) in batch.schema_ref().fields().iter().zip(batch.columns()) {
                if InnerKind::split(field.name()).is_none() || array.null_count() == array.len() {
                    continue;
                }
                places.clear();
                let mut last = None;
                for row in (0..array.len()).filter(|&i| array.is_valid(i)) {
                    let place = (
                        keys.tracker.value(row),
                        day_of(keys.message_time.value(row)) as i32,
                    );
                    // Rows come in runs of one tracker and day.
                    if last != Some(place) {
                        places.insert(place);
                        last = Some(place);
                    }
                }
                for &(tracker_id, day) in &places {
                    let name = InnerName {
                        tracker_id,
                        day,
                        name: field.name().clone(),
                    };
                    if !known.contains(&name) {
                        found.insert(name);
                    }
                }
            }
        }
        Ok(found.into_iter().collect())
    }

    /// Writes the rows ClickHouse refused to a new file of the dead-letter
    /// directory, `<wal segment>-<unix ms>.ndjson`, synced: one JSON object
    /// per row, `{"error": {"code", "message"}, "line": <intake line>}`,
    /// the line being the row as `POST /ingest` takes it (its tracker,
    /// times, fields and inner maps), so that an operator who mended the
    /// cause can send them again (`jq -c .line FILE | trackhouse import`).
    /// Counted on `/metrics` and logged at error level with the file's path.
    fn set_aside(&self, refused: &[RefusedRow], wal_segment: u64) -> Result<()> {
        if refused.is_empty() {
            return Ok(());
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let path = self
            .dead_letter
            .join(format!("{wal_segment:020}-{now}.ndjson"));
        let mut text = Vec::new();
        let mut rows = 0;
        for refused in refused {
            for row in rows_of(&refused.row)? {
                let error = refused.error.to_string();
                let entry = serde_json::json!({
                    "error": {
                        "code": match &refused.error {
                            clickhouse::error::Error::BadResponse(text) => exception_code(text),
                            _ => None,
                        },
                        "message": error,
                    },
                    "line": intake_line(&row),
                });
                serde_json::to_writer(&mut text, &entry)
                    .map_err(|e| Error::Layout(format!("cannot be written as JSON: {e}")))?;
                text.push(b'\n');
                rows += 1;
            }
        }
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            std::fs::create_dir_all(&self.dead_letter)?;
            let mut file = std::fs::File::create_new(&path)?;
            file.write_all(&text)?;
            file.sync_data()?;
            std::fs::File::open(&self.dead_letter)?.sync_all()
        };
        write().map_err(Error::io("writing refused rows", &path))?;
        self.dead_letter_rows.inc_by(rows);
        tracing::error!(
            rows,
            file = %path.display(),
            error = %refused[0].error,
            "ClickHouse refused rows for what they hold; they are set aside in the dead-letter file, every other row is stored"
        );
        Ok(())
    }

    fn record_progress(&self, wal_segment: u64) -> Result<()> {
        let temporary = self.progress.with_extension("tmp");
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut file = std::fs::File::create(&temporary)?;
            writeln!(file, "{wal_segment}")?;
            file.sync_data()?;
            std::fs::rename(&temporary, &self.progress)?;
            if let Some(dir) = self.progress.parent() {
                std::fs::File::open(dir)?.sync_all()?;
            }
            Ok(())
        };
        write().map_err(Error::io(
            "recording the flushed WAL segment",
            &self.progress,
        ))?;
        self.flushed.store(wal_segment, Ordering::Release);
        Ok(())
    }
}

impl Drop for ClickHouseSink {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which is not allowed inside another runtime.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Sink for ClickHouseSink {
    fn persist(&self, batches: &[RecordBatch], wal_segment: u64) -> Result<Vec<FileEntry>> {
        // Names first: a reader may see a name before its rows (and find the
        // column empty), never rows whose name it cannot list.
        self.migrate(Some(self.config.request_timeout))?;
        let names = self.new_names(batches)?;
        let backoff = self.config.backoff;
        let inserted = self.block_on(async {
            if !names.is_empty() {
                insert_names(&self.client, &names, backoff, self.config.request_timeout).await?;
            }
            let timeout = Some(self.config.request_timeout);
            insert(
                &self.client,
                ClickHouseTable::TELEMETRY,
                batches,
                backoff,
                timeout,
            )
            .await
        })?;
        // Refused rows are safe in their file before the WAL may go.
        self.set_aside(&inserted.refused, wal_segment)?;
        self.record_progress(wal_segment)?;
        // ClickHouse answers again: stored keys are worth asking for.
        *self
            .keys_unavailable_until
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = None;
        self.names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(names);
        Ok(Vec::new())
    }

    fn files(&self) -> Vec<FileEntry> {
        Vec::new()
    }

    fn flushed_wal_segment(&self) -> u64 {
        self.flushed.load(Ordering::Acquire)
    }

    fn rewrite(&self, _files: &[FileEntry], _keep: &dyn Fn(i64, i64) -> bool) -> Result<Rewrite> {
        Err(Error::Config(
            "ClickHouse storage has no files to rewrite".into(),
        ))
    }

    /// The keys ClickHouse holds for the tracker's times (the index asks
    /// for a whole day: without marks nothing else settles a message).
    /// When ClickHouse does not answer within the query timeout, none:
    /// intake goes on while ClickHouse is down (decision 60), and a message
    /// stored again is folded by the table's dedup key and by readers.
    ///
    /// After such a failure the next [`KEYS_PAUSE`] (or until a flush
    /// succeeds) asks nothing and answers none at once: an unreachable
    /// server costs the writer thread one timeout, not one per partition.
    fn keys(
        &self,
        _files: &[FileEntry],
        tracker: i64,
        times: Range<i64>,
    ) -> Result<Vec<(i64, u64)>> {
        let paused = *self
            .keys_unavailable_until
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if paused.is_some_and(|until| Instant::now() < until) {
            tracing::debug!(
                tracker,
                from = times.start,
                "ClickHouse recently failed to give stored keys; deduplicating against memory only"
            );
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT msg_time, content_hash FROM {} WHERE tracker_id = ? AND msg_time >= ? AND msg_time < ?",
            self.table.qualified(ClickHouseTable::TELEMETRY)
        );
        let query = self
            .client
            .query(&sql)
            .bind(tracker)
            .bind(times.start)
            .bind(times.end);
        let timeout = self.config.query_timeout;
        let answer = self
            .block_on(async move { tokio::time::timeout(timeout, query.fetch_all::<Key>()).await });
        match answer {
            Ok(Ok(keys)) => Ok(keys
                .into_iter()
                .map(|k| (k.msg_time, k.content_hash))
                .collect()),
            other => {
                let error = match other {
                    Ok(Err(error)) => error.to_string(),
                    _ => format!("no answer within {} ms", timeout.as_millis()),
                };
                tracing::warn!(%error, tracker, from = times.start, pause_s = KEYS_PAUSE.as_secs(), "ClickHouse did not give the stored keys; deduplicating against memory only");
                *self
                    .keys_unavailable_until
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + KEYS_PAUSE);
                Ok(Vec::new())
            }
        }
    }

    fn inner_names(&self, _files: &[FileEntry], tracker: i64, day: i64) -> Result<Vec<String>> {
        let paused = *self
            .keys_unavailable_until
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if paused.is_some_and(|until| Instant::now() < until) {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT DISTINCT name FROM {} WHERE tracker_id = ? AND day = ?",
            self.table.qualified(ClickHouseTable::INNER_COLUMNS)
        );
        let query = self
            .client
            .query(&sql)
            .bind(tracker)
            .bind(i32::try_from(day).unwrap_or(i32::MAX));
        let timeout = self.config.query_timeout;
        let answer = self.block_on(async move {
            tokio::time::timeout(timeout, query.fetch_all::<StoredName>()).await
        });
        match answer {
            Ok(Ok(names)) => Ok(names.into_iter().map(|n| n.name).collect()),
            other => {
                let error = match other {
                    Ok(Err(error)) => error.to_string(),
                    _ => format!("no answer within {} ms", timeout.as_millis()),
                };
                // As with keys: the names held in memory still count; stored ones are not known.
                tracing::warn!(%error, tracker, day, pause_s = KEYS_PAUSE.as_secs(), "ClickHouse did not give the stored inner column names");
                *self
                    .keys_unavailable_until
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + KEYS_PAUSE);
                Ok(Vec::new())
            }
        }
    }

    fn delete_expired(&self, cutoffs: &BTreeMap<i64, i64>) -> Result<Option<u64>> {
        let table = self.table.clone();
        let cutoffs: Vec<(i64, i64)> = cutoffs.iter().map(|(t, c)| (*t, *c)).collect();
        let client = self.client.clone();
        let timeout = self.config.request_timeout;
        let expired = self.block_on(async move {
            let mut expired = 0;
            for chunk in cutoffs.chunks(1_000) {
                let rows = chunk
                    .iter()
                    .map(|(tracker, cutoff)| {
                        format!("(tracker_id = {tracker} AND msg_time < {cutoff})")
                    })
                    .collect::<Vec<_>>()
                    .join(" OR ");
                let days = chunk
                    .iter()
                    .map(|(tracker, cutoff)| {
                        format!(
                            "(tracker_id = {tracker} AND day < {})",
                            cutoff.div_euclid(86_400_000)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(" OR ");
                let deletes = async {
                    let rows =
                        delete_where(&client, &table, ClickHouseTable::TELEMETRY, &rows).await?;
                    delete_where(&client, &table, ClickHouseTable::INNER_COLUMNS, &days).await?;
                    Ok::<_, Error>(rows)
                };
                expired += tokio::time::timeout(timeout, deletes).await.unwrap_or(Err(
                    Error::ClickHouse {
                        what: "deleting expired rows",
                        source: clickhouse::error::Error::TimedOut,
                    },
                ))?;
            }
            Ok::<_, Error>(expired)
        })?;
        Ok(Some(expired))
    }

    fn clickhouse(&self) -> Option<Arc<ClickHouseTable>> {
        Some(self.table.clone())
    }
}

/// Deletes the rows of `database`'s `table` matching `condition` with a
/// mutation (of every shard's local table on a cluster), if it matches any
/// (a mutation rewrites parts, even when it deletes nothing); returns how
/// many it matched.
async fn delete_where(
    client: &clickhouse::Client,
    database: &ClickHouseTable,
    table: &str,
    condition: &str,
) -> Result<u64> {
    let (read, altered) = (database.qualified(table), database.altered(table));
    let count: u64 = client
        .query(&format!("SELECT count() FROM {read} WHERE {condition}"))
        .fetch_one()
        .await
        .map_err(Error::clickhouse("counting expired rows"))?;
    if count > 0 {
        client
            .query(&format!("ALTER TABLE {altered} DELETE WHERE {condition}"))
            .execute()
            .await
            .map_err(Error::clickhouse("deleting expired rows"))?;
    }
    Ok(count)
}

async fn insert_names(
    client: &clickhouse::Client,
    names: &[InnerName],
    backoff: Backoff,
    timeout: Duration,
) -> Result<()> {
    crate::clickhouse::retry(backoff, names.len(), || async {
        let mut insert = client
            .insert::<InnerName>(ClickHouseTable::INNER_COLUMNS)?
            .with_timeouts(Some(timeout), Some(timeout));
        for name in names {
            insert.write(name).await?;
        }
        insert.end().await
    })
    .await
}

/// A stored row as a line of `POST /ingest` (spec document 3's raw data
/// columns with `tracker_id`, times in ISO 8601 with milliseconds): what
/// the dead-letter file keeps of a refused row.
fn intake_line(row: &TelemetryRow<'_>) -> serde_json::Value {
    use serde_json::{Map, Value, json};
    let time = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
    };
    let mut line = Map::new();
    line.insert("tracker_id".into(), json!(row.tracker_id));
    line.insert("msg_time".into(), json!(time(row.msg_time)));
    line.insert("server_time".into(), json!(time(row.server_time)));
    let simple = [
        ("flags", json!(row.flags)),
        ("gps_fix_type", json!(row.gps_fix_type)),
        ("lat", json!(row.lat)),
        ("lng", json!(row.lng)),
        ("speed", json!(row.speed)),
        ("alt", json!(row.alt)),
        ("satellites", json!(row.satellites)),
        ("heading", json!(row.heading)),
        ("precision", json!(row.precision)),
        ("hdop", json!(row.hdop)),
        ("pdop", json!(row.pdop)),
        ("event_id", json!(row.event_id)),
        ("mn_name", json!(row.mn_name)),
        ("mn_roaming", json!(row.mn_roaming)),
        ("mn_code", json!(row.mn_code)),
        ("mn_csq", json!(row.mn_csq)),
        ("mn_type", json!(row.mn_type)),
    ];
    for (name, value) in simple {
        if !value.is_null() {
            line.insert(name.into(), value);
        }
    }
    let maps: [(&str, Map<String, Value>); 4] = [
        (
            "discrete_inputs",
            zip(&row.discrete_inputs_name, &row.discrete_inputs_value),
        ),
        (
            "discrete_outputs",
            zip(&row.discrete_outputs_name, &row.discrete_outputs_value),
        ),
        ("inputs", zip(&row.inputs_name, &row.inputs_value)),
        ("states", zip(&row.states_name, &row.states_value)),
    ];
    for (name, map) in maps {
        if !map.is_empty() {
            line.insert(name.into(), Value::Object(map));
        }
    }
    Value::Object(line)
}

/// Names and values of one of a row's `Nested` columns as a JSON object.
fn zip<V: Serialize>(names: &[&str], values: &[V]) -> serde_json::Map<String, serde_json::Value> {
    names
        .iter()
        .zip(values)
        .map(|(name, value)| ((*name).to_owned(), serde_json::json!(value)))
        .collect()
}
