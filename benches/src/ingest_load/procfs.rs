//! What `/proc` says about a process: CPU per thread (sampled, so threads
//! that exit during a point still count), peak and current resident memory,
//! bytes written to storage; and the reset of the peak (`clear_refs`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;

/// Clock ticks per second of `/proc/*/stat` (`getconf CLK_TCK`; 100 when
/// that cannot be run, which is what Linux uses everywhere).
pub fn clock_ticks() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .filter(|&t| t > 0)
        .unwrap_or(100)
}

/// `utime + stime` of a `/proc/.../stat` line, in ticks, and the name in
/// its parentheses (which may hold spaces and parentheses itself).
fn parse_stat(stat: &str) -> Option<(String, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_owned();
    // Fields after the name start at field 3 (state); utime is 14, stime 15.
    let mut fields = stat.get(close + 1..)?.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((name, utime + stime))
}

/// CPU ticks the whole process has used (its exited threads included).
pub fn process_ticks(pid: u32) -> anyhow::Result<u64> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    parse_stat(&stat)
        .map(|(_, ticks)| ticks)
        .with_context(|| format!("parsing {path}"))
}

/// Each live thread of `pid`: id, name (`comm`), CPU ticks so far.
pub fn threads(pid: u32) -> anyhow::Result<Vec<(u32, String, u64)>> {
    let dir = PathBuf::from(format!("/proc/{pid}/task"));
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
        let Ok(entry) = entry else { continue };
        let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        // A thread may exit between the listing and the read: skip it.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((stat_name, ticks)) = parse_stat(&stat) else {
            continue;
        };
        let name = std::fs::read_to_string(entry.path().join("comm"))
            .map(|s| s.trim().to_owned())
            .unwrap_or(stat_name);
        found.push((tid, name, ticks));
    }
    Ok(found)
}

/// A `kB` line of `/proc/<pid>/status` (`VmHWM`, `VmRSS`), in bytes.
pub fn status_bytes(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib * 1024)
    })
}

/// Bytes the process caused to be sent to storage (`write_bytes` of
/// `/proc/<pid>/io`; page-cache writes count once written back).
pub fn write_bytes(pid: u32) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    io.lines()
        .find_map(|line| line.strip_prefix("write_bytes:")?.trim().parse().ok())
}

/// The machine's CPU time so far, all CPUs summed (the `cpu` line of
/// `/proc/stat`), in ticks: user (with nice), system (with interrupts),
/// idle, iowait, steal (taken by the hypervisor for other guests).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MachineTicks {
    pub user: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub steal: u64,
}

impl MachineTicks {
    /// Reads `/proc/stat`.
    pub fn now() -> anyhow::Result<Self> {
        let stat = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
        Self::parse(&stat).context("parsing the cpu line of /proc/stat")
    }

    fn parse(stat: &str) -> Option<Self> {
        let line = stat.lines().find(|line| line.starts_with("cpu "))?;
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|field| field.parse().ok())
            .collect::<Option<_>>()?;
        // user nice system idle iowait irq softirq steal (guest time is
        // inside user already).
        let at = |i: usize| fields.get(i).copied().unwrap_or(0);
        Some(Self {
            user: at(0) + at(1),
            system: at(2) + at(5) + at(6),
            idle: at(3),
            iowait: at(4),
            steal: at(7),
        })
    }

    /// The split of the time since `start`, each part as a share of all
    /// of it (100 in all).
    pub fn since(self, start: Self) -> MachineCpu {
        let parts = [
            self.user.saturating_sub(start.user),
            self.system.saturating_sub(start.system),
            self.iowait.saturating_sub(start.iowait),
            self.steal.saturating_sub(start.steal),
            self.idle.saturating_sub(start.idle),
        ];
        let total = parts.iter().sum::<u64>().max(1) as f64;
        let share = |i: usize| 100.0 * parts[i] as f64 / total;
        MachineCpu {
            user: share(0),
            system: share(1),
            iowait: share(2),
            steal: share(3),
            idle: share(4),
        }
    }
}

/// The machine's CPU time over a span, in % of all its CPUs' time.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MachineCpu {
    pub user: f64,
    pub system: f64,
    pub iowait: f64,
    pub steal: f64,
    pub idle: f64,
}

/// Resets the process's peak resident memory (`VmHWM`) to its current one.
pub fn reset_peak_rss(pid: u32) -> anyhow::Result<()> {
    let path = format!("/proc/{pid}/clear_refs");
    std::fs::write(&path, "5").with_context(|| format!("writing 5 to {path}"))
}

/// CPU of one process over a span, per thread name: the threads are read
/// at the start, at every [`Self::sample`] and at the end, and each
/// thread's last reading counts, so a thread that exits between two
/// samples loses at most one interval.
#[derive(Debug)]
pub struct CpuWatch {
    pid: u32,
    ticks_per_s: u64,
    started: Instant,
    process_start: u64,
    /// Per thread: name, ticks at the start (0 if it started later), last reading.
    threads: HashMap<u32, (String, u64, u64)>,
}

/// CPU used over a span, as seconds and shares of one core.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CpuUse {
    /// Wall time of the span.
    pub wall: Duration,
    /// CPU seconds of the whole process.
    pub total_s: f64,
    /// CPU seconds per thread name, with the number of threads of that name
    /// seen, largest first.
    pub by_name: Vec<(String, usize, f64)>,
}

impl CpuUse {
    /// Share of one core (100 = one core busy the whole span).
    pub fn percent(&self, seconds: f64) -> f64 {
        100.0 * seconds / self.wall.as_secs_f64().max(1e-9)
    }

    /// The process's share of one core.
    pub fn total_percent(&self) -> f64 {
        self.percent(self.total_s)
    }

    /// The `n` busiest thread names as `name ×k 57%`, and what the rest
    /// (and threads that exited unseen) used.
    pub fn top(&self, n: usize) -> String {
        let mut parts: Vec<String> = self
            .by_name
            .iter()
            .take(n)
            .map(|(name, count, s)| {
                let times = if *count > 1 {
                    format!(" ×{count}")
                } else {
                    String::new()
                };
                format!("{name}{times} {:.0}%", self.percent(*s))
            })
            .collect();
        let shown: f64 = self.by_name.iter().take(n).map(|(_, _, s)| s).sum();
        let rest = self.total_s - shown;
        if rest * 100.0 / self.wall.as_secs_f64().max(1e-9) >= 0.5 {
            parts.push(format!("other {:.0}%", self.percent(rest)));
        }
        parts.join(", ")
    }
}

impl CpuWatch {
    /// Starts watching `pid`.
    pub fn start(pid: u32, ticks_per_s: u64) -> anyhow::Result<Self> {
        let process_start = process_ticks(pid)?;
        let threads = threads(pid)?
            .into_iter()
            .map(|(tid, name, ticks)| (tid, (name, ticks, ticks)))
            .collect();
        Ok(Self {
            pid,
            ticks_per_s: ticks_per_s.max(1),
            started: Instant::now(),
            process_start,
            threads,
        })
    }

    /// Reads the threads again (new ones count from zero).
    pub fn sample(&mut self) {
        let Ok(now) = threads(self.pid) else { return };
        for (tid, name, ticks) in now {
            let entry = self.threads.entry(tid).or_insert((name, 0, 0));
            entry.2 = entry.2.max(ticks);
        }
    }

    /// The use since [`Self::start`].
    pub fn finish(mut self) -> anyhow::Result<CpuUse> {
        self.sample();
        let wall = self.started.elapsed();
        let total = process_ticks(self.pid)?.saturating_sub(self.process_start);
        let mut by_name: HashMap<String, (usize, u64)> = HashMap::new();
        for (name, first, last) in self.threads.into_values() {
            let used = last.saturating_sub(first);
            if used == 0 {
                continue;
            }
            let entry = by_name.entry(name).or_default();
            entry.0 += 1;
            entry.1 += used;
        }
        let per_s = self.ticks_per_s as f64;
        let mut by_name: Vec<(String, usize, f64)> = by_name
            .into_iter()
            .map(|(name, (count, ticks))| (name, count, ticks as f64 / per_s))
            .collect();
        by_name.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        Ok(CpuUse {
            wall,
            total_s: total as f64 / per_s,
            by_name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line = "4242 (tokio (rt) w) S 1 2 3 4 5 6 7 8 9 10 120 35 0 0 20 0 4 0 100";
        assert_eq!(parse_stat(line), Some(("tokio (rt) w".to_owned(), 155)));
    }

    #[test]
    fn the_machines_cpu_line_splits_into_shares() {
        let start = MachineTicks::parse("cpu  100 10 50 800 20 5 5 10 0 0\ncpu0 1 2 3\n").unwrap();
        assert_eq!(
            start,
            MachineTicks {
                user: 110,
                system: 60,
                idle: 800,
                iowait: 20,
                steal: 10
            }
        );
        let end = MachineTicks {
            user: 160,
            system: 80,
            idle: 810,
            iowait: 30,
            steal: 20,
        };
        assert_eq!(
            end.since(start),
            MachineCpu {
                user: 50.0,
                system: 20.0,
                iowait: 10.0,
                steal: 10.0,
                idle: 10.0
            }
        );
        assert!(MachineTicks::now().unwrap().idle > 0);
    }

    #[test]
    fn this_process_is_readable() {
        let pid = std::process::id();
        assert!(process_ticks(pid).is_ok());
        assert!(!threads(pid).unwrap().is_empty());
        assert!(status_bytes(pid, "VmHWM").unwrap() > 0);
        assert!(status_bytes(pid, "VmRSS").unwrap() > 0);
    }
}
