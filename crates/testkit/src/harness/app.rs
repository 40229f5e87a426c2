//! [`App`]: the daemon in this process, with its temp dir, its store and, when asked for, the
//! Discord stand-in it talks to.

use super::discord::{
    assert_bodies_valid, at_on, control, id_of, interact_on, next_interaction_id,
};
use super::socket::{ask_line, expect_event};
use super::{within, CHANNEL};
use crate::fixtures::{self, At, Clicker};
use crate::scratch::TestDb;
use crate::standin::StandIn;
use askrelay::client::Client;
use askrelay::config::{Config, Secret, Snowflake};
use askrelay::daemon::{Daemon, DaemonHooks};
use askrelay::domain::Phase;
use serde_json::{json, Value};
use std::path::PathBuf;
use tempfile::TempDir;

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
        next_interaction_id()
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
