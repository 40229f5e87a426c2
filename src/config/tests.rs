//! The configuration's tests: the layers in order, each key's checks, and the documents that
//! show a config (the example, the README's on-call config) read as they say.

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
    let e = load("[[identities]]\nname = \"bob\"\ndiscord_user_ids = [\"1\"]\nhosts = [\"x\"]\n")
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
        Some(file("[[identities]]\nname = \"bob\"\nuids = [1001]\nhosts = [\"node-b\"]\n").path()),
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
    let f = file(
        "socket_mode = \"0660\"\n[discord]\nchannel_id = \"99\"\nallowed_role_ids = [1, \"2\"]\n",
    );
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

/// A route's `answerers`: each one of discord, slack and terminal, once, and able to show the
/// route's requests; an error names the key (`routes[N].answerers[K]`).
#[test]
fn a_routes_answerers_are_checked_naming_the_key() {
    let load = |toml: &str| {
        Config::load_from(Some(file(toml).path()), Vec::new())
            .map_err(|e| format!("{e:#}"))
            .map(|c| c.routes[c.routes.len() - 1].answerers().join(","))
    };
    let discord = "[discord]\ntoken = \"MTE4.Gx.t\"\nchannel_id = 1\n";
    let slack =
        "[slack]\nbot_token = \"xoxb-1-standin-token\"\napp_token = \"xapp-1-A0-1-app-token\"\n";
    let both = format!(
        "{discord}[terminal]\nenabled = true\n[[routes]]\nname = \"a\"\nchannel_id = 2\n\
         answerers = [\"discord\", \"terminal\"]\n"
    );
    assert_eq!(load(&both).unwrap(), "discord,terminal");
    // Discord posts in discord.channel_id when the route names it without a channel of its own.
    let default_channel = format!(
        "{discord}[terminal]\nenabled = true\n[[routes]]\nname = \"a\"\n\
         answerers = [\"discord\", \"terminal\"]\n"
    );
    assert_eq!(load(&default_channel).unwrap(), "discord,terminal");
    let cases = [
        (
            format!("{discord}[[routes]]\nname = \"a\"\nanswerers = [\"discord\", \"mail\"]\n"),
            "routes[0].answerers[1]: \"mail\" is not an answerer",
        ),
        (
            format!("{discord}[[routes]]\nname = \"a\"\nanswerers = [\"discord\", \"discord\"]\n"),
            "routes[0].answerers[1]: \"discord\" is listed twice",
        ),
        (
            format!("{discord}[[routes]]\nname = \"a\"\nanswerers = []\n"),
            "routes[0].answerers: must name at least one",
        ),
        (
            "[[routes]]\nname = \"a\"\nanswerers = [\"terminal\", \"discord\"]\n".to_owned(),
            "routes[0].answerers[1]: \"discord\" needs discord.token",
        ),
        (
            "[discord]\ntoken = \"MTE4.Gx.t\"\n[[routes]]\nname = \"a\"\nanswerers = [\"discord\"]\n"
                .to_owned(),
            "routes[0].answerers[0]: \"discord\" needs a channel",
        ),
        (
            format!("{discord}[[routes]]\nname = \"a\"\nchannel_id = 2\nanswerers = [\"discord\", \"terminal\"]\n"),
            "routes[0].answerers[1]: \"terminal\" needs the terminal answerer",
        ),
        (
            format!("{discord}[[routes]]\nname = \"x\"\nchannel_id = 2\n[[routes]]\nname = \"a\"\nanswerers = [\"slack\"]\n"),
            "routes[1].answerers[0]: \"slack\" needs slack.bot_token",
        ),
        (
            format!("{discord}{slack}[[routes]]\nname = \"x\"\nchannel_id = 2\n[[routes]]\nname = \"a\"\nanswerers = [\"slack\"]\n"),
            "routes[1].answerers[0]: \"slack\" needs routes[1].slack_channel_id",
        ),
        (
            "[[routes]]\nname = \"a\"\nslack_channel_id = \"C0123ABCD\"\n".to_owned(),
            "routes[0].slack_channel_id: needs slack.bot_token",
        ),
        (
            "[[routes]]\nname = \"a\"\nanswerers = [\"terminal\"]\nmention_user_ids = [5]\n"
                .to_owned(),
            "routes[0].mention_user_ids: is for a Discord channel",
        ),
    ];
    for (toml, expected) in cases {
        let err = load(&toml).unwrap_err();
        assert!(err.contains(expected), "{toml}\n→ {err}");
    }
    // Unset: the route's channels say, else the terminal.
    let slack_only = format!("{slack}[[routes]]\nname = \"a\"\nslack_channel_id = \"C0123ABCD\"\n");
    assert_eq!(load(&slack_only).unwrap(), "slack");
}

#[test]
fn the_pooler_url_is_a_secret_and_empty_means_unset() {
    let pg = || env(&[("ASKRELAY_DATABASE_URL", "postgres://u@127.0.0.1/x")]);
    let cfg = Config::load_from(None, pg()).unwrap();
    assert_eq!(cfg.postgres.pooler_url(), None);
    let cfg =
        Config::load_from(Some(file("[postgres]\npooler_url = \"\"\n").path()), pg()).unwrap();
    assert_eq!(cfg.postgres.pooler_url(), None, "empty is not set");
    let mut vars = pg();
    vars.extend(env(&[(
        "ASKRELAY_POSTGRES__POOLER_URL",
        "postgres://u:hunter2@127.0.0.1:6432/x",
    )]));
    let cfg = Config::load_from(None, vars).unwrap();
    assert_eq!(
        cfg.postgres.pooler_url(),
        Some("postgres://u:hunter2@127.0.0.1:6432/x")
    );
    assert!(!format!("{cfg:?}").contains("hunter2"), "never in Debug");
    // Without a PostgreSQL database_url, or not a URL: refused without quoting it.
    let e = Config::load_from(
        Some(file("[postgres]\npooler_url = \"postgres://u:hunter2@h/x\"\n").path()),
        env(&[]),
    )
    .unwrap_err();
    let e = format!("{e:#}");
    assert!(
        e.contains("postgres.pooler_url") && !e.contains("hunter2"),
        "{e}"
    );
    let mut vars = pg();
    vars.extend(env(&[("ASKRELAY_POSTGRES__POOLER_URL", "hunter2")]));
    let e = format!("{:#}", Config::load_from(None, vars).unwrap_err());
    assert!(
        e.contains("postgres.pooler_url") && !e.contains("hunter2"),
        "{e}"
    );
}
