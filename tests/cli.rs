//! The `askrelay` binary as people use it: `serve` in one terminal, `ask`, `answer`, `pending`,
//! `cancel` in others.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, Command};

const BIN: &str = env!("CARGO_BIN_EXE_askrelay");

const QUESTION: &str = r#"{"questions":[{"id":"cleanup","question":"Proceed with the destructive cleanup?","header":"Confirm","options":[{"label":"Yes, delete them (Recommended)","description":"Removes the three stale files."},{"label":"No, keep them","description":"Aborts the cleanup."}],"multiSelect":false}]}"#;

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn socket(&self) -> PathBuf {
        self.dir.path().join("askrelay.sock")
    }
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("ASKRELAY_SOCKET_PATH", self.socket())
            .env(
                "ASKRELAY_DATABASE_URL",
                format!("sqlite://{}", self.dir.path().join("askrelay.db").display()),
            )
            .env("USER", "alice")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        c
    }
    /// Starts `askrelay serve` and waits until its log says it listens.
    async fn serve(&self, extra_env: &[(&str, &str)]) -> Daemon {
        let mut cmd = self.cmd(&["serve"]);
        cmd.env("ASKRELAY_LOG", "info");
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let mut log = BufReader::new(child.stderr.take().unwrap()).lines();
        wait_line(&mut log, "listening").await;
        Daemon { child, log }
    }
    async fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.cmd(args).output().await.unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
    /// Starts `askrelay ask` with QUESTION on stdin.
    async fn ask(&self, args: &[&str]) -> Asker {
        let mut all = vec!["ask"];
        all.extend_from_slice(args);
        let mut child = self.cmd(&all).stdin(Stdio::piped()).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(QUESTION.as_bytes()).await.unwrap();
        drop(stdin);
        let err = BufReader::new(child.stderr.take().unwrap()).lines();
        Asker { child, err }
    }
}

struct Daemon {
    child: Child,
    log: Lines<BufReader<ChildStderr>>,
}

impl Daemon {
    async fn terminate(mut self) -> String {
        signal(&self.child, "-TERM").await;
        let mut rest = String::new();
        while let Ok(Some(l)) = self.log.next_line().await {
            rest.push_str(&l);
            rest.push('\n');
        }
        assert!(self.child.wait().await.unwrap().success());
        rest
    }
}

struct Asker {
    child: Child,
    err: Lines<BufReader<ChildStderr>>,
}

impl Asker {
    async fn wait_stderr(&mut self, needle: &str) -> String {
        wait_line(&mut self.err, needle).await
    }
    async fn finish(mut self) -> (i32, String) {
        let status = self.child.wait().await.unwrap();
        let mut out = String::new();
        use tokio::io::AsyncReadExt;
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .await
            .unwrap();
        (status.code().unwrap_or(-1), out)
    }
}

async fn signal(child: &Child, sig: &str) {
    let pid = child.id().unwrap().to_string();
    let ok = Command::new("kill")
        .args([sig, &pid])
        .status()
        .await
        .unwrap();
    assert!(ok.success());
}

async fn wait_line<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut Lines<R>,
    needle: &str,
) -> String {
    let mut seen = String::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        if line.contains(needle) {
            return line;
        }
        seen.push_str(&line);
        seen.push('\n');
    }
    panic!("the stream ended without {needle:?}; it said:\n{seen}");
}

fn exists(p: &Path) -> bool {
    p.exists()
}

#[tokio::test]
async fn walkthrough_ask_in_one_terminal_answer_in_another() {
    let env = Env::new();
    let daemon = env.serve(&[]).await;
    let mut asker = env
        .ask(&["--request-id", "walk-1", "--project", "infra"])
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

    let (code, out, err) = env
        .run(&[
            "answer",
            "walk-1",
            "--question",
            "cleanup",
            "--select",
            "No, keep them",
        ])
        .await;
    assert_eq!(code, 0, "{out}{err}");
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "{\"answers\":[{\"id\":\"cleanup\",\"selected\":[\"No, keep them\"]}]}\n"
    );

    // A second answer does not count, exits non-zero and says who answered.
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
    // Who answered comes from the login (peer credentials), not from $USER or --as.
    let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .unwrap()
        .unwrap()
        .name;
    let uid = nix::unistd::geteuid().as_raw();
    assert!(
        err.contains(&format!(
            "already answered by {me} (uid {uid}) via terminal"
        )),
        "{err}"
    );
    let (code, _, err) = env
        .run(&["answer", "nope", "--question", "q", "--custom", "x"])
        .await;
    assert_eq!(code, 2);
    assert!(err.contains("unknown request_id"), "{err}");

    let (code, out, _) = env.run(&["history"]).await;
    assert_eq!(code, 0);
    assert!(out.contains("walk-1") && out.contains("answered"), "{out}");

    let log = daemon.terminate().await;
    assert!(log.contains("SIGTERM"), "{log}");
    assert!(
        !exists(&env.socket()),
        "serve removes its socket on SIGTERM"
    );
}

#[tokio::test]
async fn ask_reattaches_across_a_daemon_restart() {
    let env = Env::new();
    let daemon = env.serve(&[]).await;
    let mut asker = env.ask(&["--request-id", "phoenix"]).await;
    asker.wait_stderr("waiting for an answer").await;
    daemon.terminate().await;
    asker.wait_stderr("lost the daemon").await;
    let daemon = env.serve(&[]).await;
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
    let env = Env::new();
    // 7: no daemon.
    let (code, _, err) = env.ask(&[]).await.finish_with_err().await;
    assert_eq!(code, 7, "{err}");
    assert!(err.contains("askrelay serve"), "{err}");

    let daemon = env.serve(&[]).await;
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
        .ask(&["--owner-agent-id", "root"])
        .await
        .finish_with_err()
        .await;
    assert_eq!(code, 3, "{err}");
    // 5: cancelled by an operator.
    let mut asker = env.ask(&["--request-id", "doomed"]).await;
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
    let mut asker = env.ask(&["--request-id", "interrupted"]).await;
    asker.wait_stderr("waiting").await;
    signal(&asker.child, "-INT").await;
    let (code, _, err) = asker.finish_with_err().await;
    assert_eq!(code, 5, "{err}");
    daemon.terminate().await;

    // 4: nothing can answer.
    let daemon = env.serve(&[("ASKRELAY_TERMINAL__ENABLED", "false")]).await;
    let (code, _, err) = env.ask(&[]).await.finish_with_err().await;
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("NO_ANSWERER"), "{err}");
    daemon.terminate().await;
}

impl Asker {
    async fn finish_with_err(mut self) -> (i32, String, String) {
        let mut err = String::new();
        while let Ok(Some(l)) = self.err.next_line().await {
            err.push_str(&l);
            err.push('\n');
        }
        let (code, out) = self.finish().await;
        (code, out, err)
    }
}

#[tokio::test]
async fn config_errors_stop_startup_and_name_the_key() {
    let env = Env::new();
    let file = env.dir.path().join("bad.toml");
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

#[tokio::test]
async fn the_token_never_reaches_the_logs() {
    let env = Env::new();
    let file = env.dir.path().join("c.toml");
    std::fs::write(&file, "bogus_key = 1\n").unwrap();
    let mut cmd = env.cmd(&["serve", "--config", file.to_str().unwrap()]);
    cmd.env("ASKRELAY_DISCORD__TOKEN", "Bot.super-secret-token");
    cmd.env("ASKRELAY_LOG", "trace");
    let out = cmd.output().await.unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains("super-secret-token"), "{all}");
}

#[tokio::test]
async fn every_command_has_help_with_examples() {
    let env = Env::new();
    for cmd in ["serve", "ask", "pending", "answer", "cancel", "history"] {
        let (code, out, _) = env.run(&[cmd, "--help"]).await;
        assert_eq!(code, 0);
        assert!(
            out.contains("Examples:"),
            "{cmd} --help lacks examples:\n{out}"
        );
    }
    let (_, out, _) = env.run(&["ask", "--help"]).await;
    assert!(out.contains("4  NO_ANSWERER"), "{out}");
}
