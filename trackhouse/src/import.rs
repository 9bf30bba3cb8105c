//! `trackhouse import`: streams NDJSON files to a server's intake.
//!
//! ```text
//! reader thread: file → (gzip) → lines → Batcher ──channel──► Sender: zstd, POST, retry
//!                                                              └─► totals, `path:line` of rejections
//! ```
//!
//! Files are read line by line, never whole; at most `concurrency` requests
//! plus as many batches waiting in the channel are held in memory. The
//! [`Sender`] is shared with `demo`, which sends its generated telemetry the same way.

mod batch;
mod progress;
mod sender;

use std::cell::Cell;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Instant;

use clap::Args;
use platform::Secret;
use serde_json::json;
use tokio::sync::mpsc;

pub(crate) use self::batch::{Batch, BatchLimits, Batcher, Origin};
pub(crate) use self::progress::{Progress, grouped};
pub(crate) use self::sender::{Sender, SenderConfig, Totals};

/// A line longer than this stops the import of its file: it cannot be a message.
const MAX_LINE_BYTES: u64 = 32 * 1024 * 1024;

/// Exit status of usage errors (as clap's own).
const USAGE: u8 = 2;

/// Options of `trackhouse import`.
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// NDJSON files, one message per line; names ending in `.gz` are gunzipped, `-` is standard input.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,

    /// The server's base URL (http only); lines go to `URL/ingest/v1/messages`.
    #[arg(long, env = "TRACKHOUSE_URL", default_value = "http://127.0.0.1:8080")]
    url: String,

    /// Ingest token (`trackhouse admin ingest-token create`): 32 hexadecimal characters.
    #[arg(long, env = "TRACKHOUSE_INGEST_TOKEN", value_parser = parse_token, hide_env_values = true)]
    token: Secret,

    /// Largest request, in bytes of NDJSON before compression (requests are sent zstd-compressed).
    #[arg(long, env = "TRACKHOUSE_IMPORT_BATCH_BYTES", default_value_t = 8 * 1024 * 1024,
          value_parser = clap::value_parser!(u64).range(1..=64 * 1024 * 1024))]
    batch_bytes: u64,

    /// Most lines in one request.
    #[arg(long, env = "TRACKHOUSE_IMPORT_BATCH_LINES", default_value_t = 50_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    batch_lines: u64,

    /// Requests in flight at once.
    #[arg(long, env = "TRACKHOUSE_IMPORT_CONCURRENCY", default_value_t = 2,
          value_parser = clap::value_parser!(u64).range(1..=64))]
    concurrency: u64,

    /// Retries of a request answered 503 (queue busy) or not answered at all, with
    /// exponential backoff up to 30 s, before its lines are given up.
    #[arg(long, env = "TRACKHOUSE_IMPORT_MAX_RETRIES", default_value_t = 10)]
    max_retries: u32,
}

fn parse_token(text: &str) -> Result<Secret, String> {
    Secret::parse(text.trim()).ok_or_else(|| "an ingest token is 32 hexadecimal characters".into())
}

/// An input checked before anything is sent.
#[derive(Debug)]
struct Source {
    /// As given on the command line; rejections are reported as `name:line`.
    name: String,
    /// `None`: standard input.
    path: Option<PathBuf>,
    gzip: bool,
    /// Bytes on disk, when known.
    size: Option<u64>,
}

/// Runs the import; exit status 0 only if every line was delivered and none refused.
pub(crate) async fn run(args: ImportArgs) -> ExitCode {
    let started = Instant::now();
    let sources = match check_sources(&args.files) {
        Ok(sources) => sources,
        Err(message) => {
            eprintln!("trackhouse import: {message}");
            return ExitCode::from(USAGE);
        }
    };
    let total_bytes = sources.iter().map(|s| s.size).sum::<Option<u64>>();
    let progress = Progress::on_stderr(total_bytes);
    let concurrency = usize::try_from(args.concurrency).unwrap_or(1);
    let config = SenderConfig {
        url: args.url,
        token: args.token,
        concurrency,
        max_retries: args.max_retries,
        env_proxy: true,
    };
    let names = sources.iter().map(|s| s.name.clone()).collect();
    let sender = match Sender::try_new(config, names, progress.clone()) {
        Ok(sender) => sender,
        Err(e) => {
            progress.finish();
            eprintln!("trackhouse import: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let limits = BatchLimits {
        max_bytes: usize::try_from(args.batch_bytes).unwrap_or(usize::MAX),
        max_lines: usize::try_from(args.batch_lines).unwrap_or(usize::MAX),
    };
    let files = sources.len();
    let (tx, rx) = mpsc::channel(concurrency);
    let reader = tokio::task::spawn_blocking(move || read_sources(&sources, limits, &tx));
    let totals = sender.send_all(rx).await;
    let read = reader
        .await
        .unwrap_or_else(|e| Err(format!("the reader failed: {e}")));
    progress.finish();

    if totals.rejected > totals.rejections.len() as u64 {
        eprintln!(
            "trackhouse import: {} lines rejected in all (the first {} are listed above)",
            grouped(totals.rejected),
            totals.rejections.len()
        );
    }
    if let Some(reason) = &totals.fatal {
        eprintln!("trackhouse import: stopped: {reason}");
    }
    if let Err(message) = &read {
        eprintln!("trackhouse import: {message}");
    }
    let summary = json!({
        "files": files,
        "lines": totals.lines,
        "accepted": totals.accepted,
        "duplicates": totals.duplicates,
        "rejected": totals.rejected,
        "requests": totals.requests,
        "retries": totals.retries,
        "seconds": (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
    });
    let printed = writeln!(std::io::stdout().lock(), "{summary}").is_ok();
    if printed && read.is_ok() && totals.clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Checks that every input can be read, before anything is sent.
fn check_sources(files: &[PathBuf]) -> Result<Vec<Source>, String> {
    let mut sources = Vec::with_capacity(files.len());
    let mut stdin = false;
    for path in files {
        let name = path.display().to_string();
        if name == "-" {
            if std::mem::replace(&mut stdin, true) {
                return Err("`-` (standard input) can be given once only".to_owned());
            }
            sources.push(Source {
                name,
                path: None,
                gzip: false,
                size: None,
            });
            continue;
        }
        let unreadable = |e: std::io::Error| format!("cannot read {name}: {e}");
        let file = std::fs::File::open(path).map_err(unreadable)?;
        let metadata = file.metadata().map_err(unreadable)?;
        if metadata.is_dir() {
            return Err(format!("cannot read {name}: it is a directory"));
        }
        sources.push(Source {
            gzip: name.ends_with(".gz"),
            size: Some(metadata.len()),
            path: Some(path.clone()),
            name,
        });
    }
    Ok(sources)
}

/// Counts the bytes read from a source as stored, for progress and ETA.
struct Counted<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// Reads every source into batches sent on `tx`; stops quietly when the sender
/// hangs up, and with an error naming `file:line` when a source cannot be read.
fn read_sources(
    sources: &[Source],
    limits: BatchLimits,
    tx: &mpsc::Sender<Batch>,
) -> Result<(), String> {
    let mut batcher = Batcher::new(limits);
    let mut outcome = Ok(());
    for (index, source) in sources.iter().enumerate() {
        let source_index = u32::try_from(index).unwrap_or(u32::MAX);
        match read_source(source, source_index, &mut batcher, tx) {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(message) => {
                outcome = Err(message);
                break;
            }
        }
    }
    // What was read before an error is sent all the same.
    if let Some(batch) = batcher.finish() {
        let _ = tx.blocking_send(batch);
    }
    outcome
}

/// Reads one source; `Ok(false)` when the sender hung up.
fn read_source(
    source: &Source,
    index: u32,
    batcher: &mut Batcher,
    tx: &mpsc::Sender<Batch>,
) -> Result<bool, String> {
    const BUFFER: usize = 256 * 1024;
    let count = Rc::new(Cell::new(0));
    let raw: Box<dyn Read> = match &source.path {
        None => Box::new(std::io::stdin().lock()),
        Some(path) => Box::new(
            std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", source.name))?,
        ),
    };
    let counted = Counted {
        inner: raw,
        count: count.clone(),
    };
    let mut reader: Box<dyn BufRead> = if source.gzip {
        let gunzip = flate2::read::MultiGzDecoder::new(BufReader::with_capacity(BUFFER, counted));
        Box::new(BufReader::with_capacity(BUFFER, gunzip))
    } else {
        Box::new(BufReader::with_capacity(BUFFER, counted))
    };
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut counted_bytes = 0;
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{}:{}: cannot read: {e}", source.name, number + 1))?;
        if read == 0 {
            break;
        }
        number += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
        } else if read as u64 > MAX_LINE_BYTES {
            return Err(format!(
                "{}:{number}: line longer than {MAX_LINE_BYTES} bytes",
                source.name
            ));
        }
        batcher.add_source_bytes(count.get() - counted_bytes);
        counted_bytes = count.get();
        if batch::is_blank(&line) {
            continue;
        }
        let origin = Origin {
            source: index,
            line: number,
        };
        if let Some(full) = batcher.push(&line, origin) {
            if tx.blocking_send(full).is_err() {
                return Ok(false);
            }
        }
    }
    batcher.add_source_bytes(count.get() - counted_bytes);
    Ok(true)
}
