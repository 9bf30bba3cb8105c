//! The server's `/metrics` (Prometheus text format), scraped before and
//! after each point: WAL bytes and fsyncs, messages by outcome, flushes,
//! answers by status.

use std::collections::HashMap;

use anyhow::{Context, ensure};

/// One scrape: every sample by its series (`name{labels}` as printed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scrape {
    samples: HashMap<String, f64>,
}

/// What the ingest figures of `/metrics` moved by between two scrapes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct IngestDelta {
    /// `trackhouse_wal_bytes_total`.
    pub wal_bytes: f64,
    /// `trackhouse_wal_fsyncs_total`.
    pub wal_fsyncs: f64,
    /// `trackhouse_wal_fsync_seconds` (sum over the fsyncs).
    pub wal_fsync_seconds: f64,
    /// Writes (requests) committed, `trackhouse_wal_group_writes` count of writes.
    pub group_writes: f64,
    /// `trackhouse_ingest_messages_total{outcome="accepted"}`.
    pub accepted: f64,
    /// `trackhouse_ingest_messages_total{outcome="duplicate"}`.
    pub duplicates: f64,
    /// `trackhouse_ingest_messages_total{outcome="rejected"}`.
    pub rejected: f64,
    /// `trackhouse_ingest_flushes_total`.
    pub flushes: f64,
    /// `trackhouse_ingest_relaxed_flushes_total`: flushes that wrote below
    /// the request threads' priority (0 on a server without it).
    pub relaxed_flushes: f64,
    /// `trackhouse_ingest_flush_errors_total`.
    pub flush_errors: f64,
    /// `trackhouse_compactions_total`.
    pub compactions: f64,
    /// Partitions the dedup index read complete from storage
    /// (`trackhouse_dedup_partition_loads_total`).
    pub dedup_loads: f64,
    /// Partitions it evicted or demoted over its bound
    /// (`trackhouse_dedup_partition_evictions_total`).
    pub dedup_evictions: f64,
    /// Each of [`STAGES`]: (sum of seconds, count) of its histogram.
    pub stages: [(f64, f64); STAGES.len()],
}

/// The stages a body's time is split into on `/metrics`, as (histogram,
/// stage label), in the order they happen:
/// `trackhouse_intake_stage_seconds` for the request,
/// `trackhouse_ingest_stage_seconds` for its commit and the writer group.
pub const STAGES: [(&str, &str); 8] = [
    ("trackhouse_intake_stage_seconds", "receive"),
    ("trackhouse_intake_stage_seconds", "parse"),
    ("trackhouse_intake_stage_seconds", "commit"),
    ("trackhouse_ingest_stage_seconds", "loader_wait"),
    ("trackhouse_ingest_stage_seconds", "writer"),
    ("trackhouse_ingest_stage_seconds", "group_dedup_append"),
    ("trackhouse_ingest_stage_seconds", "group_memtable"),
    ("trackhouse_ingest_stage_seconds", "live"),
];

impl Scrape {
    /// Parses the text format (comments and malformed lines are skipped).
    pub fn parse(text: &str) -> Self {
        let samples = text
            .lines()
            .filter(|line| !line.starts_with('#'))
            .filter_map(|line| {
                let (series, value) = line.rsplit_once(' ')?;
                Some((series.trim().to_owned(), value.trim().parse().ok()?))
            })
            .collect();
        Self { samples }
    }

    /// Reads `base/metrics`.
    pub async fn fetch(client: &reqwest::Client, base: &str) -> anyhow::Result<Self> {
        let response = client
            .get(format!("{base}/metrics"))
            .send()
            .await
            .context("scraping /metrics")?;
        let status = response.status();
        let text = response.text().await?;
        ensure!(status.is_success(), "/metrics answered {status}");
        Ok(Self::parse(&text))
    }

    /// The sample of one series (0 when absent: a counter not yet moved).
    pub fn value(&self, series: &str) -> f64 {
        self.samples.get(series).copied().unwrap_or(0.0)
    }

    /// Whether a series of that name (with any labels) is exposed.
    pub fn has(&self, name: &str) -> bool {
        self.samples
            .keys()
            .any(|s| s == name || s.starts_with(&format!("{name}{{")))
    }

    /// The sum of every series of `name` whose labels contain `label`
    /// (`status="503"`), e.g. requests of one status over every route.
    pub fn sum_with(&self, name: &str, label: &str) -> f64 {
        let prefix = format!("{name}{{");
        self.samples
            .iter()
            .filter(|(s, _)| s.starts_with(&prefix) && s.contains(label))
            .map(|(_, v)| v)
            .sum()
    }

    /// What the ingest figures moved by since `before`.
    pub fn ingest_since(&self, before: &Self) -> IngestDelta {
        let d = |series: &str| self.value(series) - before.value(series);
        let outcome = |o: &str| {
            d(&format!(
                "trackhouse_ingest_messages_total{{outcome=\"{o}\"}}"
            ))
        };
        IngestDelta {
            wal_bytes: d("trackhouse_wal_bytes_total"),
            wal_fsyncs: d("trackhouse_wal_fsyncs_total"),
            wal_fsync_seconds: d("trackhouse_wal_fsync_seconds_sum"),
            group_writes: d("trackhouse_wal_group_writes_sum"),
            accepted: outcome("accepted"),
            duplicates: outcome("duplicate"),
            rejected: outcome("rejected"),
            flushes: d("trackhouse_ingest_flushes_total"),
            relaxed_flushes: d("trackhouse_ingest_relaxed_flushes_total"),
            flush_errors: d("trackhouse_ingest_flush_errors_total"),
            compactions: d("trackhouse_compactions_total"),
            dedup_loads: d("trackhouse_dedup_partition_loads_total"),
            dedup_evictions: d("trackhouse_dedup_partition_evictions_total"),
            stages: STAGES.map(|(histogram, stage)| {
                let labels = format!("{{stage=\"{stage}\"}}");
                (
                    d(&format!("{histogram}_sum{labels}")),
                    d(&format!("{histogram}_count{labels}")),
                )
            }),
        }
    }
}

/// The series this program reads; [`missing`] names those a server lacks.
pub const READ: [&str; 8] = [
    "trackhouse_wal_bytes_total",
    "trackhouse_wal_fsyncs_total",
    "trackhouse_wal_fsync_seconds_sum",
    "trackhouse_wal_group_writes_sum",
    "trackhouse_ingest_messages_total",
    "trackhouse_ingest_flushes_total",
    "trackhouse_ingest_unflushed_rows",
    "trackhouse_http_requests_total",
];

/// The series of [`READ`] a scrape does not have.
pub fn missing(scrape: &Scrape) -> Vec<&'static str> {
    READ.into_iter().filter(|name| !scrape.has(name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_histograms_and_labels_are_read() {
        let before = Scrape::parse(
            "# HELP x\ntrackhouse_wal_bytes_total 100\n\
             trackhouse_ingest_messages_total{outcome=\"accepted\"} 5\n",
        );
        let after = Scrape::parse(
            "trackhouse_wal_bytes_total 350\ntrackhouse_wal_fsyncs_total 3\n\
             trackhouse_wal_fsync_seconds_sum 0.006\n\
             trackhouse_ingest_messages_total{outcome=\"accepted\"} 25\n\
             trackhouse_ingest_messages_total{outcome=\"duplicate\"} 2\n\
             trackhouse_http_requests_total{route=\"/ingest/v1/messages\",method=\"POST\",status=\"503\"} 4\n\
             trackhouse_http_requests_total{route=\"/metrics\",method=\"GET\",status=\"200\"} 9\n",
        );
        let d = after.ingest_since(&before);
        assert_eq!(d.wal_bytes, 250.0);
        assert_eq!(d.wal_fsyncs, 3.0);
        assert_eq!(d.accepted, 20.0);
        assert_eq!(d.duplicates, 2.0);
        assert_eq!(d.rejected, 0.0);
        assert_eq!(
            after.sum_with("trackhouse_http_requests_total", "status=\"503\""),
            4.0
        );
        assert_eq!(d.stages[0], (0.0, 0.0));
        let timed = Scrape::parse(
            "trackhouse_intake_stage_seconds_sum{stage=\"parse\"} 0.5\n\
             trackhouse_intake_stage_seconds_count{stage=\"parse\"} 4\n\
             trackhouse_ingest_stage_seconds_sum{stage=\"live\"} 0.25\n\
             trackhouse_ingest_stage_seconds_count{stage=\"live\"} 5\n",
        );
        let stages = timed.ingest_since(&before).stages;
        assert_eq!(stages[1], (0.5, 4.0));
        assert_eq!(stages[STAGES.len() - 1], (0.25, 5.0));
        assert!(after.has("trackhouse_ingest_messages_total"));
        assert!(!after.has("trackhouse_ingest_flushes_total"));
    }
}
