//! `trackhouse`: the server, the operator CLI and the demo.
//!
//! A thin binary: it parses the configuration (flags and `TRACKHOUSE_*`
//! environment variables), builds the components and hands them to `api`;
//! `import` is an HTTP client of a running server's intake.

mod admin;
mod config;
mod demo;
mod import;
mod priority;
mod serve;

use std::process::ExitCode;
use std::sync::Once;

use clap::Parser;

use crate::config::{Cli, Command};

/// mimalloc in place of glibc's malloc: the intake allocates and frees many
/// small values on every request thread, where glibc's per-thread arenas
/// fragment (and keep) memory and its free lists cost a tenth of the CPU.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => {
            config::init_logging(&args.log);
            let request_nice = args.request_nice;
            serving(request_nice, |base| serve::run(args, base))
        }
        Command::Demo(args) => {
            config::init_logging(&args.server.log);
            let request_nice = args.server.request_nice;
            serving(request_nice, |base| demo::run(args, base))
        }
        Command::Admin(args) => runtime(0).map_or_else(fail, |rt| rt.block_on(admin::run(args))),
        Command::Import(args) => runtime(0).map_or_else(fail, |rt| rt.block_on(import::run(args))),
        Command::Openapi(args) => openapi(&args),
    }
}

/// Runs a serving command: the base-priority thread is started first, then
/// the runtime, whose threads run `request_nice` steps lower (see [`priority`]).
fn serving<F>(request_nice: u8, run: impl FnOnce(priority::BaseThread) -> F) -> ExitCode
where
    F: Future<Output = anyhow::Result<()>>,
{
    let base = match priority::BaseThread::start() {
        Ok(base) => base,
        Err(err) => return fail(err),
    };
    runtime(request_nice).map_or_else(fail, |rt| report(rt.block_on(run(base))))
}

/// The multi-threaded runtime (one worker per CPU), its threads (workers and
/// blocking pool alike) `nice_steps` lower than the calling thread.
fn runtime(nice_steps: u8) -> anyhow::Result<tokio::runtime::Runtime> {
    let warned = std::sync::Arc::new(Once::new());
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_start(move || {
            if let Err(err) = priority::lower_this_thread(nice_steps) {
                warned.call_once(|| {
                    tracing::warn!(error = %err, "the request threads keep the engine's priority");
                });
            }
        })
        .build()
        .map_err(|e| anyhow::anyhow!("starting the async runtime: {e}"))
}

fn fail(err: anyhow::Error) -> ExitCode {
    report(Err(err))
}

/// `trackhouse openapi [--out FILE]`.
fn openapi(args: &config::OpenapiArgs) -> ExitCode {
    let text = api::openapi_text();
    let written = match &args.out {
        Some(path) => {
            std::fs::write(path, &text).map_err(|e| format!("writing {}: {e}", path.display()))
        }
        None => {
            use std::io::Write as _;
            std::io::stdout()
                .lock()
                .write_all(text.as_bytes())
                .map_err(|e| format!("writing to standard output: {e}"))
        }
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("trackhouse openapi: {message}");
            ExitCode::FAILURE
        }
    }
}

fn report(outcome: anyhow::Result<()>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(error = format!("{err:#}"), "trackhouse stopped");
            eprintln!("trackhouse: {err:#}");
            ExitCode::FAILURE
        }
    }
}
