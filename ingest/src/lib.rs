//! Intake of device messages, from request to durable columnar storage.
//!
//! This crate will own the path a message takes before it can be read: the
//! HTTP batch intake (`/ingest/v1/messages`) and later the native TCP device
//! protocols, the write-ahead log with group commit, batching into Arrow record
//! batches on crossbeam channels, and the sinks (`sink/parquet`, embedded
//! default; `sink/clickhouse`, distributed) with compaction and retention.
//!
//! It does not own reading: `query` reads the files and this crate's
//! not-yet-flushed batches through contracts declared in `schemas`.
