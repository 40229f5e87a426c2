//! Configuration (docs/contract.md, "Config keys"): defaults, then the TOML file, then `ASKRELAY_*` environment variables.
//!
//! Everything is deserialized into typed structs. An unknown key or a bad value stops start-up with
//! a message that names the key, so a typo never silently falls back to a default.

use anyhow::{anyhow, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

pub use crate::domain::expiry::{ExpiryRule, OnExpire};

#[cfg(test)]
mod keys;
mod load;
mod values;

pub use load::{default_database_url, default_socket_path, socket_candidates, ClientKeys};
use values::{opt_snowflakes, snowflakes, uids};
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
            max_connections: 4,
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
    /// The Discord channel; without one the route is answered from the terminal (its
    /// approval policy applies there), and needs the terminal answerer on.
    #[serde(default)]
    pub channel_id: Option<Snowflake>,
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
    /// Distinct people who must choose the same answer before a question settles (default 1:
    /// the first answer wins).
    #[serde(default)]
    pub approvals: Option<u32>,
    /// Labels that settle with one vote on a quorum route (the approval front doors' "Deny"
    /// and "Deny and stop" always do).
    #[serde(default)]
    pub decisive_labels: Option<Vec<String>>,
    /// Whether free text (Other…) settles with one vote on a quorum route; else it is not
    /// offered there (default false).
    #[serde(default)]
    pub custom_decides: Option<bool>,
    /// Whether the person who asked (their uid, or their `[[identities]]` entry) is refused
    /// (default: true where `approvals` > 1).
    #[serde(default)]
    pub exclude_requester: Option<bool>,
    /// How long the grants approvers may give on this route last (`["30m", "8h"]`: the
    /// message offers "Allow for 30 min" and "Allow for 8 h"); none by default.
    #[serde(default)]
    pub grant_durations: Option<Vec<String>>,
    /// Whether approvers may edit a command before approving it (Edit…), where the front door
    /// says it runs the edited one (default false).
    #[serde(default)]
    pub allow_edits: Option<bool>,
    /// Labels that settle (or vote) only when the person also types `confirm_word`: a modal
    /// on Discord, `--confirm` at a terminal.
    #[serde(default)]
    pub confirm_labels: Option<Vec<String>>,
    /// The word to type for `confirm_labels`: a literal, or `{scope.KEY}` for the request's
    /// scope label KEY (default `approve`, also when the request lacks that label).
    #[serde(default)]
    pub confirm_word: Option<String>,
}

/// The most grant durations a route may offer (one button each).
pub const MAX_GRANT_DURATIONS: usize = 3;

/// The shortest and the longest grant.
pub const GRANT_SECS: std::ops::RangeInclusive<u64> = 60..=7 * 24 * 3600;

/// A grant duration as written in `grant_durations` (`30m`, `8h`, `2d`, `1h 30m`), in seconds.
/// jiff's "friendly" format: units from seconds to weeks (`s`, `m` or `min`, `h` or `hr`, `d`
/// or `day`, `w` or `week`, and their long and plural names), largest first, with or without
/// spaces; a day is 24 hours.
pub fn grant_secs(s: &str) -> Result<u64, String> {
    static PARSER: jiff::fmt::friendly::SpanParser = jiff::fmt::friendly::SpanParser::new();
    let d = PARSER
        .parse_span(s.trim())
        .and_then(|span| span.to_duration(jiff::SpanRelativeTo::days_are_24_hours()))
        .map_err(|e| format!("{s:?} is not a duration like \"30m\" or \"8h\" ({e})"))?;
    // A negative duration ("-30m", "30m ago") is out of range like any other too short.
    let secs = u64::try_from(d.as_secs()).unwrap_or(0);
    if !GRANT_SECS.contains(&secs) || d.subsec_nanos() != 0 {
        return Err(format!(
            "{s:?}: a grant lasts from 1 minute to 7 days, in whole seconds"
        ));
    }
    Ok(secs)
}

impl Route {
    /// A route to `channel_id` that matches every scope, with every other key left to the
    /// `[discord]` defaults.
    pub fn new(name: &str, channel_id: u64) -> Route {
        Route {
            name: name.to_owned(),
            matches: BTreeMap::new(),
            channel_id: Some(Snowflake(channel_id)),
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
            approvals: None,
            decisive_labels: None,
            custom_decides: None,
            exclude_requester: None,
            grant_durations: None,
            allow_edits: None,
            confirm_labels: None,
            confirm_word: None,
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
            approve_unattended: false,
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
            identities: Vec::new(),
        }
    }
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
    fn an_expiry_that_would_approve_unattended_is_refused_unless_the_operator_opts_in() {
        let load = |toml: &str| {
            Config::load_from(Some(file(toml).path()), env(&[]))
                .map(|_| ())
                .map_err(|e| format!("{e:#}"))
        };
        // A front door's allow, on any route, and in [expiry].
        for (toml, key) in [
            (
                "[[routes]]\nname = \"a\"\nchannel_id = 1\nexpiry = { after_secs = 60, on_expire = { select = \"Allow\" } }\n",
                "routes[0].expiry.on_expire: selects \"Allow\"",
            ),
            (
                "[[routes]]\nname = \"a\"\nchannel_id = 1\nexpire_after_secs = 60\non_expire = { select = \"Run\" }\n",
                "routes[0].on_expire: selects \"Run\"",
            ),
            (
                "[expiry]\nafter_secs = 60\non_expire = { select = \"Allow once\" }\n",
                "expiry.on_expire: selects \"Allow once\"",
            ),
            // On a route with approvals: anything but a deny, and `recommended`.
            (
                "[[routes]]\nname = \"q\"\nchannel_id = 1\napprovals = 2\nexpiry = { after_secs = 60, on_expire = { select = \"Ship it\" } }\n",
                "routes[0].expiry.on_expire: selects \"Ship it\" on route \"q\"",
            ),
            (
                "[expiry]\nafter_secs = 60\non_expire = \"recommended\"\n[[routes]]\nname = \"q\"\nchannel_id = 1\napprovals = 2\n",
                "expiry.on_expire: picks the recommended option on route \"q\"",
            ),
        ] {
            let e = load(toml).unwrap_err();
            assert!(e.contains(key), "{e}");
            assert!(e.contains("approve_unattended = true"), "{e}");
        }
        // Denying, failing, a route's decisive label, or the operator's explicit opt-in.
        for toml in [
            "[[routes]]\nname = \"q\"\nchannel_id = 1\napprovals = 2\nexpiry = { after_secs = 60, on_expire = { select = \"Deny\" } }\n",
            "[[routes]]\nname = \"q\"\nchannel_id = 1\napprovals = 2\ndecisive_labels = [\"Hold\"]\nexpiry = { after_secs = 60, on_expire = { select = \"Hold\" } }\n",
            "[[routes]]\nname = \"q\"\nchannel_id = 1\napprovals = 2\nexpiry = { after_secs = 60 }\n",
            "[expiry]\nafter_secs = 60\non_expire = \"recommended\"\n[[routes]]\nname = \"a\"\nchannel_id = 1\n",
            "[[routes]]\nname = \"a\"\nchannel_id = 1\nexpiry = { after_secs = 60, on_expire = { select = \"Yes\" } }\n",
            "[[routes]]\nname = \"a\"\nchannel_id = 1\nexpiry = { after_secs = 60, on_expire = { select = \"Allow\" }, approve_unattended = true }\n",
        ] {
            load(toml).unwrap_or_else(|e| panic!("{toml}: {e}"));
        }
    }

    #[test]
    fn an_identitys_hosts_must_be_able_to_match() {
        let load = |toml: &str| {
            Config::load_from(Some(file(toml).path()), env(&[]))
                .map(|_| ())
                .map_err(|e| format!("{e:#}"))
        };
        let here = ClusterConfig::default().node();
        let e = load(
            "[[identities]]\nname = \"bob\"\nuids = [1001]\nhosts = [\"not-this-host.invalid\"]\n",
        )
        .unwrap_err();
        assert!(e.starts_with("identities[0].hosts: never matches"), "{e}");
        assert!(e.contains(&format!("{here:?}")), "{e}");
        let e =
            load("[[identities]]\nname = \"bob\"\ndiscord_user_ids = [\"1\"]\nhosts = [\"x\"]\n")
                .unwrap_err();
        assert!(e.contains("has no uids"), "{e}");
        let e = load("[[identities]]\nname = \"bob\"\nuids = [1]\nhosts = [\" \"]\n").unwrap_err();
        assert!(
            e.starts_with("identities[0].hosts[0]: must name a host"),
            "{e}"
        );
        load(&format!(
            "[[identities]]\nname = \"bob\"\nuids = [1001]\nhosts = [{here:?}]\n"
        ))
        .unwrap();
        // With a cluster's database, the other nodes' names cannot be checked here.
        let pg = env(&[("ASKRELAY_DATABASE_URL", "postgres://u@127.0.0.1/x")]);
        Config::load_from(
            Some(
                file("[[identities]]\nname = \"bob\"\nuids = [1001]\nhosts = [\"node-b\"]\n")
                    .path(),
            ),
            pg,
        )
        .unwrap();
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
                on_expire: OnExpire::Select("No, keep them".into()),
                approve_unattended: false,
            }
        );
        assert_eq!(
            rule(1),
            ExpiryRule {
                after_secs: Some(5),
                on_expire: OnExpire::Fail,
                approve_unattended: false,
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

    /// A message reads as written: askrelay's own examples stay in it, only a value serde
    /// quotes is left out, and a key inside a list has its dot.
    #[test]
    fn errors_keep_their_own_text_and_leave_out_only_the_value() {
        let err = |toml: &str| {
            let f = file(toml);
            format!(
                "{:#}",
                Config::load_from(Some(f.path()), env(&[])).unwrap_err()
            )
        };
        let e = err("[discord]\nchannel_id = \"abc\"\n");
        assert!(
            e.contains(
                "discord.channel_id: expected a Discord id (a number like \"123456789012345678\")"
            ),
            "{e}"
        );
        assert!(!e.contains("not shown"), "{e}");
        let e = err("log_format = \"MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.secret\"\n");
        assert!(e.contains("log_format"), "{e}");
        assert!(!e.contains("MTE4") && !e.contains("secret"), "{e}");
        let e = err("[[routes]]\nname = \"ops\"\nchannel_id = \"abc\"\n");
        assert!(
            e.contains("routes[0].channel_id: expected a Discord id"),
            "{e}"
        );
        let e = err("[[routes]]\nname = \"ops\"\nexclude_requester = \"MTE4secret\"\n");
        assert!(e.contains("routes[0].exclude_requester"), "{e}");
        assert!(!e.contains("MTE4secret"), "{e}");
        assert_eq!(
            load::without_value("invalid value: string \"hunter2\", expected a duration"),
            "expected a duration, got a string"
        );
        assert_eq!(
            load::without_value("invalid type: integer `5`, expected a string"),
            "expected a string, got an integer"
        );
        assert_eq!(
            load::without_value("unknown variant `hunter2`, expected one of `text`, `json`"),
            "not one of the allowed values, expected one of `text`, `json`"
        );
        assert_eq!(
            load::without_value("expected a uid (a number like 1000)"),
            "expected a uid (a number like 1000)"
        );
        assert_eq!(
            load::describe_config_error(&::config::ConfigError::NotFound(
                "routes[0]channel_id".into()
            )),
            "routes[0].channel_id: not found"
        );
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
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/askrelay.example.toml");
        Config::load_from(Some(&path), env(&[])).unwrap();
    }

    /// The README's "On-call approvals" config, as written there.
    #[test]
    fn the_readme_on_call_config_reads_as_it_says() {
        let readme = include_str!("../../README.md");
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
                on_expire: OnExpire::Select("Deny".into()),
                approve_unattended: false,
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

    #[test]
    fn grant_durations_take_the_forms_the_docs_show() {
        for (text, secs) in [
            ("30m", 1800),
            ("8h", 8 * 3600),
            ("2d", 2 * 86400),
            ("7d", 7 * 86400),
            ("1w", 7 * 86400),
            ("1h 30m", 5400),
            ("1h30m", 5400),
            ("90min", 5400),
            ("90 minutes", 5400),
            ("1 hour", 3600),
            ("2 days", 2 * 86400),
            ("1d 12h", 36 * 3600),
            ("60s", 60),
            (" 8h ", 8 * 3600),
        ] {
            assert_eq!(grant_secs(text), Ok(secs), "{text:?}");
        }
    }

    #[test]
    fn grant_durations_out_of_range_or_unreadable_are_refused_saying_why() {
        for text in ["59s", "8d", "2w", "90.5s", "-30m", "30m ago"] {
            let err = grant_secs(text).unwrap_err();
            assert!(
                err.contains("a grant lasts from 1 minute to 7 days"),
                "{text:?}: {err}"
            );
        }
        for text in ["", "8", "soon", "8 fortnights", "1mo"] {
            let err = grant_secs(text).unwrap_err();
            assert!(
                err.starts_with(&format!(
                    "{text:?} is not a duration like \"30m\" or \"8h\" ("
                )),
                "{text:?}: {err}"
            );
        }
    }
}
