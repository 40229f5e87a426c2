//! Configuration (docs/contract.md, "Config keys"): defaults, then the TOML file, then `ASKRELAY_*` environment variables.
//!
//! Everything is deserialized into typed structs. An unknown key or a bad value stops start-up with
//! a message that names the key, so a typo never silently falls back to a default.

use anyhow::{anyhow, Result};
use serde::Deserialize;
use std::path::PathBuf;

pub use crate::domain::expiry::{ExpiryRule, OnExpire};

#[cfg(test)]
mod keys;
mod load;
mod route;
mod slack;
mod values;

pub use load::{
    default_database_url, default_socket_path, socket_candidates, state_dir, ClientKeys,
};
pub use route::{
    grant_secs, Route, Threads, GRANT_SECS, MAX_GRANT_DURATIONS, STOP_WAIT_DEFAULT_SECS,
    STOP_WAIT_MAX_SECS, STOP_WAIT_MIN_SECS,
};
pub use slack::{
    check_id, is_id, IdKind, SlackConfig, SlackEscalationStep, SlackMode, DEFAULT_SLACK_API_BASE,
};
use values::{snowflakes, uids};
pub use values::{Secret, Snowflake, SocketMode};

/// The prefix of every environment variable the daemon reads as configuration.
pub const ENV_PREFIX: &str = "ASKRELAY";

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
    /// The Slack answerer (docs/slack.md); off unless `slack.bot_token` is set.
    pub slack: SlackConfig,
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
    /// People and their handles on each surface (`[[identities]]`): votes count once per
    /// person, and `exclude_requester` knows who asked.
    pub identities: Vec<IdentityConfig>,
}

/// An `[[identities]]` entry: one person's local accounts and Discord user.
#[derive(Debug, Clone, Deserialize, Default)]
pub struct IdentityConfig {
    pub name: String,
    /// Local uids (the socket's peer credentials).
    #[serde(default, deserialize_with = "uids")]
    pub uids: Vec<u32>,
    /// The hosts where those uids are this person (cluster node names; a single daemon's host
    /// name, or its `cluster.node_id`); every host when empty.
    #[serde(default)]
    pub hosts: Vec<String>,
    #[serde(default, deserialize_with = "snowflakes")]
    pub discord_user_ids: Vec<Snowflake>,
    /// The person's Slack user ids (`U…`, `W…`): the same person as their Discord user and
    /// uids for the requester rule and quorum votes.
    #[serde(default)]
    pub slack_user_ids: Vec<String>,
    /// Agent sessions that are this person's (globs on the session id the hooks report, e.g.
    /// `"alice-*"`): for agents that run under a shared account, where the uid is not a person.
    #[serde(default)]
    pub sessions: Vec<String>,
}

/// `[postgres]`: the pool of the PostgreSQL store. The password belongs in `database_url` (or
/// `ASKRELAY_DATABASE_URL`) and is never logged or echoed in an error.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct PostgresConfig {
    /// Connections in the pool at most (the lease and the notice listener have one each
    /// besides); an idle node closes pooled connections after `POOL_IDLE` (30 s).
    pub max_connections: u32,
    /// How long connecting, or waiting for a free connection, may take.
    pub connect_timeout_secs: u64,
    /// How long one statement may run before the server cancels it.
    pub statement_timeout_secs: u64,
    /// The client-side deadline of every database call (a query, or a transaction with its
    /// commit, waiting for a pooled connection included): a call the database has not
    /// answered by then fails, naming the cause, and its connection is closed. It also sets
    /// how soon the server gives up on a silent client (`idle_in_transaction_session_timeout`,
    /// `tcp_user_timeout`, keepalive).
    pub db_deadline_secs: u64,
    /// TLS: "disable", "prefer", "require", "verify-ca" or "verify-full"; overrides the URL's
    /// `sslmode`.
    pub sslmode: Option<String>,
    /// A PEM file of the certificate authority that signed the server's certificate
    /// (`verify-ca`, `verify-full`).
    pub ssl_root_cert: Option<PathBuf>,
    /// A PgBouncer (or another pooler) in *transaction* mode in front of the same database,
    /// for the pooled work; empty or absent: the pool connects to `database_url`. A secret
    /// like `database_url` (it may carry a password): never logged, errors show it with the
    /// password as `***`. The node keeps at most one connection of its own to `database_url`,
    /// the leader's notice listener (docs/cluster.md, "With a pooler").
    pub pooler_url: Option<Secret>,
}

impl PostgresConfig {
    /// `pooler_url`, if it is set and not empty.
    pub fn pooler_url(&self) -> Option<&str> {
        self.pooler_url
            .as_ref()
            .map(Secret::expose)
            .filter(|u| !u.trim().is_empty())
    }
}

impl Default for PostgresConfig {
    fn default() -> Self {
        PostgresConfig {
            max_connections: 4,
            connect_timeout_secs: 10,
            statement_timeout_secs: 30,
            db_deadline_secs: 5,
            sslmode: None,
            ssl_root_cert: None,
            pooler_url: None,
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
    /// steps down. Default 3.
    pub failover_secs: u64,
    /// How often a node looks for what a lost notice would have told it (answers to its
    /// requests, outbox work); notices make this rarely matter.
    pub poll_interval_ms: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            node_id: None,
            // A frozen or cut-off leader is replaced, and the questions asked meanwhile
            // posted, about 3 s later (4 s at worst): inside what a click can wait. A 1.5 s
            // pause of the leader or the database still moves nothing (docs/cluster.md,
            // "Choosing failover_secs").
            failover_secs: 3,
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
    /// The Discord channel to post it in; no digest in Discord when unset.
    pub channel_id: Option<Snowflake>,
    /// The Slack channel to post it in ("C…"); no digest in Slack when unset. Both may be set:
    /// each channel gets its own digest, of what it may see.
    pub slack_channel_id: Option<String>,
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
    /// Whether the terminal answerer accepts requests; by default it does when no Discord or
    /// Slack token is set, so the daemon is useful with zero credentials.
    pub enabled: Option<bool>,
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
            slack: SlackConfig::default(),
            terminal: TerminalConfig::default(),
            routes: Vec::new(),
            expiry: ExpiryRule::default(),
            digest: DigestConfig::default(),
            log_format: LogFormat::Text,
            http: HttpConfig::default(),
            retention: RetentionConfig::default(),
            postgres: PostgresConfig::default(),
            cluster: ClusterConfig::default(),
            identities: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;
