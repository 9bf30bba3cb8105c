-- Trackhouse telemetry on one ClickHouse node.
--
-- Works on Debian's clickhouse-server 18.16 (the oldest we test) and on
-- current releases, so it uses nothing newer: times are epoch milliseconds
-- in Int64 (no DateTime64), the inner values of `inputs`, `states` and
-- `discrete_*` are Nested name/value arrays (no Map), and there is no table
-- TTL (see retention below).
--
-- One row per stored message, the same columns as a Parquet file
-- (schemas::columns): the key columns, the simple columns of the raw data
-- interface, and the four complex columns.
--
-- Deduplication (docs/decisions.md, 31): a message equal to a stored one in
-- tracker, message time and every field but server_time has the same
-- `content_hash` (xxh3 of its canonical encoding). The sort key ends with it,
-- so ReplacingMergeTree folds duplicates when parts merge, keeping the
-- earliest arrival (`keep_first` is largest for the smallest server_time).
-- Until a merge has happened, readers deduplicate: Trackhouse sorts each
-- day it reads by (msg_time, content_hash, server_time) and keeps the first
-- of each key; in SQL that is
--   ORDER BY tracker_id, msg_time, content_hash, server_time
--   LIMIT 1 BY tracker_id, msg_time, content_hash
-- This is also what makes replaying the WAL after a crash safe.
--
-- Retention: each tracker has its own store period, so rows cannot carry
-- one table TTL (18.16 has none anyway). The retention run (every 10
-- minutes, decision 35) first counts the expired rows, and only if there
-- are any issues one mutation for up to 1,000 trackers:
--   ALTER TABLE trackhouse.telemetry DELETE WHERE msg_time <
--     transform(tracker_id, [ids], [cutoffs], toInt64(-9223372036854775808))
-- and the same on `inner_columns` by day. Current releases may add a TTL
-- for the longest store period as a backstop: ALTER TABLE
--   trackhouse.telemetry MODIFY TTL toDateTime(intDiv(msg_time, 1000)) + INTERVAL <days> DAY
--
-- `inner_columns` lists, per tracker and UTC day of message time, the inner
-- columns (`inputs.lls_level_1`, `states.ignition`, ...) that have a value on
-- that day: what `.*` expansion and `get_inputs` need without reading the
-- messages. The ingest worker inserts a name before the rows that carry it.

CREATE DATABASE IF NOT EXISTS trackhouse;

CREATE TABLE IF NOT EXISTS trackhouse.telemetry
(
    tracker_id       Int64,
    msg_time         Int64,   -- message time, ms since the Unix epoch (UTC)
    server_time      Int64,   -- receipt time, ms since the Unix epoch (UTC)
    content_hash     UInt64,  -- deduplication key with tracker and message time
    flags            Nullable(Int64),
    gps_fix_type     Nullable(UInt8),   -- 0-based enum number (clarification 17)
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
    mn_type          Nullable(UInt8),   -- 0-based enum number
    discrete_inputs  Nested(name String, value UInt8),
    discrete_outputs Nested(name String, value UInt8),
    inputs           Nested(name String, value Float64),
    states           Nested(name String, value String),
    keep_first       UInt64 MATERIALIZED toUInt64(9223372036854775807 - server_time)
)
ENGINE = ReplacingMergeTree(keep_first)
PARTITION BY toYYYYMM(toDateTime(intDiv(msg_time, 1000)))
ORDER BY (tracker_id, msg_time, content_hash)
SETTINGS index_granularity = 8192;

CREATE TABLE IF NOT EXISTS trackhouse.inner_columns
(
    tracker_id Int64,
    day        Int32,   -- UTC day of message time, days since the Unix epoch
    name       String   -- storage name: `inputs.lls_level_1`, `states.ignition`, ...
)
ENGINE = ReplacingMergeTree()
ORDER BY (tracker_id, day, name);
