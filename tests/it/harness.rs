//! One harness for every integration test:
//! - [`App`]: the real daemon in-process (socket and SQLite file in a temp dir), optionally with
//!   the Discord stand-in, and helpers that click, select and submit modals the way Discord
//!   does;
//! - [`Bin`]: the real `askrelay` binary, for what only a process shows (signals, exit codes,
//!   stderr, crashes, another uid).
//!
//! Every wait has a deadline and says what it waited for when it runs out, so a broken
//! behaviour fails the test instead of hanging it.
//!
//! The store is a SQLite file in the test's temp dir, or, with `ASKRELAY_TEST_BACKEND=postgres`,
//! a fresh PostgreSQL database per test ([`TestDb`]): the same tests, run twice by `.ci/run`.

use askrelay::client::Client;
use askrelay::config::{Config, Secret, Snowflake};
use askrelay::daemon::{Daemon, DaemonHooks};
use askrelay::domain::Phase;
use askrelay_testkit::fixtures::{self, At, Clicker};
use askrelay_testkit::scratch::TestDb;
use askrelay_testkit::standin::{Recorded, StandIn};
use serde_json::{json, Value};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, Command};

/// The default route's channel in the stand-in.
pub const CHANNEL: u64 = 100;
/// How long any single wait may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(30);

static NEXT_INTERACTION: AtomicU64 = AtomicU64::new(900_000);

/// Awaits `f`, failing the test with `what` if it takes longer than [`WAIT`].
pub async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    match tokio::time::timeout(WAIT, f).await {
        Ok(v) => v,
        Err(_) => panic!("gave up after {} s waiting for {what}", WAIT.as_secs()),
    }
}

/// Ends a test that cannot run here, saying so: on stderr, and in `target/skipped-tests.txt`,
/// which `tests/run` prints at the end, so that a skip is never mistaken for a pass.
pub fn skip(test: &str, why: &str) {
    askrelay_testkit::skipped::record(test, why);
}

/// A config rooted in `dir`, with the terminal answerer on and no Discord.
pub fn test_config(dir: &Path) -> Config {
    let mut config = Config {
        socket_path: dir.join("askrelay.sock"),
        database_url: TestDb::new(&dir.join("state/askrelay.db")).leak(),
        ..Config::default()
    };
    config.terminal.enabled = Some(true);
    config
}

/// The daemon in this process.
pub struct App {
    pub dir: TempDir,
    pub config: Config,
    pub daemon: Option<Daemon>,
    standin: Option<StandIn>,
    hooks: DaemonHooks,
    /// Declared last: dropped after the daemon.
    _db: TestDb,
}

impl App {
    /// The terminal answerer only.
    pub async fn start() -> App {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> App {
        Self::build(None, DaemonHooks::default(), tweak).await
    }

    /// Discord (the stand-in) only, on channel [`CHANNEL`].
    pub async fn discord() -> App {
        Self::discord_with(|_| {}).await
    }

    pub async fn discord_with(tweak: impl FnOnce(&mut Config)) -> App {
        Self::build(Some(StandIn::start().await), DaemonHooks::default(), tweak).await
    }

    /// The general form: an optional stand-in, hooks, and a change to the config.
    pub async fn build(
        standin: Option<StandIn>,
        hooks: DaemonHooks,
        tweak: impl FnOnce(&mut Config),
    ) -> App {
        let dir = tempfile::tempdir().unwrap();
        let db = TestDb::new(&dir.path().join("state/askrelay.db"));
        let mut config = Config {
            socket_path: dir.path().join("askrelay.sock"),
            database_url: db.url.clone(),
            ..Config::default()
        };
        config.terminal.enabled = Some(true);
        if let Some(s) = &standin {
            config.terminal.enabled = Some(false);
            config.discord.token = Some(Secret::new(
                "MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.test-bot-token",
            ));
            config.discord.api_base = s.base_url.clone();
            config.discord.channel_id = Some(Snowflake(CHANNEL));
            config.discord.retry_max_delay_ms = 20;
        }
        tweak(&mut config);
        let daemon = within(
            "the daemon to start",
            Daemon::start_with(config.clone(), hooks.clone()),
        )
        .await
        .unwrap();
        if let Some(s) = &standin {
            within("the gateway session", s.wait_ready()).await;
        }
        App {
            dir,
            config,
            daemon: Some(daemon),
            standin,
            hooks,
            _db: db,
        }
    }

    pub fn socket(&self) -> PathBuf {
        self.config.socket_path.clone()
    }

    pub async fn client(&self) -> Client {
        Client::connect(&self.config.socket_path).await.unwrap()
    }

    pub fn hub(&self) -> &askrelay::domain::Hub {
        &self.daemon.as_ref().unwrap().hub
    }

    pub fn store(&self) -> &std::sync::Arc<dyn askrelay::domain::store::Store> {
        self.daemon.as_ref().unwrap().store()
    }

    /// The Discord stand-in (only for an app started with Discord).
    pub fn standin(&self) -> &StandIn {
        self.standin
            .as_ref()
            .expect("this app runs without Discord")
    }

    pub async fn stop(&mut self) {
        if let Some(d) = self.daemon.take() {
            within("the daemon to shut down", d.shutdown()).await;
        }
    }

    pub async fn restart(&mut self) {
        let identified = self.standin.as_ref().map(|s| s.identify_count());
        self.stop().await;
        self.daemon = Some(
            within(
                "the daemon to start again",
                Daemon::start_with(self.config.clone(), self.hooks.clone()),
            )
            .await
            .unwrap(),
        );
        if let (Some(s), Some(n)) = (&self.standin, identified) {
            within("a new gateway session", s.wait_identify_count(n + 1)).await;
        }
    }

    /// Waits (on the hub's watch channel, not by polling) until the request has ended.
    pub async fn wait_ended(&self, request_id: &str) {
        if let Some(mut rx) = self.hub().observe(request_id) {
            let _ = within(
                &format!("request {request_id} to end"),
                rx.wait_for(|p| matches!(p, Phase::Ended(_))),
            )
            .await;
        }
    }

    /// Answers from the terminal over the socket and returns the reply.
    pub async fn answer(&self, request_id: &str, question: &str, select: &[&str]) -> Value {
        self.client()
            .await
            .call_json(&json!({"op": "answer", "request_id": request_id, "question": question, "select": select, "by": "tester"}))
            .await
            .unwrap()
    }

    /// Asks on a new connection and waits for `accepted`; returns the client and the event.
    pub async fn ask(&self, request_id: &str, input: &Value) -> (Client, Value) {
        let mut c = self.client().await;
        c.send_json(&ask_line(request_id, input)).await.unwrap();
        let ev = expect_event(&mut c, "accepted").await;
        // A repair pass that found the new request before its delivery did (one runs when the
        // gateway is ready, so right at start-up) posts it in the background, and `accepted`
        // comes before the posts, without links. The tests read the messages right after
        // `accepted`: wait for the posts as the delivery would have.
        if ev["posting"] == "the questions are being posted in the background" {
            self.wait_posted(request_id).await;
        }
        (c, ev)
    }

    /// Waits until every question of `request_id` was created in Discord (the stand-in
    /// answered the create carrying its nonce).
    async fn wait_posted(&self, request_id: &str) {
        use askrelay::answerer::discord::custom_id::nonce;
        let req = self.store().by_id(request_id).await.unwrap().unwrap();
        for idx in 0..req.questions.len() {
            let n = nonce(&req.token, idx);
            within(
                &format!("question {idx} of {request_id} to be posted"),
                self.standin().wait_for_request(|r| {
                    r.method == "POST"
                        && r.status == 200
                        && r.body.as_ref().is_some_and(|b| b["nonce"] == n.as_str())
                }),
            )
            .await;
        }
    }

    /// The messages posted in `channel`, oldest first, as the stand-in holds them now.
    pub fn messages(&self, channel: u64) -> Vec<Value> {
        self.standin().messages_in(channel)
    }

    /// Where a message is, for an interaction on it.
    pub fn at(&self, message: &Value) -> At {
        at_on(self.standin(), message)
    }

    /// Sends an interaction (checking first that serenity can parse it) and returns the
    /// callback body the daemon answered it with.
    pub async fn interact(&self, payload: Value) -> Value {
        interact_on(self.standin(), payload).await
    }

    /// A fresh interaction id.
    pub fn next_id(&self) -> u64 {
        NEXT_INTERACTION.fetch_add(1, Ordering::SeqCst)
    }

    pub fn click_payload(&self, message: &Value, who: &Clicker, custom_id: &str) -> Value {
        fixtures::component_click(self.next_id(), &self.at(message), who, custom_id)
    }

    /// Clicks the control with this custom_id.
    pub async fn click(&self, message: &Value, who: &Clicker, custom_id: &str) -> Value {
        self.interact(self.click_payload(message, who, custom_id))
            .await
    }

    /// Clicks the button with this label.
    pub async fn press(&self, message: &Value, who: &Clicker, label: &str) -> Value {
        self.click(message, who, &control(message, label)).await
    }

    pub async fn select(
        &self,
        message: &Value,
        who: &Clicker,
        custom_id: &str,
        values: &[&str],
    ) -> Value {
        self.interact(fixtures::select_values(
            self.next_id(),
            &self.at(message),
            who,
            custom_id,
            values,
        ))
        .await
    }

    pub async fn submit_modal(
        &self,
        message: &Value,
        who: &Clicker,
        modal_custom_id: &str,
        text: &str,
    ) -> Value {
        self.interact(fixtures::modal_submit(
            self.next_id(),
            &self.at(message),
            who,
            modal_custom_id,
            text,
        ))
        .await
    }

    /// Waits for the PATCH that edits `message` and returns its body.
    pub async fn edit_of(&self, message: &Value) -> Value {
        let path = format!("/messages/{}", id_of(message));
        within(
            &format!("an edit of message {}", id_of(message)),
            self.standin()
                .wait_for_request(|r| r.method == "PATCH" && r.path.ends_with(&path)),
        )
        .await
        .body
        .unwrap()
    }

    /// Every body Discord received validates against the OpenAPI spec and Discord's limits.
    pub fn assert_payloads_valid(&self) {
        assert_bodies_valid(self.standin());
    }

    /// Every message body Discord received so far (creates, edits, interaction callbacks).
    pub fn message_bodies(&self) -> Vec<Value> {
        self.standin()
            .requests()
            .into_iter()
            .filter(|r| {
                r.path.ends_with("/messages")
                    || r.path.contains("/messages/")
                    || r.path.ends_with("/callback")
            })
            .filter_map(|r| r.body)
            .collect()
    }
}

/// What a person sees of a markdown text Discord renders (agent text is escaped in it).
pub fn shown(text: &str) -> String {
    askrelay_testkit::discord_markdown::shown(text)
}

/// What a person sees of a message body: each markdown text (content, embed titles,
/// descriptions, fields) as shown, one a line.
pub fn shown_body(body: &Value) -> String {
    askrelay_testkit::discord_markdown::markdown_texts(body)
        .into_iter()
        .map(|(_, text)| shown(&text))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Fails unless everything `body` shows is askrelay's own markup or inert text: every live
/// markdown construct (in Discord's model, `askrelay_testkit::discord_markdown`) is bold text
/// holding none of `agent_words`, a timestamp, a link to a Discord message, or one of
/// `mentions`; and every plain text (footers, labels) holds nothing that reads as a mention or a
/// link.
pub fn assert_markup_is_ours(body: &Value, agent_words: &[&str], mentions: &[&str]) {
    use askrelay_testkit::discord_markdown::{live_in, plain_is_inert, plain_texts, Live};
    for (at, live) in live_in(body) {
        let ours = match &live {
            Live::Format("bold", text) => !agent_words.iter().any(|w| text.contains(w)),
            Live::Timestamp(_) => true,
            Live::Link(target) => target.starts_with("https://discord.com/channels/"),
            Live::Mention(m) => mentions.contains(&m.as_str()),
            _ => false,
        };
        assert!(
            ours,
            "{at} shows live {live:?}, which askrelay did not write: {body}"
        );
    }
    for text in plain_texts(body) {
        assert!(
            plain_is_inert(&text),
            "a plain text reads as markup: {text:?} in {body}"
        );
    }
}

/// Every body the stand-in recorded validates against the OpenAPI spec and Discord's limits,
/// and there was at least one.
/// Where a message of `standin` is, for an interaction on it.
/// A fresh interaction id, for a payload built by hand.
pub fn next_interaction_id() -> u64 {
    NEXT_INTERACTION.fetch_add(1, Ordering::SeqCst)
}

pub fn at_on(standin: &StandIn, message: &Value) -> At {
    At {
        application_id: standin.application_id(),
        guild_id: (!standin.is_dm(channel_of(message))).then(|| standin.guild_id()),
        channel_id: channel_of(message),
        message_id: id_of(message),
    }
}

/// Sends an interaction through `standin`'s gateway (checking first that serenity can parse it)
/// and returns the callback body a daemon answered it with.
pub async fn interact_on(standin: &StandIn, payload: Value) -> Value {
    let id = payload["id"].as_str().unwrap().to_owned();
    fixtures::parse(&payload);
    standin.send_interaction(payload).await;
    let rec = within(
        &format!("the callback of interaction {id}"),
        standin.wait_for_request(|r| r.path.contains(&format!("/interactions/{id}/"))),
    )
    .await;
    rec.body.unwrap_or(Value::Null)
}

/// Waits for the edit of interaction `id`'s own reply (`@original`, the way a deferred reply
/// or a deferred listing is shown), saying `what` it waits for.
pub async fn original_edit(standin: &StandIn, id: &str, what: &str) -> Recorded {
    let original = format!("/tok{id}/messages/@original");
    within(
        what,
        standin.wait_for_request(|r| r.method == "PATCH" && r.path.ends_with(&original)),
    )
    .await
}

/// Presses the button labelled `label` on `message`, as `who`, through `standin`.
pub async fn press_on(standin: &StandIn, message: &Value, who: &Clicker, label: &str) -> Value {
    let id = NEXT_INTERACTION.fetch_add(1, Ordering::SeqCst);
    let payload =
        fixtures::component_click(id, &at_on(standin, message), who, &control(message, label));
    interact_on(standin, payload).await
}

pub fn assert_bodies_valid(standin: &StandIn) {
    if askrelay_testkit::discord_schema::validation_skipped() {
        return;
    }
    match askrelay_testkit::standin::check_bodies(&standin.requests()) {
        Ok(0) => panic!("no body was checked"),
        Ok(_) => {}
        Err(e) => panic!("{e}"),
    }
}

pub fn id_of(message: &Value) -> u64 {
    message["id"].as_str().unwrap().parse().unwrap()
}

pub fn channel_of(message: &Value) -> u64 {
    message["channel_id"].as_str().unwrap().parse().unwrap()
}

/// Every custom_id of a message's components, in order, with its label (or placeholder).
pub fn controls(message: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for row in message["components"].as_array().into_iter().flatten() {
        for c in row["components"].as_array().into_iter().flatten() {
            let label = c["label"]
                .as_str()
                .or(c["placeholder"].as_str())
                .unwrap_or("");
            out.push((
                c["custom_id"].as_str().unwrap_or("").to_owned(),
                label.to_owned(),
            ));
        }
    }
    out
}

/// The custom_id of the control with this label.
pub fn control(message: &Value, label: &str) -> String {
    controls(message)
        .into_iter()
        .find(|(_, l)| l == label)
        .unwrap_or_else(|| panic!("no control labelled {label:?} in {:?}", controls(message)))
        .0
}

/// The custom_id of the message's select menu.
pub fn select_id(message: &Value) -> String {
    message["components"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["components"].as_array().unwrap().iter())
        .find(|c| c["type"] == 3)
        .expect("a select menu")["custom_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The winning click's callback: type 7 (update message) with the message's final state, no
/// components left. Returns that state.
pub fn final_state(cb: &Value) -> &Value {
    assert_eq!(cb["type"], 7, "the winning click updates the message: {cb}");
    assert_eq!(cb["data"]["components"], json!([]), "{cb}");
    &cb["data"]
}

/// An ephemeral reply (type 4, flag 64); returns its text.
pub fn ephemeral(cb: &Value) -> &str {
    assert_eq!(cb["type"], 4, "an ephemeral reply: {cb}");
    assert_eq!(cb["data"]["flags"].as_u64().unwrap_or(0) & 64, 64, "{cb}");
    cb["data"]["content"].as_str().unwrap()
}

pub fn is_ephemeral(cb: &Value) -> bool {
    cb["type"] == 4 && cb["data"]["flags"].as_u64().unwrap_or(0) & 64 == 64
}

pub fn alice() -> Clicker {
    Clicker::new(4242, "alice", &[])
}

pub fn bob() -> Clicker {
    Clicker::new(4343, "bob", &[])
}

/// A one-question yes/no tool input.
pub fn yes_no(id: &str) -> Value {
    json!({"questions": [{
        "id": id,
        "question": "Proceed with the destructive cleanup?",
        "header": "Confirm",
        "options": [
            {"label": "Yes, delete them (Recommended)", "description": "Removes the three stale files."},
            {"label": "No, keep them", "description": "Aborts the cleanup."}
        ],
        "multiSelect": false
    }]})
}

/// `n` options labelled "Option 0" …
pub fn options(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"label": format!("Option {i}")}))
        .collect()
}

/// An `ask` line for `input` with `request_id`.
pub fn ask_line(request_id: &str, input: &Value) -> Value {
    let mut v = input.clone();
    v["op"] = json!("ask");
    v["request_id"] = json!(request_id);
    v
}

/// The next line, parsed; fails the test on EOF, a read error, or after [`WAIT`].
pub async fn recv(c: &mut Client, what: &str) -> Value {
    within(what, c.recv_json())
        .await
        .unwrap_or_else(|e| panic!("reading while waiting for {what}: {e:#}"))
        .unwrap_or_else(|| panic!("the daemon closed the connection while waiting for {what}"))
}

/// Reads events until one with `event` == `name`; fails on EOF, on an error event (unless
/// that is what is awaited) or after [`WAIT`].
pub async fn expect_event(c: &mut Client, name: &str) -> Value {
    within(&format!("a {name:?} event"), async {
        loop {
            let ev = c
                .recv_json()
                .await
                .unwrap_or_else(|e| panic!("reading while waiting for {name}: {e:#}"))
                .unwrap_or_else(|| panic!("connection closed while waiting for {name}"));
            if ev["event"] == name {
                return ev;
            }
            if ev["event"] == "error" && name != "error" {
                panic!("expected {name}, got {ev}");
            }
        }
    })
    .await
}

/// Expects the daemon to close the connection next (EOF), with nothing before it.
pub async fn expect_eof(c: &mut Client, why: &str) {
    match within(why, c.recv_line()).await {
        Ok(None) => {}
        Ok(Some(line)) => panic!("{why}: expected the connection to close, got {line}"),
        Err(e) => panic!("{why}: expected a clean close, got {e:#}"),
    }
}

// --- the binary --------------------------------------------------------------------------------

pub const BIN: &str = env!("CARGO_BIN_EXE_askrelay");

/// `askrelay` with an empty environment (PATH only) whose every default place is inside `dir`:
/// the only way the tests start it (`isolation::`), so that no test ever reaches the developer's
/// own daemon at `/run/user/$UID/askrelay.sock`, or leaves a socket there. See [`private_places`].
pub fn askrelay_in(dir: &Path) -> Command {
    let mut c = Command::new(BIN);
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

/// The `askrelay` binary with a clean environment: a socket and a database in its directory.
pub struct Bin {
    dir: PathBuf,
    _owned: Option<TempDir>,
    env: Vec<(String, String)>,
    _db: Option<TestDb>,
}

impl Bin {
    /// In a temp dir of its own.
    pub fn new() -> Bin {
        let t = tempfile::tempdir().unwrap();
        let mut b = Bin::in_dir(t.path());
        b._owned = Some(t);
        b
    }

    /// In `dir` (which outlives it).
    pub fn in_dir(dir: &Path) -> Bin {
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
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.join("askrelay.sock")
    }

    /// Sets (or replaces) an environment variable of every command.
    pub fn env(mut self, key: &str, value: impl ToString) -> Bin {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.to_string()));
        self
    }

    /// Removes an environment variable from every command.
    pub fn without(mut self, key: &str) -> Bin {
        self.env.retain(|(k, _)| k != key);
        self
    }

    /// Discord through the stand-in, on [`CHANNEL`].
    pub fn discord(self, standin: &StandIn) -> Bin {
        self.env(
            "ASKRELAY_DISCORD__TOKEN",
            "MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.test-bot-token",
        )
        .env("ASKRELAY_DISCORD__API_BASE", &standin.base_url)
        .env("ASKRELAY_DISCORD__CHANNEL_ID", CHANNEL)
        .env("ASKRELAY_DISCORD__RETRY_MAX_DELAY_MS", 20)
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = askrelay_in(&self.dir);
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
