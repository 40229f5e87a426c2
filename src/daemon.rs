//! Wiring: open the store and take its lease, build the answerers, start the hub, bind the
//! socket, serve until shutdown. Tests start the daemon through [`Daemon::start`] exactly as
//! `askrelay serve` does.

use crate::answerer::discord::DiscordAnswerer;
use crate::answerer::slack::SlackAnswerer;
use crate::answerer::terminal::TerminalAnswerer;
use crate::config::Config;
use crate::domain::store::{Holder, Pruned, Store};
use crate::domain::{Answerer, Hub, HubSettings, Operators};
use crate::metrics::Metrics;
use crate::protocol::{GatewayHealth, StoreHealth};
use crate::server::{self, ServerContext};
use crate::store::StoreHooks;
use crate::systemd::NotifyState;
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
    /// This daemon's metrics (each daemon has its own registry).
    pub metrics: Arc<Metrics>,
    /// Where `/metrics` and `/healthz` are served, when `[http] listen` is set.
    pub http_addr: Option<std::net::SocketAddr>,
    /// What retention has pruned since start-up.
    pub pruned: tokio::sync::watch::Receiver<Pruned>,
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
        let metrics = Arc::new(Metrics::new(
            config
                .discord
                .token
                .is_some()
                .then_some(crate::answerer::discord::NAME),
            config
                .slack
                .enabled()
                .then_some(crate::answerer::slack::NAME),
            !config.database_url.starts_with("sqlite:"),
        ));
        let store =
            crate::store::open(&config.database_url, &config.postgres, &hooks.store).await?;
        let store: Arc<dyn Store> =
            Arc::new(crate::store::metered::Metered::new(store, metrics.clone()));
        let me = Holder {
            pid: std::process::id(),
            host: nix::unistd::gethostname()
                .ok()
                .and_then(|h| h.into_string().ok())
                .unwrap_or_else(|| "unknown".into()),
            node: config.cluster.node(),
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
        let http = match config.http.addr() {
            Ok(Some(addr)) => match crate::http::bind(addr).await {
                Ok(l) => Some(l),
                Err(e) => {
                    let _ = std::fs::remove_file(&config.socket_path);
                    store.close().await;
                    return Err(e);
                }
            },
            Ok(None) => None,
            Err(e) => {
                let _ = std::fs::remove_file(&config.socket_path);
                store.close().await;
                return Err(e);
            }
        };
        let shutdown = CancellationToken::new();
        let tasks = TaskTracker::new();
        let answerers = build_answerers(&config, &hooks, &shutdown, &metrics)?;
        if answerers.is_empty() {
            tracing::warn!(
                "no answerer is configured: every ask will get NO_ANSWERER; set discord.token and \
                 discord.channel_id, slack.bot_token and slack.channel_id, or [terminal] \
                 enabled = true"
            );
        }
        if config.discord.token.is_some()
            && config.discord.channel_id.is_none()
            && config.routes.iter().all(|r| r.channel_id.is_none())
        {
            tracing::warn!(
                "discord.token is set but no channel is: set discord.channel_id or add [[routes]]"
            );
        }
        if config.slack.enabled()
            && config.slack.channel_id.is_none()
            && config.routes.iter().all(|r| r.slack_channel_id.is_none())
        {
            tracing::warn!(
                "slack.bot_token is set but no Slack channel is: set slack.channel_id or give \
                 [[routes]] a slack_channel_id"
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
                host: config.cluster.node(),
                recorder: metrics.clone(),
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
        if let Some(cluster) = store.cluster() {
            metrics.watch_cluster(cluster.clone());
            crate::cluster::spawn(
                cluster,
                hub.clone(),
                metrics.clone(),
                &config.cluster,
                &tasks,
                shutdown.clone(),
            )
            .await;
        }
        let http_addr = http
            .map(|l| crate::http::serve(l, hub.clone(), metrics.clone(), &tasks, shutdown.clone()))
            .transpose()?;
        let pruned =
            crate::retention::spawn(&config.retention, store.clone(), &tasks, shutdown.clone());
        log_summary(&config, &hub);
        Ok(Daemon {
            socket_path: config.socket_path.clone(),
            hub,
            shutdown,
            tasks,
            store,
            shutdown_timeout: Duration::from_secs(config.shutdown_timeout_secs),
            metrics,
            http_addr,
            pruned,
        })
    }

    /// Waits until every platform connection (the Discord gateway) is up, at most `limit`;
    /// returns the answerers still not connected. A cluster's follower has none to wait for.
    pub async fn wait_connected(&self, limit: Duration) -> Vec<&'static str> {
        if !self.hub.role().leads() {
            return Vec::new();
        }
        let deadline = tokio::time::Instant::now() + limit;
        let mut down = Vec::new();
        for (name, mut rx) in self.hub.connections() {
            let up = tokio::time::timeout_at(deadline, rx.wait_for(|up| *up)).await;
            if !matches!(up, Ok(Ok(_))) {
                down.push(name);
            }
        }
        down
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

/// The answerers, in the daemon's order: Discord first (when configured), then Slack (when
/// `slack.bot_token` is set), then the terminal. Every answerer a route names shows its
/// requests; the first of them in this order owns a request, and the terminal stands in for a
/// request no other answerer takes.
fn build_answerers(
    config: &Arc<Config>,
    hooks: &DaemonHooks,
    shutdown: &CancellationToken,
    metrics: &Arc<Metrics>,
) -> Result<Vec<Arc<dyn Answerer>>> {
    let mut answerers: Vec<Arc<dyn Answerer>> = Vec::new();
    if config.discord.token.is_some() {
        answerers.push(Arc::new(DiscordAnswerer::new(
            config.clone(),
            hooks.discord_client.clone(),
            shutdown.clone(),
            metrics.clone(),
        )?));
    }
    if config.slack.enabled() {
        answerers.push(Arc::new(SlackAnswerer::new(
            config.clone(),
            shutdown.clone(),
        )?));
    }
    if config.terminal_enabled() {
        answerers.push(Arc::new(TerminalAnswerer::new(config.clone())));
    }
    Ok(answerers)
}

/// One line at start-up that says what this daemon is: its database, its socket and who may
/// connect, its answerers and routes (never the token).
fn log_summary(config: &Config, hub: &Hub) {
    // Never the password of a database_url.
    let database = crate::store::sqlite::sqlite_file_path(&config.database_url)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| crate::store::redact_url(&config.database_url));
    let mut routes: Vec<String> = config
        .routes
        .iter()
        .map(|r| {
            let matches: Vec<String> = r.matches.iter().map(|(k, v)| format!("{k}={v}")).collect();
            // Each surface that shows the route's requests: `ops→123+terminal (project=ops)`.
            let to: Vec<String> = r
                .answerers()
                .into_iter()
                .map(|a| match a {
                    "discord" => r
                        .channel_id
                        .or(config.discord.channel_id)
                        .map_or_else(|| "discord".to_owned(), |c| c.to_string()),
                    "slack" => format!("slack:{}", r.slack_channel_id.as_deref().unwrap_or("?")),
                    other => other.to_owned(),
                })
                .collect();
            format!("{}→{} ({})", r.name, to.join("+"), matches.join(" "))
        })
        .collect();
    if let Some(c) = config
        .discord
        .channel_id
        .filter(|_| config.discord.token.is_some())
    {
        routes.push(format!("default→{c}"));
    }
    if let Some(c) = config
        .slack
        .channel_id
        .as_ref()
        .filter(|_| config.slack.enabled())
    {
        routes.push(format!("default→slack:{c}"));
    }
    tracing::info!(
        database = %database,
        socket = %config.socket_path.display(),
        socket_mode = %format!("{:04o}", config.socket_mode.0),
        answerers = %hub.answerer_names().join(","),
        routes = %if routes.is_empty() { "none".to_owned() } else { routes.join(", ") },
        "askrelay {} started",
        env!("CARGO_PKG_VERSION")
    );
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

/// How long `READY=1` waits for the Discord gateway before it is sent anyway (with a status
/// saying the gateway is not connected): a Discord outage must not make systemd kill a daemon
/// that serves the terminal and queues its posts.
const READY_WAIT: Duration = Duration::from_secs(30);

/// Runs the daemon until the first signal arrives on `signals`, then shuts down gracefully; a
/// second signal stops waiting and returns at once (the socket file is still removed). Under
/// systemd (`$NOTIFY_SOCKET`) it reports readiness, watchdog pings and stopping.
pub async fn run(
    config: Config,
    mut signals: tokio::sync::mpsc::UnboundedReceiver<&'static str>,
) -> Result<()> {
    let notifier = crate::systemd::Notifier::from_env();
    let daemon = Daemon::start(config).await?;
    let watchdog = notifier.watchdog_interval().map(|every| {
        let notifier = notifier.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                notifier.notify(&[NotifyState::Watchdog]);
            }
        })
    });
    let first = {
        let ready = announce_ready(&daemon, &notifier);
        tokio::pin!(ready);
        let mut announced = false;
        let mut status_tick = tokio::time::interval(STATUS_EVERY);
        status_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_status = String::new();
        loop {
            tokio::select! {
                s = signals.recv() => break s.unwrap_or("the signal channel closed"),
                status = &mut ready, if !announced => {
                    announced = true;
                    last_status = status;
                }
                _ = status_tick.tick(), if announced => {
                    let status = status_line(&daemon).await;
                    if status != last_status {
                        notifier.notify(&[NotifyState::Status(&status)]);
                        last_status = status;
                    }
                }
            }
        }
    };
    tracing::info!(
        signal = first,
        "shutting down; pending requests stay pending (a second signal stops at once)"
    );
    notifier.notify(&[NotifyState::Stopping]);
    let socket_path = daemon.socket_path.clone();
    tokio::select! {
        _ = daemon.shutdown() => {}
        Some(second) = signals.recv() => {
            tracing::warn!(signal = second, "second signal: stopping now");
            let _ = std::fs::remove_file(&socket_path);
        }
    }
    if let Some(w) = watchdog {
        w.abort();
    }
    Ok(())
}

/// How often systemd's `STATUS=` is brought up to date after `READY=1` (sent only when it
/// changed): `systemctl status` then says when the store fails (a full disk) or the gateway is
/// down, and when it is back.
const STATUS_EVERY: Duration = Duration::from_secs(10);

/// `READY=1` once the socket and the store serve (they do when [`Daemon::start`] returns) and
/// the gateway, if configured, is connected (or [`READY_WAIT`] ran out), with a `STATUS=` that
/// names what is failing (as `health` does). Returns the status sent.
async fn announce_ready(daemon: &Daemon, notifier: &crate::systemd::Notifier) -> String {
    if !notifier.enabled() {
        return std::future::pending().await;
    }
    let down = daemon.wait_connected(READY_WAIT).await;
    if !down.is_empty() {
        tracing::warn!(
            answerers = %down.join(","),
            wait_secs = READY_WAIT.as_secs(),
            "telling systemd the daemon is ready although a gateway is not connected yet"
        );
    }
    let status = status_line(daemon).await;
    notifier.notify(&[NotifyState::Ready, NotifyState::Status(&status)]);
    status
}

/// systemd's one-line status: "serving", or "degraded" with what fails and why.
async fn status_line(daemon: &Daemon) -> String {
    let health = daemon.hub.health().await;
    let mut problems = Vec::new();
    if let StoreHealth::Failing(why) = &health.store {
        problems.push(format!("store failing: {why}"));
    }
    if health.gateway == GatewayHealth::Disconnected {
        let down: Vec<&str> = health
            .connections
            .iter()
            .filter(|(_, c)| **c == GatewayHealth::Disconnected)
            .map(|(name, _)| name.as_str())
            .collect();
        problems.push(format!("not connected yet: {}", down.join(", ")));
    }
    if problems.is_empty() {
        "serving".to_owned()
    } else if health.store.is_ok() {
        format!("serving; {}", problems.join("; "))
    } else {
        format!("degraded; {}", problems.join("; "))
    }
}
