//! Measures how many bytes of stored telemetry a read of one inner value
//! touches against a read of every column; see `benches::layout`.
//!
//! `cargo run --release -p benches --bin layout -- --days 30`
#![allow(
    clippy::print_stdout,
    reason = "a measurement program: its report goes to stdout"
)]

use std::path::PathBuf;

use benches::fleet::MESSAGES_PER_DAY;
use benches::layout::{self, Comparison, LayoutConfig, LayoutReport, PROJECTION, ReadStats};
use clap::Parser;

/// Ingests a simulated fleet, then reads one tracker's files twice: three
/// columns, and every column, counting the bytes the Parquet reader touches.
#[derive(Debug, Parser)]
struct Args {
    /// Days of 1 Hz data per tracker.
    #[arg(long, default_value_t = 30)]
    days: u32,
    /// Trackers in the fleet (the first one is read back).
    #[arg(long, default_value_t = 1)]
    trackers: usize,
    /// Hours of data between flushes (24: one file per day).
    #[arg(long, default_value_t = 24)]
    flush_hours: u32,
    /// Messages per write call.
    #[arg(long, default_value_t = 10_000)]
    batch_messages: usize,
    /// Keep the data in this directory instead of a temporary one (it must be empty).
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let config = LayoutConfig {
        flush_hours: args.flush_hours,
        batch_messages: args.batch_messages,
        ..LayoutConfig::new(args.days, args.trackers)
    };
    let temporary = tempfile::tempdir()?;
    let data_dir = args.data_dir.unwrap_or_else(|| temporary.path().to_owned());
    println!(
        "ingesting {} days x {} tracker(s) at 1 Hz = {} messages, {} per write, a flush every {} h ...",
        config.days,
        config.fleet.trackers,
        u64::from(config.days) * MESSAGES_PER_DAY * config.fleet.trackers as u64,
        config.batch_messages,
        config.flush_hours
    );
    let report = layout::run(&config, &data_dir).await?;
    print_report(&report);
    Ok(())
}

fn print_report(report: &LayoutReport) {
    let ingest = &report.ingest;
    println!(
        "ingest: {} messages in {:.1} s ({:.0} messages/s, generation excluded)",
        ingest.messages,
        ingest.elapsed.as_secs_f64(),
        ingest.messages as f64 / ingest.elapsed.as_secs_f64().max(1e-9)
    );
    println!(
        "files: {} holding {} bytes ({:.2} MiB), {:.2} bytes per message",
        ingest.files,
        ingest.file_bytes,
        ingest.file_bytes as f64 / 1_048_576.0,
        ingest.file_bytes as f64 / ingest.messages.max(1) as f64
    );
    println!();
    println!(
        "tracker {} over {} days; (a) = {}; (b) = every column but _content_hash",
        report.tracker,
        report.config.days,
        PROJECTION.join(", ")
    );
    for comparison in &report.comparisons {
        print_comparison(comparison);
    }
    println!();
    println!("compressed bytes per column in the tracker's files (largest first):");
    let total: u64 = report.column_bytes.iter().map(|(_, b)| b).sum();
    for (name, bytes) in &report.column_bytes {
        println!(
            "  {name:<24} {bytes:>12} {:>6.2}%",
            100.0 * *bytes as f64 / total.max(1) as f64
        );
    }
}

fn print_comparison(comparison: &Comparison) {
    println!();
    println!(
        "reader {} the page index:",
        if comparison.page_index {
            "loading"
        } else {
            "without"
        }
    );
    println!(
        "  {:<4} {:>9} {:>6} {:>10} {:>14} {:>14} {:>9} {:>10}",
        "read", "rows", "files", "row groups", "bytes", "of which meta", "requests", "time"
    );
    print_read("(a)", &comparison.projection);
    print_read("(b)", &comparison.everything);
    println!(
        "  ratio (a)/(b) = {:.4} ({:.2}%)",
        comparison.ratio(),
        comparison.ratio() * 100.0
    );
}

fn print_read(label: &str, stats: &ReadStats) {
    println!(
        "  {label:<4} {:>9} {:>6} {:>10} {:>14} {:>14} {:>9} {:>8.1}ms",
        stats.rows,
        stats.files,
        stats.row_groups,
        stats.bytes,
        stats.metadata_bytes,
        stats.requests,
        stats.elapsed.as_secs_f64() * 1000.0
    );
}
