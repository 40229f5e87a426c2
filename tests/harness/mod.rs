//! Starts the real daemon in-process on a temp dir (socket + SQLite file) and drives it as a
//! client would.
#![allow(dead_code)]

use askrelay::client::Client;
use askrelay::config::Config;
use askrelay::core::Phase;
use askrelay::daemon::Daemon;
use serde_json::{json, Value};
use std::path::PathBuf;
use tempfile::TempDir;

pub struct App {
    pub dir: TempDir,
    pub config: Config,
    pub daemon: Option<Daemon>,
}

/// A config rooted in `dir`, with the terminal answerer on and no Discord.
pub fn test_config(dir: &std::path::Path) -> Config {
    let mut config = Config {
        socket_path: dir.join("askrelay.sock"),
        database_url: format!("sqlite://{}", dir.join("state/askrelay.db").display()),
        ..Config::default()
    };
    config.terminal.enabled = Some(true);
    config
}

impl App {
    pub async fn start() -> App {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> App {
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config(dir.path());
        tweak(&mut config);
        let daemon = Daemon::start(config.clone()).await.unwrap();
        App {
            dir,
            config,
            daemon: Some(daemon),
        }
    }

    pub fn socket(&self) -> PathBuf {
        self.config.socket_path.clone()
    }

    pub async fn client(&self) -> Client {
        Client::connect(&self.config.socket_path).await.unwrap()
    }

    pub async fn stop(&mut self) {
        if let Some(d) = self.daemon.take() {
            d.shutdown().await;
        }
    }

    pub async fn restart(&mut self) {
        self.stop().await;
        self.daemon = Some(Daemon::start(self.config.clone()).await.unwrap());
    }

    pub fn hub(&self) -> &askrelay::core::Hub {
        &self.daemon.as_ref().unwrap().hub
    }

    pub fn store(&self) -> &std::sync::Arc<dyn askrelay::core::store::Store> {
        self.daemon.as_ref().unwrap().store()
    }

    /// Waits (on the hub's watch channel, not by polling) until the request has ended.
    pub async fn wait_ended(&self, request_id: &str) {
        if let Some(mut rx) = self.hub().observe(request_id) {
            let _ = rx.wait_for(|p| matches!(p, Phase::Ended(_))).await;
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

/// An `ask` line for `input` with `request_id`.
pub fn ask_line(request_id: &str, input: &Value) -> Value {
    let mut v = input.clone();
    v["op"] = json!("ask");
    v["request_id"] = json!(request_id);
    v
}

/// Reads events until one with `event` == `name`; panics on EOF.
pub async fn expect_event(c: &mut Client, name: &str) -> Value {
    loop {
        let ev = c
            .recv_json()
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("connection closed while waiting for {name}"));
        if ev["event"] == name {
            return ev;
        }
        if ev["event"] == "error" && name != "error" {
            panic!("expected {name}, got {ev}");
        }
    }
}
