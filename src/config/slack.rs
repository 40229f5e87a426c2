//! `[slack]` (docs/slack.md): the Slack answerer's tokens, its default route's channel and
//! people, and how it hears interactions; with the shapes of Slack's ids, checked at load so
//! that a typo names its key at start-up instead of failing a post later.
//!
//! The two tokens and the signing secret are [`Secret`]s: their errors name the key and the
//! shape expected, never the value.

use super::values::Secret;
use anyhow::{bail, Result};
use serde::de::{self, Deserializer};
use serde::Deserialize;

/// Slack's Web API; anything else is a proxy or a stand-in.
pub const DEFAULT_SLACK_API_BASE: &str = "https://slack.com/api";

/// `[slack]`: off unless `bot_token` is set.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct SlackConfig {
    /// The app-level token (`xapp-…`, scope `connections:write`) that opens Socket Mode
    /// connections. Prefer `ASKRELAY_SLACK_APP_TOKEN`.
    pub app_token: Option<Secret>,
    /// The bot token (`xoxb-…`) every Web API call is made with. Prefer
    /// `ASKRELAY_SLACK_BOT_TOKEN`.
    pub bot_token: Option<Secret>,
    /// The default route's channel (`C…`, `G…`).
    pub channel_id: Option<String>,
    /// Who may answer on the default route (and routes that set no Slack allowlist): a person
    /// on either list; both empty: anyone who can see the channel.
    #[serde(deserialize_with = "ids")]
    pub allowed_user_ids: Vec<String>,
    #[serde(deserialize_with = "ids")]
    pub allowed_usergroup_ids: Vec<String>,
    /// Users (`U…`) who get a copy of each question of the default route (and of routes that
    /// set no `slack_dm_user_ids`) in their DM from the start, and may answer there.
    #[serde(deserialize_with = "ids")]
    pub dm_user_ids: Vec<String>,
    /// Who sees every route's requests in listings and may cancel (later: `/askrelay`).
    #[serde(deserialize_with = "ids")]
    pub operator_user_ids: Vec<String>,
    /// How interactions reach the daemon: `socket` (Socket Mode, an outbound WebSocket; the
    /// default) or `http` (Slack posts them to `listen`, path `/slack/events`, signed with
    /// `signing_secret`).
    pub mode: SlackMode,
    /// The app's signing secret, which every request of the `http` mode must be signed with.
    pub signing_secret: Option<Secret>,
    /// The `http` mode's address, "IP:PORT".
    pub listen: Option<String>,
    /// Slack's Web API base, `https://slack.com/api`; tests point it at the stand-in.
    pub api_base: String,
    /// Whether people at a terminal may answer requests on the default Slack route.
    pub terminal_answers: bool,
    /// How often questions not posted and messages not edited yet are tried again (also at
    /// once when the Socket Mode connection comes back).
    pub repair_interval_secs: u64,
    /// Who the default route's reminders mention (and routes' that set none).
    #[serde(deserialize_with = "ids")]
    pub mention_user_ids: Vec<String>,
    #[serde(deserialize_with = "ids")]
    pub mention_usergroup_ids: Vec<String>,
    /// Reminders on the default route (and routes that set none): a reply in the question's
    /// thread after `remind_after_secs`, then every `remind_every_secs` (default: the same),
    /// at most `remind_max` times (default 3). None when `remind_after_secs` is unset.
    pub remind_after_secs: Option<u64>,
    pub remind_every_secs: Option<u64>,
    pub remind_max: Option<u32>,
    /// The default route's escalation steps (a route's: its `slack_escalate`).
    pub escalate: Vec<SlackEscalationStep>,
}

/// A Slack escalation step (`[[slack.escalate]]`, `[[routes.slack_escalate]]`): when nobody
/// answered within `after_secs` of the ask, mention more people in the question's thread, send
/// each open question to some people's DMs, and let more people answer from then on.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SlackEscalationStep {
    pub after_secs: u64,
    /// Users (`U…`) and user groups (`S…`) mentioned in a reply in the question's thread.
    #[serde(default, deserialize_with = "ids")]
    pub mention_user_ids: Vec<String>,
    #[serde(default, deserialize_with = "ids")]
    pub mention_usergroup_ids: Vec<String>,
    /// Users who get a copy of each open question in a DM; they may answer from then on.
    #[serde(default, deserialize_with = "ids")]
    pub dm_user_ids: Vec<String>,
    /// A channel (`C…`) that gets a linked copy of each open question with the same controls.
    pub channel_id: Option<String>,
    /// Who else may answer from this step on.
    #[serde(default, deserialize_with = "ids")]
    pub allowed_user_ids: Vec<String>,
    #[serde(default, deserialize_with = "ids")]
    pub allowed_usergroup_ids: Vec<String>,
}

/// Checks Slack's reminders and escalation steps at `at` (`slack`, `routes[0]`, whose steps
/// are under `steps_key`): the timers must be usable and every id of the right shape.
pub fn check_oncall(
    at: &str,
    steps_key: &str,
    (after, every, max): (Option<u64>, Option<u64>, Option<u32>),
    steps: &[SlackEscalationStep],
) -> Result<()> {
    let after_secs: Vec<u64> = steps.iter().map(|s| s.after_secs).collect();
    super::load::check_timers(at, steps_key, after, every, max, &after_secs)?;
    for (k, step) in steps.iter().enumerate() {
        let at = format!("{at}.{steps_key}[{k}]");
        for (key, kind, ids) in [
            ("mention_user_ids", IdKind::User, &step.mention_user_ids),
            (
                "mention_usergroup_ids",
                IdKind::Usergroup,
                &step.mention_usergroup_ids,
            ),
            ("dm_user_ids", IdKind::User, &step.dm_user_ids),
            ("allowed_user_ids", IdKind::User, &step.allowed_user_ids),
            (
                "allowed_usergroup_ids",
                IdKind::Usergroup,
                &step.allowed_usergroup_ids,
            ),
        ] {
            check_ids(&format!("{at}.{key}"), kind, ids)?;
        }
        if let Some(c) = &step.channel_id {
            check_id(&format!("{at}.channel_id"), IdKind::Channel, c)?;
        }
    }
    Ok(())
}

impl Default for SlackConfig {
    fn default() -> Self {
        SlackConfig {
            app_token: None,
            bot_token: None,
            channel_id: None,
            allowed_user_ids: Vec::new(),
            allowed_usergroup_ids: Vec::new(),
            dm_user_ids: Vec::new(),
            operator_user_ids: Vec::new(),
            mode: SlackMode::Socket,
            signing_secret: None,
            listen: None,
            api_base: DEFAULT_SLACK_API_BASE.to_owned(),
            terminal_answers: false,
            repair_interval_secs: 30,
            mention_user_ids: Vec::new(),
            mention_usergroup_ids: Vec::new(),
            remind_after_secs: None,
            remind_every_secs: None,
            remind_max: None,
            escalate: Vec::new(),
        }
    }
}

/// `slack.mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlackMode {
    #[default]
    Socket,
    Http,
}

/// What kind of Slack id a key holds: the letters it may start with, and what it is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// A public (`C…`) or private (`G…`) channel.
    Channel,
    /// A user (`U…`) or an Enterprise Grid user (`W…`).
    User,
    /// A user group (`S…`).
    Usergroup,
}

impl IdKind {
    fn starts(self) -> &'static [char] {
        match self {
            IdKind::Channel => &['C', 'G'],
            IdKind::User => &['U', 'W'],
            IdKind::Usergroup => &['S'],
        }
    }

    fn example(self) -> &'static str {
        match self {
            IdKind::Channel => "a channel id like \"C0123ABCD\" (C… or G…)",
            IdKind::User => "a user id like \"U0123ABCD\" (U… or W…)",
            IdKind::Usergroup => "a user group id like \"S0123ABCD\" (S…)",
        }
    }
}

/// Whether `id` has the shape of a Slack id of `kind`: its letter, then upper-case letters and
/// digits (Slack's ids are 9 to 11 characters today; up to 32 are accepted).
pub fn is_id(kind: IdKind, id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| kind.starts().contains(&c))
        && (3..=32).contains(&id.len())
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// Checks `id` at `key`; the error names the key and the shape, not the value (a token pasted
/// into the wrong key must not be echoed).
pub fn check_id(key: &str, kind: IdKind, id: &str) -> Result<()> {
    if !is_id(kind, id) {
        bail!("{key}: expected {}", kind.example());
    }
    Ok(())
}

/// Checks every id of `ids` at `key[N]`.
pub fn check_ids(key: &str, kind: IdKind, ids: &[String]) -> Result<()> {
    for (i, id) in ids.iter().enumerate() {
        check_id(&format!("{key}[{i}]"), kind, id)?;
    }
    Ok(())
}

/// What a Slack token must start with, by key.
const APP_PREFIX: &str = "xapp-";
const BOT_PREFIX: &str = "xoxb-";

/// Why `token` at `key` cannot be a token starting with `prefix`, naming the key and the
/// prefix, never the value.
pub fn token_shape(key: &str, prefix: &str, token: &str) -> Result<()> {
    let what = if prefix == APP_PREFIX {
        "the app-level token"
    } else {
        "the bot token"
    };
    if token.trim().is_empty() {
        bail!("{key}: is empty; set {what} ({prefix}…), or leave the key out");
    }
    if token.trim() != token || token.chars().any(char::is_whitespace) {
        bail!("{key}: contains spaces or line breaks; give {what} alone ({prefix}…)");
    }
    if token.starts_with('"') || token.starts_with('\'') {
        bail!("{key}: is quoted; give {what} alone ({prefix}…)");
    }
    if !token.starts_with(prefix) {
        let other = if prefix == APP_PREFIX {
            BOT_PREFIX
        } else {
            APP_PREFIX
        };
        let hint = if token.starts_with(other) {
            format!(" (it starts with {other}: the other token's key?)")
        } else {
            String::new()
        };
        bail!("{key}: does not look like {what}: it should start with {prefix}{hint}");
    }
    if token.len() <= prefix.len() + 8 || !token.is_ascii() {
        bail!("{key}: does not look like {what}: it is too short after {prefix}");
    }
    Ok(())
}

impl SlackConfig {
    /// Whether the Slack answerer is on.
    pub fn enabled(&self) -> bool {
        self.bot_token.is_some()
    }

    /// The `[slack]` keys' own rules (routes' Slack keys are checked with the routes).
    pub fn validate(&self) -> Result<()> {
        if let Some(t) = &self.bot_token {
            token_shape("slack.bot_token", BOT_PREFIX, t.expose())?;
        }
        if let Some(t) = &self.app_token {
            token_shape("slack.app_token", APP_PREFIX, t.expose())?;
        }
        if let Some(s) = &self.signing_secret {
            let s = s.expose();
            if s.trim().is_empty() {
                bail!("slack.signing_secret: is empty; set the app's signing secret, or leave the key out");
            }
            if s.len() < 16 || !s.chars().all(|c| c.is_ascii_alphanumeric()) {
                bail!("slack.signing_secret: does not look like a signing secret (letters and digits, as the app's Basic Information page shows it)");
            }
        }
        if let Some(c) = &self.channel_id {
            check_id("slack.channel_id", IdKind::Channel, c)?;
        }
        check_ids(
            "slack.allowed_user_ids",
            IdKind::User,
            &self.allowed_user_ids,
        )?;
        check_ids(
            "slack.allowed_usergroup_ids",
            IdKind::Usergroup,
            &self.allowed_usergroup_ids,
        )?;
        check_ids("slack.dm_user_ids", IdKind::User, &self.dm_user_ids)?;
        check_ids(
            "slack.operator_user_ids",
            IdKind::User,
            &self.operator_user_ids,
        )?;
        check_ids(
            "slack.mention_user_ids",
            IdKind::User,
            &self.mention_user_ids,
        )?;
        check_ids(
            "slack.mention_usergroup_ids",
            IdKind::Usergroup,
            &self.mention_usergroup_ids,
        )?;
        check_oncall(
            "slack",
            "escalate",
            (
                self.remind_after_secs,
                self.remind_every_secs,
                self.remind_max,
            ),
            &self.escalate,
        )?;
        let base = self.api_base.trim_end_matches('/');
        if !(base.starts_with("https://") || base.starts_with("http://"))
            || base.contains(char::is_whitespace)
        {
            bail!("slack.api_base: must be a URL like \"https://slack.com/api\"");
        }
        if base.starts_with("http://") && !is_loopback(base) {
            bail!("slack.api_base: plain http:// is only for a stand-in on this machine (127.0.0.1 or localhost); use https://");
        }
        if self.repair_interval_secs == 0 {
            bail!("slack.repair_interval_secs: must be at least 1");
        }
        if let Some(l) = &self.listen {
            if l.trim().parse::<std::net::SocketAddr>().is_err() {
                bail!("slack.listen: expected IP:PORT, like \"127.0.0.1:3000\"");
            }
        }
        if !self.enabled() {
            return Ok(());
        }
        match self.mode {
            SlackMode::Socket if self.app_token.is_none() => bail!(
                "slack.app_token: Socket Mode (slack.mode = \"socket\", the default) needs the \
                 app-level token (xapp-…, scope connections:write); set it, or \
                 ASKRELAY_SLACK_APP_TOKEN"
            ),
            SlackMode::Http if self.signing_secret.is_none() => bail!(
                "slack.signing_secret: slack.mode = \"http\" needs the app's signing secret to \
                 check every request Slack sends"
            ),
            SlackMode::Http if self.listen.is_none() => {
                bail!(
                    "slack.listen: slack.mode = \"http\" needs the address to listen on (IP:PORT)"
                )
            }
            _ => Ok(()),
        }
    }

    /// Whether the Web API is reached over plain http on this machine (a stand-in), where
    /// the connector may speak http; everywhere else it is https only.
    pub fn api_is_local_http(&self) -> bool {
        let base = self.api_base.trim_end_matches('/');
        base.starts_with("http://") && is_loopback(base)
    }
}

/// Whether an `http://` URL's host is this machine.
fn is_loopback(url: &str) -> bool {
    let rest = url
        .trim_start_matches("http://")
        .trim_start_matches("https://");
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = match host.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host,
    };
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

/// A list of Slack ids: an array, or (from the environment) one string of comma-separated
/// ids. Their shapes are checked by [`SlackConfig::validate`], which knows each key.
pub(super) fn ids<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrOne {
        List(Vec<String>),
        One(String),
        // Never an id; taken so that the shape check names the key.
        Number(u64),
    }
    match ListOrOne::deserialize(d) {
        Ok(ListOrOne::List(v)) => Ok(v.into_iter().map(|s| s.trim().to_owned()).collect()),
        Ok(ListOrOne::Number(n)) => Ok(vec![n.to_string()]),
        Ok(ListOrOne::One(s)) => Ok(s
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect()),
        Err(_) => Err(de::Error::custom(
            "expected a list of Slack ids (strings like \"U0123ABCD\")",
        )),
    }
}

/// Environment variables people know from Slack's own tools, read as the keys they stand for
/// (`ASKRELAY_SLACK__APP_TOKEN` works too, as for every key; it wins when both are set).
pub(super) const ENV_ALIASES: &[(&str, &str)] = &[
    ("ASKRELAY_SLACK_APP_TOKEN", "ASKRELAY_SLACK__APP_TOKEN"),
    ("ASKRELAY_SLACK_BOT_TOKEN", "ASKRELAY_SLACK__BOT_TOKEN"),
    (
        "ASKRELAY_SLACK_SIGNING_SECRET",
        "ASKRELAY_SLACK__SIGNING_SECRET",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_their_letter_and_only_capitals_and_digits() {
        assert!(is_id(IdKind::Channel, "C0123ABCD"));
        assert!(is_id(IdKind::Channel, "G0123ABCD"));
        assert!(!is_id(IdKind::Channel, "U0123ABCD"));
        assert!(!is_id(IdKind::Channel, "c0123abcd"));
        assert!(!is_id(IdKind::Channel, "#general"));
        assert!(is_id(IdKind::User, "U0123ABCD"));
        assert!(is_id(IdKind::User, "W0123ABCD"));
        assert!(!is_id(IdKind::User, "U0"));
        assert!(is_id(IdKind::Usergroup, "S0123ABCD"));
        assert!(!is_id(IdKind::Usergroup, "S0123-ABC"));
        let e = check_id("routes[2].slack_channel_id", IdKind::Channel, "general").unwrap_err();
        assert_eq!(
            e.to_string(),
            "routes[2].slack_channel_id: expected a channel id like \"C0123ABCD\" (C… or G…)"
        );
    }

    #[test]
    fn token_errors_name_the_key_and_the_prefix_never_the_value() {
        let secret = "xoxb-1234567890-SECRETSECRET";
        assert!(token_shape("slack.bot_token", "xoxb-", secret).is_ok());
        for (bad, says) in [
            ("", "is empty"),
            ("   ", "is empty"),
            ("xoxb-1234 567890", "spaces"),
            ("\"xoxb-1234567890-SECRET\"", "quoted"),
            ("xoxp-1234567890-SECRETSECRET", "should start with xoxb-"),
            ("xoxb-12", "too short"),
        ] {
            let e = token_shape("slack.bot_token", "xoxb-", bad)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("slack.bot_token: "), "{e}");
            assert!(e.contains(says), "{bad:?}: {e}");
            assert!(bad.trim().is_empty() || !e.contains(bad.trim()), "{e}");
        }
        let e = token_shape("slack.app_token", "xapp-", secret)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("xapp-") && e.contains("the other token's key"),
            "{e}"
        );
        assert!(!e.contains("SECRET"), "{e}");
    }

    #[test]
    fn plain_http_is_for_this_machine_only() {
        let mut c = SlackConfig {
            api_base: "http://127.0.0.1:4000/api".into(),
            ..SlackConfig::default()
        };
        assert!(c.validate().is_ok() && c.api_is_local_http());
        c.api_base = "http://localhost/api".into();
        assert!(c.validate().is_ok() && c.api_is_local_http());
        c.api_base = "http://slack.example.com/api".into();
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("slack.api_base"));
        c.api_base = DEFAULT_SLACK_API_BASE.into();
        assert!(c.validate().is_ok() && !c.api_is_local_http());
    }

    #[test]
    fn each_mode_needs_its_secret() {
        let mut c = SlackConfig {
            bot_token: Some(Secret::new("xoxb-1234567890-abcdef")),
            ..SlackConfig::default()
        };
        let e = c.validate().unwrap_err().to_string();
        assert!(e.starts_with("slack.app_token: Socket Mode"), "{e}");
        c.app_token = Some(Secret::new("xapp-1-A0123-4567-abcdef"));
        assert!(c.validate().is_ok());
        c.mode = SlackMode::Http;
        let e = c.validate().unwrap_err().to_string();
        assert!(e.starts_with("slack.signing_secret"), "{e}");
        c.signing_secret = Some(Secret::new("0123456789abcdef0123456789abcdef"));
        let e = c.validate().unwrap_err().to_string();
        assert!(e.starts_with("slack.listen"), "{e}");
        c.listen = Some("127.0.0.1:3000".into());
        assert!(c.validate().is_ok());
    }

    /// The keys as the daemon loads them: from a file and the environment, with errors that
    /// name the key.
    mod loading {
        use crate::config::Config;
        use std::io::Write;

        fn load(toml: &str, env: &[(&str, &str)]) -> Result<Config, String> {
            let mut f = tempfile::NamedTempFile::new().unwrap();
            f.write_all(toml.as_bytes()).unwrap();
            let env = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
            Config::load_from(Some(f.path()), env).map_err(|e| format!("{e:#}"))
        }

        const TOKENS: &[(&str, &str)] = &[
            ("ASKRELAY_SLACK_BOT_TOKEN", "xoxb-1111-2222-bottokensecret"),
            (
                "ASKRELAY_SLACK_APP_TOKEN",
                "xapp-1-A111-2222-apptokensecret",
            ),
        ];

        #[test]
        fn the_tokens_come_from_slacks_customary_variables_or_the_keys_own() {
            let c = load("[slack]\nchannel_id = \"C0123ABCD\"\n", TOKENS).unwrap();
            assert_eq!(
                c.slack.bot_token.as_ref().unwrap().expose(),
                "xoxb-1111-2222-bottokensecret"
            );
            assert!(c.slack.enabled() && !c.terminal_enabled());
            assert_eq!(format!("{:?}", c.slack.app_token), "Some(Secret(***))");
            // The key's own variable wins over the alias.
            let mut env = TOKENS.to_vec();
            env.push((
                "ASKRELAY_SLACK__BOT_TOKEN",
                "xoxb-3333-4444-othertokensecret",
            ));
            let c = load("", &env).unwrap();
            assert_eq!(
                c.slack.bot_token.as_ref().unwrap().expose(),
                "xoxb-3333-4444-othertokensecret"
            );
            // Lists from the environment, comma-separated.
            let mut env = TOKENS.to_vec();
            env.push(("ASKRELAY_SLACK__ALLOWED_USER_IDS", "U0123ABCD, W0123ABCD"));
            let c = load("", &env).unwrap();
            assert_eq!(c.slack.allowed_user_ids, ["U0123ABCD", "W0123ABCD"]);
        }

        #[test]
        fn a_slack_digest_needs_a_channel_id_and_slack() {
            let c = load(
                "[slack]\nchannel_id = \"C0123ABCD\"\n[digest]\nslack_channel_id = \"C0DIGEST1\"\nroutes = [\"default\"]\nat = \"09:00\"\n",
                TOKENS,
            )
            .unwrap();
            assert_eq!(c.digest.slack_channel_id.as_deref(), Some("C0DIGEST1"));
            let e = load("[digest]\nslack_channel_id = \"digests\"\n", TOKENS).unwrap_err();
            assert!(
                e.contains("digest.slack_channel_id: expected a channel id"),
                "{e}"
            );
            let e = load("[digest]\nslack_channel_id = \"C0DIGEST1\"\n", &[]).unwrap_err();
            assert!(
                e.contains("digest.slack_channel_id: needs slack.bot_token"),
                "{e}"
            );
            let e = load("[slack]\n[digest]\nat = \"09:00\"\n", TOKENS).unwrap_err();
            assert!(
                e.contains("digest.channel_id: the digest needs a channel"),
                "{e}"
            );
        }

        #[test]
        fn slack_reminders_and_escalation_steps_are_checked_naming_the_key() {
            let c = load(
                "[slack]\nchannel_id = \"C0123ABCD\"\nremind_after_secs = 60\n\
                 mention_usergroup_ids = [\"S0ONCALL1\"]\n\
                 [[slack.escalate]]\nafter_secs = 600\ndm_user_ids = [\"U0LEAD001\"]\n\
                 [[routes]]\nname = \"ops\"\nslack_channel_id = \"C0OPS0001\"\n\
                 remind_after_secs = 30\nslack_mention_user_ids = [\"U0ONCALL1\"]\n\
                 [[routes.slack_escalate]]\nafter_secs = 90\nmention_user_ids = [\"U0LEAD001\"]\n",
                TOKENS,
            )
            .unwrap();
            assert_eq!(c.slack.escalate[0].dm_user_ids, ["U0LEAD001"]);
            let ops = &c.routes[0];
            assert_eq!(ops.remind_after_secs, Some(30));
            assert_eq!(ops.slack_escalate.as_ref().unwrap()[0].after_secs, 90);
            for (toml, want) in [
                (
                    "[[slack.escalate]]\nafter_secs = 60\ndm_user_ids = [\"alice\"]\n",
                    "slack.escalate[0].dm_user_ids[0]: expected a user id",
                ),
                (
                    "[[slack.escalate]]\nafter_secs = 60\n[[slack.escalate]]\nafter_secs = 60\n",
                    "slack.escalate[1].after_secs: must be at least 1 and later than the step before",
                ),
                (
                    "[slack]\nmention_usergroup_ids = [\"U0ALICE01\"]\n",
                    "slack.mention_usergroup_ids[0]: expected a user group id",
                ),
                (
                    "[[routes]]\nname = \"ops\"\nslack_channel_id = \"C0OPS0001\"\n\
                     [[routes.slack_escalate]]\nafter_secs = 9\nallowed_usergroup_ids = [\"x\"]\n",
                    "routes[0].slack_escalate[0].allowed_usergroup_ids[0]: expected a user group id",
                ),
                (
                    "[[routes]]\nname = \"ops\"\nslack_channel_id = \"C0OPS0001\"\n\
                     [[routes.escalate]]\nafter_secs = 9\n",
                    "routes[0].escalate: is for a Discord channel",
                ),
            ] {
                let e = load(toml, TOKENS).unwrap_err();
                assert!(e.contains(want), "{toml}: {e}");
            }
        }

        #[test]
        fn bad_tokens_and_ids_name_the_key_without_the_value() {
            let e = load(
                "",
                &[("ASKRELAY_SLACK_BOT_TOKEN", "xapp-1-A111-2222-leakedsecret")],
            )
            .unwrap_err();
            assert!(
                e.contains(
                    "slack.bot_token: does not look like the bot token: it should start with xoxb-"
                ),
                "{e}"
            );
            assert!(!e.contains("leakedsecret"), "{e}");
            let e = load("[slack]\nbot_token = \"\"\n", &[]).unwrap_err();
            assert!(e.contains("slack.bot_token: is empty"), "{e}");
            let e = load("[slack]\nchannel_id = \"general\"\n", TOKENS).unwrap_err();
            assert!(e.contains("slack.channel_id: expected a channel id"), "{e}");
            let e = load("[slack]\nallowed_usergroup_ids = [\"U0123ABCD\"]\n", TOKENS).unwrap_err();
            assert!(
                e.contains("slack.allowed_usergroup_ids[0]: expected a user group id"),
                "{e}"
            );
            let e = load("[slack]\nmode = \"webhook\"\n", TOKENS).unwrap_err();
            assert!(e.contains("slack.mode"), "{e}");
            let e = load("[slack]\ntoken = \"xoxb-1\"\n", &[]).unwrap_err();
            assert!(e.contains("unknown config key slack.token"), "{e}");
            let e = load(
                "[[identities]]\nname = \"a\"\nslack_user_ids = [\"alice\"]\n",
                &[],
            )
            .unwrap_err();
            assert!(
                e.contains("identities[0].slack_user_ids[0]: expected a user id"),
                "{e}"
            );
        }

        #[test]
        fn a_route_with_a_slack_channel_is_slacks_not_the_terminals() {
            // No Discord channel and the terminal off: Slack answers it.
            let route = "[[routes]]\nname = \"ops\"\nmatch = { project = \"ops\" }\nslack_channel_id = \"C0123ABCD\"\n";
            load(&format!("{route}slack_allowed_usergroup_ids = [\"S0123ABCD\"]\nterminal_answers = true\n"), TOKENS).unwrap();
            // Discord's own keys are refused there, naming Slack.
            let e = load(&format!("{route}mention_user_ids = [\"1\"]\n"), TOKENS).unwrap_err();
            assert!(
                e.contains("routes[0].mention_user_ids: is for a Discord channel, and this route has none (it is answered in Slack)"),
                "{e}"
            );
            let e = load(
                &format!("{route}slack_allowed_user_ids = [\"C0123ABCD\"]\n"),
                TOKENS,
            )
            .unwrap_err();
            assert!(
                e.contains("routes[0].slack_allowed_user_ids[0]: expected a user id"),
                "{e}"
            );
            // Slack's allowlists need a Slack channel.
            let e = load(
                "[[routes]]\nname = \"t\"\nslack_allowed_user_ids = [\"U0123ABCD\"]\n",
                &[],
            )
            .unwrap_err();
            assert!(
                e.contains("routes[0].slack_allowed_user_ids: is for a Slack channel"),
                "{e}"
            );
            // Without either channel and with the terminal off, the route names both.
            let e = load("[[routes]]\nname = \"t\"\n", TOKENS).unwrap_err();
            assert!(e.contains("routes[0].channel_id: not set, and the terminal answerer is off: give the route a Discord channel (or a Slack one, slack_channel_id)"), "{e}");
        }
    }
}
