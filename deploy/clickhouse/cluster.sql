-- Trackhouse telemetry on a ClickHouse cluster: one replicated table per
-- shard, and a Distributed table over them sharded by tracker id, so that all
-- of a tracker's rows live on one shard (a tracker's read and its
-- deduplication never cross shards).
--
-- The columns, the deduplication and the retention are those of schema.sql;
-- read that file's comments first. Trackhouse applies this file itself at
-- start when given `--clickhouse-cluster NAME` (with `trackhouse` renamed to
-- its database and `trackhouse_cluster` to NAME); it can also be run by hand
-- on one node: ON CLUSTER creates the tables everywhere.
--
-- Requires ZooKeeper (or ClickHouse Keeper) and, on every node: the macros
-- {shard} and {replica}, an `interserver_http_port` (replicas fetch parts
-- from each other through it), `<distributed_ddl>`, and the cluster in
-- `<remote_servers>` with `<internal_replication>true</internal_replication>`
-- in each shard (the Distributed table writes to one replica, which
-- replicates; ON CLUSTER mutations run once per shard). deploy/README.md
-- has an example.
--
-- Trackhouse writes to and reads from `telemetry` and `inner_columns` (the
-- Distributed tables), exactly as from the one-node tables of schema.sql,
-- with `insert_distributed_sync = 1` (an INSERT is answered once the shards
-- have the rows, not once they are queued on the receiving node; the worker
-- truncates its WAL after that answer) and `load_balancing = in_order`
-- (reads go to the replica the INSERTs went to while it is up). Its
-- retention mutates the `*_local` tables ON CLUSTER.
--
-- Differences from schema.sql: the replicas' ZooKeeper paths name the
-- database and table, so that two databases never share a replication log;
-- `keep_first` is DEFAULT, not MATERIALIZED, because 18.16's Distributed
-- table sends the MATERIALIZED value it computed to the shard, which
-- refuses it.

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
    keep_first       UInt64 DEFAULT toUInt64(9223372036854775807 - server_time)
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/trackhouse.telemetry_local', '{replica}', keep_first)
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/trackhouse.inner_columns_local', '{replica}')
ORDER BY (tracker_id, day, name);

CREATE TABLE IF NOT EXISTS trackhouse.inner_columns ON CLUSTER trackhouse_cluster
AS trackhouse.inner_columns_local
ENGINE = Distributed(trackhouse_cluster, trackhouse, inner_columns_local, intHash64(tracker_id));
