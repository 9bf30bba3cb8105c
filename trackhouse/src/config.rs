//! Configuration: one clap tree; every flag also reads a `TRACKHOUSE_*` variable.

use std::net::SocketAddr;
use std::path::PathBuf;

use api::{ApiConfig, Rate, RateLimitConfig};
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::admin::AdminArgs;
use crate::demo::DemoArgs;
use crate::import::ImportArgs;

/// Trackhouse: telemetry storage and the fleet platform API.
#[derive(Debug, Parser)]
#[command(name = "trackhouse", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Serve every interface (`/v2`, `/dwh/v1`, `/eco_fleet/v1`, `/ingest/v1`, `/healthz`, `/metrics`) on one listener.
    Serve(ServerArgs),
    /// Operator commands on a data directory; each prints one JSON object and takes effect at once, also while `serve` runs.
    Admin(AdminArgs),
    /// Create demo accounts in a fresh data directory, print ready-to-paste calls, then serve.
    Demo(DemoArgs),
    /// Send NDJSON files (plain, `.gz`, or `-` for standard input) to a server's intake in
    /// large zstd-compressed batches; prints one JSON summary, exit status 0 only if no line was rejected.
    Import(ImportArgs),
    /// Print the OpenAPI 3.1 document of every call the server answers (as served at
    /// `/openapi.json`), or write it to a file: `trackhouse openapi --out docs/openapi.json`.
    Openapi(OpenapiArgs),
}

/// Options of `trackhouse openapi`.
#[derive(Debug, Args)]
pub(crate) struct OpenapiArgs {
    /// Write the document to this file instead of standard output.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

/// Options of a serving process.
#[derive(Debug, Clone, Args)]
pub(crate) struct ServerArgs {
    /// Directory of all state: the platform database, the WAL, and the Parquet files (or, on ClickHouse, the record of what ClickHouse confirmed).
    #[arg(long, env = "TRACKHOUSE_DATA_DIR", default_value = "./trackhouse-data")]
    pub(crate) data_dir: PathBuf,

    /// Address to listen on (port 0 picks a free port).
    #[arg(long, env = "TRACKHOUSE_LISTEN", default_value = "127.0.0.1:8080")]
    pub(crate) listen: SocketAddr,

    /// Largest request body accepted, in bytes; larger ones get HTTP 412 (code 9).
    #[arg(long, env = "TRACKHOUSE_MAX_REQUEST_BYTES", default_value_t = 16 * 1024 * 1024)]
    pub(crate) max_request_bytes: usize,

    /// Accept user session hashes on calls other than API key management (deprecated; answered with `Deprecation: true`). `false` refuses them with code 276.
    #[arg(long, env = "TRACKHOUSE_SESSION_AUTH", default_value_t = true, action = clap::ArgAction::Set)]
    pub(crate) session_auth: bool,

    /// Rate limit per user session, as `N/s`, `N/m` or `N/h`.
    #[arg(long, env = "TRACKHOUSE_RATE_USER_SESSION", default_value = "50/s")]
    pub(crate) rate_user_session: Rate,

    /// Rate limit per API key (each key counted apart from the sessions and other keys).
    #[arg(long, env = "TRACKHOUSE_RATE_API_KEY", default_value = "50/s")]
    pub(crate) rate_api_key: Rate,

    /// Rate limit per dealer on the panel, shared by its sessions.
    #[arg(long, env = "TRACKHOUSE_RATE_PANEL_DEALER", default_value = "10/s")]
    pub(crate) rate_panel_dealer: Rate,

    /// Rate limit per client IP for calls without a credential (logins) and failed credentials.
    #[arg(long, env = "TRACKHOUSE_RATE_ANONYMOUS_IP", default_value = "30/m")]
    pub(crate) rate_anonymous_ip: Rate,

    /// Rate limit per client IP of the public geo link pages (`/links/`: page, feed, files); more: HTTP 429, code 15.
    #[arg(long, env = "TRACKHOUSE_RATE_LINK_IP", default_value_t = api::DEFAULT_LINK_RATE)]
    pub(crate) rate_link_ip: Rate,

    /// Map tiles of the geo link page: a Leaflet URL template (`{z}`, `{x}`, `{y}`, optional `{s}`), fetched by the viewer's browser.
    #[arg(long, env = "TRACKHOUSE_MAP_TILES_URL", default_value = api::DEFAULT_MAP_TILES_URL)]
    pub(crate) map_tiles_url: String,

    /// Recent positions held in memory per tracker for the geo link pages (packed as differences from the point before, 6-9 bytes each at 1 Hz: about 80 MB for 10,000 trackers; coordinates to 1e-7 degree; speed, to 0.001 km/h, and heading of the newest only; the oldest go first, and points over 24.8 days behind the newest may go).
    #[arg(long, env = "TRACKHOUSE_LIVE_POINTS_PER_TRACKER", default_value_t = ingest::DEFAULT_LIVE_POINTS_PER_TRACKER,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub(crate) live_points_per_tracker: usize,

    /// Reverse proxies in front that append to X-Forwarded-For; the client address (for per-IP rate limits) is the entry this many places from the right. 0 trusts no header.
    #[arg(long, env = "TRACKHOUSE_TRUSTED_PROXY_HOPS", default_value_t = 0)]
    pub(crate) trusted_proxy_hops: usize,

    /// Largest intake body in bytes (`/ingest/v1/messages`), compressed and decompressed alike; larger: HTTP 412, code 9.
    #[arg(long, env = "TRACKHOUSE_MAX_INGEST_BYTES", default_value_t = 64 * 1024 * 1024)]
    pub(crate) max_ingest_bytes: usize,

    /// Intake requests read, parsed and stored at once (memory: up to this many bodies of --max-ingest-bytes); more wait for a slot.
    #[arg(long, env = "TRACKHOUSE_MAX_INTAKE_REQUESTS", default_value_t = 8,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4_096))]
    pub(crate) max_intake_requests: usize,

    /// How long an intake request waits for a slot (milliseconds) before it is answered HTTP 503, code 8, with Retry-After.
    #[arg(long, env = "TRACKHOUSE_INTAKE_QUEUE_MS", default_value_t = 2_000,
          value_parser = clap::value_parser!(u64).range(0..=600_000))]
    pub(crate) intake_queue_ms: u64,

    /// Intake bodies parsed and prepared at once (CPU-bound; the writer and flusher threads need their share); 0: as many as the machine has CPUs.
    #[arg(long, env = "TRACKHOUSE_INTAKE_PARSE_TASKS", default_value_t = 0,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=4_096))]
    pub(crate) intake_parse_tasks: usize,

    /// Nice steps the request threads (HTTP, intake parsing, queries) run below the ingest engine's threads (WAL writer, flusher, key loader), so that a CPU-bound intake leaves the flusher the CPU it needs to keep memory bounded; 0: the same priority. Linux only (elsewhere a nice value is the whole process's).
    #[arg(long, env = "TRACKHOUSE_REQUEST_NICE", default_value_t = 5,
          value_parser = clap::value_parser!(u8).range(0..=19))]
    pub(crate) request_nice: u8,

    /// An intake body longer than this many bytes is stored in chunks of whole lines about this long, parsed on parallel tasks as they arrive and committed together once all are ready (a body answered with an error stores nothing).
    #[arg(long, env = "TRACKHOUSE_INTAKE_CHUNK_BYTES", default_value_t = 1_048_576,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(4_096..=1_073_741_824))]
    pub(crate) intake_chunk_bytes: usize,

    /// Longest message-time span of one raw data read, in days; longer reads get code 211.
    #[arg(long, env = "TRACKHOUSE_RAW_DATA_MAX_SPAN_DAYS", default_value_t = 31)]
    pub(crate) raw_data_max_span_days: u32,

    /// Most columns of one raw data read after `.*` expansion; more: code 7.
    #[arg(long, env = "TRACKHOUSE_RAW_DATA_MAX_COLUMNS", default_value_t = 1_024,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub(crate) raw_data_max_columns: usize,

    /// Plugins available to users with none enabled for them or their dealer (comma-separated ids; 29 is billing).
    #[arg(long, env = "TRACKHOUSE_DEFAULT_PLUGINS", value_delimiter = ',', default_values_t = [1_i64, 2])]
    pub(crate) default_plugins: Vec<i64>,

    /// The base of a bill's `link`: the bill's id is appended (e.g. `https://billing.example/orders/`).
    #[arg(long, env = "TRACKHOUSE_BILLING_ORDERS_BASE_URL", default_value = "")]
    pub(crate) billing_orders_base_url: String,

    /// Largest file `file/upload` keeps, in bytes (larger: code 7 naming `file`; the request
    /// itself is also bound by --max-request-bytes).
    #[arg(long, env = "TRACKHOUSE_MAX_UPLOAD_BYTES", default_value_t = 10 * 1024 * 1024,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024 * 1024 * 1024))]
    pub(crate) max_upload_bytes: usize,

    /// Bytes an uploaded XLSX may expand to when it is read (more: code 7 naming `file_id`).
    #[arg(long, env = "TRACKHOUSE_MAX_UPLOAD_INFLATED_BYTES", default_value_t = 100 * 1024 * 1024,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_upload_inflated_bytes: u64,

    /// Uploaded files an account holds at a time (more: code 268).
    #[arg(long, env = "TRACKHOUSE_MAX_UPLOADS_PER_ACCOUNT", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_uploads_per_account: u32,

    /// Hours an uploaded file is kept.
    #[arg(long, env = "TRACKHOUSE_UPLOAD_TTL_HOURS", default_value_t = 24,
          value_parser = clap::value_parser!(u64).range(1..=24 * 365))]
    pub(crate) upload_ttl_hours: u64,

    /// Lines `vehicle/batch_convert` reads; the rest is cut (`limit_exceeded`).
    #[arg(long, env = "TRACKHOUSE_BATCH_CONVERT_MAX_LINES", default_value_t = 500,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub(crate) batch_convert_max_lines: usize,

    /// Data rows `panel/user/upload` takes from one file (more: the file is refused, code 7).
    #[arg(long, env = "TRACKHOUSE_MAX_UPLOAD_USERS", default_value_t = 10_000,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub(crate) max_upload_users: usize,

    /// Places `geocoder/search_address` answers at most for a name.
    #[arg(long, env = "TRACKHOUSE_GEOCODER_RESULTS", default_value_t = 10,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100))]
    pub(crate) geocoder_results: usize,

    /// Geo links an account holds at most (`tracker/location/link/create`: 268 beyond).
    #[arg(long, env = "TRACKHOUSE_GEO_LINK_QUOTA", default_value_t = platform::DEFAULT_GEO_LINK_QUOTA,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub(crate) geo_link_quota: u32,

    /// Raw data exports and fuel resamplings running at once in all; more: HTTP 503, code 8, Retry-After.
    #[arg(long, env = "TRACKHOUSE_MAX_READS", default_value_t = 16,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub(crate) max_reads: usize,

    /// ... and of one user; more: HTTP 429, code 15, Retry-After.
    #[arg(long, env = "TRACKHOUSE_MAX_READS_PER_USER", default_value_t = 4,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub(crate) max_reads_per_user: usize,

    /// Longest `interval` of one fuel resampling call, in days; longer calls get code 211.
    #[arg(
        long,
        env = "TRACKHOUSE_RESAMPLING_MAX_SPAN_DAYS",
        default_value_t = 31
    )]
    pub(crate) resampling_max_span_days: u32,

    /// Most entries of one complex member (`inputs`, `states`, `discrete_inputs`, `discrete_outputs`) of an intake line; a line with more is refused (code 7).
    #[arg(long, env = "TRACKHOUSE_MAX_INNER_ENTRIES", default_value_t = ingest::intake::DEFAULT_MAX_INNER_ENTRIES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65_535))]
    pub(crate) max_inner_entries: usize,

    /// Longest wait for a request's body, in milliseconds; a client slower than that gets code 5.
    #[arg(long, env = "TRACKHOUSE_REQUEST_BODY_TIMEOUT_MS", default_value_t = 60_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) request_body_timeout_ms: u64,

    /// Longest wait for a request's headers, in milliseconds; the connection is then closed.
    #[arg(long, env = "TRACKHOUSE_HEADER_READ_TIMEOUT_MS", default_value_t = 30_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) header_read_timeout_ms: u64,

    /// When set, `/metrics` answers only requests with `Authorization: Bearer <this token>` (others: code 2).
    #[arg(long, env = "TRACKHOUSE_METRICS_TOKEN", hide_env_values = true)]
    pub(crate) metrics_token: Option<String>,

    /// Rejected lines an intake answer lists (the first by line number; `rejected_total` counts them all).
    #[arg(long, env = "TRACKHOUSE_MAX_LISTED_REJECTIONS", default_value_t = 1_000,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000_000))]
    pub(crate) max_listed_rejections: usize,

    /// Ingest-token and tracker answers the intake keeps in memory (100 to 150 bytes each; when full, about half are dropped; 0 keeps none). Any change to a token or tracker, by any process on the database, empties them before the next request.
    #[arg(long, env = "TRACKHOUSE_INTAKE_CACHE_ENTRIES", default_value_t = 1_000_000,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=100_000_000))]
    pub(crate) intake_cache_entries: usize,

    /// Most distinct inner columns one tracker may have on one UTC day; a line that would add more is refused (code 7).
    #[arg(long, env = "TRACKHOUSE_MAX_INNER_NAMES_PER_DAY", default_value_t = ingest::DEFAULT_MAX_INNER_NAMES_PER_DAY,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub(crate) max_inner_names_per_day: usize,

    /// How old an intake line's `msg_time` may be, in days; older lines are refused (code 7).
    #[arg(long, env = "TRACKHOUSE_MAX_MESSAGE_AGE_DAYS", default_value_t = ingest::intake::DEFAULT_MAX_MESSAGE_AGE_DAYS,
          value_parser = clap::value_parser!(u32).range(1..=36_600))]
    pub(crate) max_message_age_days: u32,

    /// UNSAFE, for benchmarks only: acknowledge intake without fdatasync of the write-ahead log, so a power loss or kernel crash loses what the kernel had not yet written back, about the last half minute by default (a killed process loses nothing). Compares with databases that answer before their data is on disk.
    #[arg(long, env = "TRACKHOUSE_UNSAFE_NO_WAL_FSYNC")]
    pub(crate) unsafe_no_wal_fsync: bool,

    /// zstd level at which each write's record in the write-ahead log is compressed, on its request's thread (1 to 9; 0, the default, writes records plain). Level 1 takes the log's bytes down 4.7 times, so each group commit's fdatasync waits for fewer, but costs about 0.7 µs of CPU a message (7-12% of the maximum rate on two cores): for disks whose bandwidth is the limit (decisions.md 150). Logs written at any level are read at any level.
    #[arg(long, env = "TRACKHOUSE_WAL_ZSTD_LEVEL", default_value_t = ingest::DEFAULT_WAL_ZSTD_LEVEL,
          value_parser = clap::value_parser!(i32).range(0..=9))]
    pub(crate) wal_zstd_level: i32,

    /// Acknowledged messages are written from memory to storage (Parquet or ClickHouse) at least this often (milliseconds).
    #[arg(long, env = "TRACKHOUSE_FLUSH_INTERVAL_MS", default_value_t = 5000)]
    pub(crate) flush_interval_ms: u64,

    /// ... or as soon as this many rows wait in memory.
    #[arg(long, env = "TRACKHOUSE_FLUSH_ROWS", default_value_t = 1_000_000)]
    pub(crate) flush_rows: usize,

    /// ... or once the rows waiting in memory take this many bytes of Arrow arrays (what bounds the server's memory under load).
    #[arg(long, env = "TRACKHOUSE_FLUSH_BYTES", default_value_t = ingest::DEFAULT_FLUSH_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1_048_576..=68_719_476_736))]
    pub(crate) flush_bytes: usize,

    /// Nice steps below the ingest engine's threads at which a flush that is on time writes its files (the flusher idle at least as long as its last flush took, less than twice `--flush-rows` and `--flush-bytes` waiting): below the request threads (`--request-nice`), so that intake goes first and the flush takes the CPU it leaves. A flush that is behind runs at the engine's priority. 0 (the default): every flush at the engine's priority; 10 cuts the half-rate tail of long bodies (10,000 lines) but raised that of short ones in some rounds (decisions.md 148). Linux only.
    #[arg(long, env = "TRACKHOUSE_FLUSH_NICE", default_value_t = ingest::DEFAULT_FLUSH_NICE,
          value_parser = clap::value_parser!(u8).range(0..=19))]
    pub(crate) flush_nice: u8,

    /// Keys (tracker, message time, content hash) the deduplication index keeps of stored rows: 12 bytes each as a complete partition's stored keys (sorted runs), about 20 as recent ones (sets); beyond them the least recently used (tracker, day) partitions are dropped, and read again from storage when a late message or a retransmission needs them. Keys of rows still in memory are always kept, beyond this.
    #[arg(long, env = "TRACKHOUSE_DEDUP_MAX_ENTRIES", default_value_t = ingest::DEFAULT_DEDUP_MAX_ENTRIES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=1_000_000_000))]
    pub(crate) dedup_max_entries: usize,

    /// Seconds behind its tracker's newest message that a stored row's key stays in the deduplication index after its flush, so that a retransmission of a recent message is found a duplicate without reading storage (10,000 trackers at 1 Hz: about 40 bytes × 10,000 × this).
    #[arg(long, env = "TRACKHOUSE_DEDUP_RECENT_S", default_value_t = ingest::DEFAULT_DEDUP_RECENT.as_secs(),
          value_parser = clap::builder::RangedU64ValueParser::<u64>::new().range(0..=86_400))]
    pub(crate) dedup_recent_s: u64,

    /// Bytes of decoded Parquet footers (with their page indexes, some hundred kB a flushed file) kept for the deduplication index's reads of stored keys: a late message or a retransmission of a flushed one reads its tracker's keys from every file of its day, and without its footer kept each read decodes it again. 0 keeps none.
    #[arg(long, env = "TRACKHOUSE_DEDUP_FOOTER_CACHE_BYTES", default_value_t = ingest::DEFAULT_DEDUP_FOOTER_CACHE_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=17_179_869_184))]
    pub(crate) dedup_footer_cache_bytes: usize,

    /// Most rows one compaction (merge of a day's small Parquet files) or retention rewrite holds in memory at once.
    #[arg(long, env = "TRACKHOUSE_COMPACT_MAX_ROWS", default_value_t = ingest::DEFAULT_COMPACT_MAX_ROWS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1_000..=1_000_000_000))]
    pub(crate) compact_max_rows: usize,

    /// Parquet files with fewer rows than this are small: a day's small files are merged once it has --compact-min-files of them.
    #[arg(long, env = "TRACKHOUSE_COMPACT_SMALL_ROWS", default_value_t = ingest::DEFAULT_COMPACT_SMALL_ROWS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000_000))]
    pub(crate) compact_small_rows: usize,

    /// Small Parquet files of one UTC day that start a merge.
    #[arg(long, env = "TRACKHOUSE_COMPACT_MIN_FILES", default_value_t = ingest::DEFAULT_COMPACT_MIN_FILES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..=100_000))]
    pub(crate) compact_min_files: usize,

    /// Intake answers HTTP 503 (code 8) with Retry-After while more rows than this wait for a flush.
    #[arg(
        long,
        env = "TRACKHOUSE_MAX_UNFLUSHED_ROWS",
        default_value_t = 4_000_000
    )]
    pub(crate) max_unflushed_rows: usize,

    /// Intake answers HTTP 503 (code 8) with Retry-After while the rows waiting for a flush take more bytes of memory than this (Arrow arrays; flushes falling behind a slow disk or an absent ClickHouse).
    #[arg(
        long,
        env = "TRACKHOUSE_MAX_UNFLUSHED_BYTES",
        default_value_t = ingest::DEFAULT_MAX_UNFLUSHED_BYTES,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1_048_576..)
    )]
    pub(crate) max_unflushed_bytes: usize,

    /// Where flushed telemetry is stored: Parquet files under the data directory (embedded), or ClickHouse.
    #[arg(
        long,
        env = "TRACKHOUSE_STORAGE",
        value_enum,
        default_value = "parquet"
    )]
    pub(crate) storage: Storage,

    /// ClickHouse's HTTP interface (with `--storage clickhouse`).
    #[arg(
        long,
        env = "TRACKHOUSE_CLICKHOUSE_URL",
        default_value = "http://127.0.0.1:8123"
    )]
    pub(crate) clickhouse_url: String,

    /// The ClickHouse database; its tables are created at start if missing.
    #[arg(
        long,
        env = "TRACKHOUSE_CLICKHOUSE_DATABASE",
        default_value = "trackhouse"
    )]
    pub(crate) clickhouse_database: String,

    /// The ClickHouse user (the server's default user if not given).
    #[arg(long, env = "TRACKHOUSE_CLICKHOUSE_USER")]
    pub(crate) clickhouse_user: Option<String>,

    /// The ClickHouse user's password.
    #[arg(long, env = "TRACKHOUSE_CLICKHOUSE_PASSWORD", hide_env_values = true)]
    pub(crate) clickhouse_password: Option<String>,

    /// A ClickHouse cluster (of the servers' `<remote_servers>`): the tables are
    /// created `ON CLUSTER` as in `deploy/clickhouse/cluster.sql` (Distributed
    /// over replicated `*_local` tables) instead of one node's.
    #[arg(long, env = "TRACKHOUSE_CLICKHOUSE_CLUSTER")]
    pub(crate) clickhouse_cluster: Option<String>,

    /// On ClickHouse, a flush waits for this many rows (each INSERT a part, and parts cost merges)...
    #[arg(
        long,
        env = "TRACKHOUSE_CLICKHOUSE_MIN_INSERT_ROWS",
        default_value_t = 10_000
    )]
    pub(crate) clickhouse_min_insert_rows: usize,

    /// ... or until the oldest waiting row is this old (milliseconds).
    #[arg(
        long,
        env = "TRACKHOUSE_CLICKHOUSE_MAX_INSERT_DELAY_MS",
        default_value_t = 30_000
    )]
    pub(crate) clickhouse_max_insert_delay_ms: u64,

    #[command(flatten)]
    pub(crate) log: LogArgs,
}

/// Where flushed telemetry is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Storage {
    /// Parquet files under the data directory.
    Parquet,
    /// A ClickHouse database (`--clickhouse-*`).
    Clickhouse,
}

impl ServerArgs {
    pub(crate) fn ingest_config(&self) -> ingest::IngestConfig {
        ingest::IngestConfig {
            flush_interval: std::time::Duration::from_millis(self.flush_interval_ms.max(1)),
            flush_rows: self.flush_rows.max(1),
            flush_bytes: self.flush_bytes,
            flush_nice: self.flush_nice,
            dedup_max_entries: self.dedup_max_entries,
            dedup_recent: std::time::Duration::from_secs(self.dedup_recent_s),
            dedup_footer_cache_bytes: self.dedup_footer_cache_bytes,
            compact_max_rows: self.compact_max_rows,
            compact_small_rows: self.compact_small_rows,
            compact_min_files: self.compact_min_files,
            max_unflushed_rows: self.max_unflushed_rows.max(1),
            max_unflushed_bytes: self.max_unflushed_bytes,
            max_inner_names_per_day: self.max_inner_names_per_day,
            wal_fsync: !self.unsafe_no_wal_fsync,
            wal_zstd_level: self.wal_zstd_level,
            live_points_per_tracker: self.live_points_per_tracker,
            clickhouse: (self.storage == Storage::Clickhouse).then(|| ingest::ClickHouseConfig {
                min_insert_rows: self.clickhouse_min_insert_rows.max(1),
                max_insert_delay: std::time::Duration::from_millis(
                    self.clickhouse_max_insert_delay_ms,
                ),
                ..ingest::ClickHouseConfig::new(schemas::ClickHouseTable {
                    url: self.clickhouse_url.clone(),
                    database: self.clickhouse_database.clone(),
                    user: self.clickhouse_user.clone(),
                    password: self.clickhouse_password.clone(),
                    cluster: self.clickhouse_cluster.clone(),
                })
            }),
            ..ingest::IngestConfig::new(&self.data_dir)
        }
    }

    pub(crate) fn api_config(&self) -> ApiConfig {
        ApiConfig {
            max_request_bytes: self.max_request_bytes,
            allow_session_auth: self.session_auth,
            rate_limits: RateLimitConfig {
                user_session: self.rate_user_session,
                api_key: self.rate_api_key,
                panel_dealer: self.rate_panel_dealer,
                anonymous_ip: self.rate_anonymous_ip,
            },
            trusted_proxy_hops: self.trusted_proxy_hops,
            link_rate: self.rate_link_ip,
            map_tiles_url: self.map_tiles_url.clone(),
            max_ingest_bytes: self.max_ingest_bytes,
            max_intake_requests: self.max_intake_requests,
            intake_queue_wait: std::time::Duration::from_millis(self.intake_queue_ms),
            intake_parse_tasks: match self.intake_parse_tasks {
                0 => std::thread::available_parallelism().map_or(2, usize::from),
                tasks => tasks,
            },
            intake_chunk_bytes: self.intake_chunk_bytes,
            raw_data_max_span_days: self.raw_data_max_span_days,
            resampling_max_span_days: self.resampling_max_span_days,
            raw_data_max_columns: self.raw_data_max_columns,
            max_listed_rejections: self.max_listed_rejections,
            intake_cache_entries: self.intake_cache_entries,
            metrics_token: self.metrics_token.clone().filter(|t| !t.is_empty()),
            request_body_timeout: std::time::Duration::from_millis(self.request_body_timeout_ms),
            header_read_timeout: std::time::Duration::from_millis(self.header_read_timeout_ms),
            max_reads: self.max_reads,
            max_reads_per_user: self.max_reads_per_user,
            max_inner_entries: self.max_inner_entries,
            max_message_age_days: self.max_message_age_days,
            default_plugins: self.default_plugins.clone(),
            billing_orders_base_url: self.billing_orders_base_url.clone(),
            uploads: platform::UploadRules {
                max_bytes: self.max_upload_bytes,
                max_inflated_bytes: self.max_upload_inflated_bytes,
                max_files: self.max_uploads_per_account,
                ttl: std::time::Duration::from_secs(self.upload_ttl_hours * 3600),
            },
            batch_convert_max_lines: self.batch_convert_max_lines,
            max_upload_users: self.max_upload_users,
            geocoder_results: self.geocoder_results,
            geo_link_quota: self.geo_link_quota,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Logging options.
#[derive(Debug, Clone, Args)]
pub(crate) struct LogArgs {
    /// Log filter, in `tracing` env-filter syntax (`info`, `api=debug,info`).
    #[arg(long, env = "TRACKHOUSE_LOG", default_value = "info")]
    pub(crate) log: String,

    /// Log format.
    #[arg(long, env = "TRACKHOUSE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub(crate) log_format: LogFormat,
}

/// Structured logs on stderr (stdout is kept for the answers of `admin` and `demo`).
pub(crate) fn init_logging(args: &LogArgs) {
    let filter = tracing_subscriber::EnvFilter::try_new(&args.log)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match args.log_format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Cli, Command};

    fn serve(flags: &[&str]) -> ingest::IngestConfig {
        let args = ["trackhouse", "serve"].iter().chain(flags);
        match Cli::try_parse_from(args).unwrap().command {
            Command::Serve(server) => server.ingest_config(),
            _ => unreachable!("parsed serve"),
        }
    }

    #[test]
    fn memory_limits_reach_the_engine() {
        let defaults = serve(&[]);
        assert_eq!(
            (defaults.dedup_max_entries, defaults.compact_max_rows),
            (
                ingest::DEFAULT_DEDUP_MAX_ENTRIES,
                ingest::DEFAULT_COMPACT_MAX_ROWS
            )
        );
        assert_eq!(defaults.dedup_recent, ingest::DEFAULT_DEDUP_RECENT);
        assert_eq!(
            defaults.dedup_footer_cache_bytes,
            ingest::DEFAULT_DEDUP_FOOTER_CACHE_BYTES
        );
        assert_eq!(
            defaults.max_unflushed_bytes,
            ingest::DEFAULT_MAX_UNFLUSHED_BYTES
        );
        let set = serve(&[
            "--dedup-max-entries",
            "5",
            "--compact-max-rows",
            "2000",
            "--dedup-recent-s",
            "7",
            "--dedup-footer-cache-bytes",
            "0",
            "--max-unflushed-bytes",
            "2000000",
        ]);
        assert_eq!(set.max_unflushed_bytes, 2_000_000);
        assert_eq!((set.dedup_max_entries, set.compact_max_rows), (5, 2000));
        assert_eq!(set.dedup_recent, std::time::Duration::from_secs(7));
        assert_eq!(set.dedup_footer_cache_bytes, 0);
        assert_eq!(
            (defaults.compact_small_rows, defaults.compact_min_files),
            (
                ingest::DEFAULT_COMPACT_SMALL_ROWS,
                ingest::DEFAULT_COMPACT_MIN_FILES
            )
        );
        let set = serve(&["--compact-small-rows", "1000", "--compact-min-files", "9"]);
        assert_eq!((set.compact_small_rows, set.compact_min_files), (1000, 9));
        let args = ["trackhouse", "serve", "--compact-min-files", "1"];
        assert!(
            Cli::try_parse_from(args).is_err(),
            "a merge needs two files"
        );
        let args = ["trackhouse", "serve", "--compact-max-rows", "10"];
        assert!(Cli::try_parse_from(args).is_err(), "below the range");
        let args = ["trackhouse", "serve", "--max-unflushed-bytes", "1000"];
        assert!(Cli::try_parse_from(args).is_err(), "below a MiB");
    }
}
