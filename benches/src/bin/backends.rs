//! Load generator of the storage backends: the same generated rows (one
//! tracker at 1 Hz for `--days`) ingested through the intake of the real
//! server on Parquet and on ClickHouse, and inserted into ClickHouse
//! directly as `JSONEachRow`; then every row with every column exported as
//! CSV by each (`raw_data/read` on both backends, `FORMAT CSVWithNames` from
//! the reference table), in interleaved rounds. See `benches::backends`.
//!
//! `cargo build --release -p benches --bin backends && target/release/backends --days 3 --runs 5 --ingest-runs 3`
#![allow(
    clippy::print_stdout,
    reason = "a measurement program: its report goes to stdout"
)]

use std::time::Duration;

use anyhow::ensure;
use benches::backends::clickhouse::{ClickHouseHttp, Events, LocalClickHouse};
use benches::backends::trackhouse::{IngestRun, Storage, Trackhouse};
use benches::backends::{Sent, Target, Workload, median, send_all};
use benches::export::{self, ExportRun};
use clap::Parser;
use schemas::TrackerId;

/// Ingests and exports the same rows on Parquet, on ClickHouse through
/// Trackhouse, and on ClickHouse directly.
#[derive(Debug, Parser)]
struct Args {
    /// Days of 1 Hz data of one tracker.
    #[arg(long, default_value_t = 3)]
    days: u32,
    /// Rounds of the three exports (medians are reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Rounds of the three ingests, each into fresh storage (medians are reported).
    #[arg(long, default_value_t = 3)]
    ingest_runs: usize,
    /// Lines per request body.
    #[arg(long, default_value_t = 10_000)]
    batch_lines: usize,
    /// Concurrent ingest clients.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// A running ClickHouse server's HTTP interface; without it a throwaway
    /// one is started with `deploy/clickhouse/local-server.sh` and stopped at the end.
    #[arg(long)]
    clickhouse_url: Option<String>,
}

/// The three systems, in the order of the tables.
const SYSTEMS: usize = 3;

/// The systems' ingest paths.
const INGEST_LABELS: [&str; SYSTEMS] = [
    "Trackhouse, Parquet",
    "Trackhouse, ClickHouse",
    "ClickHouse JSONEachRow",
];

/// The last ingest round's servers and databases, exported from.
struct Ingested {
    parquet: Trackhouse,
    clickhouse: Trackhouse,
    th_database: String,
    ref_database: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(
        args.runs > 0 && args.ingest_runs > 0,
        "`--runs` and `--ingest-runs` must be at least 1"
    );
    let (url, local) = match &args.clickhouse_url {
        Some(url) => (url.clone(), None),
        None => {
            let local = LocalClickHouse::start()?;
            (local.url.clone(), Some(local))
        }
    };
    let result = run(&args, &url).await;
    if let Some(local) = local {
        local.stop();
        println!("stopped the throwaway ClickHouse at {url}");
    }
    result
}

async fn run(args: &Args, url: &str) -> anyhow::Result<()> {
    let clickhouse = ClickHouseHttp::connect(url).await?;
    println!("ClickHouse {} at {url}", clickhouse.version);
    // A fresh store's first tracker is 1; Trackhouse::ingest checks it.
    let workload = Workload::generate(TrackerId(1), args.days, args.batch_lines);
    println!(
        "workload: {} rows of tracker {} ({} days at 1 Hz from {}), {} bodies of up to {} lines; \
         NDJSON {:.1} MB, JSONEachRow {:.1} MB; {} concurrent clients",
        workload.rows,
        workload.tracker.0,
        args.days,
        export::iso(workload.span_ms.0),
        workload.lines.len(),
        args.batch_lines,
        workload.ndjson_bytes() as f64 / 1e6,
        workload.json_each_row_bytes() as f64 / 1e6,
        args.clients
    );

    let pid = std::process::id();
    let mut ingests: [Vec<IngestRun>; SYSTEMS] = Default::default();
    let mut last = None;
    for round in 0..args.ingest_runs {
        if let Some(previous) = last.take() {
            let Ingested {
                parquet,
                clickhouse: th,
                th_database,
                ref_database,
            } = previous;
            parquet.stop().await?;
            th.stop().await?;
            clickhouse.drop_database(&th_database).await?;
            clickhouse.drop_database(&ref_database).await?;
        }
        let th_database = format!("bench_th_{pid}_{round}");
        let ref_database = format!("bench_ref_{pid}_{round}");
        // Untimed: fresh storage for each system (the engine on ClickHouse
        // creates its database and tables when it opens).
        let parquet = Trackhouse::start(&Storage::Parquet, args.days + 1).await?;
        let storage = Storage::ClickHouse {
            url: url.to_owned(),
            database: th_database.clone(),
        };
        let th = Trackhouse::start(&storage, args.days + 1).await?;
        clickhouse.create_reference(&ref_database).await?;
        let reference = Target::ClickHouse {
            url: clickhouse.url.clone(),
            insert: format!("INSERT INTO {ref_database}.telemetry FORMAT JSONEachRow"),
        };
        let client = reqwest::Client::new();
        // The three take turns at going first.
        for k in 0..SYSTEMS {
            let system = (round + k) % SYSTEMS;
            clickhouse.settle().await?;
            let before = clickhouse.events().await?;
            let run = match system {
                0 => parquet.ingest(&workload, args.clients).await?,
                1 => th.ingest(&workload, args.clients).await?,
                _ => {
                    let Sent { elapsed, retries } = send_all(
                        &client,
                        &reference,
                        &workload.json_each_row,
                        &workload.lines,
                        args.clients,
                    )
                    .await?;
                    IngestRun {
                        acknowledged: elapsed,
                        flushed: elapsed,
                        retries,
                    }
                }
            };
            let seen = clickhouse.events().await?.since(&before);
            print_ingest(round, INGEST_LABELS[system], &run);
            if system > 0 {
                print_events(&seen);
            }
            ingests[system].push(run);
        }
        last = Some(Ingested {
            parquet,
            clickhouse: th,
            th_database,
            ref_database,
        });
    }
    let Some(ingested) = last else {
        anyhow::bail!("no ingest round ran");
    };
    clickhouse.settle().await?;
    for database in [&ingested.th_database, &ingested.ref_database] {
        let rows = clickhouse.rows(database).await?;
        ensure!(
            rows == workload.rows,
            "{database}.telemetry holds {rows} rows, not {}",
            workload.rows
        );
    }
    println!(
        "stored: Parquet {:.1} MB; ClickHouse via Trackhouse {:.1} MB in {} parts; \
         ClickHouse reference {:.1} MB in {} parts (merges settled)",
        ingested.parquet.telemetry_bytes() as f64 / 1e6,
        clickhouse.bytes(&ingested.th_database).await? as f64 / 1e6,
        clickhouse.parts(&ingested.th_database).await?,
        clickhouse.bytes(&ingested.ref_database).await? as f64 / 1e6,
        clickhouse.parts(&ingested.ref_database).await?,
    );

    // Check round (untimed): the two Trackhouse exports byte for byte, the
    // reference's header and rows.
    let columns = export::full_columns();
    let span = workload.span_ms;
    let tracker = workload.tracker.0;
    let from_parquet = ingested.parquet.export_body(&columns, span).await?;
    let from_clickhouse = ingested.clickhouse.export_body(&columns, span).await?;
    let header = String::from_utf8_lossy(
        from_parquet
            .split(|&b| b == b'\n')
            .next()
            .unwrap_or_default(),
    )
    .into_owned();
    let names = export::header_names(&header);
    let reference = clickhouse
        .export_body(&ingested.ref_database, &names, tracker, span)
        .await?;
    let identical = from_parquet == from_clickhouse;
    if !identical {
        report_difference(&from_parquet, &from_clickhouse);
    }
    ensure!(
        identical,
        "the exports from Parquet and from ClickHouse differ"
    );
    let lines = |body: &[u8]| body.iter().filter(|&&b| b == b'\n').count() as u64;
    ensure!(
        lines(&from_parquet) == workload.rows + 1,
        "the export has {} rows, not {}",
        lines(&from_parquet).saturating_sub(1),
        workload.rows
    );
    ensure!(
        lines(&reference) == workload.rows + 1,
        "the reference export has {} rows, not {}",
        lines(&reference).saturating_sub(1),
        workload.rows
    );
    let reference_header =
        String::from_utf8_lossy(reference.split(|&b| b == b'\n').next().unwrap_or_default())
            .into_owned();
    ensure!(
        export::header_names(&reference_header) == names,
        "the reference header differs: {reference_header}"
    );
    let pairs = || {
        from_parquet
            .split(|&b| b == b'\n')
            .zip(reference.split(|&b| b == b'\n'))
    };
    let unquoted =
        |line: &[u8]| -> Vec<u8> { line.iter().copied().filter(|&b| b != b'"').collect() };
    let differing = pairs().filter(|(a, b)| a != b).count();
    let differing_unquoted = pairs().filter(|(a, b)| unquoted(a) != unquoted(b)).count();
    let first_textual = pairs().skip(1).find(|(a, b)| a != b);
    let first_unquoted = pairs().skip(1).find(|(a, b)| unquoted(a) != unquoted(b));
    for (what, found) in [
        ("textually", first_textual),
        ("once double quotes are ignored", first_unquoted),
    ] {
        if let Some((ours, theirs)) = found {
            println!("first data row that differs {what}:");
            println!("  Trackhouse: {}", String::from_utf8_lossy(ours));
            println!("  reference:  {}", String::from_utf8_lossy(theirs));
        }
    }
    println!(
        "full export: {} columns, {} rows; Trackhouse Parquet and ClickHouse: {} bytes each, identical: yes; \
         reference CSVWithNames: {} bytes, {differing} of {} lines differ textually from Trackhouse's, \
         {differing_unquoted} once double quotes are ignored",
        names.len(),
        workload.rows,
        from_parquet.len(),
        reference.len(),
        workload.rows + 1,
    );
    let expected_bytes = [
        from_parquet.len() as u64,
        from_clickhouse.len() as u64,
        reference.len() as u64,
    ];
    drop((from_parquet, from_clickhouse, reference));

    let mut exports: [Vec<ExportRun>; SYSTEMS] = Default::default();
    for round in 0..args.runs {
        for k in 0..SYSTEMS {
            let system = (round + k) % SYSTEMS;
            let (run, _) = match system {
                0 => ingested.parquet.export(&columns, span).await?,
                1 => ingested.clickhouse.export(&columns, span).await?,
                _ => {
                    clickhouse
                        .export(&ingested.ref_database, &names, tracker, span)
                        .await?
                }
            };
            ensure!(
                run.rows == workload.rows && run.bytes == expected_bytes[system],
                "export {system} of round {round}: {} rows, {} bytes",
                run.rows,
                run.bytes
            );
            exports[system].push(run);
        }
    }
    ingested.parquet.stop().await?;
    ingested.clickhouse.stop().await?;

    report(args, &clickhouse.version, &workload, &ingests, &exports);
    Ok(())
}

fn print_ingest(round: usize, system: &str, run: &IngestRun) {
    println!(
        "  ingest round {}: {system:<24} acknowledged {:.3} s, durable {:.3} s{}",
        round + 1,
        run.acknowledged.as_secs_f64(),
        run.flushed.as_secs_f64(),
        if run.retries > 0 {
            format!(", {} requests retried", run.retries)
        } else {
            String::new()
        }
    );
}

fn print_events(seen: &Events) {
    println!(
        "    ClickHouse meanwhile: {} queries, of which {} INSERTs ({} rows in all tables) and {} SELECTs",
        seen.queries, seen.inserts, seen.inserted_rows, seen.selects
    );
}

fn report_difference(a: &[u8], b: &[u8]) {
    for (i, (x, y)) in a
        .split(|&c| c == b'\n')
        .zip(b.split(|&c| c == b'\n'))
        .enumerate()
    {
        if x != y {
            println!("first difference on line {}:", i + 1);
            println!("  Parquet:    {}", String::from_utf8_lossy(x));
            println!("  ClickHouse: {}", String::from_utf8_lossy(y));
            return;
        }
    }
    println!(
        "the bodies differ in length: {} and {} bytes",
        a.len(),
        b.len()
    );
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn report(
    args: &Args,
    version: &str,
    workload: &Workload,
    ingests: &[Vec<IngestRun>; SYSTEMS],
    exports: &[Vec<ExportRun>; SYSTEMS],
) {
    let labels = [
        "Trackhouse, Parquet".to_owned(),
        "Trackhouse, ClickHouse".to_owned(),
        format!("ClickHouse {version} (reference)"),
    ];
    let rows = workload.rows as f64;
    println!();
    println!(
        "ingest: {} rows, {} bodies of {} lines, {} clients; median of {} round(s); \
         durable = acknowledged and flushed (Trackhouse), INSERT answered (ClickHouse)",
        workload.rows,
        workload.lines.len(),
        args.batch_lines,
        args.clients,
        args.ingest_runs
    );
    println!(
        "  {:<34} {:>10} {:>10} {:>12} {:>14}",
        "system", "acked", "durable", "rows/s", "vs reference"
    );
    let durable: Vec<Duration> = ingests
        .iter()
        .map(|runs| median(&runs.iter().map(|r| r.flushed).collect::<Vec<_>>()))
        .collect();
    for (i, runs) in ingests.iter().enumerate() {
        let acked = median(&runs.iter().map(|r| r.acknowledged).collect::<Vec<_>>());
        println!(
            "  {:<34} {:>9.3}s {:>9.3}s {:>12.0} {:>14.2}",
            labels[i],
            secs(acked),
            secs(durable[i]),
            rows / secs(durable[i]).max(1e-9),
            secs(durable[2]) / secs(durable[i]).max(1e-9)
        );
    }
    println!();
    println!(
        "full export as CSV: {} rows; median of {} interleaved rounds",
        workload.rows, args.runs
    );
    println!(
        "  {:<34} {:>12} {:>10} {:>10} {:>10} {:>12} {:>8} {:>14}",
        "system", "bytes", "TTFB", "1st row", "total", "rows/s", "MB/s", "vs reference"
    );
    let totals: Vec<Duration> = exports
        .iter()
        .map(|runs| median(&runs.iter().map(|r| r.total).collect::<Vec<_>>()))
        .collect();
    for (i, runs) in exports.iter().enumerate() {
        let ttfb = median(&runs.iter().map(|r| r.first_byte).collect::<Vec<_>>());
        let first_row = median(&runs.iter().map(|r| r.first_row).collect::<Vec<_>>());
        let bytes = runs.first().map_or(0, |r| r.bytes);
        println!(
            "  {:<34} {:>12} {:>8.1}ms {:>8.1}ms {:>9.3}s {:>12.0} {:>8.1} {:>14.2}",
            labels[i],
            bytes,
            secs(ttfb) * 1000.0,
            secs(first_row) * 1000.0,
            secs(totals[i]),
            rows / secs(totals[i]).max(1e-9),
            bytes as f64 / 1e6 / secs(totals[i]).max(1e-9),
            secs(totals[2]) / secs(totals[i]).max(1e-9)
        );
    }
    println!("  (vs reference: the reference's time / this system's time; above 1 is faster)");
    println!();
    for (i, runs) in exports.iter().enumerate() {
        let list: Vec<String> = runs
            .iter()
            .map(|r| {
                format!(
                    "{:.3} s (TTFB {:.1} ms)",
                    secs(r.total),
                    secs(r.first_byte) * 1000.0
                )
            })
            .collect();
        println!("  export runs, {}: {}", labels[i], list.join(", "));
    }
}
