//! Wiring: open the store and take its lease, build the answerers, start the hub, bind the
//! socket, serve until shutdown. Tests start the daemon through [`Daemon::start`] exactly as
//! `askrelay serve` does.

use crate::answerer::discord::DiscordAnswerer;
use crate::answerer::terminal::TerminalAnswerer;
use crate::config::Config;
use crate::core::store::{Holder, Store};
use crate::core::{Answerer, Hub, HubSettings, Operators};
use crate::server::{self, ServerContext};
use crate::store::StoreHooks;
use anyhow::Result;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A running daemon.
pub struct Daemon {
    pub socket_path: PathBuf,
    pub hub: Hub,
    shutdown: CancellationToken,
    tasks: TaskTracker,
    store: Arc<dyn Store>,
    shutdown_timeout: Duration,
}

/// Ways for tests and the benchmark to reach into start-up; the default is what
/// `askrelay serve` uses.
#[derive(Debug, Clone, Default)]
pub struct DaemonHooks {
    /// The HTTP client for Discord REST, e.g. one that resolves discord.com to a local TLS
    /// stand-in. serenity's rate limiter stays on unless `discord.api_base` is changed.
    pub discord_client: Option<reqwest::Client>,
    pub store: StoreHooks,
}

impl Daemon {
    /// Starts serving in the background and returns once the socket accepts connections.
    pub async fn start(config: Config) -> Result<Daemon> {
        Self::start_with(config, DaemonHooks::default()).await
    }

    /// [`Daemon::start`] with hooks.
    pub async fn start_with(config: Config, hooks: DaemonHooks) -> Result<Daemon> {
        let config = Arc::new(config);
        raise_fd_limit(config.limits.max_connections);
        let store = crate::store::open(&config.database_url, &hooks.store).await?;
        let me = Holder {
            pid: std::process::id(),
            host: nix::unistd::gethostname()
                .ok()
                .and_then(|h| h.into_string().ok())
                .unwrap_or_else(|| "unknown".into()),
        };
        if let Err(e) = store.acquire_lease(&me).await {
            store.close().await;
            return Err(e);
        }
        let listener = match server::bind(&config.socket_path, config.socket_mode.0).await {
            Ok(l) => l,
            Err(e) => {
                store.close().await;
                return Err(e);
            }
        };
        let shutdown = CancellationToken::new();
        let tasks = TaskTracker::new();
        let answerers = build_answerers(&config, &hooks, &shutdown)?;
        if answerers.is_empty() {
            tracing::warn!(
                "no answerer is configured: every ask will get NO_ANSWERER; set discord.token and \
                 discord.channel_id, or [terminal] enabled = true"
            );
        }
        if config.discord.token.is_some()
            && config.discord.channel_id.is_none()
            && config.routes.is_empty()
        {
            tracing::warn!(
                "discord.token is set but no channel is: set discord.channel_id or add [[routes]]"
            );
        }
        let (hub, backlog) = Hub::start(
            store.clone(),
            answerers,
            HubSettings {
                cancel_grace: Duration::from_secs(config.cancel_grace_secs),
                restart_grace: Duration::from_secs(config.restart_grace_secs),
                max_pending_per_uid: config.limits.max_pending_per_uid,
                overdue_after: Duration::from_secs(config.outbox_overdue_secs),
                expiry: config.expiry.clone(),
            },
            tasks.clone(),
            shutdown.clone(),
        )
        .await?;
        // Serve first: clients can re-attach while the backlog is handed back to answerers.
        let ctx = ServerContext {
            hub: hub.clone(),
            config: config.clone(),
            operators: Arc::new(Operators::new(
                &config.operator_uids,
                nix::unistd::geteuid().as_raw(),
            )),
            names: Arc::default(),
            shutdown: shutdown.clone(),
            tasks: tasks.clone(),
        };
        tasks.spawn(server::serve(listener, ctx, config.socket_path.clone()));
        hub.start_answerers().await?;
        hub.resume(backlog).await;
        Ok(Daemon {
            socket_path: config.socket_path.clone(),
            hub,
            shutdown,
            tasks,
            store,
            shutdown_timeout: Duration::from_secs(config.shutdown_timeout_secs),
        })
    }

    /// The store, for tests that check what was recorded.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Stops accepting, tells waiting clients, lets in-flight work finish within
    /// `shutdown_timeout_secs` (pending requests stay pending in the store), removes the
    /// socket file and closes the database. Whatever Discord is doing, it returns within the
    /// timeout: every state change is a transaction, so what did not finish did not happen.
    pub async fn shutdown(self) {
        self.hub.announce_shutdown();
        self.shutdown.cancel();
        self.tasks.close();
        if tokio::time::timeout(self.shutdown_timeout, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                timeout_secs = self.shutdown_timeout.as_secs(),
                "shutdown_timeout_secs ran out; stopping without waiting for the rest (nothing \
                 half-written: every change is a transaction)"
            );
        }
        self.remove_socket();
        if tokio::time::timeout(Duration::from_secs(2), self.store.close())
            .await
            .is_err()
        {
            tracing::warn!("the database did not close in time");
        }
        tracing::info!("stopped");
    }

    /// Removes the socket file (also what an immediate exit on a second signal does).
    pub fn remove_socket(&self) {
        if let Err(e) = std::fs::remove_file(&self.socket_path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %self.socket_path.display(), error = %e, "cannot remove the socket file");
            }
        }
    }
}

/// The waterfall: Discord first (when configured), then the terminal.
fn build_answerers(
    config: &Arc<Config>,
    hooks: &DaemonHooks,
    shutdown: &CancellationToken,
) -> Result<Vec<Arc<dyn Answerer>>> {
    let mut answerers: Vec<Arc<dyn Answerer>> = Vec::new();
    if config.discord.token.is_some() {
        answerers.push(Arc::new(DiscordAnswerer::new(
            config.clone(),
            hooks.discord_client.clone(),
            shutdown.clone(),
        )?));
    }
    if config.terminal_enabled() {
        answerers.push(Arc::new(TerminalAnswerer));
    }
    Ok(answerers)
}

/// Each waiting agent holds a connection: raise the soft file-descriptor limit to the hard one
/// so that `limits.max_connections` can be reached, and say so when it cannot.
fn raise_fd_limit(max_connections: usize) {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) if limit < max_connections as u64 + 64 => tracing::warn!(
            limit,
            max_connections,
            "the open-file limit is below limits.max_connections; connections beyond it will fail"
        ),
        Ok(limit) => tracing::debug!(limit, "open-file limit"),
        Err(e) => tracing::warn!(error = %e, "cannot read or raise the open-file limit"),
    }
}

/// Runs the daemon until the first signal arrives on `signals`, then shuts down gracefully; a
/// second signal stops waiting and returns at once (the socket file is still removed).
pub async fn run(
    config: Config,
    mut signals: tokio::sync::mpsc::UnboundedReceiver<&'static str>,
) -> Result<()> {
    let daemon = Daemon::start(config).await?;
    let first = signals.recv().await.unwrap_or("the signal channel closed");
    tracing::info!(
        signal = first,
        "shutting down; pending requests stay pending (a second signal stops at once)"
    );
    let socket_path = daemon.socket_path.clone();
    tokio::select! {
        _ = daemon.shutdown() => {}
        Some(second) = signals.recv() => {
            tracing::warn!(signal = second, "second signal: stopping now");
            let _ = std::fs::remove_file(&socket_path);
        }
    }
    Ok(())
}
