//! Loading the configuration: the sources in order (defaults, the file, the environment), the
//! checks across keys that serde cannot make, errors that name the key and never the value,
//! and the few keys clients read to find the daemon.

use super::{Config, EscalationStep, ExpiryRule, OnExpire, Route, ENV_PREFIX};
use anyhow::{anyhow, bail, Result};
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// Environment variables with the prefix that are not configuration keys: the log filter, the
/// config file path, the scope labels of the MCP front end and the test hooks (`ASKRELAY_TEST_*`).
pub(super) const NOT_CONFIG_ENV: &[&str] = &[
    "ASKRELAY_LOG",
    "ASKRELAY_CONFIG",
    "ASKRELAY_SCOPE_",
    "ASKRELAY_TEST_",
];

/// The most approvals a route may ask for.
const MAX_APPROVALS: u32 = 25;

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
        if self
            .discord
            .token
            .as_ref()
            .is_some_and(|t| t.expose().trim().is_empty())
        {
            bail!(
                "discord.token: is empty; set the bot token, or leave the key out (and \
                 ASKRELAY_DISCORD__TOKEN unset) to answer from the terminal only"
            );
        }
        self.slack.validate()?;
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
        if !(1..=3600).contains(&self.postgres.db_deadline_secs) {
            bail!("postgres.db_deadline_secs: must be 1 to 3600 seconds");
        }
        if let Some(url) = self.postgres.pooler_url() {
            // Neither URL is quoted: both may carry a password.
            if !self.database_url.starts_with("postgres") {
                bail!("postgres.pooler_url: set, but database_url is not a postgres:// URL");
            }
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                bail!("postgres.pooler_url: must be a postgres:// URL (not shown: it may hold a password)");
            }
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
            crate::domain::calendar::parse_time_of_day(at)
                .map_err(|e| anyhow!("digest.at: {e}"))?;
        }
        if let Some(tz) = &self.digest.timezone {
            crate::domain::calendar::zone(tz).map_err(|e| anyhow!("digest.timezone: {e}"))?;
        }
        if let Some(c) = &self.digest.slack_channel_id {
            super::slack::check_id("digest.slack_channel_id", super::slack::IdKind::Channel, c)?;
            if !self.slack.enabled() {
                bail!("digest.slack_channel_id: needs slack.bot_token (Slack is not configured); set it, or leave slack_channel_id out");
            }
        }
        for (i, name) in self.digest.routes.iter().enumerate() {
            let default = name == "default"
                && (self.discord.channel_id.is_some() || self.slack.channel_id.is_some());
            if !default && !self.routes.iter().any(|r| &r.name == name) {
                bail!("digest.routes[{i}]: no route is named {name:?} (a [[routes]] name, or \"default\" with discord.channel_id or slack.channel_id)");
            }
        }
        if self.digest.channel_id.is_none()
            && self.digest.slack_channel_id.is_none()
            && (self.digest.every_secs.is_some() || self.digest.at.is_some())
        {
            bail!("digest.channel_id: the digest needs a channel (channel_id for Discord, slack_channel_id for Slack)");
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
            if let Some(w) = r.stop_wait_secs {
                use super::route::{STOP_WAIT_MAX_SECS, STOP_WAIT_MIN_SECS};
                if !(STOP_WAIT_MIN_SECS..=STOP_WAIT_MAX_SECS).contains(&w) {
                    bail!("routes[{i}].stop_wait_secs: must be between {STOP_WAIT_MIN_SECS} and {STOP_WAIT_MAX_SECS} seconds, not {w}");
                }
            }
            check_slack_route(i, r, self.slack.enabled())?;
            check_answerers(i, r, self)?;
            if r.answerers() == ["terminal"] {
                check_terminal_route(i, r, self.terminal_enabled())?;
            } else if !r.answered_by("discord") {
                check_discordless_route(i, r)?;
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
            if let Some(n) = r.approvals {
                if !(1..=MAX_APPROVALS).contains(&n) {
                    bail!("routes[{i}].approvals: must be 1 to {MAX_APPROVALS} (1: the first answer wins)");
                }
            }
            for (j, l) in r.decisive_labels.iter().flatten().enumerate() {
                if l.trim().is_empty() {
                    bail!("routes[{i}].decisive_labels[{j}]: must name an option label");
                }
            }
            let durations = r.grant_durations.as_deref().unwrap_or_default();
            if durations.len() > super::MAX_GRANT_DURATIONS {
                bail!(
                    "routes[{i}].grant_durations: at most {} durations (one button each), got {}",
                    super::MAX_GRANT_DURATIONS,
                    durations.len()
                );
            }
            let mut seen = Vec::new();
            for (j, d) in durations.iter().enumerate() {
                let secs = super::grant_secs(d)
                    .map_err(|e| anyhow::anyhow!("routes[{i}].grant_durations[{j}]: {e}"))?;
                if seen.contains(&secs) {
                    bail!("routes[{i}].grant_durations[{j}]: {d:?} is given twice");
                }
                seen.push(secs);
            }
            check_confirm(i, r)?;
        }
        let mut names = std::collections::HashSet::new();
        for (i, p) in self.identities.iter().enumerate() {
            if p.name.trim().is_empty() {
                bail!("identities[{i}].name: must not be empty");
            }
            if !names.insert(p.name.as_str()) {
                bail!(
                    "identities[{i}].name: {:?} is already the name of another identity",
                    p.name
                );
            }
            for (j, g) in p.sessions.iter().enumerate() {
                if g.trim().is_empty() || g.chars().count() > 200 {
                    bail!("identities[{i}].sessions[{j}]: must be a glob of 1 to 200 characters");
                }
            }
            super::slack::check_ids(
                &format!("identities[{i}].slack_user_ids"),
                super::IdKind::User,
                &p.slack_user_ids,
            )?;
            if p.uids.is_empty() && p.discord_user_ids.is_empty() && p.slack_user_ids.is_empty() {
                bail!(
                    "identities[{i}]: give uids, discord_user_ids, slack_user_ids or some of them"
                );
            }
            check_hosts(i, p, &self.database_url, &self.cluster.node())?;
        }
        self.check_unattended()?;
        Ok(())
    }

    /// No expiry policy may approve an approval when nobody answered, unless the operator
    /// says so with `approve_unattended = true` in the rule (docs/approvals.md, "Expiry on
    /// approval routes"). Any route may carry the approval front doors' requests, so a rule
    /// that selects one of their allow labels is refused everywhere; on a route with
    /// `approvals`, any choice but a deny is (the quorum would be skipped), and so is
    /// `recommended` (the agent marks which option is recommended).
    fn check_unattended(&self) -> Result<()> {
        let check = |rule: &ExpiryRule, key: &str, route: Option<&Route>| -> Result<()> {
            if rule.approve_unattended || rule.after_secs.is_none() {
                return Ok(());
            }
            let quorum = route.filter(|r| r.approvals.is_some());
            let why = match (&rule.on_expire, quorum) {
                (OnExpire::Fail, _) => return Ok(()),
                (OnExpire::Select(l), _) if crate::domain::approval::is_front_door_allow(l) => {
                    format!("selects {l:?}, an approval front door's allow")
                }
                (OnExpire::Select(l), Some(r)) => {
                    let deny = crate::domain::approval::FRONT_DOOR_DENY.contains(&l.as_str())
                        || r.decisive_labels.iter().flatten().any(|d| d == l);
                    if deny {
                        return Ok(());
                    }
                    format!(
                        "selects {l:?} on route {:?}, which has approvals (only a deny or one of \
                         its decisive_labels may be chosen for nobody)",
                        r.name
                    )
                }
                (OnExpire::Recommended, Some(r)) => format!(
                    "picks the recommended option on route {:?}, which has approvals (the \
                     agent says which option is recommended)",
                    r.name
                ),
                _ => return Ok(()),
            };
            bail!(
                "{key}.on_expire: {why}, so a step would be approved when nobody answered; use \
                 on_expire = \"fail\" or a deny, or accept the risk with \
                 {key}.approve_unattended = true"
            )
        };
        for (i, r) in self.routes.iter().enumerate() {
            match r.expiry_rule() {
                Some(rule) if r.expiry.is_none() && rule.on_expire != OnExpire::Fail => {
                    // The older spelling has no room for the opt-in: the check says to move.
                    check(&rule, &format!("routes[{i}]"), Some(r)).map_err(|e| {
                        anyhow!(
                            "{e} (with the older on_expire, write routes[{i}].expiry = \
                             {{ after_secs, on_expire, approve_unattended }} instead)"
                        )
                    })?
                }
                Some(rule) => check(&rule, &format!("routes[{i}].expiry"), Some(r))?,
                None => check(&self.expiry, "expiry", Some(r))?,
            }
        }
        check(&self.expiry, "expiry", None)
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
            .unwrap_or(self.discord.token.is_none() && !self.slack.enabled())
    }
}

/// A route's Slack keys: ids of the right shapes, a channel only where Slack is configured
/// (`slack`), and allowlists only where it has a Slack channel to answer in.
fn check_slack_route(i: usize, r: &Route, slack: bool) -> Result<()> {
    use super::slack::{check_id, check_ids, IdKind};
    if let Some(c) = &r.slack_channel_id {
        check_id(&format!("routes[{i}].slack_channel_id"), IdKind::Channel, c)?;
        if !slack {
            bail!(
                "routes[{i}].slack_channel_id: needs slack.bot_token (Slack is not configured); \
                 set it, or leave slack_channel_id out"
            );
        }
    }
    let users = r.slack_allowed_user_ids.as_deref().unwrap_or_default();
    let groups = r.slack_allowed_usergroup_ids.as_deref().unwrap_or_default();
    check_ids(
        &format!("routes[{i}].slack_allowed_user_ids"),
        IdKind::User,
        users,
    )?;
    check_ids(
        &format!("routes[{i}].slack_allowed_usergroup_ids"),
        IdKind::Usergroup,
        groups,
    )?;
    check_ids(
        &format!("routes[{i}].slack_dm_user_ids"),
        IdKind::User,
        r.slack_dm_user_ids.as_deref().unwrap_or_default(),
    )?;
    check_ids(
        &format!("routes[{i}].slack_mention_user_ids"),
        IdKind::User,
        r.slack_mention_user_ids.as_deref().unwrap_or_default(),
    )?;
    check_ids(
        &format!("routes[{i}].slack_mention_usergroup_ids"),
        IdKind::Usergroup,
        r.slack_mention_usergroup_ids.as_deref().unwrap_or_default(),
    )?;
    super::slack::check_oncall(
        &format!("routes[{i}]"),
        "slack_escalate",
        (r.remind_after_secs, r.remind_every_secs, r.remind_max),
        r.slack_escalate.as_deref().unwrap_or_default(),
    )?;
    if r.slack_channel_id.is_none() {
        for (key, set) in [
            ("slack_allowed_user_ids", r.slack_allowed_user_ids.is_some()),
            (
                "slack_allowed_usergroup_ids",
                r.slack_allowed_usergroup_ids.is_some(),
            ),
            ("slack_mention_user_ids", r.slack_mention_user_ids.is_some()),
            ("slack_dm_user_ids", r.slack_dm_user_ids.is_some()),
            (
                "slack_mention_usergroup_ids",
                r.slack_mention_usergroup_ids.is_some(),
            ),
            ("slack_escalate", r.slack_escalate.is_some()),
        ] {
            if set {
                bail!(
                    "routes[{i}].{key}: is for a Slack channel, and this route has none; set \
                     slack_channel_id, or leave {key} out"
                );
            }
        }
    }
    Ok(())
}

/// A route's `answerers`, when it lists them: each one of the answerers, once, and able to
/// show the route's requests (Discord: a channel and the token; Slack: the route's channel,
/// its connection is the Slack answerer's to check; the terminal: the terminal answerer on).
/// Not a silent skip at run time: a route that names a surface gets it, or does not load.
fn check_answerers(i: usize, r: &Route, config: &Config) -> Result<()> {
    let Some(names) = &r.answerers else {
        return Ok(());
    };
    if names.is_empty() {
        bail!(
            "routes[{i}].answerers: must name at least one of \"discord\", \"slack\" and \
             \"terminal\" (or leave answerers out: the route's channels say)"
        );
    }
    for (k, name) in names.iter().enumerate() {
        let at = format!("routes[{i}].answerers[{k}]");
        if names[..k].contains(name) {
            bail!("{at}: {name:?} is listed twice");
        }
        match name.as_str() {
            "discord" => {
                if config.discord.token.is_none() {
                    bail!("{at}: \"discord\" needs discord.token (Discord is not configured)");
                }
                if r.channel_id.is_none() && config.discord.channel_id.is_none() {
                    bail!(
                        "{at}: \"discord\" needs a channel: set routes[{i}].channel_id (or \
                         discord.channel_id, which the route then posts in)"
                    );
                }
            }
            "slack" => {
                if !config.slack.enabled() {
                    bail!("{at}: \"slack\" needs slack.bot_token (Slack is not configured)");
                }
                if r.slack_channel_id.is_none() {
                    bail!("{at}: \"slack\" needs routes[{i}].slack_channel_id");
                }
            }
            "terminal" => {
                if !config.terminal_enabled() {
                    bail!(
                        "{at}: \"terminal\" needs the terminal answerer, which is off: set \
                         [terminal] enabled = true"
                    );
                }
            }
            other => bail!(
                "{at}: {other:?} is not an answerer; use \"discord\", \"slack\" or \
                 \"terminal\""
            ),
        }
    }
    Ok(())
}

/// A route Discord does not answer (no Discord among its answerers) that is not the
/// terminal's alone: answered in Slack; Discord's own keys mean nothing there (people at a
/// terminal may answer too, with terminal_answers).
fn check_discordless_route(i: usize, r: &Route) -> Result<()> {
    // Reminders are Slack's too (its escalation steps are slack_escalate).
    let shared = [
        "terminal_answers",
        "remind_after_secs",
        "remind_every_secs",
        "remind_max",
    ];
    if let Some((key, _)) = discord_only_keys(r)
        .iter()
        .filter(|(key, _)| !shared.contains(key))
        .find(|(_, set)| *set)
    {
        bail!(
            "routes[{i}].{key}: is for a Discord channel, and this route has none (it is answered \
             in Slack); set channel_id, or leave {key} out"
        );
    }
    Ok(())
}

/// A route answered from the terminal alone (no platform channel, or `answerers =
/// ["terminal"]`): the terminal answerer must be on, and Discord's own keys (who is
/// mentioned, reminded, escalated to) mean nothing there.
fn check_terminal_route(i: usize, r: &Route, terminal: bool) -> Result<()> {
    if !terminal {
        bail!(
            "routes[{i}].channel_id: not set, and the terminal answerer is off: give the route a \
             Discord channel (or a Slack one, slack_channel_id), or answer it from the terminal \
             with [terminal] enabled = true"
        );
    }
    if let Some((key, _)) = discord_only_keys(r).iter().find(|(_, set)| *set) {
        bail!(
            "routes[{i}].{key}: is for a Discord channel, and this route has none (it is answered \
             from the terminal); set channel_id, or leave {key} out"
        );
    }
    Ok(())
}

/// Discord's own keys of a route, and whether each is set.
fn discord_only_keys(r: &Route) -> [(&'static str, bool); 13] {
    [
        ("allowed_user_ids", r.allowed_user_ids.is_some()),
        ("allowed_role_ids", r.allowed_role_ids.is_some()),
        ("mention_user_ids", r.mention_user_ids.is_some()),
        ("mention_role_ids", r.mention_role_ids.is_some()),
        ("dm_user_ids", r.dm_user_ids.is_some()),
        ("remind_after_secs", r.remind_after_secs.is_some()),
        ("remind_every_secs", r.remind_every_secs.is_some()),
        ("remind_max", r.remind_max.is_some()),
        ("escalate", r.escalate.is_some()),
        ("terminal_answers", r.terminal_answers.is_some()),
        ("stop_replies", r.stop_replies.is_some()),
        ("stop_wait_secs", r.stop_wait_secs.is_some()),
        ("threads", r.threads.is_some()),
    ]
}

/// A route's typed confirmation: labels that are labels, each once, and a word that can be
/// typed (or `{scope.KEY}`).
fn check_confirm(i: usize, r: &Route) -> Result<()> {
    let labels = r.confirm_labels.as_deref().unwrap_or_default();
    for (j, l) in labels.iter().enumerate() {
        if l.trim().is_empty() {
            bail!("routes[{i}].confirm_labels[{j}]: must name an option label");
        }
        if labels[..j].contains(l) {
            bail!("routes[{i}].confirm_labels[{j}]: {l:?} is listed twice");
        }
    }
    if let Some(w) = &r.confirm_word {
        w.parse::<crate::domain::confirm::Word>()
            .map_err(|e| anyhow!("routes[{i}].confirm_word: {e}"))?;
        if labels.is_empty() {
            bail!(
                "routes[{i}].confirm_word: set confirm_labels too (the labels that need the word)"
            );
        }
    }
    Ok(())
}

/// An identity's `hosts` must be able to match: each a name, for uids, and on a single daemon
/// (SQLite: no cluster) its own host, where every request it gets is asked.
fn check_hosts(i: usize, p: &super::IdentityConfig, database_url: &str, host: &str) -> Result<()> {
    if p.hosts.is_empty() {
        return Ok(());
    }
    for (j, h) in p.hosts.iter().enumerate() {
        if h.trim().is_empty() {
            bail!("identities[{i}].hosts[{j}]: must name a host");
        }
    }
    if p.uids.is_empty() {
        bail!(
            "identities[{i}].hosts: says where this identity's uids are theirs, and it has no \
             uids; give uids, or leave hosts out"
        );
    }
    if database_url.starts_with("sqlite:") && !p.hosts.iter().any(|h| h == host) {
        bail!(
            "identities[{i}].hosts: never matches: this daemon runs alone (SQLite), so every \
             request it gets is asked on its own host, {host:?} (its host name, or \
             cluster.node_id), which is not listed; add it, or leave hosts out"
        );
    }
    Ok(())
}

/// Reminders and escalation steps under `at` (`discord`, `routes[0]`) must be usable.
pub(super) fn check_oncall(
    at: &str,
    after: Option<u64>,
    every: Option<u64>,
    max: Option<u32>,
    steps: &[EscalationStep],
) -> Result<()> {
    let after_secs: Vec<u64> = steps.iter().map(|s| s.after_secs).collect();
    check_timers(at, "escalate", after, every, max, &after_secs)
}

/// Reminders under `at` and the escalation steps under `at.steps_key` (whose `after_secs`
/// are `steps`), on any platform, must be usable.
pub(super) fn check_timers(
    at: &str,
    steps_key: &str,
    after: Option<u64>,
    every: Option<u64>,
    max: Option<u32>,
    steps: &[u64],
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
    for (k, &after_secs) in steps.iter().enumerate() {
        if after_secs == 0 || after_secs <= last {
            bail!(
                "{at}.{steps_key}[{k}].after_secs: must be at least 1 and later than the step before"
            );
        }
        last = after_secs;
    }
    if steps.len() > 10 {
        bail!("{at}.{steps_key}: at most 10 steps");
    }
    Ok(())
}

/// An expiry rule at `key` (`expiry`, `routes[0].expiry`) must say something usable.
pub(super) fn check_expiry(rule: &ExpiryRule, key: &str) -> Result<()> {
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
pub(super) fn config_error(e: config::ConfigError, file: Option<&Path>) -> anyhow::Error {
    let what = describe_config_error(&e);
    match file {
        Some(f) => anyhow!("config error in {} or the environment: {what}", f.display()),
        None => anyhow!("config error in the environment: {what}"),
    }
}

pub(super) fn describe_config_error(e: &config::ConfigError) -> String {
    use config::ConfigError as E;
    match e {
        E::Type {
            key,
            expected,
            unexpected,
            ..
        } => format!(
            "{}: expected {expected}, got {}",
            key.as_deref().map_or_else(|| "a key".to_owned(), dotted),
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
        // Our own messages (the deserializers in values.rs) never carry the value; serde's may.
        E::Message(m) => without_value(m),
        E::NotFound(k) => format!("{}: not found", dotted(k)),
        E::PathParse { .. } => "a key path cannot be parsed".to_owned(),
        E::Frozen => "the configuration is frozen".to_owned(),
        E::Foreign(_) => "cannot read the configuration".to_owned(),
        _ => "invalid configuration".to_owned(),
    }
}

/// A serde message without the value serde quotes in it. Only serde's own shapes carry a value
/// (`invalid type: string "x", expected …`, `invalid value: …`, `unknown variant `x`, expected
/// …`), and only that value is left out: askrelay's own messages (the deserializers in
/// values.rs) never hold one, and are kept whole, examples and all. The token itself is a
/// [`super::Secret`], which takes any string, so no message about it can quote it.
pub(super) fn without_value(m: &str) -> String {
    if let Some(at) = m.find(" does not have variant constructor") {
        return format!("{}: not one of the allowed values", &m[..at]);
    }
    for shape in ["invalid type: ", "invalid value: "] {
        if let Some(start) = m.find(shape) {
            let from = start + shape.len();
            let Some(len) = m[from..].find(", expected ") else {
                continue;
            };
            // serde's `Unexpected` reads "string \"x\"", "integer `5`", "boolean `true`":
            // the kind, then the value.
            let got = &m[from..from + len];
            let kind = got.split(['"', '`']).next().unwrap_or(got).trim();
            let rest = &m[from + len + 2..];
            return format!("{}{rest}, got {}", &m[..start], with_article(kind));
        }
    }
    if let Some(rest) = m.strip_prefix("unknown variant `") {
        if let Some(end) = rest.find('`') {
            return format!("not one of the allowed values{}", &rest[end + 1..]);
        }
    }
    m.to_owned()
}

/// "string" → "a string", "integer" → "an integer".
fn with_article(kind: &str) -> String {
    match kind.chars().next() {
        None => "something else".to_owned(),
        Some('a' | 'e' | 'i' | 'o' | 'u') => format!("an {kind}"),
        Some(_) => format!("a {kind}"),
    }
}

/// `routes[0]on_expire` → `routes[0].on_expire`.
pub(super) fn dotted(key: &str) -> String {
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
pub(super) fn unexpected_kind(u: &impl fmt::Display) -> &'static str {
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

/// `$XDG_RUNTIME_DIR/askrelay.sock`; without it, where a login session would put it
/// (`/run/user/$UID`, when that directory exists and is this user's); else `askrelay.sock` in a
/// private per-user directory, `/tmp/askrelay-$UID/` (created 0700 by the daemon,
/// docs/contract.md, "Socket path"). Never the current directory: anyone who can write there
/// could put a fake daemon's socket in its place.
pub fn default_socket_path() -> PathBuf {
    socket_candidates().swap_remove(0)
}

/// Every place a daemon started with the default socket may be listening, the default first:
/// `$XDG_RUNTIME_DIR`, `/run/user/$UID` and `/tmp/askrelay-$UID`. A client started with a short
/// environment (MCP clients drop `XDG_RUNTIME_DIR`) looks at all of them, and counts only those
/// that pass its checks of the daemon (`client::Target::from_config`): another local user may
/// make an entry at some of them (the `askrelay-$UID` of a shared `/tmp`, before this user does).
pub fn socket_candidates() -> Vec<PathBuf> {
    let uid = nix::unistd::geteuid().as_raw();
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(dir));
    }
    // ASKRELAY_TEST_RUN_USER_DIR stands in for /run/user/$UID in tests, which cannot make it.
    let login = std::env::var_os("ASKRELAY_TEST_RUN_USER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("/run/user/{uid}")));
    let ours = std::fs::metadata(&login).is_ok_and(|m| {
        use std::os::unix::fs::MetadataExt;
        m.is_dir() && m.uid() == uid
    });
    if ours {
        dirs.push(login);
    }
    dirs.push(std::env::temp_dir().join(format!("askrelay-{uid}")));
    let mut sockets: Vec<PathBuf> = Vec::new();
    for d in dirs {
        let s = d.join("askrelay.sock");
        if !sockets.contains(&s) {
            sockets.push(s);
        }
    }
    sockets
}

/// askrelay's state directory: `$XDG_STATE_HOME/askrelay/` (or its `~/.local/state`
/// default; `./askrelay` with neither set).
pub fn state_dir() -> PathBuf {
    let dir = match std::env::var_os("XDG_STATE_HOME") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => match std::env::var_os("HOME") {
            Some(h) if !h.is_empty() => PathBuf::from(h).join(".local/state"),
            _ => PathBuf::from("."),
        },
    };
    dir.join("askrelay")
}

/// A file in [`state_dir`].
pub fn default_database_url() -> String {
    format!("sqlite://{}", state_dir().join("askrelay.db").display())
}

/// Where the configuration comes from, in order, each overriding the one before: the defaults
/// (the types' own), `file`, then `ASKRELAY_*` variables of `env`. The daemon ([`Config`]) and
/// the clients ([`ClientKeys`]) both read through this, so a client finds the socket where the
/// daemon put it: the environment beats the file. An empty `ASKRELAY_SOCKET_PATH` or
/// `ASKRELAY_DAEMON_UID` counts as unset.
pub(super) fn sources(
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
    let env: Vec<(String, String)> = env.into_iter().collect();
    let env: config::Map<String, String> = env
        .iter()
        .map(|(k, v)| {
            // Slack's customary names, read as the keys they stand for, unless the key's own
            // variable is set too.
            let alias = super::slack::ENV_ALIASES
                .iter()
                .find(|(a, _)| a == k)
                .map(|(_, key)| *key)
                .filter(|key| !env.iter().any(|(k2, _)| k2 == key));
            (alias.map_or_else(|| k.clone(), str::to_owned), v.clone())
        })
        .filter(|(k, _)| !super::slack::ENV_ALIASES.iter().any(|(a, _)| a == k))
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
