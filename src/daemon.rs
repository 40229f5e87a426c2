//! Wiring: open the store, build the answerers, start the hub, bind the socket, serve until
//! shutdown. Tests start the daemon through [`Daemon::start`] exactly as `askrelay serve` does.

use crate::answerer::discord::DiscordAnswerer;
use crate::answerer::terminal::TerminalAnswerer;
use crate::config::Config;
use crate::core::hub::HubSettings;
use crate::core::{Answerer, Hub};
use crate::server::{self, ServerContext};
use crate::store::Store;
use anyhow::Result;
use std::future::Future;
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
    store: Store,
}

/// Ways for tests and the benchmark to reach into start-up; the default is what
/// `askrelay serve` uses.
#[derive(Debug, Clone, Default)]
pub struct DaemonHooks {
    /// The HTTP client for Discord REST, e.g. one that resolves discord.com to a local TLS
    /// stand-in. serenity's rate limiter stays on unless `discord.api_base` is changed.
    pub discord_client: Option<reqwest::Client>,
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
        let store = Store::open(&config.database_url).await?;
        let listener = server::bind(&config.socket_path, config.socket_mode.0).await?;
        let shutdown = CancellationToken::new();
        let tasks = TaskTracker::new();
        let discord = match &config.discord.token {
            Some(_) => {
                let client = hooks.discord_client.clone();
                let http = Arc::new(crate::answerer::discord::build_http_with(
                    &config,
                    client.clone(),
                )?);
                Some(DiscordAnswerer::new(
                    config.clone(),
                    http,
                    client,
                    tasks.clone(),
                    shutdown.clone(),
                ))
            }
            None => None,
        };
        let answerers = build_answerers(&config, discord.as_ref());
        if answerers.is_empty() {
            tracing::warn!(
                "no answerer is configured: every ask will get NO_ANSWERER; set discord.token and \
                 discord.channel_id, or [terminal] enabled = true"
            );
        }
        let hub = Hub::start(
            store.clone(),
            answerers,
            HubSettings {
                cancel_grace: Duration::from_secs(config.cancel_grace_secs),
                restart_grace: Duration::from_secs(config.restart_grace_secs),
            },
            tasks.clone(),
            shutdown.clone(),
        )
        .await?;
        if let Some(d) = &discord {
            if config.discord.channel_id.is_none() && config.routes.is_empty() {
                tracing::warn!("discord.token is set but no channel is: set discord.channel_id or add [[routes]]");
            }
            d.attach(hub.clone());
        }
        // Serve first: clients can re-attach while the backlog is handed back to answerers.
        let ctx = ServerContext {
            hub: hub.clone(),
            config: config.clone(),
            shutdown: shutdown.clone(),
            tasks: tasks.clone(),
        };
        tasks.spawn(server::serve(listener, ctx, config.socket_path.clone()));
        hub.resume().await?;
        if let Some(d) = &discord {
            d.start_gateway().await?;
        }
        Ok(Daemon {
            socket_path: config.socket_path.clone(),
            hub,
            shutdown,
            tasks,
            store,
        })
    }

    /// Stops accepting, lets in-flight work finish (pending requests stay pending in the
    /// store), removes the socket file and closes the database.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        self.tasks.close();
        self.tasks.wait().await;
        if let Err(e) = std::fs::remove_file(&self.socket_path) {
            tracing::warn!(path = %self.socket_path.display(), error = %e, "cannot remove the socket file");
        }
        self.store.close().await;
        tracing::info!("stopped");
    }
}

/// The waterfall: Discord first (when configured), then the terminal.
fn build_answerers(
    config: &Config,
    discord: Option<&Arc<DiscordAnswerer>>,
) -> Vec<Arc<dyn Answerer>> {
    let mut answerers: Vec<Arc<dyn Answerer>> = Vec::new();
    if let Some(d) = discord {
        answerers.push(Arc::new(d.clone()));
    }
    if config.terminal_enabled() {
        answerers.push(Arc::new(TerminalAnswerer));
    }
    answerers
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

/// Runs the daemon until `signal` resolves, then shuts down gracefully.
pub async fn run(config: Config, signal: impl Future<Output = ()>) -> Result<()> {
    let daemon = Daemon::start(config).await?;
    signal.await;
    tracing::info!("shutting down; pending requests stay pending");
    daemon.shutdown().await;
    Ok(())
}
