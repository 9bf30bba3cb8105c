//! Resident memory of this process, from `/proc/self/status` (Linux).
//!
//! The server runs in process, so these figures are the server's memory plus
//! the client's (which holds one body chunk at a time).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A `kB` field of `/proc/self/status` in bytes, `None` off Linux.
fn status_bytes(field: &str) -> Option<u64> {
    status_bytes_at("/proc/self/status", field)
}

/// A `kB` field of a `/proc/<pid>/status` file in bytes.
fn status_bytes_at(path: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(path).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Current resident set size (`VmRSS`).
pub fn current() -> Option<u64> {
    status_bytes("VmRSS:")
}

/// Peak resident set size since start or the last [`reset_peak`] (`VmHWM`).
pub fn peak() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// Current resident set size (`VmRSS`) of another process.
pub fn current_of(pid: u32) -> Option<u64> {
    status_bytes_at(&format!("/proc/{pid}/status"), "VmRSS:")
}

/// Peak resident set size (`VmHWM`) of another process.
pub fn peak_of(pid: u32) -> Option<u64> {
    status_bytes_at(&format!("/proc/{pid}/status"), "VmHWM:")
}

/// Resets `VmHWM` to the current RSS (writing 5 to `/proc/self/clear_refs`);
/// false when the kernel does not allow it, in which case [`peak`] still
/// counts the ingest before the exports.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Samples `VmRSS` every `every` on a thread until stopped.
#[derive(Debug)]
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<u64>>,
}

impl Sampler {
    /// Starts sampling.
    pub fn start(every: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !stopping.load(Ordering::Relaxed) {
                samples.extend(current());
                std::thread::sleep(every);
            }
            samples
        });
        Self { stop, thread }
    }

    /// Stops sampling and returns the samples, in bytes, oldest first.
    pub fn finish(self) -> Vec<u64> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}
