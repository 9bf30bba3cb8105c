//! The contract between `ingest` (which writes telemetry) and `query` (which
//! reads it): a consistent snapshot of the stored files and the batches
//! acknowledged but not yet in a file.

use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::RecordBatch;
use serde::{Deserialize, Serialize};

/// One Parquet file of the catalog, with what planning needs to know of it
/// without opening it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    /// The file's id, unique for the store's lifetime.
    pub id: u64,
    /// Its path, relative to the telemetry root.
    pub path: PathBuf,
    /// Smallest and largest tracker id in the file.
    pub tracker_min: i64,
    /// Largest tracker id in the file.
    pub tracker_max: i64,
    /// Earliest message time, ms since the epoch.
    pub message_time_min_ms: i64,
    /// Latest message time, ms since the epoch.
    pub message_time_max_ms: i64,
    /// Earliest server time, ms since the epoch.
    pub server_time_min_ms: i64,
    /// Latest server time, ms since the epoch.
    pub server_time_max_ms: i64,
    /// Rows.
    pub rows: u64,
    /// Size in bytes.
    pub bytes: u64,
    /// The inner columns present (`inputs.lls_level_1`, ...), sorted.
    /// Shared: the engine copies its file list at every flush.
    pub inner_columns: Arc<[String]>,
    /// Each tracker's rows in the file, by tracker id: what `.*` expansion,
    /// `get_inputs` and pruning need without opening the file. Shared: a
    /// file of 10,000 trackers holds 10,000 spans, and the engine copies
    /// its file list at every flush.
    pub trackers: Arc<[TrackerSpan]>,
}

/// One tracker's rows in a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrackerSpan {
    /// The tracker.
    pub tracker_id: i64,
    /// Its earliest message time in the file, ms.
    pub message_time_min_ms: i64,
    /// Its latest message time in the file, ms.
    pub message_time_max_ms: i64,
    /// Its rows in the file.
    pub rows: u64,
    /// The inner columns it has values for, as indices into `inner_columns`,
    /// sorted. Shared between the file's spans with the same list
    /// ([`FileEntry::share_inner_lists`]): a fleet's trackers mostly send
    /// the same names, and a list of its own for each of a file's 10,000
    /// spans took about 1.4 MB a file for as long as the file lived.
    pub inner: Arc<[u32]>,
}

impl TrackerSpan {
    /// Whether the tracker has rows in the file with message times that
    /// may lie in `from..to` (ms).
    pub fn meets_message_times(&self, from: i64, to: i64) -> bool {
        self.message_time_min_ms < to && from <= self.message_time_max_ms
    }

    /// The names of the tracker's inner columns in `file`.
    pub fn inner_names<'a>(&'a self, file: &'a FileEntry) -> impl Iterator<Item = &'a str> + 'a {
        self.inner
            .iter()
            .filter_map(|i| file.inner_columns.get(*i as usize).map(String::as_str))
    }
}

/// The distinct inner column lists of a file's spans, each held once: what
/// [`TrackerSpan::inner`] points into.
#[derive(Debug, Default)]
pub struct InnerLists(std::collections::HashSet<Arc<[u32]>>);

impl InnerLists {
    /// `list`, shared with every equal list given before.
    pub fn share(&mut self, list: &[u32]) -> Arc<[u32]> {
        if let Some(shared) = self.0.get(list) {
            return shared.clone();
        }
        let shared: Arc<[u32]> = Arc::from(list);
        self.0.insert(shared.clone());
        shared
    }
}

impl FileEntry {
    /// Makes the spans with equal inner column lists share one list (a
    /// catalog read from disk has a list per span).
    pub fn share_inner_lists(&mut self) {
        let mut lists = InnerLists::default();
        let spans: Vec<TrackerSpan> = self
            .trackers
            .iter()
            .map(|span| TrackerSpan {
                inner: lists.share(&span.inner),
                ..span.clone()
            })
            .collect();
        self.trackers = spans.into();
    }

    /// The span of `tracker` in the file, if it has rows there.
    pub fn span(&self, tracker: i64) -> Option<&TrackerSpan> {
        self.trackers
            .binary_search_by_key(&tracker, |s| s.tracker_id)
            .ok()
            .and_then(|i| self.trackers.get(i))
    }

    /// Whether the file may hold rows of `tracker` with message time in
    /// `[message_from_ms, message_to_ms)` and server time in `[server_from_ms, server_to_ms)`.
    pub fn may_hold(&self, tracker: i64, message: (i64, i64), server: (i64, i64)) -> bool {
        self.tracker_min <= tracker
            && tracker <= self.tracker_max
            && self.message_time_min_ms < message.1
            && message.0 <= self.message_time_max_ms
            && self.server_time_min_ms < server.1
            && server.0 <= self.server_time_max_ms
    }
}

/// What a reader sees at one instant: files and not-yet-flushed batches,
/// never a row twice and never a gap.
#[derive(Debug, Clone, Default)]
pub struct TelemetrySnapshot {
    /// The directory the files' paths are relative to.
    pub root: PathBuf,
    /// The catalog's files (shared between snapshots until the catalog changes).
    pub files: Arc<Vec<FileEntry>>,
    /// Acknowledged batches not yet in a file (each with the fixed columns and
    /// its own inner columns; see `columns`).
    pub unflushed: Vec<RecordBatch>,
    /// Keeps the snapshot's files on disk while the snapshot is held: files
    /// replaced by compaction or retention are deleted only after every
    /// snapshot that lists them is dropped.
    pub guard: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// Where flushed rows are when the storage is ClickHouse rather than
    /// files (`files` is then empty). The flusher inserts a batch before it
    /// leaves the memtable, so a row may be both in `unflushed` and in
    /// ClickHouse for a moment: readers drop the second copy by its key
    /// (tracker, message time, content hash).
    pub clickhouse: Option<Arc<ClickHouseTable>>,
}

impl TelemetrySnapshot {
    /// The snapshot without its memtable batches: what a read still needs
    /// once it has copied out the memtable rows it reads (the files, kept
    /// on disk by the guard). A read that held the whole snapshot would
    /// keep every batch flushed meanwhile in memory until it ended.
    pub fn files_only(&self) -> Self {
        Self {
            root: self.root.clone(),
            files: self.files.clone(),
            unflushed: Vec::new(),
            guard: self.guard.clone(),
            clickhouse: self.clickhouse.clone(),
        }
    }
}

/// A ClickHouse database holding the tables of `deploy/clickhouse/schema.sql`
/// on one node, or of `deploy/clickhouse/cluster.sql` on a cluster.
#[derive(Clone, PartialEq, Eq)]
pub struct ClickHouseTable {
    /// The HTTP interface, e.g. `http://127.0.0.1:8123`.
    pub url: String,
    /// The database (`trackhouse` unless configured).
    pub database: String,
    /// The user, if not the server's default.
    pub user: Option<String>,
    /// The user's password.
    pub password: Option<String>,
    /// A cluster of the servers' `<remote_servers>`: the tables are then
    /// Distributed tables over replicated `*_local` tables on every shard,
    /// created and altered `ON CLUSTER`.
    pub cluster: Option<String>,
}

impl ClickHouseTable {
    /// The table of messages.
    pub const TELEMETRY: &'static str = "telemetry";
    /// The table of inner column names by tracker and day.
    pub const INNER_COLUMNS: &'static str = "inner_columns";

    /// `database.table`, quoted for SQL.
    pub fn qualified(&self, table: &str) -> String {
        format!("`{}`.`{table}`", self.database.replace('`', ""))
    }

    /// What a mutation of `table` (an `ALTER`) names: the table itself on
    /// one node; on a cluster, the shards' local tables, `ON CLUSTER`
    /// (Distributed tables take no mutations).
    pub fn altered(&self, table: &str) -> String {
        match &self.cluster {
            None => self.qualified(table),
            Some(cluster) => format!(
                "{} ON CLUSTER `{}`",
                self.qualified(&format!("{table}_local")),
                cluster.replace('`', "")
            ),
        }
    }

    /// A client of the database: its server, user and password, and
    /// [`Self::settings`].
    #[cfg(feature = "clickhouse")]
    pub fn client(&self) -> clickhouse::Client {
        self.server_client().with_database(&self.database)
    }

    /// [`Self::client`] without the database (which may not exist yet).
    #[cfg(feature = "clickhouse")]
    pub fn server_client(&self) -> clickhouse::Client {
        let mut client = clickhouse::Client::default().with_url(&self.url);
        if let Some(user) = &self.user {
            client = client.with_user(user);
        }
        if let Some(password) = &self.password {
            client = client.with_password(password);
        }
        for (name, value) in self.settings() {
            client = client.with_option(*name, *value);
        }
        client
    }

    /// The settings every query to the database carries. On a cluster: an
    /// INSERT into a Distributed table is answered once the shards have the
    /// rows (not once they are queued on the receiving node), and queries go
    /// to each shard's replicas in configured order, so that reads are
    /// served by the replica the INSERTs went to while it is up.
    pub fn settings(&self) -> &'static [(&'static str, &'static str)] {
        match self.cluster {
            None => &[],
            Some(_) => &[
                ("insert_distributed_sync", "1"),
                ("load_balancing", "in_order"),
            ],
        }
    }
}

impl Debug for ClickHouseTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClickHouseTable")
            .field("url", &self.url)
            .field("database", &self.database)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("cluster", &self.cluster)
            .finish()
    }
}

/// Gives readers consistent snapshots of stored telemetry.
pub trait TelemetrySource: Send + Sync + Debug {
    /// The current snapshot; every message acknowledged before the call is in it.
    fn snapshot(&self) -> Arc<TelemetrySnapshot>;
}
