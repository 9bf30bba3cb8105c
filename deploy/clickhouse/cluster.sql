-- Trackhouse telemetry on a ClickHouse cluster: one replicated table per
-- shard, and a Distributed table over them sharded by tracker id, so that all
-- of a tracker's rows live on one shard (a tracker's read and its
-- deduplication never cross shards).
--
-- The columns, the deduplication and the retention are those of schema.sql;
-- read that file's comments first. Requires ZooKeeper (or ClickHouse Keeper)
-- and, on every node, the macros {shard} and {replica} and a cluster named in
-- <remote_servers>; replace `trackhouse_cluster` below with its name.
-- Run this file on one node: ON CLUSTER creates the tables everywhere.
--
-- Trackhouse writes to and reads from `telemetry` and `inner_columns` (the
-- Distributed tables), exactly as from the one-node tables of schema.sql.
-- Give the ingest workers' ClickHouse user `insert_distributed_sync = 1`
-- (users.xml profile): otherwise a Distributed INSERT is answered once it
-- is queued on the receiving node, before the shard has it, and the worker
-- would truncate its WAL too early.

CREATE DATABASE IF NOT EXISTS trackhouse ON CLUSTER trackhouse_cluster;

CREATE TABLE IF NOT EXISTS trackhouse.telemetry_local ON CLUSTER trackhouse_cluster
(
    tracker_id       Int64,
    msg_time         Int64,
    server_time      Int64,
    content_hash     UInt64,
    flags            Nullable(Int64),
    gps_fix_type     Nullable(UInt8),
    lat              Nullable(Float64),
    lng              Nullable(Float64),
    speed            Nullable(Float64),
    alt              Nullable(Int32),
    satellites       Nullable(Int32),
    heading          Nullable(Int32),
    precision        Nullable(Int32),
    hdop             Nullable(Float64),
    pdop             Nullable(Float64),
    event_id         Nullable(Int64),
    mn_name          Nullable(String),
    mn_roaming       Nullable(Int32),
    mn_code          Nullable(Int64),
    mn_csq           Nullable(Int32),
    mn_type          Nullable(UInt8),
    discrete_inputs  Nested(name String, value UInt8),
    discrete_outputs Nested(name String, value UInt8),
    inputs           Nested(name String, value Float64),
    states           Nested(name String, value String),
    keep_first       UInt64 MATERIALIZED toUInt64(9223372036854775807 - server_time)
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/trackhouse/telemetry', '{replica}', keep_first)
PARTITION BY toYYYYMM(toDateTime(intDiv(msg_time, 1000)))
ORDER BY (tracker_id, msg_time, content_hash)
SETTINGS index_granularity = 8192;

CREATE TABLE IF NOT EXISTS trackhouse.telemetry ON CLUSTER trackhouse_cluster
AS trackhouse.telemetry_local
ENGINE = Distributed(trackhouse_cluster, trackhouse, telemetry_local, intHash64(tracker_id));

CREATE TABLE IF NOT EXISTS trackhouse.inner_columns_local ON CLUSTER trackhouse_cluster
(
    tracker_id Int64,
    day        Int32,
    name       String
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/trackhouse/inner_columns', '{replica}')
ORDER BY (tracker_id, day, name);

CREATE TABLE IF NOT EXISTS trackhouse.inner_columns ON CLUSTER trackhouse_cluster
AS trackhouse.inner_columns_local
ENGINE = Distributed(trackhouse_cluster, trackhouse, inner_columns_local, intHash64(tracker_id));
