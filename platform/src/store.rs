use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use schemas::Clock;
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use crate::{Error, Result};

/// How much of the database file each connection maps (SQLite's `mmap_size`).
const MMAP_BYTES: u64 = 1 << 30;

/// How often the write-ahead log is copied into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// Settings of the platform store.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// The data directory; the database is `platform.sqlite` inside it.
    pub data_dir: PathBuf,
    /// A user session ends after this long without use.
    pub user_session_idle: TimeDelta,
    /// A panel session ends this long after it was created.
    pub panel_session_ttl: TimeDelta,
    /// API keys a user may hold.
    pub max_api_keys: u32,
    /// How stale a session's last-use stamp may get before a call refreshes it
    /// (saves a database write on most calls).
    pub last_used_refresh: TimeDelta,
    /// Connections in the pool.
    pub max_connections: u32,
}

impl StoreConfig {
    /// The defaults of the spec for a data directory.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            user_session_idle: TimeDelta::days(30),
            panel_session_ttl: TimeDelta::hours(24),
            max_api_keys: 20,
            last_used_refresh: TimeDelta::minutes(1),
            max_connections: 8,
        }
    }
}

/// The platform's records in SQLite; cheap to clone, shared by all requests.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) pool: SqlitePool,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) config: Arc<StoreConfig>,
    /// Stops the checkpoints when the last clone goes.
    _checkpoints: Arc<Checkpoints>,
}

/// The task that checkpoints the write-ahead log, stopped on drop.
#[derive(Debug)]
struct Checkpoints(tokio::task::AbortHandle);

impl Drop for Checkpoints {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Copies the write-ahead log into the database file every
/// [`CHECKPOINT_EVERY`] (`PASSIVE`: never waits for readers or writers)
/// until the pool closes. SQLite's own automatic checkpoint runs inside
/// the commit that crosses 1,000 pages of log, so the call that made it
/// waited for the copy and the database file's sync (the commit of a
/// 10,000-user upload took 100-150 ms); it is off (decisions.md 102).
async fn checkpoint(pool: SqlitePool) {
    let mut every = tokio::time::interval(CHECKPOINT_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !pool.is_closed() {
        every.tick().await;
        if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&pool)
            .await
        {
            if !pool.is_closed() {
                tracing::warn!(target: "platform::store", error = %e, "checkpoint failed");
            }
        }
    }
}

impl Store {
    /// A transaction that writes. `BEGIN IMMEDIATE` takes the write lock at
    /// once, waiting for it up to the busy timeout; a deferred transaction
    /// that reads first cannot take it once another connection has written
    /// since its read (SQLITE_BUSY_SNAPSHOT, at once: the busy timeout does
    /// not wait for that), which answered 503 (14) under concurrent writes.
    pub(crate) async fn write_tx(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>> {
        Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?)
    }

    /// Opens (creating if needed) the database in the data directory and migrates it.
    pub async fn open(config: StoreConfig, clock: Arc<dyn Clock>) -> Result<Self> {
        std::fs::create_dir_all(&config.data_dir).map_err(|source| Error::DataDir {
            path: config.data_dir.display().to_string(),
            source,
        })?;
        let path = config.data_dir.join("platform.sqlite");
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL with NORMAL is durable across process crashes; a power loss may
            // lose the last commits, never corrupt the file.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5))
            .foreign_keys(true)
            // Reads map the file rather than copy each page into every
            // connection's cache: a list that walks 100,000 rows of
            // `vehicle_list_keys` reads thousands of pages (decisions.md 90).
            // Address space only; the OS page cache holds the bytes.
            .pragma("mmap_size", MMAP_BYTES.to_string())
            // Sorts that outgrow memory (deep pages) stay in memory rather
            // than in temporary files.
            .pragma("temp_store", "memory")
            // Checkpoints run in their own task, not in a commit.
            .pragma("wal_autocheckpoint", "0");
        let pool = SqlitePoolOptions::new()
            .max_connections(config.max_connections)
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations/sqlite")
            .run(&pool)
            .await
            .map_err(Error::Migrate)?;
        let checkpoints = tokio::spawn(checkpoint(pool.clone())).abort_handle();
        Ok(Self {
            pool,
            clock,
            config: Arc::new(config),
            _checkpoints: Arc::new(Checkpoints(checkpoints)),
        })
    }

    /// The store's settings.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// The clock the store stamps records with.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Checks that the database answers.
    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Closes the pool, waiting for connections in use.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_log_is_checkpointed_by_the_stores_task_not_by_commits() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(StoreConfig::new(dir.path()), Arc::new(schemas::SystemClock))
            .await
            .unwrap();
        let automatic: i64 = sqlx::query_scalar("PRAGMA wal_autocheckpoint")
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert_eq!(automatic, 0, "no checkpoint inside a commit");
        let file = dir.path().join("platform.sqlite");
        let before = std::fs::metadata(&file).unwrap().len();
        // 8 MiB of new pages: 2,000 pages of log, twice the automatic threshold.
        sqlx::query("CREATE TABLE scratch (bytes BLOB)")
            .execute(&store.pool)
            .await
            .unwrap();
        sqlx::query(
            "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1024) \
             INSERT INTO scratch SELECT randomblob(8192) FROM n",
        )
        .execute(&store.pool)
        .await
        .unwrap();
        let grown = async {
            while std::fs::metadata(&file).unwrap().len() < before + (8 << 20) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::time::timeout(CHECKPOINT_EVERY * 5, grown)
            .await
            .expect("the pages reach the database file within a few checkpoint periods");
    }
}
