//! The HTTP ingest load generator of issue 17: the real `trackhouse serve`
//! binary as a process of its own, loaded over 4 to 64 connections with
//! pre-rendered NDJSON bodies of 1,000 or 10,000 lines (plain or zstd) from
//! 10,000 interleaved trackers, with retransmitted duplicates, late lines
//! and a UTC midnight; and ClickHouse inserting the same rows as
//! `JSONEachRow` from the same generator, over the same connections.
//!
//! - [`workload`]: the line stream, in the intake's format or ClickHouse's:
//!   a pool rendered once before timing and repeated without end in epochs
//!   shifted in time (message times written over in place), so a point of
//!   any length sends unique keys.
//! - [`driver`]: the connections, closed or open loop, and the answers; its
//!   `Feeder` makes the bodies ahead of them on threads of their own (later
//!   epochs' times, zstd).
//! - [`server`]: the account (through `Store`) and the server process.
//! - [`clickhouse`]: the peer's server, databases and counts.
//! - [`procfs`], [`metrics`]: the server's CPU per thread, peak memory and
//!   disk writes from `/proc`, its WAL figures from `/metrics`.
//! - [`verify`]: whether exactly the acknowledged messages were stored.
//! - [`probe`]: raw data exports while the load runs (`--read-every-ms`).
//! - [`point`]: one point of the run; [`report`]: the tables.
//!
//! `ingest_crash` (its own binary) uses the same parts to kill the server
//! under load round after round and check that every acknowledged message
//! is stored exactly once.
//!
//! Not here: building anything (the binary takes `--trackhouse-bin`), or
//! changing the server's configuration beyond the flags it is given.

pub mod clickhouse;
pub mod driver;
pub mod metrics;
pub mod point;
pub mod probe;
pub mod procfs;
pub mod report;
pub mod server;
pub mod verify;
pub mod workload;

use std::str::FromStr;

/// A system the rows are sent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum System {
    /// `trackhouse serve` with its default durability: each answer after
    /// the WAL's fdatasync.
    Trackhouse,
    /// `trackhouse serve` with the extra flags that switch the WAL's fsync
    /// off (`--nosync-args`; the binary has no such flag today).
    TrackhouseNoSync,
    /// ClickHouse, `INSERT … FORMAT JSONEachRow` over HTTP.
    ClickHouse,
}

impl System {
    /// Its name in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Self::Trackhouse => "Trackhouse",
            Self::TrackhouseNoSync => "Trackhouse, WAL fsync off",
            Self::ClickHouse => "ClickHouse",
        }
    }

    /// Whether it is Trackhouse (either way).
    pub fn is_trackhouse(self) -> bool {
        matches!(self, Self::Trackhouse | Self::TrackhouseNoSync)
    }
}

impl FromStr for System {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "trackhouse" => Ok(Self::Trackhouse),
            "trackhouse-nosync" => Ok(Self::TrackhouseNoSync),
            "clickhouse" => Ok(Self::ClickHouse),
            other => Err(format!(
                "unknown system {other:?}: trackhouse, trackhouse-nosync or clickhouse"
            )),
        }
    }
}

/// How bodies are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Plain NDJSON.
    Identity,
    /// zstd, level 3 (ClickHouse 18.16 refuses `Content-Encoding: zstd`,
    /// code 89: its bodies are gzip instead).
    Zstd,
}

/// zstd's level for the bodies (the library's default).
pub const ZSTD_LEVEL: i32 = 3;

impl Encoding {
    /// Its name in the tables, for `system`.
    pub fn label(self, system: System) -> &'static str {
        match (self, system) {
            (Self::Identity, _) => "identity",
            (Self::Zstd, System::ClickHouse) => "gzip*",
            (Self::Zstd, _) => "zstd",
        }
    }

    /// The compression of bodies sent to `system`.
    pub fn compression(self, system: System) -> workload::Compression {
        match (self, system) {
            (Self::Identity, _) => workload::Compression::None,
            (Self::Zstd, System::ClickHouse) => workload::Compression::Gzip,
            (Self::Zstd, _) => workload::Compression::Zstd(ZSTD_LEVEL),
        }
    }

    /// The `Content-Encoding` header for `system`.
    pub fn content_encoding(self, system: System) -> Option<&'static str> {
        match self.compression(system) {
            workload::Compression::None => None,
            workload::Compression::Zstd(_) => Some("zstd"),
            workload::Compression::Gzip => Some("gzip"),
        }
    }
}

impl FromStr for Encoding {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "identity" => Ok(Self::Identity),
            "zstd" => Ok(Self::Zstd),
            other => Err(format!("unknown encoding {other:?}: identity or zstd")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse() {
        assert_eq!("clickhouse".parse(), Ok(System::ClickHouse));
        assert_eq!(" Trackhouse ".parse(), Ok(System::Trackhouse));
        assert!("duckdb".parse::<System>().is_err());
        assert_eq!("zstd".parse(), Ok(Encoding::Zstd));
        assert_eq!(
            Encoding::Zstd.content_encoding(System::ClickHouse),
            Some("gzip")
        );
        assert_eq!(
            Encoding::Zstd.content_encoding(System::Trackhouse),
            Some("zstd")
        );
    }

    /// The servers these benchmarks start run with the allocator settings
    /// the systemd unit deploys, each of them.
    #[test]
    fn benchmarked_servers_get_the_deployed_allocator_settings() {
        let unit = include_str!("../../deploy/systemd/trackhouse.service");
        for (option, value) in server::DEPLOYED_ALLOCATOR_ENV {
            let line = format!("Environment={option}={value}");
            assert!(
                unit.lines().any(|l| l.trim() == line),
                "deploy/systemd/trackhouse.service lacks {line}"
            );
        }
    }
}
