//! ClickHouse for real (Debian's `clickhouse-server`, which `.ci/run`
//! installs, started on free ports by `deploy/clickhouse/local-server.sh`):
//! `deploy/clickhouse/schema.sql` applies cleanly and twice, its columns are
//! the message model's (`schemas::columns`) and it deduplicates as its
//! comments promise; `ingest::clickhouse` inserts stored batches that read
//! back the same, and an insert waits for a stopped server to return; the
//! engine on ClickHouse does not store a replayed WAL twice and applies
//! each tracker's retention, and sets aside the rows ClickHouse refuses
//! while storing every other row.

// A test harness: a failed step is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use ingest::clickhouse::statements;
use schemas::columns::{self, InnerKind, SimpleType};

/// A throwaway server (`ingest::clickhouse::LocalServer`) and its directory.
struct ClickHouse {
    url: String,
    server: ingest::clickhouse::LocalServer,
    _dir: tempfile::TempDir,
}

impl ClickHouse {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let server = ingest::clickhouse::LocalServer::start(dir.path()).unwrap();
        Self {
            url: server.url().to_owned(),
            server,
            _dir: dir,
        }
    }

    /// Starts the server again on its directory and ports.
    fn launch(&mut self) {
        self.server.launch().unwrap();
    }

    fn stop(&mut self) {
        self.server.stop();
    }

    async fn query(&self, sql: &str) -> String {
        query_at(&self.url, sql).await
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The ClickHouse type each stored column must have: the message model's
/// Arrow types, times as epoch milliseconds, inner values as Nested arrays.
fn expected_columns() -> Vec<(String, String)> {
    let mut expected = vec![
        (columns::TRACKER_ID.to_owned(), "Int64".to_owned()),
        (columns::MESSAGE_TIME.to_owned(), "Int64".to_owned()),
        (columns::SERVER_TIME.to_owned(), "Int64".to_owned()),
        ("content_hash".to_owned(), "UInt64".to_owned()),
        (columns::FLAGS.to_owned(), "Nullable(Int64)".to_owned()),
    ];
    let clickhouse = |ty: SimpleType| match ty {
        SimpleType::UInt8 => "UInt8",
        SimpleType::Int32 => "Int32",
        SimpleType::Int64 => "Int64",
        SimpleType::Float64 => "Float64",
        SimpleType::Utf8 => "String",
    };
    for (name, ty) in columns::SIMPLE_COLUMNS {
        expected.push(((*name).to_owned(), format!("Nullable({})", clickhouse(*ty))));
    }
    for kind in InnerKind::ALL {
        let value = match kind.data_type() {
            arrow::datatypes::DataType::UInt8 => "UInt8",
            arrow::datatypes::DataType::Float64 => "Float64",
            arrow::datatypes::DataType::Utf8 => "String",
            other => panic!("no ClickHouse type for {other}"),
        };
        let prefix = kind.prefix();
        expected.push((format!("{prefix}.name"), "Array(String)".to_owned()));
        expected.push((format!("{prefix}.value"), format!("Array({value})")));
    }
    expected
}

#[tokio::test]
async fn the_one_node_schema_matches_the_message_model_and_deduplicates() {
    let server = ClickHouse::start();
    let sql = std::fs::read_to_string(repo().join("deploy/clickhouse/schema.sql")).unwrap();
    // Twice: a restart applies it again.
    for _ in 0..2 {
        for statement in statements(&sql) {
            server.query(&statement).await;
        }
    }

    // DESCRIBE lists the columns in order on every release (18.16's
    // system.columns has no position); its third field is the default kind.
    let stored = server
        .query("DESCRIBE TABLE trackhouse.telemetry FORMAT TSV")
        .await;
    let stored: Vec<(String, String)> = stored
        .lines()
        .map(|line| line.split('\t').collect::<Vec<_>>())
        .filter(|fields| fields.get(2).is_none_or(|kind| kind.is_empty()))
        .map(|fields| (fields[0].to_owned(), fields[1].to_owned()))
        .collect();
    assert_eq!(stored, expected_columns());

    // Two arrivals of one message (same content hash), another message in the same millisecond.
    server
        .query(
            "INSERT INTO trackhouse.telemetry (tracker_id, msg_time, server_time, content_hash, \
             lat, inputs.name, inputs.value) VALUES \
             (7, 1717200000000, 1717200005000, 11, 1.5, ['lls_level_1'], [12.5]), \
             (7, 1717200000000, 1717200001000, 11, 1.5, ['lls_level_1'], [12.5]), \
             (7, 1717200000000, 1717200002000, 12, 2.5, [], [])",
        )
        .await;
    let read = "SELECT content_hash, server_time, lat FROM trackhouse.telemetry \
                WHERE tracker_id = 7 ORDER BY tracker_id, msg_time, content_hash, server_time \
                LIMIT 1 BY tracker_id, msg_time, content_hash FORMAT TSV";
    let expected = "11\t1717200001000\t1.5\n12\t1717200002000\t2.5\n";
    assert_eq!(
        server.query(read).await,
        expected,
        "read-time dedup keeps the first arrival"
    );
    server
        .query("OPTIMIZE TABLE trackhouse.telemetry FINAL")
        .await;
    assert_eq!(
        server
            .query("SELECT count() FROM trackhouse.telemetry FORMAT TSV")
            .await,
        "2\n",
        "a merge folds the duplicate"
    );
    assert_eq!(
        server.query(read).await,
        expected,
        "and keeps the first arrival"
    );
}

#[tokio::test]
async fn stored_batches_insert_as_rowbinary_and_read_back_the_same() {
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
        TimestampMillisecondArray, UInt8Array, UInt64Array, new_null_array,
    };

    let server = ClickHouse::start();
    let sql = std::fs::read_to_string(repo().join("deploy/clickhouse/schema.sql")).unwrap();
    for statement in statements(&sql) {
        server.query(&statement).await;
    }

    // Two messages: one with values everywhere it can, one nearly empty.
    let inner = [
        "discrete_inputs.1".to_owned(),
        "inputs.lls_level_1".to_owned(),
        "inputs.can_rpm".to_owned(),
        "states.ignition".to_owned(),
    ];
    let schema = columns::schema_with(&inner);
    let arrays: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|field| -> ArrayRef {
            match field.name().as_str() {
                "tracker_id" => Arc::new(Int64Array::from(vec![7, 7])),
                "msg_time" => Arc::new(
                    TimestampMillisecondArray::from(vec![1_717_200_000_123, 1_717_200_001_000])
                        .with_timezone("UTC"),
                ),
                "server_time" => Arc::new(
                    TimestampMillisecondArray::from(vec![1_717_200_005_000, 1_717_200_006_000])
                        .with_timezone("UTC"),
                ),
                "_content_hash" => Arc::new(UInt64Array::from(vec![u64::MAX, 5])),
                "lat" => Arc::new(Float64Array::from(vec![Some(55.75), None])),
                "alt" => Arc::new(Int32Array::from(vec![Some(-12), None])),
                "gps_fix_type" => Arc::new(UInt8Array::from(vec![Some(2), None])),
                "mn_name" => Arc::new(StringArray::from(vec![Some("Tele2, \"RU\""), None])),
                "flags" => Arc::new(Int64Array::from(vec![Some(3), None])),
                "discrete_inputs.1" => Arc::new(UInt8Array::from(vec![Some(1), None])),
                "inputs.lls_level_1" => Arc::new(Float64Array::from(vec![Some(1234.5), Some(1.0)])),
                "inputs.can_rpm" => Arc::new(Float64Array::from(vec![Some(800.0), None])),
                "states.ignition" => Arc::new(StringArray::from(vec![Some("true"), None])),
                _ => new_null_array(field.data_type(), 2),
            }
        })
        .collect();
    let batch = RecordBatch::try_new(schema, arrays).unwrap();
    let rows = ingest::clickhouse::rows_of(&batch).unwrap();

    let client = clickhouse::Client::default()
        .with_url(&server.url)
        .with_database("trackhouse");
    let mut insert = client
        .insert::<ingest::clickhouse::TelemetryRow<'_>>("telemetry")
        .unwrap();
    for row in &rows {
        insert.write(row).await.unwrap();
    }
    insert.end().await.unwrap();

    let stored = server
        .query(
            "SELECT tracker_id, msg_time, server_time, content_hash, flags, gps_fix_type, lat, \
             alt, mn_name, discrete_inputs.name, discrete_inputs.value, inputs.name, \
             inputs.value, states.name, states.value FROM trackhouse.telemetry \
             ORDER BY msg_time FORMAT TSV",
        )
        .await;
    assert_eq!(
        stored,
        "7\t1717200000123\t1717200005000\t18446744073709551615\t3\t2\t55.75\t-12\tTele2, \"RU\"\t\
         ['1']\t[1]\t['lls_level_1','can_rpm']\t[1234.5,800]\t['ignition']\t['true']\n\
         7\t1717200001000\t1717200006000\t5\t\\N\t\\N\t\\N\t\\N\t\\N\t[]\t[]\t['lls_level_1']\t[1]\t[]\t[]\n"
    );
}

#[tokio::test]
async fn an_insert_waits_for_clickhouse_to_come_back_and_then_stores_every_row() {
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, Int64Array, RecordBatch, TimestampMillisecondArray, UInt64Array, new_null_array,
    };
    use ingest::clickhouse::{Backoff, insert};

    let mut server = ClickHouse::start();
    let sql = std::fs::read_to_string(repo().join("deploy/clickhouse/schema.sql")).unwrap();
    for statement in statements(&sql) {
        server.query(&statement).await;
    }
    // Three batches, 25,000 rows: one INSERT.
    let batch = |first: i64, rows: i64| {
        let schema = columns::schema_with(&[]);
        let arrays: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|field| -> ArrayRef {
                match field.name().as_str() {
                    "tracker_id" => Arc::new(Int64Array::from(vec![3; rows as usize])),
                    "msg_time" | "server_time" => Arc::new(
                        TimestampMillisecondArray::from_iter_values(
                            (first..first + rows).map(|i| i * 1000),
                        )
                        .with_timezone("UTC"),
                    ),
                    "_content_hash" => Arc::new(UInt64Array::from_iter_values(
                        (first..first + rows).map(|i| i as u64),
                    )),
                    _ => new_null_array(field.data_type(), rows as usize),
                }
            })
            .collect();
        RecordBatch::try_new(schema, arrays).unwrap()
    };
    let batches = vec![batch(0, 8_000), batch(8_000, 8_000), batch(16_000, 9_000)];

    server.stop();
    let client = clickhouse::Client::default()
        .with_url(&server.url)
        .with_database("trackhouse");
    let backoff = Backoff {
        first: std::time::Duration::from_millis(50),
        max: std::time::Duration::from_millis(400),
        give_up_after: None,
    };
    let writing =
        tokio::spawn(async move { insert(&client, "telemetry", &batches, backoff, None).await });
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    assert!(
        !writing.is_finished(),
        "nothing can be stored while ClickHouse is down"
    );
    server.launch();
    let inserted = tokio::time::timeout(std::time::Duration::from_secs(30), writing)
        .await
        .expect("the insert completes once ClickHouse is back")
        .unwrap()
        .unwrap();
    assert_eq!((inserted.rows, inserted.refused.len()), (25_000, 0));
    let stored = server
        .query(
            "SELECT count(), uniqExact(content_hash), min(msg_time), max(msg_time) \
             FROM trackhouse.telemetry FORMAT TSV",
        )
        .await;
    assert_eq!(stored, "25000\t25000\t0\t24999000\n");
    // One INSERT of 25,000 rows (one block), which wrote one level-0
    // part (merged parts stay listed, inactive, for minutes).
    let parts = server
        .query(
            "SELECT countIf(level = 0), sumIf(rows, level = 0) FROM system.parts \
             WHERE database = 'trackhouse' AND table = 'telemetry' FORMAT TSV",
        )
        .await;
    assert_eq!(parts, "1\t25000\n");

    // With a limit, a server that stays down is an error, not a hang.
    server.stop();
    let client = clickhouse::Client::default()
        .with_url(&server.url)
        .with_database("trackhouse");
    let give_up = Backoff {
        give_up_after: Some(std::time::Duration::from_millis(300)),
        ..backoff
    };
    let error = insert(&client, "telemetry", &[batch(30_000, 10)], give_up, None)
        .await
        .unwrap_err();
    assert!(
        matches!(error, ingest::Error::ClickHouse { .. }),
        "{error:?}"
    );
}

/// The column list of a file's first CREATE TABLE with one (comments and
/// spacing dropped).
fn column_list(sql: &str, table: &str) -> String {
    let statement = statements(sql)
        .into_iter()
        .find(|s| {
            s.split_whitespace().nth(5) == Some(&format!("trackhouse.{table}"))
                && s.contains("ENGINE")
        })
        .unwrap();
    let start = statement.find('(').unwrap();
    let end = statement.find("ENGINE").unwrap();
    statement[start..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_cluster_tables_have_the_one_node_columns() {
    // The test on a cluster below checks what is stored; the columns and
    // their types must not drift from schema.sql's, which the tests above
    // check against the message model. keep_first is computed the same way
    // (DEFAULT on a cluster: see cluster.sql).
    let read =
        |file: &str| std::fs::read_to_string(repo().join("deploy/clickhouse").join(file)).unwrap();
    let one_node = column_list(&read("schema.sql"), "telemetry");
    assert!(
        one_node.contains("keep_first UInt64 MATERIALIZED"),
        "{one_node}"
    );
    assert_eq!(
        column_list(&read("cluster.sql"), "telemetry_local"),
        one_node.replace(
            "keep_first UInt64 MATERIALIZED",
            "keep_first UInt64 DEFAULT"
        )
    );
    assert_eq!(
        column_list(&read("cluster.sql"), "inner_columns_local"),
        column_list(&read("schema.sql"), "inner_columns")
    );
}

fn message(tracker: i64, time_ms: i64) -> schemas::Message {
    schemas::Message {
        tracker_id: schemas::TrackerId(tracker),
        message_time_ms: time_ms,
        server_time_ms: 1_717_300_000_000,
        speed: Some(time_ms as f64 / 1000.0),
        inputs: vec![("lls_level_1".into(), 1.0)],
        ..schemas::Message::default()
    }
}

fn engine(dir: &Path, url: &str, database: &str) -> ingest::Ingest {
    engine_with(dir, url, database, |c| c)
}

fn engine_with(
    dir: &Path,
    url: &str,
    database: &str,
    tune: impl FnOnce(ingest::IngestConfig) -> ingest::IngestConfig,
) -> ingest::Ingest {
    let config = ingest::IngestConfig {
        flush_interval: std::time::Duration::from_secs(3600),
        retention_interval: std::time::Duration::from_millis(100),
        clickhouse: Some(ingest::ClickHouseConfig {
            backoff: ingest::clickhouse::Backoff {
                first: std::time::Duration::from_millis(20),
                max: std::time::Duration::from_millis(100),
                give_up_after: Some(std::time::Duration::from_millis(300)),
            },
            ..ingest::ClickHouseConfig::new(schemas::ClickHouseTable {
                url: url.to_owned(),
                database: database.to_owned(),
                user: None,
                password: None,
                cluster: None,
            })
        }),
        ..ingest::IngestConfig::new(dir)
    };
    ingest::Ingest::open(
        tune(config),
        &mut prometheus_client::registry::Registry::default(),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wal_replayed_after_clickhouse_stored_its_rows_is_not_stored_twice() {
    let server = ClickHouse::start();
    let dir = tempfile::tempdir().unwrap();
    let ingest = engine(dir.path(), &server.url, "replay");
    let messages: Vec<_> = (0..1_000)
        .map(|i| message(5, 1_717_200_000_000 + i * 1000))
        .collect();
    assert_eq!(ingest.write(messages).await.unwrap().accepted, 1_000);

    // ClickHouse stores the rows, but the worker cannot record that it did
    // (its progress file cannot be replaced): as if it crashed in between.
    let blocker = dir.path().join("clickhouse/flushed_wal_segment.tmp");
    std::fs::create_dir_all(&blocker).unwrap();
    let flushed = tokio::task::spawn_blocking({
        let ingest = std::sync::Arc::new(ingest);
        move || {
            let outcome = ingest.flush();
            drop(ingest);
            outcome
        }
    })
    .await
    .unwrap();
    assert!(flushed.is_err(), "the progress could not be recorded");
    let physical = "SELECT count() FROM replay.telemetry FORMAT TSV";
    assert!(server.query(physical).await.trim().parse::<u64>().unwrap() >= 1_000);

    // Restarted: the WAL is replayed and its rows inserted again.
    std::fs::remove_dir(&blocker).unwrap();
    let reopened = std::sync::Arc::new(engine(dir.path(), &server.url, "replay"));
    let flush = {
        let reopened = reopened.clone();
        tokio::task::spawn_blocking(move || reopened.flush())
    };
    flush.await.unwrap().unwrap();
    let copies: u64 = server.query(physical).await.trim().parse().unwrap();
    assert!(
        copies >= 2_000,
        "the replay stored the rows again ({copies})"
    );
    let deduplicated = "SELECT count(), uniqExact(msg_time) FROM (SELECT msg_time FROM replay.telemetry \
         ORDER BY tracker_id, msg_time, content_hash, server_time LIMIT 1 BY tracker_id, msg_time, content_hash) FORMAT TSV";
    assert_eq!(
        server.query(deduplicated).await,
        "1000\t1000\n",
        "readers see each message once"
    );
    server.query("OPTIMIZE TABLE replay.telemetry FINAL").await;
    assert_eq!(
        server.query(physical).await,
        "1000\n",
        "and a merge folds the copies"
    );

    // The recorded progress holds across a restart: nothing is replayed again.
    drop(reopened);
    let again = std::sync::Arc::new(engine(dir.path(), &server.url, "replay"));
    tokio::task::spawn_blocking({
        let again = again.clone();
        move || again.flush()
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(server.query(physical).await, "1000\n");
    assert_eq!(
        server
            .query("SELECT DISTINCT tracker_id, day, name FROM replay.inner_columns FORMAT TSV")
            .await,
        "5\t19875\tinputs.lls_level_1\n",
        "the inner column's name is listed for its tracker and day"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_deletes_each_trackers_expired_rows_and_names_in_clickhouse() {
    let server = ClickHouse::start();
    let dir = tempfile::tempdir().unwrap();
    let ingest = std::sync::Arc::new(engine(dir.path(), &server.url, "retention"));
    const DAY: i64 = 86_400_000;
    let first = 19_875 * DAY; // 2024-06-01
    let messages: Vec<_> = [7, 8]
        .into_iter()
        .flat_map(|tracker| (0..3).map(move |day| message(tracker, first + day * DAY + 3_600_000)))
        .collect();
    assert_eq!(ingest.write(messages).await.unwrap().accepted, 6);
    tokio::task::spawn_blocking({
        let ingest = ingest.clone();
        move || ingest.flush()
    })
    .await
    .unwrap()
    .unwrap();

    // Tracker 7 keeps from its third day, tracker 8 everything.
    ingest.set_retention(
        [(7, first + 2 * DAY), (8, first - DAY)]
            .into_iter()
            .collect(),
    );
    let rows = "SELECT tracker_id, intDiv(msg_time, 86400000) FROM retention.telemetry \
                ORDER BY tracker_id, msg_time FORMAT TSV";
    let expected = "7\t19877\n8\t19875\n8\t19876\n8\t19877\n";
    let mut stored = String::new();
    for _ in 0..100 {
        stored = server.query(rows).await;
        if stored == expected {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        stored, expected,
        "the mutation deleted tracker 7's first two days only"
    );
    let names =
        "SELECT tracker_id, day FROM retention.inner_columns ORDER BY tracker_id, day FORMAT TSV";
    let mut listed = String::new();
    for _ in 0..100 {
        listed = server.query(names).await;
        if listed == expected {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(listed, expected, "and their inner column names");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_started_while_clickhouse_is_down_acknowledges_and_stores_once_it_is_up() {
    let mut server = ClickHouse::start();
    server.stop();
    let dir = tempfile::tempdir().unwrap();
    let ingest = std::sync::Arc::new(engine(dir.path(), &server.url, "late"));
    let messages: Vec<_> = (0..10)
        .map(|i| message(3, 1_717_200_000_000 + i * 1000))
        .collect();
    assert_eq!(ingest.write(messages).await.unwrap().accepted, 10);
    let flush = |ingest: std::sync::Arc<ingest::Ingest>| async move {
        tokio::task::spawn_blocking(move || ingest.flush())
            .await
            .unwrap()
    };
    assert!(flush(ingest.clone()).await.is_err(), "nowhere to flush to");
    server.launch();
    flush(ingest.clone()).await.unwrap();
    assert_eq!(
        server
            .query("SELECT count(), min(msg_time) FROM late.telemetry FORMAT TSV")
            .await,
        "10\t1717200000000\n",
        "the schema was created and the rows stored once ClickHouse answered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_clickhouse_refuses_are_set_aside_and_every_other_row_is_stored() {
    let server = ClickHouse::start();
    let dir = tempfile::tempdir().unwrap();
    let mut registry = prometheus_client::registry::Registry::default();
    let open = |registry: &mut prometheus_client::registry::Registry| {
        let mut config = ingest::IngestConfig {
            flush_interval: std::time::Duration::from_secs(3600),
            clickhouse: Some(ingest::ClickHouseConfig::new(schemas::ClickHouseTable {
                url: server.url.clone(),
                database: "refusing".to_owned(),
                user: None,
                password: None,
                cluster: None,
            })),
            ..ingest::IngestConfig::new(dir.path())
        };
        if let Some(clickhouse) = config.clickhouse.as_mut() {
            clickhouse.backoff.give_up_after = Some(std::time::Duration::from_secs(2));
        }
        std::sync::Arc::new(ingest::Ingest::open(config, registry).unwrap())
    };
    let ingest = open(&mut registry);
    // ClickHouse refuses a row for what it holds, as a constraint would
    // (18.16 has none): a materialized view throws on latitude 66.6.
    server
        .query("CREATE TABLE refusing.trap (refused UInt8) ENGINE = Null")
        .await;
    server
        .query(
            "CREATE MATERIALIZED VIEW refusing.trap_view TO refusing.trap AS \
             SELECT throwIf(ifNull(lat, 0) = 66.6) AS refused FROM refusing.telemetry",
        )
        .await;
    let mut messages: Vec<_> = (0..2_000)
        .map(|i| message(5 + i % 2, 1_717_200_000_000 + i * 1000))
        .collect();
    for at in [700, 1_301] {
        messages[at].lat = Some(66.6);
        messages[at].inputs.push(("refused".into(), 1.0));
    }
    assert_eq!(
        ingest.write(messages.clone()).await.unwrap().accepted,
        2_000
    );
    let flush = |ingest: std::sync::Arc<ingest::Ingest>| async move {
        tokio::task::spawn_blocking(move || ingest.flush())
            .await
            .unwrap()
    };
    flush(ingest.clone())
        .await
        .expect("the flush stores what it can and sets the rest aside");

    let stored = "SELECT count(), uniqExact(tracker_id, msg_time) FROM (SELECT tracker_id, msg_time FROM refusing.telemetry \
         WHERE ifNull(lat, 0) != 66.6 LIMIT 1 BY tracker_id, msg_time, content_hash) FORMAT TSV";
    assert_eq!(
        server.query(stored).await,
        "1998\t1998\n",
        "every other row is stored"
    );

    let dead_letter = dir.path().join("clickhouse/dead-letter");
    let files: Vec<_> = std::fs::read_dir(&dead_letter)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines.sort_by_key(|l| l["line"]["msg_time"].as_str().unwrap().to_owned());
    assert_eq!(lines.len(), 2, "{text}");
    for (entry, at) in lines.iter().zip([700, 1_301]) {
        assert_eq!(entry["error"]["code"], 395, "{entry}");
        assert!(
            entry["error"]["message"]
                .as_str()
                .unwrap()
                .contains("throwIf")
        );
        let expected = &messages[at];
        let time = chrono::DateTime::from_timestamp_millis(expected.message_time_ms)
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        assert_eq!(
            entry["line"],
            serde_json::json!({
                "tracker_id": expected.tracker_id.0,
                "msg_time": time,
                "server_time": "2024-06-02T03:46:40.000Z",
                "lat": 66.6,
                "speed": expected.speed.unwrap(),
                "inputs": {"lls_level_1": 1.0, "refused": 1.0},
            }),
            "the row as an intake line"
        );
    }
    let mut metrics = String::new();
    prometheus_client::encoding::text::encode(&mut metrics, &registry).unwrap();
    assert!(
        metrics.contains("trackhouse_clickhouse_dead_letter_rows_total 2\n"),
        "{metrics}"
    );

    // The WAL segment was recorded: neither another flush nor a restart
    // inserts or sets aside anything again.
    flush(ingest.clone()).await.unwrap();
    drop(ingest);
    let reopened = open(&mut prometheus_client::registry::Registry::default());
    flush(reopened.clone()).await.unwrap();
    assert_eq!(std::fs::read_dir(&dead_letter).unwrap().count(), 1);
    assert_eq!(server.query(stored).await, "1998\t1998\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flushes_to_clickhouse_wait_for_enough_rows_or_the_longest_delay() {
    use std::time::{Duration, Instant};
    let server = ClickHouse::start();
    let dir = tempfile::tempdir().unwrap();
    let ingest = engine_with(dir.path(), &server.url, "batching", |c| {
        ingest::IngestConfig {
            flush_interval: Duration::from_millis(50),
            clickhouse: c.clickhouse.map(|ch| ingest::ClickHouseConfig {
                min_insert_rows: 100,
                max_insert_delay: Duration::from_secs(4),
                ..ch
            }),
            ..c
        }
    });
    let count = "SELECT count() FROM batching.telemetry FORMAT TSV";
    let write = |from: i64, n: i64| {
        ingest.write(
            (from..from + n)
                .map(|i| message(4, 1_717_200_000_000 + i * 1000))
                .collect(),
        )
    };
    let wait_for = |expected: &'static str, within: Duration| {
        let server = &server;
        async move {
            let started = Instant::now();
            loop {
                let stored = server.query(count).await;
                if stored == expected || started.elapsed() > within {
                    return stored;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };

    write(0, 10).await.unwrap();
    let first = Instant::now();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(server.query(count).await, "0\n", "10 rows wait for more");
    write(10, 100).await.unwrap();
    assert_eq!(wait_for("110\n", Duration::from_secs(2)).await, "110\n");
    assert!(
        first.elapsed() < Duration::from_secs(4),
        "flushed for its size, before the longest delay"
    );

    write(110, 5).await.unwrap();
    let quiet = Instant::now();
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(server.query(count).await, "110\n", "5 rows wait");
    assert_eq!(wait_for("115\n", Duration::from_secs(8)).await, "115\n");
    assert!(
        quiet.elapsed() >= Duration::from_secs(4),
        "a quiet fleet's rows go after the longest delay"
    );
}

#[test]
fn a_database_or_cluster_name_that_is_not_a_plain_identifier_is_refused_before_connecting() {
    let names = ["", "1fleet", "fleet-1", "fleet`; DROP", "flé"];
    let databases = names.map(|name| (name, None));
    let clusters = names.map(|name| ("fleet", Some(name)));
    for (name, cluster) in databases.into_iter().chain(clusters) {
        let dir = tempfile::tempdir().unwrap();
        let config = ingest::IngestConfig {
            clickhouse: Some(ingest::ClickHouseConfig::new(schemas::ClickHouseTable {
                url: "http://127.0.0.1:1".into(),
                database: name.into(),
                user: None,
                password: None,
                cluster: cluster.map(str::to_owned),
            })),
            ..ingest::IngestConfig::new(dir.path())
        };
        let refused = ingest::Ingest::open(
            config,
            &mut prometheus_client::registry::Registry::default(),
        );
        assert!(
            matches!(refused, Err(ingest::Error::Config(_))),
            "`{name}` on {cluster:?}: {refused:?}"
        );
    }
}

/// `sql`'s answer from the server at `url`.
async fn query_at(url: &str, sql: &str) -> String {
    let answer = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(120))
        .build()
        .unwrap()
        .post(url)
        .body(sql.to_owned())
        .send()
        .await
        .unwrap();
    let status = answer.status();
    let body = answer.text().await.unwrap();
    assert!(status.is_success(), "{url}: {sql}\n→ {status}: {body}");
    body
}

/// Polls `sql` on `url` (for up to 20 s) until it answers `expected`; the
/// last answer.
async fn wait_for(url: &str, sql: &str, expected: &str) -> String {
    let mut answer = String::new();
    for _ in 0..200 {
        answer = query_at(url, sql).await;
        if answer == expected {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_each_trackers_rows_live_on_one_shard_replicated_once_and_expire_there() {
    // cluster.sql for real: ZooKeeper, two shards of two replicas.
    let dir = tempfile::tempdir().unwrap();
    let cluster =
        ingest::clickhouse::LocalCluster::start(&dir.path().join("cluster"), 2, 2, None).unwrap();
    let on_cluster = |c: ingest::IngestConfig| ingest::IngestConfig {
        clickhouse: c.clickhouse.map(|mut ch| {
            ch.table.cluster = Some(ingest::clickhouse::LocalCluster::NAME.to_owned());
            ch
        }),
        ..c
    };
    let data = dir.path().join("data");
    let ingest = engine_with(&data, cluster.url(), "fleet", on_cluster);
    const DAY: i64 = 86_400_000;
    let first = 19_875 * DAY; // 2024-06-01
    let trackers = 1..=20_i64;
    let messages: Vec<_> = trackers
        .clone()
        .flat_map(|t| (0..100).map(move |i| message(t, first + i * 3_600_000)))
        .collect();
    assert_eq!(ingest.write(messages).await.unwrap().accepted, 2_000);

    // The worker cannot record its progress after the INSERT, as if it
    // crashed; reopened, it replays the WAL into the cluster again.
    let blocker = data.join("clickhouse/flushed_wal_segment.tmp");
    std::fs::create_dir_all(&blocker).unwrap();
    let ingest = std::sync::Arc::new(ingest);
    let flush = |ingest: std::sync::Arc<ingest::Ingest>| async move {
        tokio::task::spawn_blocking(move || ingest.flush())
            .await
            .unwrap()
    };
    assert!(
        flush(ingest.clone()).await.is_err(),
        "progress not recorded"
    );
    drop(ingest);
    std::fs::remove_dir(&blocker).unwrap();
    let ingest = std::sync::Arc::new(engine_with(&data, cluster.url(), "fleet", on_cluster));
    flush(ingest.clone()).await.unwrap();

    // Through the Distributed table, with the INSERT answered: every row,
    // once after deduplication. (Replicated tables also fold an INSERT
    // block identical to a recent one on arrival, as the replay's are here;
    // reads must not count on it.)
    let url = cluster.url();
    let physical: u64 = query_at(url, "SELECT count() FROM fleet.telemetry FORMAT TSV")
        .await
        .trim()
        .parse()
        .unwrap();
    assert!((2_000..=4_000).contains(&physical), "{physical}");
    let deduplicated = "SELECT count() FROM (SELECT 1 FROM fleet.telemetry \
         LIMIT 1 BY tracker_id, msg_time, content_hash) FORMAT TSV";
    assert_eq!(query_at(url, deduplicated).await, "2000\n");

    // Each shard holds whole trackers, both shards some; each shard's
    // replicas hold the same rows.
    let urls = cluster.urls();
    let per_tracker = "SELECT tracker_id, count() FROM (SELECT tracker_id FROM fleet.telemetry_local \
                       LIMIT 1 BY tracker_id, msg_time, content_hash) \
                       GROUP BY tracker_id ORDER BY tracker_id FORMAT TSV";
    let mut shards = Vec::new();
    for replicas in urls.chunks(2) {
        let held = query_at(replicas[0], per_tracker).await;
        assert_eq!(
            wait_for(replicas[1], per_tracker, &held).await,
            held,
            "replicated"
        );
        shards.push(held);
    }
    let mut held: Vec<(i64, u64)> = shards
        .iter()
        .flat_map(|shard| shard.lines())
        .map(|line| {
            let (tracker, rows) = line.split_once('\t').unwrap();
            (tracker.parse().unwrap(), rows.parse().unwrap())
        })
        .collect();
    assert!(shards.iter().all(|shard| !shard.is_empty()), "{shards:?}");
    held.sort();
    assert_eq!(
        held,
        trackers.clone().map(|t| (t, 100)).collect::<Vec<_>>(),
        "every tracker on exactly one shard, with its 100 messages"
    );

    // Retention mutates every shard's local tables: trackers 1-10 keep
    // from their third day, 11-20 everything.
    ingest.set_retention(
        trackers
            .clone()
            .map(|t| {
                (
                    t,
                    if t <= 10 {
                        first + 2 * DAY
                    } else {
                        first - DAY
                    },
                )
            })
            .collect(),
    );
    let expired = "SELECT count() FROM fleet.telemetry_local \
                   WHERE tracker_id <= 10 AND msg_time < 1717372800000 FORMAT TSV";
    let names = "SELECT count() FROM fleet.inner_columns_local \
                 WHERE tracker_id <= 10 AND day < 19877 FORMAT TSV";
    for url in &urls {
        assert_eq!(wait_for(url, expired, "0\n").await, "0\n", "{url}: rows");
        assert_eq!(wait_for(url, names, "0\n").await, "0\n", "{url}: names");
    }
    let kept = "SELECT count() FROM (SELECT 1 FROM fleet.telemetry \
                LIMIT 1 BY tracker_id, msg_time, content_hash) FORMAT TSV";
    // 10 trackers × 52 of their 100 hours past the cutoff, 10 × 100.
    assert_eq!(query_at(url, kept).await, "1520\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clickhouse_that_never_answers_holds_neither_the_start_nor_each_new_partition() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;
    // Accepts connections and never answers: a hung server, a half-open network.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    std::thread::spawn({
        let accepted = accepted.clone();
        move || {
            let mut held = Vec::new();
            for connection in listener.incoming() {
                accepted.fetch_add(1, Ordering::SeqCst);
                held.push(connection);
            }
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    let open = tokio::task::spawn_blocking(move || {
        engine_with(&path, &url, "silent", |c| ingest::IngestConfig {
            clickhouse: c.clickhouse.map(|ch| ingest::ClickHouseConfig {
                query_timeout: Duration::from_millis(300),
                request_timeout: Duration::from_millis(300),
                ..ch
            }),
            ..c
        })
    });
    let ingest = tokio::time::timeout(Duration::from_secs(20), open)
        .await
        .expect("the start waits one query timeout for the schema, not for an answer")
        .unwrap();
    let at_open = accepted.load(Ordering::SeqCst);
    assert_eq!(at_open, 1, "the schema was asked for once");

    // Ten trackers' first messages: ten (tracker, day) partitions whose
    // stored keys the deduplication would ask for.
    let messages: Vec<_> = (1..=10)
        .map(|tracker| message(tracker, 1_717_200_000_000))
        .collect();
    assert_eq!(ingest.write(messages).await.unwrap().accepted, 10);
    assert_eq!(
        accepted.load(Ordering::SeqCst) - at_open,
        1,
        "one request for stored keys timed out; the other nine partitions went by memory at once"
    );

    // A flush gives up after its attempts time out (the rows stay in the
    // WAL), and shutting down does not wait for an answer either.
    let ingest = Arc::new(ingest);
    let flushed = tokio::time::timeout(Duration::from_secs(20), {
        let ingest = ingest.clone();
        tokio::task::spawn_blocking(move || ingest.flush())
    })
    .await
    .expect("a flush gives up within its timeouts")
    .unwrap();
    assert!(flushed.is_err(), "nothing confirmed the rows");
    let closed = tokio::task::spawn_blocking(move || drop(ingest));
    tokio::time::timeout(Duration::from_secs(20), closed)
        .await
        .expect("shutdown gives up within its timeouts")
        .unwrap();
}

/// A server watching a process stops once that process has exited, and its
/// state goes with it: a test process's shared server, whose temporary
/// directory a static holds and never drops, leaves nothing behind.
#[test]
fn a_watched_server_stops_and_removes_its_state_when_the_process_exits() {
    let dir = tempfile::tempdir().unwrap();
    let mut watched = std::process::Command::new("sleep")
        .arg("3")
        .spawn()
        .unwrap();
    let server =
        ingest::clickhouse::LocalServer::start_watching(dir.path(), Some(watched.id())).unwrap();
    let state = dir.path().join("attempt-0");
    assert!(state.join("config.xml").is_file(), "the server's state");
    let ping = |url: &str| {
        let host = url.trim_start_matches("http://");
        std::net::TcpStream::connect(host).is_ok()
    };
    assert!(ping(server.url()), "the server answers");
    watched.wait().unwrap();
    // The watcher looks every second, then waits for the server to exit.
    let gone = (0..120).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(250));
        !state.exists()
    });
    assert!(gone, "the state outlived the watched process");
    assert!(
        !ping(server.url()),
        "the server outlived the watched process"
    );
    // Dropping the handle finds nothing left to stop.
    drop(server);
}
