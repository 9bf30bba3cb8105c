//! `trackhouse serve`: build the components and serve until SIGTERM or SIGINT.

use std::sync::Arc;

use anyhow::Context;
use api::{AppState, Server};
use platform::{Store, StoreConfig};
use schemas::SystemClock;
use tokio_util::sync::CancellationToken;

use crate::config::ServerArgs;

/// Opens the data directory's store.
pub(crate) async fn open_store(data_dir: &std::path::Path) -> anyhow::Result<Store> {
    Store::open(StoreConfig::new(data_dir), Arc::new(SystemClock))
        .await
        .with_context(|| format!("opening the platform store in {}", data_dir.display()))
}

pub(crate) async fn run(args: ServerArgs) -> anyhow::Result<()> {
    let store = open_store(&args.data_dir).await?;
    serve(args, store, |_| {}).await
}

/// Serves `store` on `args.listen`; `ready` is told the bound address.
pub(crate) async fn serve(
    args: ServerArgs,
    store: Store,
    ready: impl FnOnce(std::net::SocketAddr),
) -> anyhow::Result<()> {
    let state = AppState::new(store.clone(), args.api_config());
    let server = Server::bind(args.listen, state)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let addr = server.local_addr()?;
    tracing::info!(%addr, data_dir = %args.data_dir.display(), "serving");
    ready(addr);
    let shutdown = CancellationToken::new();
    tokio::spawn(stop_on_signal(shutdown.clone()));
    server.run(shutdown).await.context("serving")?;
    store.close().await;
    tracing::info!("stopped");
    Ok(())
}

async fn stop_on_signal(shutdown: CancellationToken) {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => tracing::info!("SIGINT: shutting down"),
        () = terminate => tracing::info!("SIGTERM: shutting down"),
    }
    shutdown.cancel();
}
