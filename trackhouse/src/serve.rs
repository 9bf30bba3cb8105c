//! `trackhouse serve`: build the components and serve until SIGTERM or SIGINT.

use std::sync::Arc;

use anyhow::Context;
use api::{AppState, Server};
use ingest::Ingest;
use platform::{Store, StoreConfig};
use schemas::SystemClock;
use tokio_util::sync::CancellationToken;

use crate::config::ServerArgs;
use crate::priority::{self, BaseThread};

/// Opens the data directory's store.
pub(crate) async fn open_store(data_dir: &std::path::Path) -> anyhow::Result<Store> {
    Store::open(StoreConfig::new(data_dir), Arc::new(SystemClock))
        .await
        .with_context(|| format!("opening the platform store in {}", data_dir.display()))
}

pub(crate) async fn run(args: ServerArgs, base: BaseThread) -> anyhow::Result<()> {
    let store = open_store(&args.data_dir).await?;
    serve(args, store, base, |_| {}).await
}

/// Serves `store` on `args.listen`; `ready` is told the bound address. The
/// ingest engine is opened on `base`, so its threads run at the process's
/// priority, above the runtime's (see [`priority`]).
pub(crate) async fn serve(
    args: ServerArgs,
    store: Store,
    base: BaseThread,
    ready: impl FnOnce(std::net::SocketAddr),
) -> anyhow::Result<()> {
    let ingest_config = args.ingest_config();
    let (ingest, registry, engine_nice) = base
        .run(move || {
            let mut registry = prometheus_client::registry::Registry::default();
            Ingest::open(ingest_config, &mut registry)
                .map(|ingest| (Arc::new(ingest), registry, priority::this_thread_nice()))
        })
        .await
        .context("opening telemetry storage")?
        .context("opening telemetry storage")?;
    drop(base);
    tracing::info!(
        engine_nice,
        request_nice_steps = args.request_nice,
        "thread priorities: the request threads run this many nice steps below the engine's"
    );
    let state = AppState::new(store.clone(), ingest.clone(), args.api_config(), registry);
    let server = Server::bind(args.listen, state)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let addr = server.local_addr()?;
    // Handlers are installed before anyone is told the server is up, so a
    // signal sent right after `serving` shuts down gracefully, never by default action.
    let shutdown = CancellationToken::new();
    tokio::spawn(stop_on_signal(Signals::install()?, shutdown.clone()));
    tracing::info!(%addr, data_dir = %args.data_dir.display(), "serving");
    ready(addr);
    let served = server.run(shutdown).await.context("serving");
    // Everything acknowledged is in the WAL already; flushing makes restart fast.
    let flushed = tokio::task::spawn_blocking(move || ingest.shutdown()).await;
    if !matches!(flushed, Ok(Ok(()))) {
        tracing::warn!("final flush to Parquet failed; the WAL keeps the rows for the next start");
    }
    served?;
    store.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// SIGINT and SIGTERM, listened for from the moment they are installed.
struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                interrupt: signal(SignalKind::interrupt()).context("listening for SIGINT")?,
                terminate: signal(SignalKind::terminate()).context("listening for SIGTERM")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }
}

async fn stop_on_signal(mut signals: Signals, shutdown: CancellationToken) {
    #[cfg(unix)]
    tokio::select! {
        _ = signals.interrupt.recv() => tracing::info!("SIGINT: shutting down"),
        _ = signals.terminate.recv() => tracing::info!("SIGTERM: shutting down"),
    }
    #[cfg(not(unix))]
    {
        let _ = &mut signals;
        if tokio::signal::ctrl_c().await.is_ok() {
            tracing::info!("Ctrl-C: shutting down");
        }
    }
    shutdown.cancel();
}
