//! Load generator of the raw data export: one tracker's `--days` of 1 Hz
//! data exported as CSV through the real server over HTTP, full and narrow,
//! side by side with DuckDB on the same Parquet files and a ClickHouse
//! server (when one answers) on the same rows; see `benches::export`.
//!
//! `cargo run --release -p benches --bin export -- --days 30`
#![allow(
    clippy::print_stdout,
    reason = "a measurement program: its report goes to stdout"
)]

use std::path::PathBuf;
use std::time::Duration;

use benches::export::clickhouse::ClickHouse;
use benches::export::peers::{self, DuckDbOutcome, PeerQuery, PeerRun};
use benches::export::{self, ExportRun, Fixture, NARROW_COLUMNS, rss};
use clap::Parser;

/// Ingests one simulated tracker, serves it, and exports it over HTTP.
#[derive(Debug, Parser)]
struct Args {
    /// Days of 1 Hz data.
    #[arg(long, default_value_t = 30)]
    days: u32,
    /// Runs of each export (the median is reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Messages per write call during ingest.
    #[arg(long, default_value_t = 10_000)]
    batch_messages: usize,
    /// Keep the data in this directory instead of a temporary one (it must be empty).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// A ClickHouse server's HTTP interface; skipped when none answers there
    /// (`deploy/clickhouse/local-server.sh` starts one).
    #[arg(long, default_value = "http://127.0.0.1:8123")]
    clickhouse_url: String,
}

/// The server's runs of one export and the process's memory during them.
#[derive(Debug)]
struct Measured {
    runs: Vec<ExportRun>,
    header: String,
    rss_before: u64,
    rss_min: u64,
    rss_max: u64,
    peak: u64,
    peak_reset: bool,
}

const MIB: f64 = 1_048_576.0;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.runs > 0, "`--runs` must be at least 1");
    let temporary = tempfile::tempdir()?;
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| temporary.path().to_owned());
    println!(
        "ingesting {} days x 1 tracker at 1 Hz = {} messages ...",
        args.days,
        u64::from(args.days) * benches::fleet::MESSAGES_PER_DAY
    );
    let fixture = Fixture::start(&data_dir, args.days, args.batch_messages).await?;
    let ingest = &fixture.ingest;
    println!(
        "ingest: {} messages in {:.1} s; {} files, {:.1} MiB; {} files hold tracker {}",
        ingest.messages,
        ingest.elapsed.as_secs_f64(),
        ingest.files,
        ingest.file_bytes as f64 / MIB,
        fixture.files.len(),
        fixture.tracker.0
    );
    println!(
        "server on {}; peak RSS after ingest {:.0} MiB",
        fixture.base,
        rss::peak().unwrap_or(0) as f64 / MIB
    );
    let full_request = export::full_columns();
    let narrow_request: Vec<String> = NARROW_COLUMNS.map(str::to_owned).to_vec();
    let full = measure(&fixture, &full_request, args.runs).await?;
    let narrow = measure(&fixture, &narrow_request, args.runs).await?;
    let full_names = export::header_names(&full.header);
    let narrow_names = export::header_names(&narrow.header);
    println!(
        "full export: {} columns: {}",
        full_names.len(),
        full_names.join(",")
    );

    let query = PeerQuery {
        files: fixture.files.clone(),
        tracker: fixture.tracker.0,
        span_ms: fixture.span_ms,
    };
    println!();
    println!("DuckDB on the same {} files ...", query.files.len());
    let duckdb = tokio::task::spawn_blocking({
        let query = query.clone();
        let exports = vec![full_names.clone(), narrow_names.clone()];
        let runs = args.runs;
        move || peers::duckdb(&query, &exports, runs)
    })
    .await??;
    let clickhouse = match ClickHouse::connect(&args.clickhouse_url).await {
        Ok(clickhouse) => {
            println!();
            println!(
                "ClickHouse {} at {}: loading the same rows ...",
                clickhouse.version, args.clickhouse_url
            );
            let loaded = clickhouse.load(&fixture, &full_names).await?;
            println!("ClickHouse: {loaded} rows loaded");
            let mut results = Vec::new();
            for names in [&full_names, &narrow_names] {
                let mut runs = Vec::new();
                for _ in 0..args.runs {
                    let (run, header) = clickhouse
                        .export(names, query.tracker, query.span_ms)
                        .await?;
                    anyhow::ensure!(
                        export::header_names(&header) == *names,
                        "ClickHouse's header differs: {header}"
                    );
                    runs.push(run);
                }
                results.push(runs);
            }
            Some((clickhouse.version.clone(), results))
        }
        Err(why) => {
            println!("ClickHouse: skipped: {why}");
            None
        }
    };
    fixture.stop().await?;

    println!();
    println!(
        "results, median of {} runs (by total time); tracker {}, {} days",
        args.runs, query.tracker, args.days
    );
    println!(
        "  {:<22} {:<7} {:>9} {:>13} {:>9} {:>10} {:>9} {:>12} {:>8}",
        "system", "export", "rows", "bytes", "TTFB", "1st row", "total", "rows/s", "MB/s"
    );
    let full_median = median_export(&full.runs);
    let narrow_median = median_export(&narrow.runs);
    print_export("Trackhouse (HTTP)", "full", &full_median);
    print_export("Trackhouse (HTTP)", "narrow", &narrow_median);
    let mut duck_medians = None;
    match &duckdb {
        DuckDbOutcome::Skipped(why) => println!("  DuckDB: skipped: {why}"),
        DuckDbOutcome::Ran {
            version,
            threads,
            exports,
        } => {
            let label = format!("DuckDB {version} ({threads} thr)");
            let medians: Vec<PeerRun> = exports.iter().map(|r| median_peer(r)).collect();
            for (name, run) in ["full", "narrow"].iter().zip(&medians) {
                print_peer(&label, name, run);
            }
            duck_medians = Some(medians);
        }
    }
    let mut clickhouse_medians = None;
    if let Some((version, results)) = &clickhouse {
        let label = format!("ClickHouse {version} (HTTP)");
        let medians: Vec<ExportRun> = results.iter().map(|r| median_export(r)).collect();
        for (name, run) in ["full", "narrow"].iter().zip(&medians) {
            print_export(&label, name, run);
        }
        clickhouse_medians = Some(medians);
    }
    println!();
    for (name, measured) in [("full", &full), ("narrow", &narrow)] {
        println!(
            "  {name:<7} memory: VmRSS {:.0} MiB before, {:.0}-{:.0} MiB sampled every 10 ms during the runs; VmHWM {:.0} MiB{}",
            measured.rss_before as f64 / MIB,
            measured.rss_min as f64 / MIB,
            measured.rss_max as f64 / MIB,
            measured.peak as f64 / MIB,
            if measured.peak_reset {
                " (reset before the runs)"
            } else {
                " (since start: could not be reset)"
            }
        );
        for (i, run) in measured.runs.iter().enumerate() {
            println!(
                "    run {}: TTFB {:.2} ms, first row {:.1} ms, total {:.3} s, {:.0} rows/s",
                i + 1,
                ms(run.first_byte),
                ms(run.first_row),
                run.total.as_secs_f64(),
                run.rows_per_s()
            );
        }
    }
    if let Some(medians) = &duck_medians {
        for (name, run) in ["full", "narrow"].iter().zip(medians) {
            if let Some(rss) = run.peak_rss {
                println!(
                    "  DuckDB {name}: peak RSS of the Python process so far {:.0} MiB",
                    rss as f64 / MIB
                );
            }
        }
        println!();
        for ((name, ours), theirs) in [("full", &full_median), ("narrow", &narrow_median)]
            .iter()
            .zip(medians)
        {
            println!(
                "  ratio {name:<7} Trackhouse rows/s / DuckDB rows/s = {:.2}{}",
                ours.rows_per_s() / theirs.rows_per_s().max(1e-9),
                if ours.rows == theirs.rows {
                    String::new()
                } else {
                    format!(" (row counts differ: {} vs {})", ours.rows, theirs.rows)
                }
            );
        }
    }
    if let Some(medians) = &clickhouse_medians {
        for ((name, ours), theirs) in [("full", &full_median), ("narrow", &narrow_median)]
            .iter()
            .zip(medians)
        {
            println!(
                "  ratio {name:<7} Trackhouse rows/s / ClickHouse rows/s = {:.2}{}",
                ours.rows_per_s() / theirs.rows_per_s().max(1e-9),
                if ours.rows == theirs.rows {
                    String::new()
                } else {
                    format!(" (row counts differ: {} vs {})", ours.rows, theirs.rows)
                }
            );
        }
    }
    Ok(())
}

async fn measure(fixture: &Fixture, columns: &[String], runs: usize) -> anyhow::Result<Measured> {
    let peak_reset = rss::reset_peak();
    let rss_before = rss::current().unwrap_or(0);
    let sampler = rss::Sampler::start(Duration::from_millis(10));
    let mut measured = Vec::with_capacity(runs);
    let mut header = String::new();
    for _ in 0..runs {
        let (run, h) = fixture.export(columns).await?;
        measured.push(run);
        header = h;
    }
    let samples = sampler.finish();
    Ok(Measured {
        runs: measured,
        header,
        rss_before,
        rss_min: samples.iter().copied().min().unwrap_or(0),
        rss_max: samples.iter().copied().max().unwrap_or(0),
        peak: rss::peak().unwrap_or(0),
        peak_reset,
    })
}

fn median_export(runs: &[ExportRun]) -> ExportRun {
    let mut sorted = runs.to_vec();
    sorted.sort_by_key(|r| r.total);
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

fn median_peer(runs: &[PeerRun]) -> PeerRun {
    let mut sorted = runs.to_vec();
    sorted.sort_by_key(|r| r.elapsed);
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn print_export(system: &str, name: &str, run: &ExportRun) {
    println!(
        "  {system:<22} {name:<7} {:>9} {:>13} {:>7.2}ms {:>8.1}ms {:>8.3}s {:>12.0} {:>8.1}",
        run.rows,
        run.bytes,
        ms(run.first_byte),
        ms(run.first_row),
        run.total.as_secs_f64(),
        run.rows_per_s(),
        run.mb_per_s()
    );
}

fn print_peer(system: &str, name: &str, run: &PeerRun) {
    println!(
        "  {system:<22} {name:<7} {:>9} {:>13} {:>9} {:>10} {:>8.3}s {:>12.0} {:>8.1}",
        run.rows,
        run.bytes,
        "-",
        "-",
        run.elapsed.as_secs_f64(),
        run.rows_per_s(),
        run.mb_per_s()
    );
}
