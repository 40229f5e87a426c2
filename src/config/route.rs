//! A `[[routes]]` entry (docs/contract.md, "Answerers and routes"): which requests it takes, the
//! channel and people it uses on Discord (none: the terminal answers it), and its approval
//! policy; with the grant lengths a route may offer.

use super::values::{opt_snowflakes, Snowflake};
use super::EscalationStep;
use crate::domain::expiry::{ExpiryRule, OnExpire};
use serde::Deserialize;
use std::collections::BTreeMap;

/// `stop_wait_secs` when not set, and its bounds.
pub const STOP_WAIT_DEFAULT_SECS: u64 = 300;
pub const STOP_WAIT_MIN_SECS: u64 = 10;
pub const STOP_WAIT_MAX_SECS: u64 = 3300;

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
    /// The surfaces that show this route's requests, in order (`["slack", "discord",
    /// "terminal"]`): each posts its copy and the first allowed answer anywhere settles it.
    /// Unset: every platform this route names a channel for (`channel_id`, `slack_channel_id`),
    /// or the terminal when it names none ([`Route::answerers`]).
    #[serde(default)]
    pub answerers: Option<Vec<String>>,
    /// The Slack channel (`C…`, `G…`) this route posts to (default: as `slack.channel_id`
    /// for the default route only).
    #[serde(default)]
    pub slack_channel_id: Option<String>,
    /// Slack users (`U…`, `W…`) who may answer here; with `slack_allowed_usergroup_ids`, a
    /// person on either list; both unset: as under `[slack]`.
    #[serde(default)]
    pub slack_allowed_user_ids: Option<Vec<String>>,
    /// Slack user groups (`S…`) whose members may answer here.
    #[serde(default)]
    pub slack_allowed_usergroup_ids: Option<Vec<String>>,
    /// Slack users (`U…`) who get a copy of each question in their DM from the start, and may
    /// answer there (default: `slack.dm_user_ids`).
    #[serde(default)]
    pub slack_dm_user_ids: Option<Vec<String>>,
    /// Slack users (`U…`) and user groups (`S…`) mentioned by each reminder in the question's
    /// thread (default: as `slack.mention_user_ids` / `slack.mention_usergroup_ids`).
    #[serde(default)]
    pub slack_mention_user_ids: Option<Vec<String>>,
    #[serde(default)]
    pub slack_mention_usergroup_ids: Option<Vec<String>>,
    /// Escalation steps in Slack (default: as `[[slack.escalate]]`).
    #[serde(default)]
    pub slack_escalate: Option<Vec<super::slack::SlackEscalationStep>>,
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
    /// Whether an agent's end of turn (`askrelay hook … ` on `Stop`) is posted here so that a
    /// reply keeps it working (docs/approvals.md, "Replies at the end of a turn"); off by
    /// default: a Stop on a route without it ends the turn at once.
    #[serde(default)]
    pub stop_replies: Option<bool>,
    /// How long a Stop waits for a reply, in seconds (10–3300, default 300).
    #[serde(default)]
    pub stop_wait_secs: Option<u64>,
    /// Whether an agent session's questions, approvals and ends of turns go to one thread of
    /// the channel (`per_session`), or to the channel itself (`off`, the default).
    #[serde(default)]
    pub threads: Option<Threads>,
    /// Reminders (default: as under `[discord]` for the route's Discord copy, `[slack]` for its
    /// Slack copy).
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

/// Where a route posts an agent session's requests (the route key `threads`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Threads {
    /// In the route's channel, as every other request (the default: a channel reads as it
    /// always did).
    #[default]
    Off,
    /// In one thread per agent session (the `agent` and `session` of the request), created
    /// in the route's channel on the session's first message.
    PerSession,
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
            answerers: None,
            slack_channel_id: None,
            slack_allowed_user_ids: None,
            slack_allowed_usergroup_ids: None,
            slack_dm_user_ids: None,
            slack_mention_user_ids: None,
            slack_mention_usergroup_ids: None,
            slack_escalate: None,
            allowed_user_ids: None,
            allowed_role_ids: None,
            mention_role_ids: None,
            mention_user_ids: None,
            expiry: None,
            expire_after_secs: None,
            on_expire: None,
            terminal_answers: None,
            stop_replies: None,
            stop_wait_secs: None,
            threads: None,
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

    /// The answerers that show this route's requests, in order: `answerers` when set, else
    /// Discord where `channel_id` is set and Slack where `slack_channel_id` is, else the
    /// terminal. Names are checked at load (`routes[N].answerers[K]`).
    pub fn answerers(&self) -> Vec<&str> {
        if let Some(names) = &self.answerers {
            return names.iter().map(String::as_str).collect();
        }
        let mut names = Vec::new();
        if self.channel_id.is_some() {
            names.push("discord");
        }
        if self.slack_channel_id.is_some() {
            names.push("slack");
        }
        if names.is_empty() {
            names.push("terminal");
        }
        names
    }

    /// Whether `answerer` shows this route's requests.
    pub fn answered_by(&self, answerer: &str) -> bool {
        self.answerers().contains(&answerer)
    }

    /// Whether Stop replies are on for this route.
    pub fn stop_replies(&self) -> bool {
        self.stop_replies.unwrap_or(false)
    }

    /// Where a session's requests are posted on this route.
    pub fn threads(&self) -> Threads {
        self.threads.unwrap_or_default()
    }

    /// How long a Stop waits for a reply, in seconds.
    pub fn stop_wait_secs(&self) -> u64 {
        self.stop_wait_secs.unwrap_or(STOP_WAIT_DEFAULT_SECS)
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
