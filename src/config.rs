//! Configuration (docs/contract.md, "Config keys"): defaults, then the TOML file, then `ASKRELAY_*` environment variables.
//!
//! Everything is deserialized into typed structs. An unknown key or a bad value stops start-up with
//! a message that names the key, so a typo never silently falls back to a default.

use anyhow::{anyhow, bail, Result};
use serde::de::{self, Deserializer};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

pub use crate::core::expiry::{ExpiryRule, OnExpire};

/// The prefix of every environment variable the daemon reads as configuration.
pub const ENV_PREFIX: &str = "ASKRELAY";

/// Environment variables with the prefix that are not configuration keys: the log filter, the
/// config file path, the scope labels of the MCP front end and the test hooks (`ASKRELAY_TEST_*`).
const NOT_CONFIG_ENV: &[&str] = &[
    "ASKRELAY_LOG",
    "ASKRELAY_CONFIG",
    "ASKRELAY_SCOPE_",
    "ASKRELAY_TEST_",
];

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Where the daemon listens and where clients connect.
    pub socket_path: PathBuf,
    /// File mode of the socket; connecting needs write permission, so "0600" is owner-only.
    pub socket_mode: SocketMode,
    pub database_url: String,
    /// How long a pending request waits for its client to come back after a disconnect.
    pub cancel_grace_secs: u64,
    /// How long requests found pending at start-up wait for their clients to re-attach.
    pub restart_grace_secs: u64,
    /// Local users (uids) who may connect, checked with SO_PEERCRED; empty lets in everyone
    /// the socket's file mode lets in.
    #[serde(deserialize_with = "uids")]
    pub allowed_uids: Vec<u32>,
    /// Local users who may see and cancel every request (root and the daemon's own uid always
    /// may); everyone else sees and cancels only the requests they asked.
    #[serde(deserialize_with = "uids")]
    pub operator_uids: Vec<u32>,
    /// The uid the daemon runs as, when it is another user than the clients' (a system
    /// service): clients trust a socket owned by themselves, root, or this uid.
    pub daemon_uid: Option<u32>,
    /// How long shutdown may take before the daemon exits anyway (a second signal exits at
    /// once).
    pub shutdown_timeout_secs: u64,
    /// Outbox work (a question to post, a message to edit) due for longer than this is reported
    /// as overdue by `askrelay pending` and `health`.
    pub outbox_overdue_secs: u64,
    pub limits: Limits,
    pub discord: DiscordConfig,
    pub terminal: TerminalConfig,
    pub routes: Vec<Route>,
    /// How long any request may wait, and what then; routes override it with `expiry`.
    pub expiry: ExpiryRule,
    pub digest: DigestConfig,
    /// How the daemon's logs are written to stderr.
    pub log_format: LogFormat,
    /// The optional HTTP listener for `/metrics` and `/healthz`.
    pub http: HttpConfig,
    /// How long ended requests and audit rows are kept.
    pub retention: RetentionConfig,
    /// The PostgreSQL store's connections (when `database_url` is `postgres://`).
    pub postgres: PostgresConfig,
    /// Cluster mode: daemons sharing one PostgreSQL database.
    pub cluster: ClusterConfig,
}

/// `[postgres]`: the pool of the PostgreSQL store. The password belongs in `database_url` (or
/// `ASKRELAY_DATABASE_URL`) and is never logged or echoed in an error.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct PostgresConfig {
    /// Connections in the pool (the lead and the notice listener have one each besides).
    pub max_connections: u32,
    /// How long connecting, or waiting for a free connection, may take.
    pub connect_timeout_secs: u64,
    /// How long one statement may run before the server cancels it.
    pub statement_timeout_secs: u64,
    /// TLS: "disable", "prefer", "require", "verify-ca" or "verify-full"; overrides the URL's
    /// `sslmode`.
    pub sslmode: Option<String>,
    /// A PEM file of the certificate authority that signed the server's certificate
    /// (`verify-ca`, `verify-full`).
    pub ssl_root_cert: Option<PathBuf>,
}

impl Default for PostgresConfig {
    fn default() -> Self {
        PostgresConfig {
            max_connections: 8,
            connect_timeout_secs: 10,
            statement_timeout_secs: 30,
            sslmode: None,
            ssl_root_cert: None,
        }
    }
}

/// `[cluster]`: used when `database_url` is `postgres://`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct ClusterConfig {
    /// This daemon's name in the cluster; it owns the requests asked here and must stay the
    /// same across restarts (clients re-attach to it). Default: the host name.
    pub node_id: Option<String>,
    /// The longest a cluster goes without a leader after the leader dies: followers try to take
    /// the lead every quarter of it, and a leader that cannot confirm its lead for this long
    /// steps down.
    pub failover_secs: u64,
    /// How often a node looks for what a lost notice would have told it (answers to its
    /// requests, outbox work); notices make this rarely matter.
    pub poll_interval_ms: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            node_id: None,
            failover_secs: 10,
            poll_interval_ms: 2000,
        }
    }
}

impl ClusterConfig {
    /// This node's id: `node_id`, else the host name.
    pub fn node(&self) -> String {
        self.node_id.clone().unwrap_or_else(|| {
            nix::unistd::gethostname()
                .ok()
                .and_then(|h| h.into_string().ok())
                .unwrap_or_else(|| "unknown".into())
        })
    }
}

/// `log_format`: human-readable lines, or one JSON object per line for a log collector.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// `[http]`: off unless `listen` is set.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct HttpConfig {
    /// "IP:PORT" to serve `/metrics` and `/healthz` on, e.g. "127.0.0.1:9464". It has no
    /// authentication: keep it on localhost or a private network.
    pub listen: Option<String>,
}

impl HttpConfig {
    /// The address to listen on, if any.
    pub fn addr(&self) -> Result<Option<std::net::SocketAddr>> {
        self.listen
            .as_deref()
            .map(|l| {
                l.trim()
                    .parse()
                    .map_err(|_| anyhow!("http.listen: expected IP:PORT, like \"127.0.0.1:9464\""))
            })
            .transpose()
    }
}

/// `[retention]`: nothing is deleted unless a key is set. Days may be fractional (0.5 is 12
/// hours; tests use a few seconds' worth).
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct RetentionConfig {
    /// Ended requests (answered, cancelled, expired, failed) are deleted this many days after
    /// they ended, with their questions, answers, drafts, outbox rows and timers.
    pub ended_after_days: Option<f64>,
    /// Audit rows are deleted this many days after they were written.
    pub audit_after_days: Option<f64>,
    /// How often the pruning runs (also once at start-up).
    pub interval_secs: u64,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            ended_after_days: None,
            audit_after_days: None,
            interval_secs: 3600,
        }
    }
}

impl RetentionConfig {
    /// Whether anything is ever pruned.
    pub fn enabled(&self) -> bool {
        self.ended_after_days.is_some() || self.audit_after_days.is_some()
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct Limits {
    pub max_questions: usize,
    pub max_line_bytes: usize,
    /// Open socket connections at most; each waiting agent holds one.
    pub max_connections: usize,
    /// Once a line has started, the rest of it must arrive within this many seconds.
    pub line_timeout_secs: u64,
    /// Replies waiting to be written to one connection, at most; a client that does not read
    /// them is disconnected past this.
    pub max_output_bytes: usize,
    /// Pending requests one local user (uid) may have at once; past it, `ask` answers `BUSY`.
    pub max_pending_per_uid: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_questions: 10,
            max_line_bytes: 1024 * 1024,
            max_connections: 16384,
            line_timeout_secs: 30,
            max_output_bytes: 1024 * 1024,
            max_pending_per_uid: 1000,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct DiscordConfig {
    pub token: Option<Secret>,
    /// Scheme and host of the REST API; anything else than the default is a proxy or a stand-in.
    pub api_base: String,
    pub channel_id: Option<Snowflake>,
    #[serde(deserialize_with = "snowflakes")]
    pub allowed_user_ids: Vec<Snowflake>,
    #[serde(deserialize_with = "snowflakes")]
    pub allowed_role_ids: Vec<Snowflake>,
    #[serde(deserialize_with = "snowflakes")]
    pub mention_role_ids: Vec<Snowflake>,
    #[serde(deserialize_with = "snowflakes")]
    pub mention_user_ids: Vec<Snowflake>,
    /// The longest wait between two retries of a failed Discord call (backoff doubles up to it).
    pub retry_max_delay_ms: u64,
    /// The deadline of every Discord REST call; one that takes longer counts as a transient
    /// failure (retried like a 5xx).
    pub request_timeout_ms: u64,
    /// The deadline of an interaction callback, which must land within Discord's 3 s.
    pub callback_timeout_ms: u64,
    /// How often the outbox is checked for posts and edits that are due (unposted questions,
    /// messages still showing an old state); also right after the gateway reconnects.
    pub repair_interval_secs: u64,
    /// Whether people at a terminal (`askrelay answer`) may answer requests on the default
    /// route; routes have their own `terminal_answers`. Off: only the allowlisted Discord
    /// members answer.
    pub terminal_answers: bool,
    /// Reminders on the default route (and routes that set none): a reply to the question
    /// after `remind_after_secs`, then every `remind_every_secs` (default: the same), at most
    /// `remind_max` times (default 3). None when `remind_after_secs` is unset.
    pub remind_after_secs: Option<u64>,
    pub remind_every_secs: Option<u64>,
    pub remind_max: Option<u32>,
    /// Users who get each question of the default route in a DM too.
    #[serde(deserialize_with = "snowflakes")]
    pub dm_user_ids: Vec<Snowflake>,
    /// The default route's escalation steps.
    pub escalate: Vec<EscalationStep>,
    /// Guilds to register the `/askrelay` command in (visible at once); empty registers it
    /// globally (Discord may take a while to show it everywhere).
    #[serde(deserialize_with = "snowflakes")]
    pub guild_ids: Vec<Snowflake>,
    /// Who may run `/askrelay cancel` (a member on either list).
    #[serde(deserialize_with = "snowflakes")]
    pub operator_role_ids: Vec<Snowflake>,
    #[serde(deserialize_with = "snowflakes")]
    pub operator_user_ids: Vec<Snowflake>,
}

/// `[digest]`: a summary of unanswered questions, posted on a schedule.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DigestConfig {
    /// Where to post it; no digest when unset.
    pub channel_id: Option<Snowflake>,
    /// How often (default: daily).
    pub every_secs: Option<u64>,
    /// A time of day ("09:00") the schedule is anchored to, in `timezone` (default UTC).
    pub at: Option<String>,
    /// An IANA time zone name, e.g. "Europe/Berlin".
    pub timezone: Option<String>,
    /// Routes whose requests the digest lists although they do not post in its channel (by
    /// name; `default` for `[discord]`'s). Without them it lists only the routes that post in
    /// its channel (their own channel or an escalation step's): whoever reads that channel
    /// sees those routes' questions anyway.
    pub routes: Vec<String>,
}

/// An escalation step (`[[routes.escalate]]`, `[[discord.escalate]]`): when nobody answered
/// within `after_secs` of the ask, mention more people, post a linked copy in another channel
/// or DMs, and let more people answer from then on.
#[derive(Debug, Clone, Deserialize)]
pub struct EscalationStep {
    pub after_secs: u64,
    #[serde(default, deserialize_with = "snowflakes")]
    pub mention_role_ids: Vec<Snowflake>,
    #[serde(default, deserialize_with = "snowflakes")]
    pub mention_user_ids: Vec<Snowflake>,
    /// A channel that gets a copy of each open question, with the same controls.
    #[serde(default)]
    pub channel_id: Option<Snowflake>,
    /// Users who get a copy of each open question in a DM.
    #[serde(default, deserialize_with = "snowflakes")]
    pub dm_user_ids: Vec<Snowflake>,
    /// Who else may answer from this step on.
    #[serde(default, deserialize_with = "snowflakes")]
    pub allowed_role_ids: Vec<Snowflake>,
    #[serde(default, deserialize_with = "snowflakes")]
    pub allowed_user_ids: Vec<Snowflake>,
}

pub const DEFAULT_API_BASE: &str = "https://discord.com";

impl Default for DiscordConfig {
    fn default() -> Self {
        DiscordConfig {
            token: None,
            api_base: DEFAULT_API_BASE.to_owned(),
            channel_id: None,
            allowed_user_ids: Vec::new(),
            allowed_role_ids: Vec::new(),
            mention_role_ids: Vec::new(),
            mention_user_ids: Vec::new(),
            retry_max_delay_ms: 8000,
            request_timeout_ms: 10_000,
            callback_timeout_ms: 2_500,
            repair_interval_secs: 30,
            terminal_answers: false,
            remind_after_secs: None,
            remind_every_secs: None,
            remind_max: None,
            dm_user_ids: Vec::new(),
            escalate: Vec::new(),
            guild_ids: Vec::new(),
            operator_role_ids: Vec::new(),
            operator_user_ids: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TerminalConfig {
    /// Whether the terminal answerer accepts requests; by default it does when no Discord token
    /// is set, so the daemon is useful with zero credentials.
    pub enabled: Option<bool>,
}

/// A `[[routes]]` entry: requests whose scope matches go to this channel.
#[derive(Debug, Clone, Deserialize)]
pub struct Route {
    pub name: String,
    /// Scope label → glob (`*` and `?`). Every entry must match.
    #[serde(rename = "match", default)]
    pub matches: BTreeMap<String, String>,
    pub channel_id: Snowflake,
    #[serde(default, deserialize_with = "opt_snowflakes")]
    pub allowed_user_ids: Option<Vec<Snowflake>>,
    #[serde(default, deserialize_with = "opt_snowflakes")]
    pub allowed_role_ids: Option<Vec<Snowflake>>,
    #[serde(default, deserialize_with = "opt_snowflakes")]
    pub mention_role_ids: Option<Vec<Snowflake>>,
    #[serde(default, deserialize_with = "opt_snowflakes")]
    pub mention_user_ids: Option<Vec<Snowflake>>,
    /// This route's expiry; overrides `[expiry]`.
    #[serde(default)]
    pub expiry: Option<ExpiryRule>,
    /// The older spelling of `expiry.after_secs`, still accepted (with `on_expire`); not
    /// together with `expiry`.
    #[serde(default)]
    pub expire_after_secs: Option<u64>,
    #[serde(default)]
    pub on_expire: Option<OnExpire>,
    /// Whether people at a terminal may answer requests on this route (default: as
    /// `discord.terminal_answers`).
    #[serde(default)]
    pub terminal_answers: Option<bool>,
    /// Reminders (default: as under `[discord]`).
    #[serde(default)]
    pub remind_after_secs: Option<u64>,
    #[serde(default)]
    pub remind_every_secs: Option<u64>,
    #[serde(default)]
    pub remind_max: Option<u32>,
    /// Users who get each question in a DM too (default: as `discord.dm_user_ids`).
    #[serde(default, deserialize_with = "opt_snowflakes")]
    pub dm_user_ids: Option<Vec<Snowflake>>,
    /// Escalation steps (default: as `[[discord.escalate]]`).
    #[serde(default)]
    pub escalate: Option<Vec<EscalationStep>>,
}

impl Route {
    /// A route to `channel_id` that matches every scope, with every other key left to the
    /// `[discord]` defaults.
    pub fn new(name: &str, channel_id: u64) -> Route {
        Route {
            name: name.to_owned(),
            matches: BTreeMap::new(),
            channel_id: Snowflake(channel_id),
            allowed_user_ids: None,
            allowed_role_ids: None,
            mention_role_ids: None,
            mention_user_ids: None,
            expiry: None,
            expire_after_secs: None,
            on_expire: None,
            terminal_answers: None,
            remind_after_secs: None,
            remind_every_secs: None,
            remind_max: None,
            dm_user_ids: None,
            escalate: None,
        }
    }

    /// The route's own expiry rule, from `expiry` or the older `expire_after_secs` and
    /// `on_expire`; `None` leaves it to `[expiry]`.
    pub fn expiry_rule(&self) -> Option<ExpiryRule> {
        if let Some(rule) = &self.expiry {
            return Some(rule.clone());
        }
        if self.expire_after_secs.is_none() && self.on_expire.is_none() {
            return None;
        }
        Some(ExpiryRule {
            after_secs: self.expire_after_secs,
            on_expire: self.on_expire.clone().unwrap_or_default(),
        })
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            socket_path: default_socket_path(),
            socket_mode: SocketMode(0o600),
            database_url: default_database_url(),
            cancel_grace_secs: 10,
            restart_grace_secs: 300,
            allowed_uids: Vec::new(),
            operator_uids: Vec::new(),
            daemon_uid: None,
            shutdown_timeout_secs: 10,
            outbox_overdue_secs: 30,
            limits: Limits::default(),
            discord: DiscordConfig::default(),
            terminal: TerminalConfig::default(),
            routes: Vec::new(),
            expiry: ExpiryRule::default(),
            digest: DigestConfig::default(),
            log_format: LogFormat::Text,
            http: HttpConfig::default(),
            retention: RetentionConfig::default(),
            postgres: PostgresConfig::default(),
            cluster: ClusterConfig::default(),
        }
    }
}

impl Config {
    /// Loads the configuration from the defaults, `file` and the process environment.
    pub fn load(file: Option<&Path>) -> Result<Config> {
        Self::load_from(file, std::env::vars())
    }

    /// Like [`Config::load`], with the environment given explicitly (for tests).
    pub fn load_from(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config> {
        let builder = sources(file, env)?;
        let raw = builder.build().map_err(|e| config_error(e, file))?;
        let mut unknown = Vec::new();
        let cfg: Config = serde_ignored::deserialize(raw, |path| unknown.push(path.to_string()))
            .map_err(|e: config::ConfigError| config_error(e, file))?;
        if !unknown.is_empty() {
            bail!(
                "unknown config key{} {} (in {} or an ASKRELAY_ environment variable)",
                if unknown.len() > 1 { "s" } else { "" },
                unknown.join(", "),
                file.map(|f| f.display().to_string())
                    .unwrap_or_else(|| "the defaults".into())
            );
        }
        cfg.validate()?;
        Ok(cfg)
    }

    /// Rules that types alone cannot express.
    fn validate(&self) -> Result<()> {
        if self.limits.max_questions == 0 {
            bail!("limits.max_questions: must be at least 1");
        }
        if self.limits.max_connections == 0 {
            bail!("limits.max_connections: must be at least 1");
        }
        if self.limits.line_timeout_secs == 0 {
            bail!("limits.line_timeout_secs: must be at least 1");
        }
        if self.limits.max_line_bytes < 1024 {
            bail!("limits.max_line_bytes: must be at least 1024");
        }
        if self.limits.max_questions > 50 {
            bail!("limits.max_questions: at most 50");
        }
        if self.limits.max_output_bytes < 64 * 1024 {
            bail!("limits.max_output_bytes: must be at least 65536");
        }
        if self.limits.max_pending_per_uid == 0 {
            bail!("limits.max_pending_per_uid: must be at least 1");
        }
        if self.discord.request_timeout_ms < 100 {
            bail!("discord.request_timeout_ms: must be at least 100");
        }
        if !(100..=2_900).contains(&self.discord.callback_timeout_ms) {
            bail!("discord.callback_timeout_ms: must be from 100 to 2900 (Discord gives 3 s)");
        }
        if self.discord.repair_interval_secs == 0 {
            bail!("discord.repair_interval_secs: must be at least 1");
        }
        if self.shutdown_timeout_secs == 0 {
            bail!("shutdown_timeout_secs: must be at least 1");
        }
        if self
            .discord
            .api_base
            .trim_end_matches('/')
            .matches('/')
            .count()
            > 2
            || !(self.discord.api_base.starts_with("http://")
                || self.discord.api_base.starts_with("https://"))
        {
            bail!("discord.api_base: must be a scheme and host only, like \"https://discord.com\"");
        }
        self.http.addr()?;
        for (key, days) in [
            (
                "retention.ended_after_days",
                self.retention.ended_after_days,
            ),
            (
                "retention.audit_after_days",
                self.retention.audit_after_days,
            ),
        ] {
            if days.is_some_and(|d| !(d.is_finite() && d > 0.0 && d <= 36_500.0)) {
                bail!("{key}: must be a number of days above 0 (leave it out to keep everything)");
            }
        }
        if self.postgres.max_connections == 0 {
            bail!("postgres.max_connections: must be at least 1");
        }
        if self.postgres.connect_timeout_secs == 0 {
            bail!("postgres.connect_timeout_secs: must be at least 1");
        }
        if let Some(m) = &self.postgres.sslmode {
            if !["disable", "prefer", "require", "verify-ca", "verify-full"].contains(&m.as_str()) {
                bail!(
                    "postgres.sslmode: {m:?} is not one of disable, prefer, require, verify-ca, \
                     verify-full"
                );
            }
        }
        if self.cluster.failover_secs < 2 {
            bail!("cluster.failover_secs: must be at least 2");
        }
        if self.cluster.poll_interval_ms < 50 {
            bail!("cluster.poll_interval_ms: must be at least 50");
        }
        if let Some(n) = &self.cluster.node_id {
            if n.is_empty() || n.len() > 64 || n.chars().any(|c| c.is_control()) {
                bail!(
                    "cluster.node_id: must be 1 to 64 characters, none of them control characters"
                );
            }
        }
        if self.retention.interval_secs == 0 {
            bail!("retention.interval_secs: must be at least 1");
        }
        check_expiry(&self.expiry, "expiry")?;
        if self.digest.every_secs == Some(0) {
            bail!("digest.every_secs: must be at least 1");
        }
        if let Some(at) = &self.digest.at {
            crate::core::calendar::parse_time_of_day(at).map_err(|e| anyhow!("digest.at: {e}"))?;
        }
        if let Some(tz) = &self.digest.timezone {
            crate::core::calendar::zone(tz).map_err(|e| anyhow!("digest.timezone: {e}"))?;
        }
        for (i, name) in self.digest.routes.iter().enumerate() {
            let default = name == "default" && self.discord.channel_id.is_some();
            if !default && !self.routes.iter().any(|r| &r.name == name) {
                bail!("digest.routes[{i}]: no route is named {name:?} (a [[routes]] name, or \"default\" with discord.channel_id)");
            }
        }
        if self.digest.channel_id.is_none()
            && (self.digest.every_secs.is_some() || self.digest.at.is_some())
        {
            bail!("digest.channel_id: the digest needs a channel");
        }
        check_oncall(
            "discord",
            self.discord.remind_after_secs,
            self.discord.remind_every_secs,
            self.discord.remind_max,
            &self.discord.escalate,
        )?;
        for (i, r) in self.routes.iter().enumerate() {
            if r.name.trim().is_empty() {
                bail!("routes[{i}].name: must not be empty");
            }
            if r.expiry.is_some() && (r.expire_after_secs.is_some() || r.on_expire.is_some()) {
                bail!("routes[{i}].expire_after_secs: give either expiry = {{ after_secs, on_expire }} or the older expire_after_secs and on_expire, not both");
            }
            if r.expire_after_secs == Some(0) {
                bail!("routes[{i}].expire_after_secs: must be at least 1 (leave it out for no expiry)");
            }
            if let Some(rule) = &r.expiry {
                check_expiry(rule, &format!("routes[{i}].expiry"))?;
            }
            check_oncall(
                &format!("routes[{i}]"),
                r.remind_after_secs,
                r.remind_every_secs,
                r.remind_max,
                r.escalate.as_deref().unwrap_or_default(),
            )?;
            if let Some(OnExpire::Select(l)) = &r.on_expire {
                if l.trim().is_empty() {
                    bail!("routes[{i}].on_expire.select: must name an option label");
                }
            }
        }
        Ok(())
    }

    /// The expiry rule of requests on `route` (a route's own, else `[expiry]`).
    pub fn expiry_for(&self, route: Option<&Route>) -> ExpiryRule {
        route
            .and_then(Route::expiry_rule)
            .unwrap_or_else(|| self.expiry.clone())
    }

    /// Whether the terminal answerer takes requests (see [`TerminalConfig::enabled`]).
    pub fn terminal_enabled(&self) -> bool {
        self.terminal
            .enabled
            .unwrap_or(self.discord.token.is_none())
    }
}

/// Reminders and escalation steps under `at` (`discord`, `routes[0]`) must be usable.
fn check_oncall(
    at: &str,
    after: Option<u64>,
    every: Option<u64>,
    max: Option<u32>,
    steps: &[EscalationStep],
) -> Result<()> {
    if after == Some(0) {
        bail!("{at}.remind_after_secs: must be at least 1 (leave it out for no reminders)");
    }
    if every == Some(0) {
        bail!("{at}.remind_every_secs: must be at least 1");
    }
    if max == Some(0) {
        bail!("{at}.remind_max: must be at least 1 (leave out remind_after_secs for no reminders)");
    }
    let mut last = 0;
    for (k, step) in steps.iter().enumerate() {
        if step.after_secs == 0 || step.after_secs <= last {
            bail!(
                "{at}.escalate[{k}].after_secs: must be at least 1 and later than the step before"
            );
        }
        last = step.after_secs;
    }
    if steps.len() > 10 {
        bail!("{at}.escalate: at most 10 steps");
    }
    Ok(())
}

/// An expiry rule at `key` (`expiry`, `routes[0].expiry`) must say something usable.
fn check_expiry(rule: &ExpiryRule, key: &str) -> Result<()> {
    if rule.after_secs == Some(0) {
        bail!("{key}.after_secs: must be at least 1 (leave it out for no expiry)");
    }
    if let OnExpire::Select(l) = &rule.on_expire {
        if l.trim().is_empty() {
            bail!("{key}.on_expire.select: must name an option label");
        }
    }
    if rule.after_secs.is_none() && rule.on_expire != OnExpire::Fail {
        bail!("{key}.on_expire: has no effect without {key}.after_secs");
    }
    Ok(())
}

/// A config error that names the key and what was expected, and never the offending value:
/// a token pasted into the wrong key must not end up in a terminal or a log.
fn config_error(e: config::ConfigError, file: Option<&Path>) -> anyhow::Error {
    let what = describe_config_error(&e);
    match file {
        Some(f) => anyhow!("config error in {} or the environment: {what}", f.display()),
        None => anyhow!("config error in the environment: {what}"),
    }
}

fn describe_config_error(e: &config::ConfigError) -> String {
    use config::ConfigError as E;
    match e {
        E::Type {
            key,
            expected,
            unexpected,
            ..
        } => format!(
            "{}: expected {expected}, got {}",
            key.as_deref().unwrap_or("a key"),
            unexpected_kind(unexpected)
        ),
        E::At { error, key, .. } => {
            let inner = describe_config_error(error);
            // The config crate writes `routes[0]on_expire`; people write `routes[0].on_expire`.
            let key = key.as_deref().map(dotted);
            match key {
                Some(k) if !inner.starts_with(k.as_str()) => format!("{k}: {inner}"),
                _ => inner,
            }
        }
        E::FileParse { cause, .. } => {
            // TOML errors quote the offending line; keep only where it is and what is wrong.
            let text = cause.to_string();
            let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
            let first = lines.next().unwrap_or("cannot parse the file");
            let last = text
                .lines()
                .map(str::trim)
                .rfind(|l| !l.is_empty())
                .unwrap_or("");
            if last == first || last.contains('|') {
                first.to_owned()
            } else {
                format!("{first}: {last}")
            }
        }
        // Our own messages (see the deserializers below) never carry the value; serde's may.
        E::Message(m) => redact(m),
        E::NotFound(k) => format!("{k}: not found"),
        E::PathParse { .. } => "a key path cannot be parsed".to_owned(),
        E::Frozen => "the configuration is frozen".to_owned(),
        E::Foreign(_) => "cannot read the configuration".to_owned(),
        _ => "invalid configuration".to_owned(),
    }
}

/// A serde message without the value it quotes: "unknown variant `x`, expected …" and
/// "invalid value: string \"x\", expected …" keep only what was expected.
fn redact(m: &str) -> String {
    if let Some(at) = m.find(" does not have variant constructor") {
        return format!("{}: not one of the allowed values", &m[..at]);
    }
    for (start, end) in [("`", "`"), ("\"", "\"")] {
        if let Some(a) = m.find(start) {
            if let Some(len) = m[a + 1..].find(end) {
                let before = m[..a].trim_end();
                let after = &m[a + 1 + len + 1..];
                // A missing or unknown field names a key, not a value: keep it.
                if before.ends_with("field") {
                    return m.to_owned();
                }
                return format!("{before} (value not shown){after}");
            }
        }
    }
    m.to_owned()
}

/// `routes[0]on_expire` → `routes[0].on_expire`.
fn dotted(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 2);
    let mut chars = key.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == ']'
            && chars
                .peek()
                .is_some_and(|n| n.is_alphanumeric() || *n == '_')
        {
            out.push('.');
        }
    }
    out
}

/// The kind of a wrong value, without the value (the config crate's type is unnameable, so it
/// is read off its description: `string "…"`, ``boolean `…` ``, …).
fn unexpected_kind(u: &impl fmt::Display) -> &'static str {
    let d = u.to_string();
    if d.starts_with("string") {
        "a string"
    } else if d.starts_with("boolean") {
        "a boolean"
    } else if d.contains("integer") {
        "an integer"
    } else if d.starts_with("floating") {
        "a number"
    } else if d.starts_with("sequence") {
        "a list"
    } else if d.starts_with("map") {
        "a table"
    } else {
        "nothing"
    }
}

/// `$XDG_RUNTIME_DIR/askrelay.sock`, else `askrelay.sock` in a private per-user directory,
/// `/tmp/askrelay-$UID/` (created 0700 by the daemon, docs/contract.md, "Socket path"). Never the current directory:
/// anyone who can write there could put a fake daemon's socket in its place.
pub fn default_socket_path() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir).join("askrelay.sock"),
        _ => std::env::temp_dir()
            .join(format!("askrelay-{}", nix::unistd::geteuid().as_raw()))
            .join("askrelay.sock"),
    }
}

/// A file in `$XDG_STATE_HOME/askrelay/` (or its `~/.local/state` default).
pub fn default_database_url() -> String {
    let dir = match std::env::var_os("XDG_STATE_HOME") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => match std::env::var_os("HOME") {
            Some(h) if !h.is_empty() => PathBuf::from(h).join(".local/state"),
            _ => PathBuf::from("."),
        },
    };
    format!("sqlite://{}", dir.join("askrelay/askrelay.db").display())
}

/// Where the configuration comes from, in order, each overriding the one before: the defaults
/// (the types' own), `file`, then `ASKRELAY_*` variables of `env`. The daemon ([`Config`]) and
/// the clients ([`ClientKeys`]) both read through this, so a client finds the socket where the
/// daemon put it: the environment beats the file. An empty `ASKRELAY_SOCKET_PATH` or
/// `ASKRELAY_DAEMON_UID` counts as unset.
fn sources(
    file: Option<&Path>,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<config::ConfigBuilder<config::builder::DefaultState>> {
    let mut builder = config::Config::builder();
    if let Some(path) = file {
        if !path.exists() {
            bail!("config file {} does not exist", path.display());
        }
        builder = builder.add_source(
            config::File::from(path)
                .format(config::FileFormat::Toml)
                .required(true),
        );
    }
    let env: config::Map<String, String> = env
        .into_iter()
        .filter(|(k, _)| k.starts_with(&format!("{ENV_PREFIX}_")))
        // An entry ending in '_' is a prefix; the others are whole names (ASKRELAY_LOG is
        // not configuration, ASKRELAY_LOG_FORMAT is).
        .filter(|(k, _)| {
            !NOT_CONFIG_ENV.iter().any(|p| {
                if p.ends_with('_') {
                    k.starts_with(p)
                } else {
                    k == p
                }
            })
        })
        .filter(|(k, v)| {
            !(v.trim().is_empty()
                && matches!(k.as_str(), "ASKRELAY_SOCKET_PATH" | "ASKRELAY_DAEMON_UID"))
        })
        .collect();
    Ok(builder.add_source(
        config::Environment::with_prefix(ENV_PREFIX)
            .prefix_separator("_")
            .separator("__")
            .source(Some(env)),
    ))
}

/// What a client reads of the configuration: where the socket is, and the daemon's uid when it
/// runs as another user, from the same sources as the daemon's ([`sources`]). Only these keys
/// are read, so a client never fails on daemon-only settings.
#[derive(Debug, Default, Deserialize)]
pub struct ClientKeys {
    pub socket_path: Option<PathBuf>,
    pub daemon_uid: Option<u32>,
}

impl ClientKeys {
    /// From `file` (when given) and the process environment.
    pub fn load(file: Option<&Path>) -> Result<ClientKeys> {
        Self::load_from(file, std::env::vars())
    }

    /// Like [`ClientKeys::load`], with the environment given explicitly (for tests).
    pub fn load_from(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<ClientKeys> {
        sources(file, env)?
            .build()
            .and_then(|c| c.try_deserialize())
            .map_err(|e| config_error(e, file))
    }

    /// The socket: the configured one, else where the daemon puts it by default.
    pub fn socket(&self) -> PathBuf {
        self.socket_path.clone().unwrap_or_else(default_socket_path)
    }
}

/// The bot token. It never appears in `Debug` output, logs or errors.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    /// The secret itself; call only where it is handed to the platform client.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// A Unix file mode written in octal, like "0600".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketMode(pub u32);

impl<'de> Deserialize<'de> for SocketMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = match StringOrInt::deserialize(d)? {
            StringOrInt::S(s) => s,
            StringOrInt::I(i) => i.to_string(),
        };
        let digits = s.trim().trim_start_matches("0o");
        match u32::from_str_radix(digits, 8) {
            Ok(m) if m <= 0o777 && !digits.is_empty() => Ok(SocketMode(m)),
            _ => Err(de::Error::custom(
                "socket_mode: expected an octal file mode like \"0600\" or \"0660\"",
            )),
        }
    }
}

/// A Discord id. Config accepts numbers or strings (TOML integers, env strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Snowflake(pub u64);

impl fmt::Display for Snowflake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum StringOrInt {
    S(String),
    I(u64),
}

fn parse_snowflake<E: de::Error>(v: StringOrInt) -> Result<Snowflake, E> {
    match v {
        StringOrInt::I(0) => Err(E::custom("a Discord id must not be 0")),
        StringOrInt::I(i) => Ok(Snowflake(i)),
        StringOrInt::S(s) => match s.trim().parse::<u64>() {
            Ok(i) if i > 0 => Ok(Snowflake(i)),
            _ => Err(E::custom(
                "expected a Discord id (a number like \"123456789012345678\")",
            )),
        },
    }
}

impl<'de> Deserialize<'de> for Snowflake {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        parse_snowflake(StringOrInt::deserialize(d)?)
    }
}

/// A list of ids: an array, or (from the environment) one id or a comma-separated string.
fn snowflakes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Snowflake>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrOne {
        List(Vec<StringOrInt>),
        One(StringOrInt),
    }
    match ListOrOne::deserialize(d)? {
        ListOrOne::List(v) => v.into_iter().map(parse_snowflake).collect(),
        ListOrOne::One(StringOrInt::S(s)) => s
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| parse_snowflake(StringOrInt::S(p.to_owned())))
            .collect(),
        ListOrOne::One(i) => Ok(vec![parse_snowflake(i)?]),
    }
}

/// A list of uids: an array, or (from the environment) one uid or a comma-separated string.
fn uids<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrOne {
        List(Vec<StringOrInt>),
        One(StringOrInt),
    }
    let one = |v: StringOrInt| -> Result<u32, D::Error> {
        let n = match v {
            StringOrInt::I(i) => u32::try_from(i).ok(),
            StringOrInt::S(s) => s.trim().parse().ok(),
        };
        n.ok_or_else(|| de::Error::custom("expected a uid (a number like 1000)"))
    };
    match ListOrOne::deserialize(d)? {
        ListOrOne::List(v) => v.into_iter().map(one).collect(),
        ListOrOne::One(StringOrInt::S(s)) => s
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| one(StringOrInt::S(p.to_owned())))
            .collect(),
        ListOrOne::One(i) => Ok(vec![one(i)?]),
    }
}

fn opt_snowflakes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Snowflake>>, D::Error> {
    snowflakes(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daemon_and_its_clients_find_the_socket_in_the_same_order() {
        let f = file("socket_path = \"/from/file.sock\"\ndaemon_uid = 5\n");
        let env = |v: &[(&str, &str)]| {
            v.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<Vec<_>>()
        };
        // The file over the defaults.
        let daemon = Config::load_from(Some(f.path()), env(&[])).unwrap();
        let client = ClientKeys::load_from(Some(f.path()), env(&[])).unwrap();
        assert_eq!(daemon.socket_path, PathBuf::from("/from/file.sock"));
        assert_eq!(client.socket(), daemon.socket_path);
        assert_eq!(client.daemon_uid, Some(5));
        // The environment over the file, for both.
        let vars = env(&[
            ("ASKRELAY_SOCKET_PATH", "/from/env.sock"),
            ("ASKRELAY_DAEMON_UID", "7"),
        ]);
        let daemon = Config::load_from(Some(f.path()), vars.clone()).unwrap();
        let client = ClientKeys::load_from(Some(f.path()), vars).unwrap();
        assert_eq!(daemon.socket_path, PathBuf::from("/from/env.sock"));
        assert_eq!(client.socket(), daemon.socket_path);
        assert_eq!(client.daemon_uid, Some(7));
        // An empty variable is unset.
        let vars = env(&[("ASKRELAY_SOCKET_PATH", "")]);
        let client = ClientKeys::load_from(Some(f.path()), vars.clone()).unwrap();
        let daemon = Config::load_from(Some(f.path()), vars).unwrap();
        assert_eq!(client.socket(), PathBuf::from("/from/file.sock"));
        assert_eq!(daemon.socket_path, client.socket());
        // Neither: the default, for both.
        let client = ClientKeys::load_from(None, env(&[])).unwrap();
        assert_eq!(client.socket(), default_socket_path());
    }
    use std::io::Write;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn layers_defaults_then_file_then_env() {
        let f = file("cancel_grace_secs = 3\nrestart_grace_secs = 7\n[discord]\nchannel_id = 42\n");
        let cfg = Config::load_from(
            Some(f.path()),
            env(&[
                ("ASKRELAY_CANCEL_GRACE_SECS", "5"),
                ("ASKRELAY_DISCORD__TOKEN", "sekrit"),
                ("ASKRELAY_DISCORD__ALLOWED_USER_IDS", "1, 2"),
                ("ASKRELAY_LOG", "debug"),
                ("ASKRELAY_SCOPE_PROJECT", "x"),
                ("OTHER", "y"),
            ]),
        )
        .unwrap();
        assert_eq!(cfg.cancel_grace_secs, 5);
        assert_eq!(cfg.restart_grace_secs, 7);
        assert_eq!(cfg.limits.max_questions, 10);
        assert_eq!(cfg.discord.channel_id, Some(Snowflake(42)));
        assert_eq!(cfg.discord.token.as_ref().unwrap().expose(), "sekrit");
        assert_eq!(
            cfg.discord.allowed_user_ids,
            vec![Snowflake(1), Snowflake(2)]
        );
        assert!(!cfg.terminal_enabled());
        assert!(!format!("{cfg:?}").contains("sekrit"));
    }

    #[test]
    fn expiry_policies_read_in_each_spelling() {
        let f = file(
            "[expiry]\nafter_secs = 7200\non_expire = \"recommended\"\n\
             [[routes]]\nname = \"a\"\nchannel_id = 1\nexpiry = { after_secs = 60, on_expire = { select = \"No, keep them\" } }\n\
             [[routes]]\nname = \"b\"\nchannel_id = 2\nexpire_after_secs = 5\n\
             [[routes]]\nname = \"c\"\nchannel_id = 3\n",
        );
        let cfg = Config::load_from(Some(f.path()), env(&[])).unwrap();
        assert_eq!(cfg.expiry.after_secs, Some(7200));
        assert_eq!(cfg.expiry.on_expire, OnExpire::Recommended);
        let rule = |i: usize| cfg.expiry_for(Some(&cfg.routes[i]));
        assert_eq!(
            rule(0),
            ExpiryRule {
                after_secs: Some(60),
                on_expire: OnExpire::Select("No, keep them".into())
            }
        );
        assert_eq!(
            rule(1),
            ExpiryRule {
                after_secs: Some(5),
                on_expire: OnExpire::Fail
            }
        );
        assert_eq!(rule(2), cfg.expiry);

        for (toml, key) in [
            ("[expiry]\nafter_secs = 0\n", "expiry.after_secs"),
            ("[expiry]\non_expire = \"recommended\"\n", "expiry.on_expire"),
            ("[expiry]\nafter_secs = 1\non_expire = \"sometimes\"\n", "on_expire"),
            ("[expiry]\nafter_secs = 1\non_expire = { select = \"\" }\n", "expiry.on_expire.select"),
            (
                "[[routes]]\nname = \"a\"\nchannel_id = 1\nexpire_after_secs = 5\nexpiry = { after_secs = 5 }\n",
                "routes[0].expire_after_secs",
            ),
        ] {
            let f = file(toml);
            let err = format!("{:#}", Config::load_from(Some(f.path()), env(&[])).unwrap_err());
            assert!(err.contains(key), "{toml}: {err}");
        }
    }

    #[test]
    fn unknown_keys_are_named() {
        let f = file("[discord]\ntokn = \"x\"\n");
        let err = Config::load_from(Some(f.path()), env(&[("ASKRELAY_BOGUS", "1")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("discord.tokn"), "{err}");
        assert!(err.contains("bogus"), "{err}");
    }

    #[test]
    fn bad_values_name_the_key() {
        let f = file("cancel_grace_secs = \"soon\"\n");
        let err = format!(
            "{:#}",
            Config::load_from(Some(f.path()), env(&[])).unwrap_err()
        );
        assert!(err.contains("cancel_grace_secs"), "{err}");
        let f = file("socket_mode = \"0999\"\n");
        let err = format!(
            "{:#}",
            Config::load_from(Some(f.path()), env(&[])).unwrap_err()
        );
        assert!(err.contains("socket_mode"), "{err}");
        let f = file("[limits]\nmax_questions = 0\n");
        let err = format!(
            "{:#}",
            Config::load_from(Some(f.path()), env(&[])).unwrap_err()
        );
        assert!(err.contains("limits.max_questions"), "{err}");
    }

    #[test]
    fn operations_keys_are_read_and_checked() {
        let f = file(
            "log_format = \"json\"\n[http]\nlisten = \"127.0.0.1:9464\"\n\
             [retention]\nended_after_days = 30\naudit_after_days = 0.5\n",
        );
        let cfg = Config::load_from(Some(f.path()), env(&[])).unwrap();
        assert_eq!(cfg.log_format, LogFormat::Json);
        assert_eq!(
            cfg.http.addr().unwrap(),
            Some("127.0.0.1:9464".parse().unwrap())
        );
        assert_eq!(cfg.retention.ended_after_days, Some(30.0));
        assert_eq!(cfg.retention.audit_after_days, Some(0.5));
        assert_eq!(cfg.retention.interval_secs, 3600);
        let cfg = Config::load_from(None, env(&[])).unwrap();
        assert_eq!(cfg.http.addr().unwrap(), None);
        assert!(!cfg.retention.enabled());

        for (toml, key) in [
            ("log_format = \"xml\"\n", "log_format"),
            ("[http]\nlisten = \"localhost\"\n", "http.listen"),
            (
                "[retention]\nended_after_days = 0\n",
                "retention.ended_after_days",
            ),
            (
                "[retention]\naudit_after_days = -1\n",
                "retention.audit_after_days",
            ),
            (
                "[retention]\ninterval_secs = 0\n",
                "retention.interval_secs",
            ),
            (
                "[retention]\nended_after_days = \"soon\"\n",
                "retention.ended_after_days",
            ),
        ] {
            let f = file(toml);
            let err = format!(
                "{:#}",
                Config::load_from(Some(f.path()), env(&[])).unwrap_err()
            );
            assert!(err.contains(key), "{toml}: {err}");
        }
        let err = Config::load_from(None, env(&[("ASKRELAY_HTTP__LISTEN", "nowhere")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("http.listen"), "{err}");
    }

    #[test]
    fn socket_mode_and_ids_accept_strings_and_numbers() {
        let f = file("socket_mode = \"0660\"\n[discord]\nchannel_id = \"99\"\nallowed_role_ids = [1, \"2\"]\n");
        let cfg = Config::load_from(Some(f.path()), env(&[])).unwrap();
        assert_eq!(cfg.socket_mode, SocketMode(0o660));
        assert_eq!(cfg.discord.channel_id, Some(Snowflake(99)));
        assert_eq!(
            cfg.discord.allowed_role_ids,
            vec![Snowflake(1), Snowflake(2)]
        );
        let cfg = Config::load_from(None, env(&[("ASKRELAY_SOCKET_MODE", "0640")])).unwrap();
        assert_eq!(cfg.socket_mode, SocketMode(0o640));
    }

    #[test]
    fn the_example_config_is_valid() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/askrelay.example.toml");
        Config::load_from(Some(&path), env(&[])).unwrap();
    }

    /// The README's "On-call approvals" config, as written there.
    #[test]
    fn the_readme_on_call_config_reads_as_it_says() {
        let readme = include_str!("../README.md");
        let start = readme.find("## On-call approvals").unwrap();
        let block = &readme[start..];
        let toml = &block[block.find("```toml\n").unwrap() + 8..];
        let toml = &toml[..toml.find("```").unwrap()];
        let f = file(toml);
        let cfg = Config::load_from(Some(f.path()), env(&[])).unwrap();
        let r = &cfg.routes[0];
        assert_eq!(r.remind_after_secs, Some(900));
        assert_eq!(r.remind_max, Some(3));
        let steps = r.escalate.as_ref().unwrap();
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].after_secs, 1800);
        assert_eq!(steps[0].dm_user_ids, vec![Snowflake(333333333333333333)]);
        assert_eq!(
            cfg.expiry_for(Some(r)),
            ExpiryRule {
                after_secs: Some(7200),
                on_expire: OnExpire::Select("Deny".into())
            }
        );
    }

    #[test]
    fn digest_routes_must_name_a_route() {
        let ok = file(
            "[discord]\nchannel_id = 1\n[[routes]]\nname = \"infra\"\nchannel_id = 2\n\
             [digest]\nchannel_id = 3\nroutes = [\"default\", \"infra\"]\n",
        );
        let cfg = Config::load_from(Some(ok.path()), env(&[])).unwrap();
        assert_eq!(cfg.digest.routes, ["default", "infra"]);
        for bad in [
            "[discord]\nchannel_id = 1\n[digest]\nchannel_id = 3\nroutes = [\"nope\"]\n",
            "[[routes]]\nname = \"a\"\nchannel_id = 2\n[digest]\nchannel_id = 3\nroutes = [\"default\"]\n",
        ] {
            let f = file(bad);
            let err = format!(
                "{:#}",
                Config::load_from(Some(f.path()), env(&[])).unwrap_err()
            );
            assert!(err.contains("digest.routes[0]"), "{err}");
        }
    }

    #[test]
    fn escalation_steps_must_come_in_order() {
        let f = file(
            "[discord]\nchannel_id = 1\n[[discord.escalate]]\nafter_secs = 60\n[[discord.escalate]]\nafter_secs = 30\n",
        );
        let err = format!(
            "{:#}",
            Config::load_from(Some(f.path()), env(&[])).unwrap_err()
        );
        assert!(err.contains("discord.escalate[1].after_secs"), "{err}");
        let f = file("[discord]\nremind_after_secs = 0\n");
        let err = format!(
            "{:#}",
            Config::load_from(Some(f.path()), env(&[])).unwrap_err()
        );
        assert!(err.contains("discord.remind_after_secs"), "{err}");
    }
}
