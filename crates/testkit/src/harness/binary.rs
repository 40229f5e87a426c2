//! The real `askrelay` binary ([`Bin`]): a command with an empty environment and private default
//! places, a running `serve` whose log is read in the background ([`Served`]), and a running
//! `ask` ([`Asker`]).

use super::{within, CHANNEL, WAIT};
use crate::scratch::TestDb;
use crate::standin::StandIn;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, Command};

/// Which `askrelay` binary a [`Bin`] starts. Only a test of the root package can name it
/// (`env!("CARGO_BIN_EXE_askrelay")`), so the integration tests implement this once
/// (`tests/it/harness.rs`).
pub trait Binary {
    /// The binary's path.
    const PATH: &'static str;
}

/// The `askrelay` binary at `bin` with an empty environment (PATH only) whose every default
/// place is inside `dir`: the only way the tests start it (`isolation::`, through
/// `askrelay_in` and [`Bin`]), so that no test ever reaches the developer's own daemon at
/// `/run/user/$UID/askrelay.sock`, or leaves a socket there. See [`private_places`].
pub fn askrelay_at(bin: &Path, dir: &Path) -> Command {
    let mut c = Command::new(bin);
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    private_places(c.as_std_mut(), dir);
    c
}

/// Points every default place a process of ours would look for a socket, a config or a
/// database at `dir`: TMPDIR (`/tmp/askrelay-$UID`), the stand-in for `/run/user/$UID` (a
/// directory that does not exist), XDG_STATE_HOME and XDG_CONFIG_HOME; XDG_RUNTIME_DIR is
/// removed (a test that wants one sets it). Later `env` calls override these.
pub fn private_places(c: &mut std::process::Command, dir: &Path) {
    let tmp = dir.join("tmp");
    let _ = std::fs::create_dir_all(&tmp);
    c.env_remove("XDG_RUNTIME_DIR")
        .env("TMPDIR", &tmp)
        .env("ASKRELAY_TEST_RUN_USER_DIR", dir.join("no-run-user"))
        .env("XDG_STATE_HOME", dir.join("state-home"))
        .env("XDG_CONFIG_HOME", dir.join("config-home"));
}

/// The `askrelay` binary `B` with a clean environment: a socket and a database in its directory.
pub struct Bin<B: Binary> {
    dir: PathBuf,
    _owned: Option<TempDir>,
    env: Vec<(String, String)>,
    _db: Option<TestDb>,
    _binary: PhantomData<B>,
}

impl<B: Binary> Bin<B> {
    /// In a temp dir of its own.
    #[allow(clippy::new_without_default)] // a Default would hide that it makes a temp dir
    pub fn new() -> Self {
        let t = tempfile::tempdir().unwrap();
        let mut b = Self::in_dir(t.path());
        b._owned = Some(t);
        b
    }

    /// In `dir` (which outlives it).
    pub fn in_dir(dir: &Path) -> Self {
        let db = TestDb::new(&dir.join("askrelay.db"));
        Bin {
            dir: dir.to_path_buf(),
            _owned: None,
            env: vec![
                (
                    "ASKRELAY_SOCKET_PATH".into(),
                    dir.join("askrelay.sock").display().to_string(),
                ),
                ("ASKRELAY_DATABASE_URL".into(), db.url.clone()),
            ],
            _db: Some(db),
            _binary: PhantomData,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.join("askrelay.sock")
    }

    /// The database every command uses (`ASKRELAY_DATABASE_URL`), for a test that reads the
    /// store beside the daemon.
    pub fn database_url(&self) -> &str {
        self.env
            .iter()
            .find(|(k, _)| k == "ASKRELAY_DATABASE_URL")
            .map(|(_, v)| v.as_str())
            .unwrap_or_default()
    }

    /// Sets (or replaces) an environment variable of every command.
    pub fn env(mut self, key: &str, value: impl ToString) -> Self {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.to_string()));
        self
    }

    /// Removes an environment variable from every command.
    pub fn without(mut self, key: &str) -> Self {
        self.env.retain(|(k, _)| k != key);
        self
    }

    /// Discord through the stand-in, on [`CHANNEL`].
    pub fn discord(self, standin: &StandIn) -> Self {
        self.env(
            "ASKRELAY_DISCORD__TOKEN",
            "MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.test-bot-token",
        )
        .env("ASKRELAY_DISCORD__API_BASE", &standin.base_url)
        .env("ASKRELAY_DISCORD__CHANNEL_ID", CHANNEL)
        .env("ASKRELAY_DISCORD__RETRY_MAX_DELAY_MS", 20)
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = askrelay_at(Path::new(B::PATH), &self.dir);
        c.args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        c
    }

    /// Starts `askrelay serve` and waits until its log says it listens.
    pub async fn serve(&self) -> Served {
        self.serve_cmd(self.cmd(&["serve"])).await
    }

    /// Starts `askrelay serve` from a prepared command (extra env, a crash point).
    pub async fn serve_cmd(&self, mut cmd: Command) -> Served {
        if !cmd.as_std().get_envs().any(|(k, _)| k == "ASKRELAY_LOG") {
            cmd.env(
                "ASKRELAY_LOG",
                std::env::var("ASKRELAY_TEST_LOG").unwrap_or("info".into()),
            );
        }
        let mut child = cmd.spawn().unwrap();
        let log = ServedLog::pump(child.stderr.take().unwrap());
        let mut served = Served {
            child,
            log,
            cursor: 0,
        };
        served.wait_log("listening").await;
        served
    }

    /// Runs a command to its end: exit code, stdout, stderr.
    pub async fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = within(
            &format!("askrelay {}", args.join(" ")),
            self.cmd(args).output(),
        )
        .await
        .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Starts `askrelay ask ARGS` with `input` on stdin.
    pub async fn ask(&self, args: &[&str], input: &str) -> Asker {
        let mut all = vec!["ask"];
        all.extend_from_slice(args);
        let mut child = self.cmd(&all).stdin(Stdio::piped()).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).await.unwrap();
        drop(stdin);
        let err = BufReader::new(child.stderr.take().unwrap()).lines();
        Asker { child, err }
    }
}

/// A running `askrelay serve`.
pub struct Served {
    pub child: Child,
    log: ServedLog,
    /// How many log lines the waits have looked at.
    cursor: usize,
}

/// The daemon's log, read in the background from the start, so that the daemon never blocks
/// on a full stderr pipe however much it logs (trace level) while a test waits for something
/// else.
#[derive(Clone)]
struct ServedLog {
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// Set once stderr is closed (the process exited).
    closed: std::sync::Arc<std::sync::atomic::AtomicBool>,
    more: std::sync::Arc<tokio::sync::Notify>,
}

impl ServedLog {
    fn pump(stderr: ChildStderr) -> ServedLog {
        let log = ServedLog {
            lines: Default::default(),
            closed: Default::default(),
            more: Default::default(),
        };
        let l = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            // ASKRELAY_TEST_ECHO=1 echoes every daemon's log to the test's stderr (debugging).
            let echo = std::env::var_os("ASKRELAY_TEST_ECHO").is_some();
            while let Ok(Some(line)) = lines.next_line().await {
                if echo {
                    eprintln!("daemon: {line}");
                }
                l.lines.lock().unwrap().push(line);
                l.more.notify_waiters();
            }
            l.closed.store(true, std::sync::atomic::Ordering::SeqCst);
            l.more.notify_waiters();
        });
        log
    }

    /// Waits until a line at or after `from` contains `needle` (its index), or `None` once the
    /// log ended without one.
    async fn find(&self, from: usize, needle: &str) -> Option<usize> {
        loop {
            let more = self.more.notified();
            tokio::pin!(more);
            more.as_mut().enable();
            {
                let lines = self.lines.lock().unwrap();
                if let Some(i) = lines.iter().skip(from).position(|l| l.contains(needle)) {
                    return Some(from + i);
                }
            }
            if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
                return None;
            }
            more.await;
        }
    }

    fn text(&self) -> String {
        let mut all = self.lines.lock().unwrap().join("\n");
        all.push('\n');
        all
    }
}

impl Served {
    /// Waits for a log line containing `needle`, however early it came (start-up lines whose
    /// order is not fixed, such as the HTTP listener's and the socket's).
    pub async fn wait_log_anywhere(&mut self, needle: &str) -> String {
        let cursor = std::mem::take(&mut self.cursor);
        let line = self.wait_log(needle).await;
        self.cursor = self.cursor.max(cursor);
        line
    }

    /// Waits for a log line (after the last one a wait found) containing `needle`.
    pub async fn wait_log(&mut self, needle: &str) -> String {
        let found = match tokio::time::timeout(WAIT, self.log.find(self.cursor, needle)).await {
            Ok(found) => found,
            Err(_) => panic!(
                "gave up after {} s waiting for a log line with {needle:?}; the daemon said:\n{}",
                WAIT.as_secs(),
                self.log.text()
            ),
        };
        match found {
            Some(i) => {
                self.cursor = i + 1;
                self.log.lines.lock().unwrap()[i].clone()
            }
            None => panic!(
                "the daemon's log ended without {needle:?}; it said:\n{}",
                self.log.text()
            ),
        }
    }

    /// The daemon keeps running with its log read in the background.
    pub fn drain(self) -> Child {
        self.child
    }

    /// Sends a signal (`-TERM`, `-INT`, `-KILL`).
    pub async fn signal(&self, sig: &str) {
        signal(&self.child, sig).await;
    }

    /// SIGTERM, then the rest of the log and the exit status.
    pub async fn terminate(self) -> (std::process::ExitStatus, String) {
        signal(&self.child, "-TERM").await;
        self.finish().await
    }

    /// Waits for the process to exit; returns its status and the whole log.
    pub async fn finish(mut self) -> (std::process::ExitStatus, String) {
        let status = within("the daemon to exit", self.child.wait())
            .await
            .unwrap();
        // No line is looked for past the end: this waits until stderr is closed.
        within("the end of the daemon's log", self.log.find(usize::MAX, "")).await;
        (status, self.log.text())
    }
}

/// A running `askrelay ask`.
pub struct Asker {
    pub child: Child,
    err: Lines<BufReader<ChildStderr>>,
}

impl Asker {
    /// Its stderr, line by line.
    pub fn err_lines(&mut self) -> &mut Lines<BufReader<ChildStderr>> {
        &mut self.err
    }

    pub async fn wait_stderr(&mut self, needle: &str) -> String {
        within(
            &format!("ask to print {needle:?}"),
            wait_line(&mut self.err, needle),
        )
        .await
        .pop()
        .unwrap_or_default()
    }

    /// Exit code and stdout.
    pub async fn finish(mut self) -> (i32, String) {
        let status = within("ask to exit", self.child.wait()).await.unwrap();
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .await
            .unwrap();
        (status.code().unwrap_or(-1), out)
    }

    /// Exit code, stdout, and the rest of stderr (read to its end first).
    pub async fn finish_with_err(mut self) -> (i32, String, String) {
        let mut err = String::new();
        while let Ok(Some(l)) = self.err_lines().next_line().await {
            err.push_str(&l);
            err.push('\n');
        }
        let (code, out) = self.finish().await;
        (code, out, err)
    }
}

pub async fn signal(child: &Child, sig: &str) {
    let pid = child.id().unwrap().to_string();
    let ok = Command::new("kill")
        .args([sig, &pid])
        .status()
        .await
        .unwrap();
    assert!(ok.success());
}

/// Reads lines until one contains `needle`; every line read, the match last, so that a caller
/// keeping a log loses none of it.
async fn wait_line<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut Lines<R>,
    needle: &str,
) -> Vec<String> {
    let mut read = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        let found = line.contains(needle);
        read.push(line);
        if found {
            return read;
        }
    }
    panic!(
        "the stream ended without {needle:?}; it said:\n{}",
        read.join("\n")
    );
}
