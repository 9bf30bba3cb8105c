//! The parsed footers, with their page indexes, of the files whose keys
//! the deduplication index reads back, kept between reads.
//!
//! A late message, or a retransmission of a flushed one, needs its
//! (tracker, day) partition's keys from every file of that day; a fleet
//! sends such messages all the time, so the same files are read again and
//! again, one tracker's pages at a time. Decoding a file's footer and page
//! index each time was 40% of the loader thread (`perf`, BENCHMARKS): a
//! file never changes once written, so its footer is decoded once and kept
//! here, by file id (unique for the store's lifetime), within a budget of
//! bytes (`--dedup-footer-cache-bytes`), the least recently used dropped
//! first; a file rewritten away is dropped at once.

use std::collections::HashMap;
use std::fs::File;
use std::sync::Mutex;

use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::file::metadata::PageIndexPolicy;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

/// What the cache counts on `/metrics`.
#[derive(Debug, Clone, Default)]
pub(crate) struct FooterMetrics {
    /// Reads that found the footer here.
    pub(crate) hits: Counter,
    /// Reads that decoded it from the file.
    pub(crate) misses: Counter,
    /// Bytes held.
    pub(crate) bytes: Gauge,
}

/// The footers kept, by file id.
#[derive(Debug)]
pub(crate) struct Footers {
    budget: usize,
    held: Mutex<Held>,
    metrics: FooterMetrics,
}

#[derive(Debug, Default)]
struct Held {
    by_file: HashMap<u64, Footer>,
    bytes: usize,
    /// Incremented at each use: a footer's `used` is when it was last.
    clock: u64,
}

#[derive(Debug)]
struct Footer {
    metadata: ArrowReaderMetadata,
    bytes: usize,
    used: u64,
}

/// How a key read opens a file: with the page index, so that only the
/// pages of the wanted trackers are decoded (a flush file's row group
/// holds some thousand trackers).
pub(crate) fn read_options() -> ArrowReaderOptions {
    ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional)
}

impl Footers {
    /// Keeps at most `budget` bytes of footers (0 keeps none).
    pub(crate) fn new(budget: usize, metrics: FooterMetrics) -> Self {
        Self {
            budget,
            held: Mutex::new(Held::default()),
            metrics,
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The footer of file `id`, open as `file`: kept, or decoded from it
    /// (and kept, if it fits the budget). The lock is not held while a
    /// footer is decoded.
    pub(crate) fn get(&self, id: u64, file: &File) -> parquet::errors::Result<ArrowReaderMetadata> {
        {
            let mut held = self.held();
            let now = held.tick();
            if let Some(footer) = held.by_file.get_mut(&id) {
                footer.used = now;
                self.metrics.hits.inc();
                return Ok(footer.metadata.clone());
            }
        }
        self.metrics.misses.inc();
        let metadata = ArrowReaderMetadata::load(file, read_options())?;
        let bytes = metadata.metadata().memory_size();
        if bytes <= self.budget {
            let mut held = self.held();
            let footer = Footer {
                metadata: metadata.clone(),
                bytes,
                used: held.tick(),
            };
            if let Some(earlier) = held.by_file.insert(id, footer) {
                // Another read decoded it meanwhile.
                held.bytes -= earlier.bytes;
            }
            held.bytes += bytes;
            while held.bytes > self.budget {
                let Some(oldest) = held
                    .by_file
                    .iter()
                    .min_by_key(|(_, f)| f.used)
                    .map(|(&id, _)| id)
                else {
                    break;
                };
                held.drop_file(oldest);
            }
            self.metrics.bytes.set(gauge(held.bytes));
        }
        Ok(metadata)
    }

    /// Drops the footers of files no longer in the store.
    pub(crate) fn forget(&self, ids: &[u64]) {
        let mut held = self.held();
        for &id in ids {
            held.drop_file(id);
        }
        self.metrics.bytes.set(gauge(held.bytes));
    }

    /// Bytes held, and how many footers.
    #[cfg(test)]
    pub(crate) fn held_now(&self) -> (usize, usize) {
        let held = self.held();
        (held.bytes, held.by_file.len())
    }
}

impl Held {
    /// The next use's time.
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn drop_file(&mut self, id: u64) {
        if let Some(footer) = self.by_file.remove(&id) {
            self.bytes -= footer.bytes;
        }
    }
}

fn gauge(bytes: usize) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}
