//! The `askrelay` binary as people use it: `serve` in one terminal, `ask`, `answer`, `pending`,
//! `cancel` in others.

use crate::harness::*;
use askrelay_testkit::standin::StandIn;
use serde_json::{json, Value};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

const QUESTION: &str = r#"{"questions":[{"id":"cleanup","question":"Proceed with the destructive cleanup?","header":"Confirm","options":[{"label":"Yes, delete them (Recommended)","description":"Removes the three stale files."},{"label":"No, keep them","description":"Aborts the cleanup."}],"multiSelect":false}]}"#;

/// The local user name and uid of this process, as the daemon records who answered.
fn me() -> (String, u32) {
    let uid = nix::unistd::geteuid();
    let name = nix::unistd::User::from_uid(uid).unwrap().unwrap().name;
    (name, uid.as_raw())
}

#[tokio::test]
async fn walkthrough_ask_in_one_terminal_answer_in_another() {
    let env = Bin::new().env("USER", "alice");
    let daemon = env.serve().await;
    let mut asker = env
        .ask(&["--request-id", "walk-1", "--project", "infra"], QUESTION)
        .await;
    asker
        .wait_stderr("waiting for an answer via terminal")
        .await;

    let (code, out, _) = env.run(&["pending"]).await;
    assert_eq!(code, 0);
    assert!(
        out.contains("walk-1") && out.contains("No, keep them") && out.contains("project=infra"),
        "{out}"
    );
    let (code, out, _) = env.run(&["pending", "--json"]).await;
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["request_id"], "walk-1");

    // One question: --question may be left out; an option may be given by its number.
    let (code, out, err) = env.run(&["answer", "walk-1", "--select", "2"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "{\"answers\":[{\"id\":\"cleanup\",\"selected\":[\"No, keep them\"]}]}\n"
    );

    // A second answer does not count, exits non-zero and says who answered: the login (peer
    // credentials), not $USER.
    let (code, _, err) = env
        .run(&[
            "answer",
            "walk-1",
            "--question",
            "cleanup",
            "--select",
            "Yes, delete them (Recommended)",
        ])
        .await;
    assert_eq!(code, 1);
    let (name, uid) = me();
    assert!(
        err.contains(&format!(
            "already answered by {name} (uid {uid}) via terminal"
        )),
        "{err}"
    );
    let (code, _, err) = env
        .run(&["answer", "nope", "--question", "q", "--custom", "x"])
        .await;
    assert_eq!(code, 2);
    assert!(err.contains("unknown request_id"), "{err}");
    // An ended request says who answered and when, whatever option or question is given
    // (before: `question has no option "1"`, exit 2, or "give --question ID"); an unknown one
    // says there is no such request.
    for args in [
        &["answer", "walk-1", "--select", "1"][..],
        &["answer", "walk-1", "--question", "cleanup", "--select", "9"],
        &["answer", "walk-1", "--text", "anything"],
    ] {
        let (code, _, err) = env.run(args).await;
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "request \"walk-1\" was already answered by {name} (uid {uid}) via terminal at 20"
            )),
            "{args:?}: {err}"
        );
    }
    let (code, _, err) = env.run(&["answer", "nope", "--select", "1"]).await;
    assert_eq!(code, 2);
    assert!(err.contains("no such request \"nope\""), "{err}");

    let (code, out, _) = env.run(&["history"]).await;
    assert_eq!(code, 0);
    assert!(out.contains("walk-1") && out.contains("answered"), "{out}");

    let (status, log) = daemon.terminate().await;
    assert!(status.success(), "{log}");
    assert!(log.contains("SIGTERM"), "{log}");
    assert!(
        !env.socket().exists(),
        "serve removes its socket on SIGTERM"
    );
}

#[tokio::test]
async fn ask_reattaches_across_a_daemon_restart() {
    let env = Bin::new();
    let daemon = env.serve().await;
    let mut asker = env.ask(&["--request-id", "phoenix"], QUESTION).await;
    asker.wait_stderr("waiting for an answer").await;
    daemon.terminate().await;
    asker.wait_stderr("lost the daemon").await;
    let daemon = env.serve().await;
    asker.wait_stderr("reconnected").await;
    asker.wait_stderr("waiting for an answer").await;
    let (code, _, err) = env
        .run(&[
            "answer",
            "phoenix",
            "--question",
            "cleanup",
            "--select",
            "Yes, delete them (Recommended)",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0);
    assert!(out.contains("Yes, delete them (Recommended)"), "{out}");
    daemon.terminate().await;
}

#[tokio::test]
async fn exit_codes_per_error() {
    let env = Bin::new();
    // 7: no daemon.
    let (code, _, err) = env.ask(&[], QUESTION).await.finish_with_err().await;
    assert_eq!(code, 7, "{err}");
    assert!(err.contains("askrelay serve"), "{err}");

    let daemon = env.serve().await;
    // 2: invalid.
    let mut bad = env.cmd(&["ask"]).stdin(Stdio::piped()).spawn().unwrap();
    bad.stdin
        .take()
        .unwrap()
        .write_all(br#"{"questions":[]}"#)
        .await
        .unwrap();
    let out = bad.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("INVALID_REQUEST: questions"));
    // 3: delegated.
    let (code, _, err) = env
        .ask(&["--owner-agent-id", "root"], QUESTION)
        .await
        .finish_with_err()
        .await;
    assert_eq!(code, 3, "{err}");
    // 5: cancelled by its owner from another terminal.
    let mut asker = env.ask(&["--request-id", "doomed"], QUESTION).await;
    asker.wait_stderr("waiting").await;
    let (code, out, _) = env
        .run(&["cancel", "doomed", "--reason", "not today"])
        .await;
    assert_eq!(code, 0, "{out}");
    let (code, _, err) = asker.finish_with_err().await;
    assert_eq!(code, 5);
    assert!(
        err.contains("ABORTED") && err.contains("not today"),
        "{err}"
    );
    // 5: Ctrl-C cancels.
    let mut asker = env.ask(&["--request-id", "interrupted"], QUESTION).await;
    asker.wait_stderr("waiting").await;
    signal(&asker.child, "-INT").await;
    let (code, _, err) = asker.finish_with_err().await;
    assert_eq!(code, 5, "{err}");
    daemon.terminate().await;

    // 4: nothing can answer.
    let no_answerer = Bin::in_dir(env.dir()).env("ASKRELAY_TERMINAL__ENABLED", "false");
    let daemon = no_answerer.serve().await;
    let (code, _, err) = env.ask(&[], QUESTION).await.finish_with_err().await;
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("NO_ANSWERER"), "{err}");
    daemon.terminate().await;
}

#[tokio::test]
async fn config_errors_stop_startup_and_name_the_key() {
    let env = Bin::new();
    let file = env.dir().join("bad.toml");
    std::fs::write(&file, "[discord]\nchanel_id = 5\n").unwrap();
    let (code, _, err) = env
        .run(&["serve", "--config", file.to_str().unwrap()])
        .await;
    assert_eq!(code, 2);
    assert!(err.contains("discord.chanel_id"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one clear line: {err}");

    std::fs::write(&file, "[limits]\nmax_line_bytes = \"big\"\n").unwrap();
    let (code, _, err) = env
        .run(&["serve", "--config", file.to_str().unwrap()])
        .await;
    assert_eq!(code, 2);
    assert!(err.contains("limits.max_line_bytes"), "{err}");

    let mut cmd = env.cmd(&["serve"]);
    cmd.env("ASKRELAY_CANCEL_GRACE", "5");
    let out = cmd.output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cancel_grace"));

    let (code, _, err) = env.run(&["serve", "--config", "/nonexistent.toml"]).await;
    assert_eq!(code, 2);
    assert!(err.contains("does not exist"), "{err}");
}

/// A secret pasted into the wrong key must not be printed back: config errors name the key
/// and what was expected, never the value.
#[tokio::test]
async fn config_errors_never_print_the_offending_value() {
    let env = Bin::new();
    let secret = "MTE4.sekrit-token-value";
    let file = env.dir().join("c.toml");
    let cases = [
        format!("[discord]\nchannel_id = \"{secret}\"\n"),
        format!("cancel_grace_secs = \"{secret}\"\n"),
        format!("socket_mode = \"{secret}\"\n"),
        format!("[discord]\napi_base = \"{secret}\"\n"),
        format!("[discord]\nallowed_user_ids = [\"{secret}\"]\n"),
        format!("[[routes]]\nname = \"r\"\nchannel_id = 1\non_expire = \"{secret}\"\n"),
        // A TOML syntax error quotes the line; only its position may be shown.
        format!("[discord]\ntoken = \"{secret}\nchannel_id = 1\n"),
    ];
    for case in &cases {
        std::fs::write(&file, case).unwrap();
        let (code, out, err) = env
            .run(&["serve", "--config", file.to_str().unwrap()])
            .await;
        assert_eq!(code, 2, "{case}: {err}");
        assert!(
            !err.contains("sekrit") && !out.contains("sekrit"),
            "{case}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{case}: {err}");
    }
    // The environment, too.
    let mut cmd = env.cmd(&["serve"]);
    cmd.env("ASKRELAY_RESTART_GRACE_SECS", secret);
    let out = cmd.output().await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err.contains("restart_grace_secs") && !err.contains("sekrit"),
        "{err}"
    );
}

/// The token is used (connect, post, edit) at trace level, and appears nowhere: not in
/// `serve`'s log, not in `check-config`, not in the `mcp` front end.
#[tokio::test]
async fn the_token_never_reaches_the_logs() {
    let token = "MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.super-secret-token-part";
    let standin = StandIn::start().await;
    let env = Bin::new()
        .discord(&standin)
        .env("ASKRELAY_DISCORD__TOKEN", token)
        .env("ASKRELAY_DISCORD__TERMINAL_ANSWERS", "true");
    let mut cmd = env.cmd(&["serve"]);
    cmd.env("ASKRELAY_LOG", "trace");
    let mut daemon = env.serve_cmd(cmd).await;
    daemon.wait_log("connected to the Discord gateway").await;
    let mut asker = env.ask(&["--request-id", "secret-1"], QUESTION).await;
    asker.wait_stderr("waiting for an answer via discord").await;
    // A terminal answer makes the daemon edit the Discord message.
    let (code, _, err) = env.run(&["answer", "secret-1", "--select", "2"]).await;
    assert_eq!(code, 0, "{err}");
    within(
        "the message edit",
        standin.wait_for_request(|r| r.method == "PATCH"),
    )
    .await;
    assert_eq!(asker.finish().await.0, 0);
    // The stand-in saw the token, so it was really used.
    let used = standin
        .requests()
        .iter()
        .any(|r| r.header("authorization") == Some(&format!("Bot {token}")));
    assert!(used, "the daemon used the token");
    let (status, log) = daemon.terminate().await;
    assert!(status.success());
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "trace level was on"
    );
    assert!(
        !log.contains("super-secret"),
        "the token is in the log:\n{log}"
    );

    let mut check = env.cmd(&["check-config"]);
    check.env("ASKRELAY_LOG", "trace");
    let out = check.output().await.unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("token ok"), "{all}");
    assert!(!all.contains("super-secret"), "{all}");

    let mut mcp = env.cmd(&["mcp"]);
    mcp.env("ASKRELAY_LOG", "trace");
    let out = mcp.output().await.unwrap();
    let all = String::from_utf8_lossy(&out.stderr);
    assert!(!all.contains("super-secret"), "{all}");
}

#[tokio::test]
async fn every_command_has_help_with_examples() {
    let env = Bin::new();
    for cmd in [
        "serve",
        "check-config",
        "ask",
        "pending",
        "answer",
        "cancel",
        "history",
        "mcp",
        "completions",
        "man",
    ] {
        let (code, out, _) = env.run(&[cmd, "--help"]).await;
        assert_eq!(code, 0);
        assert!(
            out.contains("Examples:"),
            "{cmd} --help lacks examples:\n{out}"
        );
        // Every argument has a help line, on its line or indented on the next one.
        let lines: Vec<&str> = out.lines().collect();
        let mut in_args = false;
        for (i, line) in lines.iter().enumerate() {
            if line.starts_with("Arguments:") || line.starts_with("Options:") {
                in_args = true;
                continue;
            }
            if !line.starts_with(' ') {
                in_args = false;
            }
            let t = line.trim_start();
            let entry = t.starts_with('<') || t.starts_with('[') || t.starts_with('-');
            if !in_args || !entry || line.len() - t.len() > 6 {
                continue;
            }
            let same_line = t.trim_end().contains("  ");
            let next = lines.get(i + 1).copied().unwrap_or("");
            let next_line = next.len() - next.trim_start().len() > line.len() - t.len()
                && !next.trim().is_empty();
            assert!(
                same_line || next_line,
                "{cmd} --help: {t:?} has no help line:\n{out}"
            );
        }
    }
    for sub in ["export", "verify"] {
        let (code, out, _) = env.run(&["audit", sub, "--help"]).await;
        assert_eq!(code, 0);
        assert!(out.contains("Examples:"), "audit {sub} --help:\n{out}");
    }
    let (_, out, _) = env.run(&["ask", "--help"]).await;
    assert!(out.contains("4  NO_ANSWERER"), "{out}");
    // The client commands say what they read from --config; serve does not claim it.
    let (_, serve, _) = env.run(&["serve", "--help"]).await;
    assert!(!serve.contains("read only socket_path"), "{serve}");
    let (_, ask, _) = env.run(&["ask", "--help"]).await;
    assert!(ask.contains("only socket_path and daemon_uid"), "{ask}");
}

/// The `ask --help` example is copy-pasteable: run it as a shell would.
#[tokio::test]
async fn the_ask_example_runs_as_printed() {
    let env = Bin::new();
    let daemon = env.serve().await;
    let (_, help, _) = env.run(&["ask", "--help"]).await;
    let start = help.find("  echo '").expect("an echo example");
    let rest = &help[start..];
    let end = rest
        .find("| askrelay ask")
        .expect("piped into askrelay ask")
        + "| askrelay ask".len();
    let example = rest[..end].replace("askrelay ask", &format!("{BIN} ask --request-id example"));
    let mut sh = tokio::process::Command::new("sh");
    sh.arg("-c")
        .arg(&example)
        .env("ASKRELAY_SOCKET_PATH", env.socket())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = sh.spawn().unwrap();
    let mut tries = 0;
    loop {
        let (_, out, _) = env.run(&["pending", "--json"]).await;
        if out.contains("\"example\"") {
            break;
        }
        tries += 1;
        assert!(tries < 300, "the example never asked: {example}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (code, _, err) = env.run(&["answer", "example", "--select", "1"]).await;
    assert_eq!(code, 0, "{err}");
    let out = within("the example to finish", child.wait_with_output())
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\"answers\":[{\"id\":\"go\",\"selected\":[\"Yes (Recommended)\"]}]}\n"
    );
    daemon.terminate().await;
}

const MULTI: &str = r#"{"questions":[
    {"id":"env","question":"Where to?","multiSelect":true,
     "options":[{"label":"staging"},{"label":"prod"},{"label":"canary"}]},
    {"id":"one","question":"Which one?","options":[{"label":"a"},{"label":"b"}]}]}"#;

/// `--select` and `--custom` together: a multi-select question takes both (the note comes in
/// addition), a single-select one refuses them with the reason, in one line.
#[tokio::test]
async fn terminal_answers_with_a_note() {
    let env = Bin::new();
    let daemon = env.serve().await;
    let run = |id: &'static str| {
        let env = &env;
        async move {
            let mut a = env.ask(&["--request-id", id], MULTI).await;
            a.wait_stderr("waiting").await;
            a
        }
    };

    // Multi-select with options and a note.
    let a = run("m1").await;
    let (code, _, err) = env
        .run(&[
            "answer",
            "m1",
            "--question",
            "env",
            "--select",
            "staging",
            "--select",
            "prod",
            "--custom",
            "and canary",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    // Single-select with a note only.
    let (code, _, err) = env
        .run(&["answer", "m1", "--question", "one", "--custom", "neither"])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, out) = a.finish().await;
    assert_eq!(code, 0);
    assert_eq!(
        out.trim(),
        r#"{"answers":[{"id":"env","selected":["staging","prod"],"custom":"and canary"},{"id":"one","selected":[],"custom":"neither"}]}"#
    );

    // Multi-select with a note only.
    let a = run("m2").await;
    let (code, _, err) = env
        .run(&["answer", "m2", "--question", "env", "--text", "nowhere yet"])
        .await;
    assert_eq!(code, 0, "{err}");
    // Single-select with both: refused, one line, nothing recorded.
    let (code, _, err) = env
        .run(&[
            "answer",
            "m2",
            "--question",
            "one",
            "--select",
            "a",
            "--custom",
            "or b",
        ])
        .await;
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("single-select") && err.contains("replace the selection"),
        "{err}"
    );
    let (code, _, err) = env
        .run(&["answer", "m2", "--question", "one", "--select", "b"])
        .await;
    assert_eq!(code, 0, "the refused answer recorded nothing: {err}");
    let (code, out) = a.finish().await;
    assert_eq!(code, 0);
    assert_eq!(
        out.trim(),
        r#"{"answers":[{"id":"env","selected":[],"custom":"nowhere yet"},{"id":"one","selected":["b"]}]}"#
    );
    // Several questions and no --question: it says which there are.
    let _a = run("m3").await;
    let (code, _, err) = env.run(&["answer", "m3", "--select", "a"]).await;
    assert_eq!(code, 2);
    assert!(
        err.contains("--question") && err.contains("env, one"),
        "{err}"
    );
    daemon.terminate().await;
}

/// `check-config` tells a malformed token, a missing channel and an unreachable Discord apart,
/// one line each, and never prints the token.
#[tokio::test]
async fn check_config_says_which_part_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let run = |token: &str, channel: Option<&str>| {
        let mut c = askrelay_in(dir.path());
        c.arg("check-config")
            .env("ASKRELAY_DISCORD__TOKEN", token)
            // Nothing listens on port 1: Discord cannot be reached.
            .env("ASKRELAY_DISCORD__API_BASE", "http://127.0.0.1:1")
            .env("ASKRELAY_DISCORD__REQUEST_TIMEOUT_MS", "2000")
            .env("ASKRELAY_SOCKET_PATH", dir.path().join("s.sock"));
        if let Some(ch) = channel {
            c.env("ASKRELAY_DISCORD__CHANNEL_ID", ch);
        }
        c
    };
    let good = "MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.secret-part";
    let out = within("check-config", run(good, Some("5")).output())
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot reach Discord at http://127.0.0.1:1"),
        "{err}"
    );
    assert!(
        !err.contains("rejected") && !err.contains("secret-part"),
        "{err}"
    );

    let out = within("check-config", run("Bot secret-part", None).output())
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("discord.token does not look like a bot token: give the token alone"),
        "{err}"
    );
    assert!(err.contains("discord.channel_id is not set"), "{err}");
    assert!(!err.contains("secret-part"), "{err}");
}

#[tokio::test]
async fn completions_and_the_manual_page_are_generated() {
    let env = Bin::new();
    for (shell, needle) in [
        ("bash", "_askrelay()"),
        ("zsh", "#compdef askrelay"),
        ("fish", "complete -c askrelay"),
    ] {
        let (code, out, err) = env.run(&["completions", shell]).await;
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(needle), "{shell}: {out}");
        assert!(
            out.contains("check-config"),
            "{shell} completes the commands"
        );
    }
    let (code, out, _) = env.run(&["man"]).await;
    assert_eq!(code, 0);
    assert!(
        out.starts_with(".ie") || out.contains(".TH askrelay"),
        "{out}"
    );
    assert!(
        out.contains("askrelay\\-ask(1)"),
        "it names the commands' pages"
    );
    // One page on stdout (several would be one page with several titles for `man -l -`), in
    // ASCII (groff warns on raw UTF-8 such as `…`), the examples set apart from the prose.
    assert_eq!(out.matches(".TH ").count(), 1, "{out}");
    assert!(out.is_ascii(), "{out}");
    assert!(out.contains(".nf\n"), "{out}");

    // --dir: the main page and one per command, titled as the main page names them.
    let dir = tempfile::tempdir().unwrap();
    let (code, listed, err) = env
        .run(&["man", "--dir", dir.path().to_str().unwrap()])
        .await;
    assert_eq!(code, 0, "{err}");
    for name in [
        "askrelay",
        "askrelay-ask",
        "askrelay-answer",
        "askrelay-hook",
    ] {
        let path = dir.path().join(format!("{name}.1"));
        let page = std::fs::read_to_string(&path).unwrap();
        assert!(page.contains(&format!(".TH {name} 1")), "{name}: {page}");
        assert!(page.is_ascii(), "{name}");
        assert!(listed.contains(&path.display().to_string()), "{listed}");
    }
    // `serve`'s examples hold a `…`: written as groff's escape.
    let serve = std::fs::read_to_string(dir.path().join("askrelay-serve.1")).unwrap();
    assert!(serve.contains("TOKEN=\\[u2026]"), "{serve}");
}

/// `pending` and `history` fit the terminal's width (here `COLUMNS`, as a pipe has no
/// terminal): long questions wrap in their column, and request ids stay whole on one line.
#[tokio::test]
async fn pending_and_history_fit_the_width_and_keep_ids_whole() {
    let env = Bin::new();
    let _daemon = env.serve().await;
    let id = "approve-0f9a8b7c-6d5e-4f3a-9b2c-1d0e9f8a7b6c";
    let long = r#"{"questions":[{"id":"deploy","question":"Deploy the payments service to the production cluster in eu-west-1 now that the canary looks healthy, and drain the old pods?","header":"Deploy","options":[{"label":"Deploy now","description":"d"},{"label":"Wait for the next window","description":"w"}],"multiSelect":false}]}"#;
    let mut asker = env.ask(&["--request-id", id], long).await;
    asker.wait_stderr("waiting for an answer").await;
    let wide = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.chars().count() > 100)
            .map(str::to_owned)
            .collect()
    };
    let narrow = |cmd: &'static str| {
        let mut c = env.cmd(&[cmd]);
        c.env("COLUMNS", "100");
        async move {
            let o = within(cmd, c.output()).await.unwrap();
            (
                o.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&o.stdout).into_owned(),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            )
        }
    };
    let (code, out, err) = narrow("pending").await;
    assert_eq!(code, 0, "{err}");
    assert!(wide(&out).is_empty(), "rows past 100 columns:\n{out}");
    assert!(out.lines().any(|l| l.contains(id)), "{out}");
    assert!(out.contains("Wait for the next window"), "{out}");
    // In a pipe without COLUMNS, a row is one line, for grep.
    let (_, out, _) = env.run(&["pending"]).await;
    assert!(
        out.lines()
            .any(|l| l.contains(id) && l.contains("production cluster")),
        "{out}"
    );
    let (code, _, err) = env.run(&["answer", id, "--select", "2"]).await;
    assert_eq!(code, 0, "{err}");
    asker.finish().await;
    let (code, out, err) = narrow("history").await;
    assert_eq!(code, 0, "{err}");
    assert!(wide(&out).is_empty(), "rows past 100 columns:\n{out}");
    assert!(out.lines().any(|l| l.contains(id)), "{out}");
    assert!(out.contains("answered by"), "{out}");
}

/// `askrelay … | head`: the reader has gone before the command writes. Every command that
/// prints ends quietly with status 0, not with a panic (exit 101) or an error.
#[tokio::test]
async fn every_command_ends_quietly_on_a_closed_stdout() {
    let env = Bin::new().env("USER", "alice");
    let _daemon = env.serve().await;
    let mut asker = env
        .ask(&["--request-id", "pipe-1", "--project", "infra"], QUESTION)
        .await;
    asker
        .wait_stderr("waiting for an answer via terminal")
        .await;
    for args in [
        &["pending"][..],
        &["pending", "--json"],
        &["history"],
        &["history", "--json"],
        &["health"],
        &["completions", "bash"],
        &["man"],
        &["--help"],
        &["pending", "--help"],
        &["check-config"],
    ] {
        // A pipe whose read end is closed before the command starts: its first write fails.
        let (read, write) = nix::unistd::pipe().unwrap();
        drop(read);
        let mut cmd = env.cmd(args);
        cmd.stdout(Stdio::from(write));
        let out = within(&format!("askrelay {}", args.join(" ")), cmd.output())
            .await
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "askrelay {args:?}: {err}");
        assert!(!err.contains("panicked"), "askrelay {args:?}: {err}");
    }
}

/// An empty `ASKRELAY_DISCORD__TOKEN=` was a token (the terminal answerer went off with a mere
/// warning), and a malformed one failed only later at the gateway: both stop `serve` now,
/// naming the key and never the value; an empty one stops `check-config` too.
#[tokio::test]
async fn an_empty_or_malformed_token_stops_serve() {
    for (token, says) in [
        ("", "discord.token: is empty"),
        ("   ", "discord.token: is empty"),
        (
            "Bot secret-part",
            "discord.token does not look like a bot token: give the token alone",
        ),
        (
            "secret-part",
            "discord.token does not look like a bot token: it should have three parts",
        ),
    ] {
        let env = Bin::new().env("ASKRELAY_DISCORD__TOKEN", token);
        let (code, _, err) = env.run(&["serve"]).await;
        assert_eq!(code, 2, "{token:?}: {err}");
        assert!(err.contains(says), "{token:?}: {err}");
        assert!(!err.contains("secret-part"), "{err}");
        assert!(!env.socket().exists(), "{token:?}: it did not start");
    }
    let env = Bin::new().env("ASKRELAY_DISCORD__TOKEN", "");
    let (code, _, err) = env.run(&["check-config"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("discord.token: is empty"), "{err}");
}

/// The official MCP SDKs start `askrelay mcp` with HOME, LOGNAME, PATH, SHELL, TERM and USER
/// only: no XDG_RUNTIME_DIR. It still finds the daemon a login shell started (on
/// $XDG_RUNTIME_DIR, which is /run/user/$UID), says on stderr which socket it uses, and refuses
/// to pick when two daemons listen at default places. /run/user/$UID is stood in for by a temp
/// directory (ASKRELAY_TEST_RUN_USER_DIR).
#[tokio::test]
async fn a_client_with_the_mcp_sdks_environment_finds_the_login_sessions_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let run_user = dir.path().join("run-user");
    let tmp = dir.path().join("tmp");
    for d in [&run_user, &tmp] {
        std::fs::create_dir(d).unwrap();
        std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    }
    // (On top of askrelay_in's empty environment.)
    let sdk_env = |c: &mut tokio::process::Command| {
        for k in ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"] {
            if let Some(v) = std::env::var_os(k) {
                c.env(k, v);
            }
        }
        c.env("TMPDIR", &tmp)
            .env("ASKRELAY_TEST_RUN_USER_DIR", &run_user);
    };
    // The daemon of a login shell: XDG_RUNTIME_DIR is the session's runtime directory.
    let login = Bin::new();
    let mut cmd = login.cmd(&["serve"]);
    cmd.env_remove("ASKRELAY_SOCKET_PATH")
        .env("XDG_RUNTIME_DIR", &run_user);
    let _login_daemon = login.serve_cmd(cmd).await;
    let socket = run_user.join("askrelay.sock");
    assert!(socket.exists());

    let mut mcp = askrelay_in(dir.path());
    mcp.arg("mcp");
    sdk_env(&mut mcp);
    mcp.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = mcp.spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let said = within("askrelay mcp to name its socket", async {
        loop {
            let line = lines.next_line().await.unwrap().expect("stderr ended");
            if line.contains("asking the daemon at this socket") {
                return line;
            }
        }
    })
    .await;
    assert!(said.contains(&socket.display().to_string()), "{said}");
    drop(child.stdin.take()); // the MCP client goes away
    within("askrelay mcp to exit", child.wait()).await.unwrap();

    // A second daemon at another default place (/tmp/askrelay-$UID): a client refuses to pick.
    let other = Bin::new();
    let mut cmd = other.cmd(&["serve"]);
    cmd.env_remove("ASKRELAY_SOCKET_PATH").env("TMPDIR", &tmp);
    let _other_daemon = other.serve_cmd(cmd).await;
    let mut pending = askrelay_in(dir.path());
    pending.arg("pending");
    sdk_env(&mut pending);
    let out = within("askrelay pending", pending.output()).await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("more than one askrelay daemon is listening")
            && err.contains(&socket.display().to_string())
            && err.contains(&tmp.display().to_string()),
        "{err}"
    );
}

/// `askrelay audit export` writes the chain as JSON Lines and `askrelay audit verify` checks
/// it: intact as exported; a changed field names its row, a removed row the row after it; a
/// file that is not an export exits 2; after retention pruned the oldest rows, the export
/// starts at their checkpoint and still verifies. Runs on PostgreSQL too (tests/run).
#[tokio::test]
async fn audit_export_verifies_and_a_tampered_export_names_the_row() {
    use askrelay::domain::audit::ExportLine;
    let app = App::start().await;
    let bin = Bin::in_dir(app.dir.path());
    let mut waiting = Vec::new();
    for i in 0..4 {
        waiting.push(app.ask(&format!("audit-{i}"), &yes_no("q")).await.0);
    }
    let won = app
        .answer("audit-0", "q", &["Yes, delete them (Recommended)"])
        .await;
    assert_eq!(won["event"], "answer_accepted", "{won}");
    let lost = app.answer("audit-0", "q", &["No, keep them"]).await;
    assert_eq!(lost["code"], "CONFLICT", "{lost}");
    let (code, _, err) = bin.run(&["cancel", "audit-1"]).await;
    assert_eq!(code, 0, "{err}");

    let (code, out, err) = bin.run(&["audit", "export"]).await;
    assert_eq!(code, 0, "{err}");
    let lines: Vec<String> = out.lines().map(str::to_owned).collect();
    let parsed: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(parsed[0]["kind"], "start", "{out}");
    assert_eq!(parsed[0]["reason"], "genesis", "{out}");
    assert_eq!(
        parsed.len(),
        9,
        "the start, 4 asks, 2 answers, 1 cancel, the end:\n{out}"
    );
    let end = parsed.last().unwrap().clone();
    assert_eq!(end["kind"], "end", "{out}");
    assert_eq!(end["rows"], 7, "{out}");
    let last = parsed[7]["hash"].as_str().unwrap().to_owned();
    assert_eq!(end["head"]["hash"], last.as_str(), "{out}");

    let file = app.dir.path().join("audit.jsonl");
    let verify = |text: String| {
        let bin = &bin;
        let file = file.clone();
        async move {
            std::fs::write(&file, text).unwrap();
            bin.run(&["audit", "verify", file.to_str().unwrap()]).await
        }
    };
    let (code, out, err) = verify(lines.join("\n") + "\n").await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim(),
        format!("ok: 7 rows, chain intact from genesis to {last} (its head)")
    );

    // One field of a middle row changed: that row's hash no longer matches.
    let mut changed = parsed.clone();
    changed[4]["actor"] = json!("someone else");
    let text: Vec<String> = changed.iter().map(Value::to_string).collect();
    let id = parsed[4]["id"].as_i64().unwrap();
    let (code, out, _) = verify(text.join("\n")).await;
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out.trim(),
        format!("broken at row {id} (line 5): row {id}'s hash does not match its content")
    );
    // Its hash recomputed too: then the next row no longer follows it.
    let Ok(ExportLine::Row(row)) = serde_json::from_value(changed[4].clone()) else {
        panic!("a row: {}", changed[4]);
    };
    changed[4]["hash"] = json!(row.computed_hash());
    let text: Vec<String> = changed.iter().map(Value::to_string).collect();
    let (code, out, _) = verify(text.join("\n")).await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.starts_with(&format!("broken at row {} (line 6)", parsed[5]["id"])),
        "{out}"
    );
    // A row removed: the next one does not follow the row before it.
    let mut gone = lines.clone();
    gone.remove(3);
    let (code, out, _) = verify(gone.join("\n")).await;
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out.trim(),
        format!(
            "broken at row {} (line 4): its prev_hash does not match the hash of row {}",
            parsed[4]["id"], parsed[2]["id"]
        )
    );
    let (code, _, err) = verify("hello\n".into()).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not an audit export"), "{err}");

    // Against the daemon, and from a date.
    let (code, out, err) = bin.run(&["audit", "verify"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("ok: 7 rows, chain intact from genesis to "),
        "{out}"
    );
    let (code, out, err) = bin.run(&["audit", "export", "--since", "2000-01-01"]).await;
    assert_eq!((code, out.lines().count()), (0, 9), "{err}");

    // Retention prunes the oldest rows: the export starts at their checkpoint and verifies.
    let cutoff = parsed[3]["at"].as_i64().unwrap() + 1;
    let kept = parsed[1..]
        .iter()
        .position(|r| r["at"].as_i64().unwrap() >= cutoff)
        .unwrap();
    let pruned = app.store().prune(None, Some(cutoff)).await.unwrap();
    assert_eq!(pruned.audit, kept as u64);
    let (code, out, err) = bin.run(&["audit", "export"]).await;
    assert_eq!(code, 0, "{err}");
    let after: Vec<&str> = out.lines().collect();
    let start: Value = serde_json::from_str(after[0]).unwrap();
    assert_eq!(start["reason"], "pruned", "{out}");
    assert_eq!(start["after"], parsed[kept]["id"]);
    assert_eq!(start["hash"], parsed[kept]["hash"]);
    assert_eq!(after[1..after.len() - 1], lines[kept + 1..lines.len() - 1]);
    let (code, out, _) = verify(out).await;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with(&format!(
            "ok: {} rows, chain intact from the checkpoint after row {}",
            7 - kept,
            parsed[kept]["id"]
        )),
        "{out}"
    );
    drop(waiting);
}

/// Deletes the audit rows after `keep` the way someone with the database would: past the
/// append-only triggers (SQLite: the retention exception's cutoff; PostgreSQL: the trigger
/// disabled, as a superuser can).
async fn cut_audit_tail(url: &str, keep: i64) {
    use sqlx::Connection;
    if url.starts_with("sqlite:") {
        let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
        for sql in [
            "INSERT INTO settings (name, value) VALUES ('audit_prune_before', 9223372036854775807)"
                .to_owned(),
            format!("DELETE FROM audit WHERE id > {keep}"),
            "DELETE FROM settings WHERE name = 'audit_prune_before'".to_owned(),
        ] {
            sqlx::query(&sql).execute(&mut c).await.unwrap();
        }
    } else {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        for sql in [
            "ALTER TABLE audit DISABLE TRIGGER USER".to_owned(),
            format!("DELETE FROM audit WHERE id > {keep}"),
            "ALTER TABLE audit ENABLE TRIGGER USER".to_owned(),
        ] {
            sqlx::query(&sql).execute(&mut c).await.unwrap();
        }
    }
}

/// The tail of the chain: rows deleted from the end of the log leave every link intact, so
/// only the head (`audit_head`) shows it. `audit verify` against the daemon compares the last
/// row with the head; an export ends with a line that counts its rows and names the head, so
/// a file cut short is noticed too; and a row with a key the chain does not cover is refused.
#[tokio::test]
async fn audit_verify_notices_rows_cut_from_the_end_and_a_cut_file() {
    let app = App::start().await;
    let bin = Bin::in_dir(app.dir.path());
    let mut waiting = Vec::new();
    for i in 0..4 {
        waiting.push(app.ask(&format!("tail-{i}"), &yes_no("q")).await.0);
    }
    let (code, out, err) = bin.run(&["audit", "export"]).await;
    assert_eq!(code, 0, "{err}");
    let lines: Vec<String> = out.lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 6, "the start, 4 asks, the end:\n{out}");

    let file = app.dir.path().join("audit.jsonl");
    let verify = |text: String| {
        let bin = &bin;
        let file = file.clone();
        async move {
            std::fs::write(&file, text).unwrap();
            bin.run(&["audit", "verify", file.to_str().unwrap()]).await
        }
    };
    // The file cut after its third line: no end line.
    let (code, out, _) = verify(lines[..3].join("\n") + "\n").await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.starts_with("cut short: the export ends after 2 rows"),
        "{out}"
    );
    // A row that carries text the chain does not cover.
    let mut extra: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    extra[2]["comment"] = json!("approved by the CEO");
    let text: Vec<String> = extra.iter().map(Value::to_string).collect();
    let (code, _, err) = verify(text.join("\n")).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line 3") && err.contains("comment"), "{err}");

    // The last two rows deleted from the database: every link left still holds.
    let first: Value = serde_json::from_str(&lines[1]).unwrap();
    let keep = first["id"].as_i64().unwrap() + 1;
    cut_audit_tail(&app.config.database_url, keep).await;
    let (code, out, err) = bin.run(&["audit", "verify"]).await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.starts_with(&format!(
            "cut at the end: the chain's last row is {keep} but its head is row {}: 2 rows were \
             deleted from the end of the log",
            keep + 2
        )),
        "{out}"
    );
    // And an export made now says so to whoever verifies the file.
    let (code, out, err) = bin.run(&["audit", "export"]).await;
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = verify(out).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("cut at the end"), "{out}");
    drop(waiting);
}

/// Whether `actor` is in the audit log's one format: `KIND:ID`, then ` name=NAME` (plain, or
/// a JSON string) and ` pid=PID` when known (askrelay::domain::audit::actor).
fn one_actor_format(actor: &str) -> bool {
    let (kind_id, mut rest) = actor.split_once(' ').unwrap_or((actor, ""));
    let Some((kind, id)) = kind_id.split_once(':') else {
        return false;
    };
    if !["uid", "discord", "policy", "grant", "daemon"].contains(&kind) || id.is_empty() {
        return false;
    }
    if let Some(n) = rest.strip_prefix("name=") {
        rest = if n.starts_with('"') {
            let mut de = serde_json::Deserializer::from_str(n).into_iter::<String>();
            match de.next() {
                Some(Ok(_)) => n[de.byte_offset()..].trim_start(),
                _ => return false,
            }
        } else {
            n.split_once(' ').map_or("", |(_, r)| r)
        };
    }
    if let Some(p) = rest.strip_prefix("pid=") {
        return p.parse::<i64>().is_ok();
    }
    rest.is_empty()
}

/// An export reads without the database: every row about a request names it by its
/// `request_id` (hashed with the row), carries its time in RFC 3339 beside the epoch, says
/// answers by their labels, and names its actor in one format, whatever the surface.
#[tokio::test]
async fn an_audit_export_reads_without_the_database() {
    let app = App::discord_with(|c| c.discord.terminal_answers = true).await;
    let bin = Bin::in_dir(app.dir.path());
    let (mut by_click, _) = app.ask("read-1", &yes_no("q")).await;
    let (mut by_terminal, _) = app.ask("read-2", &yes_no("q")).await;
    let (_cancelled, _) = app.ask("read-3", &yes_no("q")).await;
    let msg = app.messages(CHANNEL)[0].clone();
    final_state(&app.press(&msg, &alice(), "No, keep them").await);
    expect_event(&mut by_click, "answered").await;
    let won = app
        .answer("read-2", "q", &["Yes, delete them (Recommended)"])
        .await;
    assert_eq!(won["event"], "answer_accepted", "{won}");
    expect_event(&mut by_terminal, "answered").await;
    let (code, _, err) = bin.run(&["cancel", "read-3"]).await;
    assert_eq!(code, 0, "{err}");

    let (code, out, err) = bin.run(&["audit", "export"]).await;
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["kind"] == "row")
        .collect();
    assert!(rows.len() >= 6, "{out}");
    for r in &rows {
        let at = r["at"].as_i64().unwrap();
        let time = r["time"].as_str().unwrap_or_default();
        assert_eq!(time, askrelay::domain::audit::time_of(at), "{r}");
        assert!(time.ends_with('Z') && time.len() == 24, "{r}");
        if r["request_key"].is_i64() {
            assert!(
                r["request_id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("read-")),
                "a row about a request names it: {r}"
            );
        }
        let actor = r["actor"].as_str().unwrap_or_default();
        assert!(one_actor_format(actor), "one format: {actor:?} in {r}");
    }
    let answer_of = |rid: &str| {
        rows.iter()
            .find(|r| r["action"] == "answer" && r["request_id"] == rid && r["accepted"] == true)
            .unwrap_or_else(|| panic!("no answer row for {rid}: {out}"))
            .clone()
    };
    let clicked = answer_of("read-1");
    assert_eq!(clicked["actor"], "discord:4242 name=alice", "{clicked}");
    assert!(
        clicked["detail"]
            .as_str()
            .unwrap()
            .starts_with(r#"{"selected":["No, keep them"]}"#),
        "{clicked}"
    );
    let typed = answer_of("read-2");
    assert!(
        typed["actor"].as_str().unwrap().starts_with("uid:"),
        "{typed}"
    );
    assert!(
        typed["detail"]
            .as_str()
            .unwrap()
            .starts_with(r#"{"selected":["Yes, delete them (Recommended)"]}"#),
        "{typed}"
    );
    // The request id is part of what the chain covers: changing it breaks the row's hash.
    let mut lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let i = lines
        .iter()
        .position(|l| l["request_id"] == "read-2")
        .unwrap();
    lines[i]["request_id"] = json!("read-9");
    let file = app.dir.path().join("renamed.jsonl");
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&file, text.join("\n")).unwrap();
    let (code, out, _) = bin.run(&["audit", "verify", file.to_str().unwrap()]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("hash does not match its content"), "{out}");
    app.assert_payloads_valid();
}

/// `--since` takes how long ago (`30m`, `1h`, `7d`, `2w`) as well as a date or a time, for
/// `history` and `audit export` alike; a request asked now is in each window.
#[tokio::test]
async fn since_takes_how_long_ago() {
    let env = Bin::new();
    let _daemon = env.serve().await;
    let mut asker = env.ask(&["--request-id", "since-1"], QUESTION).await;
    asker.wait_stderr("waiting for an answer").await;
    let (code, _, err) = env.run(&["answer", "since-1", "--select", "2"]).await;
    assert_eq!(code, 0, "{err}");
    asker.finish().await;
    for ago in ["30m", "1h", "7d", "2w", "2026-01-01"] {
        let (code, out, err) = env.run(&["history", "--json", "--since", ago]).await;
        assert_eq!(code, 0, "--since {ago}: {err}");
        assert!(
            out.contains("\"request_id\":\"since-1\""),
            "--since {ago}: {out}"
        );
        let (code, out, err) = env.run(&["audit", "export", "--since", ago]).await;
        assert_eq!(code, 0, "audit export --since {ago}: {err}");
        assert!(out.contains("since-1"), "audit export --since {ago}: {out}");
    }
    let (code, _, err) = env.run(&["history", "--since", "1x"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("expected how long ago (30m, 1h, 7d, 2w)"),
        "{err}"
    );
}

/// `answer --all` without `--yes` asks on the terminal; without one (stdin not a terminal, as
/// in a script or cron) it answers nothing and says to give `--yes`.
#[tokio::test]
async fn answer_all_without_a_terminal_or_yes_answers_nothing() {
    let env = Bin::new();
    let _daemon = env.serve().await;
    let mut asker = env.ask(&["--request-id", "all-1"], QUESTION).await;
    asker.wait_stderr("waiting for an answer").await;
    // `Bin::cmd` gives every command /dev/null as stdin: not a terminal.
    let (code, out, err) = env.run(&["answer", "--all", "--select", "2"]).await;
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains(
            "1 request(s) would be answered with 2; give --yes to confirm without a terminal"
        ),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
    let (code, out, _) = env.run(&["pending", "--json"]).await;
    assert_eq!(code, 0);
    let pending: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(pending[0]["request_id"], "all-1", "{pending}");
    assert!(
        pending[0]["questions"][0]["answered"].is_null(),
        "{pending}"
    );
    // With --yes it answers.
    let (code, out, err) = env
        .run(&["answer", "--all", "--select", "2", "--yes"])
        .await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("done     all-1: answered"), "{out}");
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0);
    assert!(out.contains("No, keep them"), "{out}");
}

/// Every command path of the CLI, as `["audit", "export"]`, clap's `help` left out.
fn command_paths() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, at: &[String], all: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let mut path = at.to_vec();
            path.push(sub.get_name().to_owned());
            all.push(path.clone());
            walk(sub, &path, all);
        }
    }
    let mut all = Vec::new();
    walk(
        &<askrelay::cli::Cli as clap::CommandFactory>::command(),
        &[],
        &mut all,
    );
    all
}

/// `man --dir` writes a page for every command at every depth (`askrelay-audit-export.1`,
/// `askrelay-hook-codex.1`, `askrelay-setup.1`), none for clap's `help`, each with the version
/// in its footer (the `.TH` line's source), into a directory it creates.
#[tokio::test]
async fn man_pages_cover_every_command_with_the_version() {
    let env = Bin::new();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("share/man/man1");
    let (code, listed, err) = env.run(&["man", "--dir", dir.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{err}");
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    let mut want: Vec<String> = command_paths()
        .iter()
        .map(|p| format!("askrelay-{}.1", p.join("-")))
        .collect();
    want.push("askrelay.1".to_owned());
    want.sort();
    for needed in [
        "askrelay-audit-export.1",
        "askrelay-audit-verify.1",
        "askrelay-hook-codex.1",
        "askrelay-setup.1",
    ] {
        assert!(want.iter().any(|w| w == needed), "{needed} in {want:?}");
    }
    assert_eq!(pages, want);
    assert!(!pages.iter().any(|p| p.contains("help")), "{pages:?}");
    let footer = format!("\"askrelay {}\"", env!("CARGO_PKG_VERSION"));
    for page in &pages {
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        let title = page.trim_end_matches(".1");
        let th = text
            .lines()
            .find(|l| l.starts_with(".TH "))
            .unwrap_or_else(|| panic!("{page} has no .TH line"));
        assert!(th.starts_with(&format!(".TH {title} 1 ")), "{page}: {th}");
        assert!(th.contains(&footer), "{page}: {th}");
        assert!(!text.contains("\\-help("), "{page} names a help page");
        assert!(listed.contains(page.as_str()), "{listed}");
    }
    // The parent page names its commands' pages.
    let audit = std::fs::read_to_string(dir.join("askrelay-audit.1")).unwrap();
    assert!(audit.contains("askrelay\\-audit\\-export(1)"), "{audit}");
    // On stdout too, the main page carries the version and names no help page.
    let (code, out, _) = env.run(&["man"]).await;
    assert_eq!(code, 0);
    assert!(out.contains(&footer), "{out}");
    assert!(!out.contains("askrelay\\-help"), "{out}");
}

/// The text under every command's options reads as written at 80 columns: clap wraps a line
/// longer than the terminal where it falls, which broke `answer --help` mid-sentence
/// ("…the question was already" / "answered or…" on a line of its own). Hard-wrapped to fit
/// 80, it is the same at 80 and at 100 columns.
#[tokio::test]
async fn help_reads_as_written_at_80_columns() {
    let env = Bin::new();
    let help = |path: &[String], columns: u16| {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let mut c = env.cmd(&args);
        c.env("COLUMNS", columns.to_string());
        let what = args.join(" ");
        async move {
            let o = within(&what, c.output()).await.unwrap();
            assert!(o.status.success(), "{what}");
            String::from_utf8_lossy(&o.stdout).into_owned()
        }
    };
    // The text after the options: after the last one, `-h, --help` ("Print help…", with the
    // blank line that ends it where options have long help).
    let after = |out: &str| -> String {
        let help = out.rfind("Print help").unwrap_or(0);
        out[help..]
            .find('\n')
            .map(|at| out[help + at..].trim_start_matches('\n').to_owned())
            .unwrap_or_default()
    };
    for path in std::iter::once(Vec::new()).chain(command_paths()) {
        let (narrow, wide) = (help(&path, 80).await, help(&path, 100).await);
        for line in narrow.lines() {
            assert!(
                line.chars().count() <= 80,
                "{path:?} --help at 80 columns: {line:?}"
            );
        }
        assert_eq!(
            after(&narrow),
            after(&wide),
            "{path:?} --help: its text is rewrapped at 80 columns"
        );
    }
    let answer = help(&["answer".to_owned()], 80).await;
    let prose = after(&answer)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for sentence in [
        "Exits 0 only when this answer was the one that counted; 1 when the question was already answered or the request has ended",
        "Who answered is recorded from your login (uid and user name); --as only adds a note.",
        "with no terminal (stdin not a tty) it answers nothing and exits 2, asking for --yes.",
    ] {
        assert!(prose.contains(sentence), "{sentence:?} in:\n{answer}");
    }
}

/// At 80 columns a long request id (45 characters here) left a question column of a few
/// characters, one word per line. Ids are shortened instead (ending in `…`, with a line saying
/// that `--json` shows them whole), so that the question keeps at least 28 columns.
#[tokio::test]
async fn pending_and_history_keep_the_question_readable_at_80_columns() {
    let env = Bin::new();
    let _daemon = env.serve().await;
    let id = "approve-0f9a8b7c-6d5e-4f3a-9b2c-1d0e9f8a7b6c";
    let long = r#"{"questions":[{"id":"deploy","question":"Deploy the payments service to the production cluster in eu-west-1 now that the canary looks healthy?","header":"Deploy","options":[{"label":"Deploy now","description":"d"},{"label":"Wait","description":"w"}],"multiSelect":false}]}"#;
    let mut asker = env.ask(&["--request-id", id], long).await;
    asker.wait_stderr("waiting for an answer").await;
    let at80 = |cmd: &'static str| {
        let mut c = env.cmd(&[cmd]);
        c.env("COLUMNS", "80");
        async move {
            let o = within(cmd, c.output()).await.unwrap();
            assert!(o.status.success(), "{cmd}");
            String::from_utf8_lossy(&o.stdout).into_owned()
        }
    };
    let check = |out: &str, last: &str, json: &str| {
        for line in out.lines() {
            assert!(
                line.chars().count() <= 80,
                "past 80 columns: {line:?}\n{out}"
            );
        }
        let header = out.lines().next().unwrap();
        let column = header.find(last).unwrap();
        assert!(
            80 - column >= 28,
            "the question column is {} wide:\n{out}",
            80 - column
        );
        assert!(!out.contains(id), "{out}");
        assert!(
            out.lines()
                .any(|l| l.starts_with("approve-0f9a8b7c") && l.contains('…')),
            "{out}"
        );
        assert!(out.contains(json), "{out}");
    };
    let out = at80("pending").await;
    check(&out, "QUESTION", "`askrelay pending --json` has them whole");
    assert!(out.contains("deploy: [Deploy] Deploy"), "{out}");
    let (_, json, _) = env.run(&["pending", "--json"]).await;
    assert!(json.contains(id), "{json}");
    // Wide enough, the id is whole and nothing is said about it.
    let (_, wide, _) = env.run(&["pending"]).await;
    assert!(wide.contains(id) && !wide.contains("cut to fit"), "{wide}");
    let (code, _, err) = env.run(&["answer", id, "--select", "2"]).await;
    assert_eq!(code, 0, "{err}");
    asker.finish().await;
    let out = at80("history").await;
    check(
        &out,
        "QUESTIONS AND OUTCOME",
        "`askrelay history --json` has them whole",
    );
}
