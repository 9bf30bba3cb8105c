//! Load generator of fuel resampling (issue 5): one tracker's `--days` of
//! 1 Hz data resampled onto a one-minute grid (FUEL median and SPEED average
//! in a ±30 s window, MOVEMENT following, LNG and LAT previous) through the
//! real server over HTTP, side by side with Polars doing the same
//! computation on the same Parquet files, and the two CSVs checked cell by
//! cell; see `benches::resampling`.
//!
//! `cargo build --release -p benches --bin resampling && target/release/resampling --days 7 --runs 5`
#![allow(
    clippy::print_stdout,
    reason = "a measurement program: its report goes to stdout"
)]

use std::path::PathBuf;
use std::time::Duration;

use benches::resampling::compare::{self, Comparison, Tolerance};
use benches::resampling::polars::{self, PolarsQuery, PolarsRun, Started};
use benches::resampling::{
    DELTA_SECONDS, FUEL_INPUT, Fixture, SENSOR_NAME, STEP_MINUTES, median_duration,
};
use clap::Parser;

/// Ingests one simulated tracker, serves it, and resamples it over HTTP and in Polars.
#[derive(Debug, Parser)]
struct Args {
    /// Days of 1 Hz data.
    #[arg(long, default_value_t = 7)]
    days: u32,
    /// Timed runs of each side, interleaved (the median is reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Untimed runs of each side before the timed ones.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Messages per write call during ingest.
    #[arg(long, default_value_t = 10_000)]
    batch_messages: usize,
    /// Keep the data in this directory instead of a temporary one (it must be empty).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Write both CSVs (`trackhouse.csv`, `polars.csv`) to this directory.
    #[arg(long)]
    csv_dir: Option<PathBuf>,
    /// The Python interpreter that runs the Polars script.
    #[arg(long, default_value = "python3")]
    python: String,
    /// The Polars script (default: `benches/python/resample_polars.py`).
    #[arg(long)]
    script: Option<PathBuf>,
}

/// Numbers within 1e-9 of the larger magnitude are equal; within 1e-12
/// absolute, near (rounding residue next to zero, counted apart).
const TOLERANCE: Tolerance = Tolerance {
    relative: 1e-9,
    absolute: 1e-12,
};
/// Mismatching cells printed.
const SHOWN_MISMATCHES: usize = 10;
const MIB: f64 = 1_048_576.0;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.runs > 0, "`--runs` must be at least 1");
    let temporary = tempfile::tempdir()?;
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| temporary.path().join("data"));
    std::fs::create_dir_all(&data_dir)?;
    let csv_dir = args
        .csv_dir
        .clone()
        .unwrap_or_else(|| temporary.path().join("csv"));
    std::fs::create_dir_all(&csv_dir)?;

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
        "server on {}; fuel sensor {SENSOR_NAME:?} on inputs.{FUEL_INPUT}, calibration {:?}; \
         idle threshold {} km/h, ignition from {}",
        fixture.base,
        fixture.calibration,
        fixture.idle_speed_threshold_kmh,
        fixture.ignition_source
    );
    println!(
        "POST /eco_fleet/v1/trackers/{}/resampling?interval={} step {STEP_MINUTES} min",
        fixture.tracker.0,
        fixture.interval()
    );

    let script = args.script.clone().unwrap_or_else(polars::default_script);
    let query = PolarsQuery {
        files: fixture.files.clone(),
        tracker: fixture.tracker.0,
        span_ms: fixture.span_ms,
        step_ms: STEP_MINUTES * 60_000,
        delta_ms: DELTA_SECONDS * 1000,
        sensor_name: SENSOR_NAME.to_owned(),
        fuel_column: format!("inputs.{FUEL_INPUT}"),
        calibration: fixture.calibration.clone(),
        ignition_column: fixture.ignition_source.clone(),
        idle_speed_threshold_kmh: fixture.idle_speed_threshold_kmh,
        warmup: args.warmup,
        csv_out: csv_dir.join("polars.csv"),
    };
    println!(
        "warming up: {} untimed run(s) of each; Polars: {} {} on the same {} files",
        args.warmup,
        args.python,
        script.display(),
        query.files.len()
    );
    for _ in 0..args.warmup {
        let (run, _) = fixture.resample().await?;
        println!(
            "  Trackhouse warm-up: TTFB {:.1} ms, total {:.1} ms",
            ms(run.first_byte),
            ms(run.total)
        );
    }
    let started = tokio::task::spawn_blocking({
        let python = args.python.clone();
        let query = query.clone();
        move || polars::start(&python, &script, &query)
    })
    .await??;
    let mut session = match started {
        Started::Ready(session) => Some(session),
        Started::Skipped(why) => {
            println!("  Polars: skipped: {why}");
            println!("  (install it with `{}`)", polars::INSTALL_HINT);
            None
        }
    };

    // Rounds of one server call then one Polars run, so that both sides see
    // the same load on a shared machine.
    let mut ours = Vec::with_capacity(args.runs);
    let mut theirs = Vec::with_capacity(args.runs);
    let mut our_csv = String::new();
    for round in 1..=args.runs {
        let (run, csv) = fixture.resample().await?;
        println!(
            "  round {round}: Trackhouse TTFB {:.1} ms, total {:.1} ms, {} rows, {} bytes",
            ms(run.first_byte),
            ms(run.total),
            run.rows,
            run.bytes
        );
        ours.push(run);
        our_csv = csv;
        if let Some(mut running) = session.take() {
            let (running, run) = tokio::task::spawn_blocking(move || {
                let run = running.run();
                (running, run)
            })
            .await?;
            let run = run?;
            println!(
                "  round {round}: Polars total {:.1} ms (read {:.1}, compute {:.1}, csv {:.1}), \
                 {} readings, {} rows, {} bytes",
                ms(run.total),
                ms(run.read),
                ms(run.compute),
                ms(run.csv),
                run.readings,
                run.rows,
                run.bytes
            );
            theirs.push(run);
            session = Some(running);
        }
    }
    std::fs::write(csv_dir.join("trackhouse.csv"), &our_csv)?;
    let finished = match session {
        Some(running) => Some(
            tokio::task::spawn_blocking(move || {
                let (version, numpy, threads) = (
                    running.version.clone(),
                    running.numpy.clone(),
                    running.threads,
                );
                running
                    .finish()
                    .map(|finished| (version, numpy, threads, finished))
            })
            .await??,
        ),
        None => None,
    };
    fixture.stop().await?;

    let our_totals: Vec<Duration> = ours.iter().map(|r| r.total).collect();
    let our_total = median_duration(&our_totals);
    let our_ttfb = median_duration(&ours.iter().map(|r| r.first_byte).collect::<Vec<_>>());
    let our_rows = ours.first().map_or(0, |r| r.rows);
    println!();
    println!(
        "results, median of {} runs; tracker {}, {} days, {} grid rows",
        args.runs, query.tracker, args.days, our_rows
    );
    println!(
        "  {:<34} {:>7} {:>9} {:>10} {:>10} {:>10}",
        "system", "rows", "bytes", "median", "min", "max"
    );
    print_row(
        "Trackhouse (HTTP, in process)",
        our_rows,
        ours.first().map_or(0, |r| r.bytes),
        &our_totals,
    );
    println!(
        "  Trackhouse TTFB median {:.1} ms (the body is sent whole once computed)",
        ms(our_ttfb)
    );
    let Some((version, numpy, threads, finished)) = finished else {
        return Ok(());
    };
    let their_totals: Vec<Duration> = theirs.iter().map(|r| r.total).collect();
    print_row(
        &format!("Polars {version} ({threads} thr)"),
        theirs.first().map_or(0, |r| r.rows),
        theirs.first().map_or(0, |r| r.bytes),
        &their_totals,
    );
    print_phases(&theirs);
    println!(
        "  numpy {numpy}; Python peak RSS {}",
        finished
            .peak_rss
            .map_or("?".to_owned(), |b| format!("{:.0} MiB", b as f64 / MIB))
    );
    println!();
    println!(
        "  ratio Polars time / Trackhouse time = {:.2} (target >= 3)",
        median_duration(&their_totals).as_secs_f64() / our_total.as_secs_f64().max(1e-9)
    );
    println!();
    report(&compare::compare(
        &our_csv,
        &finished.csv,
        TOLERANCE,
        SHOWN_MISMATCHES,
    ));
    if args.csv_dir.is_some() {
        println!("CSVs written to {}", csv_dir.display());
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn print_row(system: &str, rows: u64, bytes: u64, totals: &[Duration]) {
    println!(
        "  {system:<34} {rows:>7} {bytes:>9} {:>8.1}ms {:>8.1}ms {:>8.1}ms",
        ms(median_duration(totals)),
        ms(totals.iter().min().copied().unwrap_or_default()),
        ms(totals.iter().max().copied().unwrap_or_default()),
    );
}

fn print_phases(runs: &[PolarsRun]) {
    let phase = |f: fn(&PolarsRun) -> Duration| {
        ms(median_duration(&runs.iter().map(f).collect::<Vec<_>>()))
    };
    println!(
        "  Polars phases (medians): read+filter+sort {:.1} ms, compute {:.1} ms, CSV {:.1} ms",
        phase(|r| r.read),
        phase(|r| r.compute),
        phase(|r| r.csv)
    );
}

fn report(comparison: &Comparison) {
    println!(
        "check: headers {} ({:?} vs {:?}); rows {} vs {}; Time mismatches {}; \
         {} of {} value cells differ (relative tolerance {:e}), {} more within {:e} absolute",
        if comparison.ours_header == comparison.theirs_header {
            "equal"
        } else {
            "DIFFER"
        },
        comparison.ours_header,
        comparison.theirs_header,
        comparison.ours_rows,
        comparison.theirs_rows,
        comparison.time_mismatches,
        comparison.mismatches,
        comparison.cells,
        TOLERANCE.relative,
        comparison.near,
        TOLERANCE.absolute
    );
    for (column, count) in &comparison.per_column {
        if *count > 0 {
            println!("  {column}: {count} cells differ");
        }
    }
    for m in &comparison.first {
        println!(
            "  row {} ({}), {}: Trackhouse {} vs Polars {}",
            m.row, m.time, m.column, m.ours, m.theirs
        );
    }
    if comparison.near > 0 {
        println!("  cells equal only within the absolute floor (first {SHOWN_MISMATCHES}):");
        for m in &comparison.first_near {
            println!(
                "  row {} ({}), {}: Trackhouse {} vs Polars {}",
                m.row, m.time, m.column, m.ours, m.theirs
            );
        }
    }
    println!(
        "verdict: {}",
        if comparison.agrees() {
            "the two CSVs agree"
        } else {
            "the two CSVs DISAGREE"
        }
    );
}
