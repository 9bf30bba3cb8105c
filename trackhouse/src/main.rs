//! `trackhouse`: the server, the operator CLI and the demo.
//!
//! A thin binary: it parses the configuration (flags and `TRACKHOUSE_*`
//! environment variables), builds the components and hands them to `api`;
//! `import` is an HTTP client of a running server's intake.

mod admin;
mod config;
mod demo;
mod import;
mod serve;

use std::process::ExitCode;

use clap::Parser;

use crate::config::{Cli, Command};

/// mimalloc in place of glibc's malloc: the intake allocates and frees many
/// small values on every request thread, where glibc's per-thread arenas
/// fragment (and keep) memory and its free lists cost a tenth of the CPU.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => {
            config::init_logging(&args.log);
            report(serve::run(args).await)
        }
        Command::Demo(args) => {
            config::init_logging(&args.server.log);
            report(demo::run(args).await)
        }
        Command::Admin(args) => admin::run(args).await,
        Command::Import(args) => import::run(args).await,
        Command::Openapi(args) => openapi(&args),
    }
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
