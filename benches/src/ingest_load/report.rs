//! The Markdown tables of a run and the verdict on issue 17's targets.

use std::fmt::Write;
use std::time::Duration;

use super::System;
use super::metrics::STAGES;
use super::point::PointResult;

/// `1234567` as `1,234,567`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ms(d: Option<Duration>) -> String {
    d.map_or_else(
        || "-".to_owned(),
        |d| format!("{:.1}", d.as_secs_f64() * 1e3),
    )
}

fn per_s(value: f64, elapsed: Duration, scale: f64, decimals: usize) -> String {
    format!(
        "{:.*}",
        decimals,
        value / scale / elapsed.as_secs_f64().max(1e-9)
    )
}

fn mode(r: &PointResult) -> String {
    match r.spec.rate {
        Some(rate) => format!("open {}/s", group(rate.round() as u64)),
        None => "closed".to_owned(),
    }
}

/// The point's short name.
pub fn name(r: &PointResult) -> String {
    format!(
        "{} {} {} ×{} {}",
        r.spec.system.label(),
        group(r.spec.lines as u64),
        r.spec.encoding.label(r.spec.system),
        r.spec.connections,
        mode(r)
    )
}

/// The bodies of a point as CSV, in the order they were due (or first
/// sent): when, from the load's start (`# started_unix_ms` in the first
/// line), each was due and answered, its latency and what it carried, and
/// how it ended (`200`, or the last status, 0 for no answer). For lining
/// the slow bodies up with the server's flushes and syncs.
pub fn bodies_csv(r: &PointResult) -> String {
    timeline_csv(&name(r), r.started_at, &r.bodies)
}

/// `at` in milliseconds since the Unix epoch (0 before it): when a point's
/// load started, in its bodies' CSV and its file name.
pub fn unix_ms(at: std::time::SystemTime) -> u128 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// [`bodies_csv`] of the point named `point`.
fn timeline_csv(
    point: &str,
    started_at: std::time::SystemTime,
    bodies: &[super::driver::Sent],
) -> String {
    let started_ms = unix_ms(started_at);
    let mut bodies: Vec<_> = bodies.iter().collect();
    let due = |s: &super::driver::Sent| s.answered_at.saturating_sub(s.latency);
    bodies.sort_by_key(|s| (due(s), s.body));
    let mut out = format!(
        "# started_unix_ms={started_ms} point={point}\n\
         body,first_line,lines,bytes,due_ms,answered_ms,latency_ms,refusals,connection_errors,status\n"
    );
    let ms = |d: Duration| format!("{:.3}", d.as_secs_f64() * 1e3);
    for s in bodies {
        let status = match &s.outcome {
            super::driver::Outcome::Acked { .. } => 200,
            super::driver::Outcome::Failed { status, .. } => *status,
        };
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{}",
            s.body,
            s.first_line,
            s.lines,
            s.bytes,
            ms(due(s)),
            ms(s.answered_at),
            ms(s.latency),
            s.tries.refusals,
            s.tries.connection_errors,
            status
        );
    }
    out
}

/// The reads made during the load: latencies, failures, rows.
pub fn reads_table(results: &[PointResult]) -> String {
    let mut out = String::from(
        "| point | reads | p50 ms | p99 ms | max ms | failed | rows of the last |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in results {
        let Some(reads) = &r.reads else { continue };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {}{} | {} |",
            name(r),
            group(reads.latencies.len() as u64),
            ms(reads.latency(0.5)),
            ms(reads.latency(0.99)),
            ms(reads.latencies.last().copied()),
            group(reads.failed),
            reads
                .first_failure
                .as_ref()
                .map_or_else(String::new, |f| format!(" (first: {f})")),
            group(reads.last_rows),
        );
    }
    out
}

/// The main table: throughput, latency, refusals, CPU, memory, WAL.
pub fn throughput_table(results: &[PointResult]) -> String {
    let mut out = String::from(
        "| system | lines/body | encoding | conns | loop | s | acked lines/s | slowest second | new msgs/s | MB/s sent | \
         p50 ms | p99 ms | p99.9 ms | 503s | conn. errors | failed | server CPU | generator CPU | \
         bodies waited for | server peak RSS MiB | WAL MB/s | fsyncs/s | disk writes MB/s | checks |\n\
         |---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for r in results {
        let t = &r.totals;
        let elapsed = r.elapsed;
        let new = match r.spec.system {
            System::ClickHouse => "-".to_owned(),
            _ => group((t.accepted as f64 / elapsed.as_secs_f64().max(1e-9)).round() as u64),
        };
        let (wal, fsyncs) = r.ingest.map_or(("-".to_owned(), "-".to_owned()), |i| {
            (
                per_s(i.wal_bytes, elapsed, 1e6, 1),
                per_s(i.wal_fsyncs, elapsed, 1.0, 0),
            )
        });
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.1}{} | **{}** | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0}% | {} | {} | {} | {} | {} | {} |",
            r.spec.system.label(),
            group(r.spec.lines as u64),
            r.spec.encoding.label(r.spec.system),
            r.spec.connections,
            mode(r),
            elapsed.as_secs_f64(),
            if r.exhausted { " (stream ran out)" } else { "" },
            group(r.lines_per_s().round() as u64),
            t.slowest_second_lines.map_or_else(|| "-".to_owned(), group),
            new,
            per_s(t.acked_bytes as f64, elapsed, 1e6, 1),
            ms(t.latency(0.5)),
            ms(t.latency(0.99)),
            ms(t.latency(0.999)),
            group(t.refusals),
            group(t.connection_errors),
            group(t.failed),
            r.server_cpu
                .as_ref()
                .map_or_else(|| "-".to_owned(), |c| format!("{:.0}%", c.total_percent())),
            100.0 * r.generator_cpu_s / elapsed.as_secs_f64().max(1e-9),
            match t.feeder_waits {
                0 => "0".to_owned(),
                n => format!("{} ({:.1} s)", group(n), t.feeder_wait.as_secs_f64()),
            },
            r.peak_rss.map_or_else(
                || "-".to_owned(),
                |b| format!("{:.0}", b as f64 / 1_048_576.0)
            ),
            wal,
            fsyncs,
            r.disk_write_bytes
                .map_or_else(|| "-".to_owned(), |b| per_s(b as f64, elapsed, 1e6, 1)),
            if r.verdict.passed() {
                "ok"
            } else {
                "**FAILED**"
            },
        );
    }
    out
}

/// Server CPU per thread name, the busiest first, in % of one core.
pub fn cpu_table(results: &[PointResult]) -> String {
    let mut out = String::from(
        "| point | server threads (% of one core) | machine: user / system / iowait / steal / idle (% of all CPUs) |\n|---|---|---|\n",
    );
    for r in results {
        let threads = r
            .server_cpu
            .as_ref()
            .map_or_else(|| "-".to_owned(), |c| c.top(6));
        let m = r.machine_cpu;
        let _ = writeln!(
            out,
            "| {} | {threads} | {:.0} / {:.0} / {:.1} / {:.1} / {:.0} |",
            name(r),
            m.user,
            m.system,
            m.iowait,
            m.steal,
            m.idle
        );
    }
    out
}

/// WAL and flush figures of the Trackhouse points.
pub fn wal_table(results: &[PointResult]) -> String {
    let mut out = String::from(
        "| point | WAL bytes per new message | writes per fsync | mean fsync ms | flushes (relaxed) | max unflushed rows | max dedup keys | complete loads | evictions | final flush s |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in results {
        let Some(i) = r.ingest else { continue };
        let fsyncs = i.wal_fsyncs.max(1.0);
        let _ = writeln!(
            out,
            "| {} | {:.0} | {:.1} | {:.2} | {:.0} ({:.0}) | {} | {} | {} | {} | {} |",
            name(r),
            i.wal_bytes / i.accepted.max(1.0),
            i.group_writes / fsyncs,
            1e3 * i.wal_fsync_seconds / fsyncs,
            i.flushes,
            i.relaxed_flushes,
            r.max_unflushed_rows
                .map_or_else(|| "-".to_owned(), |m| group(m as u64)),
            r.max_dedup_keys
                .map_or_else(|| "-".to_owned(), |m| group(m as u64)),
            group(i.dedup_loads as u64),
            group(i.dedup_evictions as u64),
            r.shutdown
                .map_or_else(|| "-".to_owned(), |d| format!("{:.1}", d.as_secs_f64())),
        );
    }
    out
}

/// The mean time of each stage of a body on the server (`/metrics`), in
/// ms: a body's receive, parse and commit; the commit split into its wait
/// for the loader (writes that needed a read only), the writer (queue,
/// group, sync) and the live record; the writer group's dedup and appends
/// and its memtable push (per group).
pub fn stage_table(results: &[PointResult]) -> String {
    let mut out = String::from("| point |");
    for (_, stage) in STAGES {
        let _ = write!(out, " {stage} |");
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(STAGES.len()));
    out.push('\n');
    for r in results {
        let Some(i) = r.ingest else { continue };
        let _ = write!(out, "| {} |", name(r));
        for (sum, count) in i.stages {
            if count > 0.0 {
                let _ = write!(out, " {:.2} |", 1e3 * sum / count);
            } else {
                out.push_str(" - |");
            }
        }
        out.push('\n');
    }
    out
}

/// What each point sent and what the server stored.
pub fn verification_table(results: &[PointResult]) -> String {
    let mut out = String::from(
        "| point | bodies 200 | lines | distinct | copies | late | msgs before / after midnight | \
         Σ accepted | Σ duplicates | stored | checks |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
    );
    for r in results {
        let e = &r.expected;
        let t = &r.totals;
        let (accepted, duplicates) = match r.spec.system {
            System::ClickHouse => ("-".to_owned(), "-".to_owned()),
            _ => (group(t.accepted), group(t.duplicates)),
        };
        let checks = if r.verdict.passed() {
            format!("{} passed", r.verdict.checks.len())
        } else {
            format!("**failed:** {}", r.verdict.failures())
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} / {} | {} | {} | {} | {} |",
            name(r),
            group(t.acked_bodies),
            group(e.lines),
            group(e.distinct),
            group(e.copy_lines),
            group(e.late_lines),
            group(e.before_midnight),
            group(e.after_midnight),
            accepted,
            duplicates,
            r.stored,
            checks,
        );
    }
    out
}

/// The first connection error and failure of each point that had any.
pub fn failures(results: &[PointResult]) -> String {
    let mut out = String::new();
    for r in results {
        if let Some(error) = &r.totals.first_connection_error {
            let _ = writeln!(
                out,
                "- {}: {} connections failed without an answer (bodies sent again); first: {}",
                name(r),
                group(r.totals.connection_errors),
                error.replace('\n', " ")
            );
        }
        if let Some((status, detail)) = &r.totals.first_failure {
            let _ = writeln!(
                out,
                "- {}: {} failed; first: status {status} ({})",
                name(r),
                group(r.totals.failed),
                detail.replace('\n', " ")
            );
        }
    }
    out
}

/// Issue 17's targets against the run.
pub fn targets(results: &[PointResult]) -> String {
    let best = |system: System| {
        results
            .iter()
            .filter(|r| r.spec.system == system && r.spec.rate.is_none())
            .max_by(|a, b| a.lines_per_s().total_cmp(&b.lines_per_s()))
    };
    let verdict = |met: bool| if met { "met" } else { "not met" };
    let mut out = String::new();
    match best(System::Trackhouse) {
        Some(th) => {
            let rate = th.lines_per_s();
            let _ = writeln!(
                out,
                "- ≥ 1,000,000 messages/s acknowledged durably at the best point: {} ({} lines/s, {})",
                verdict(rate >= 1e6),
                group(rate.round() as u64),
                name(th)
            );
            match best(System::ClickHouse) {
                Some(ch) => {
                    let ratio = rate / ch.lines_per_s().max(1e-9);
                    let _ = writeln!(
                        out,
                        "- ≥ 5× ClickHouse's JSON insert: {} ({ratio:.2}×: best ClickHouse {} rows/s, {})",
                        verdict(ratio >= 5.0),
                        group(ch.lines_per_s().round() as u64),
                        name(ch)
                    );
                }
                None => out.push_str(
                    "- ≥ 5× ClickHouse's JSON insert: not measured (no ClickHouse point)\n",
                ),
            }
        }
        None => out
            .push_str("- ≥ 1,000,000 messages/s: not measured (no closed-loop Trackhouse point)\n"),
    }
    let half: Vec<&PointResult> = results
        .iter()
        .filter(|r| r.spec.system == System::Trackhouse && r.spec.rate.is_some())
        .collect();
    if half.is_empty() {
        out.push_str(
            "- p99 acknowledgement < 50 ms at 50% of the maximum rate: not measured (run with --rate-of-max 0.5)\n",
        );
    }
    for r in half {
        let p99 = r.totals.latency(0.99);
        let _ = writeln!(
            out,
            "- p99 acknowledgement < 50 ms at {}: {} (p99 {} ms; {})",
            mode(r),
            verdict(p99.is_some_and(|p| p < Duration::from_millis(50))),
            ms(p99),
            name(r)
        );
    }
    let peak = results
        .iter()
        .filter(|r| r.spec.system.is_trackhouse())
        .filter_map(|r| r.peak_rss)
        .max();
    if let Some(peak) = peak {
        let _ = writeln!(
            out,
            "- server peak RSS < 1 GiB: {} (largest {:.0} MiB)",
            verdict(peak < 1 << 30),
            peak as f64 / 1_048_576.0
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1_234_567), "1,234,567");
    }

    #[test]
    fn the_timeline_lists_bodies_in_the_order_they_were_due() {
        use super::super::driver::{Outcome, Sent, Tries};
        let sent = |body: usize, due_ms: u64, latency_ms: u64, outcome: Outcome| Sent {
            body,
            first_line: body as u64 * 10,
            lines: 10,
            bytes: 500 + body,
            outcome,
            latency: Duration::from_millis(latency_ms),
            tries: Tries {
                refusals: u32::from(body == 1),
                ..Tries::default()
            },
            answered_at: Duration::from_millis(due_ms + latency_ms),
        };
        let acked = Outcome::Acked {
            accepted: 10,
            duplicates: 0,
            rejected: 0,
        };
        let bodies = [
            sent(2, 40, 5, acked.clone()),
            sent(0, 0, 90, acked.clone()),
            sent(
                1,
                20,
                7,
                Outcome::Failed {
                    status: 503,
                    detail: String::new(),
                },
            ),
        ];
        let started = std::time::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let csv = timeline_csv("P", started, &bodies);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "# started_unix_ms=1700000000123 point=P");
        assert_eq!(
            lines[1..],
            [
                "body,first_line,lines,bytes,due_ms,answered_ms,latency_ms,refusals,connection_errors,status",
                "0,0,10,500,0.000,90.000,90.000,0,0,200",
                "1,10,10,501,20.000,27.000,7.000,1,0,503",
                "2,20,10,502,40.000,45.000,5.000,0,0,200",
            ]
        );
    }
}
