//! The Slack answerer end to end: the real daemon and the real slack-morphism client, over real
//! HTTP and a real Socket Mode WebSocket, against the Slack stand-in
//! (`crates/testkit/src/slack`) on 127.0.0.1. Every body the daemon sends is checked against
//! Block Kit's limits by the stand-in, which fails the test at its end on any violation.
//!
//! The files, by feature: `press.rs` (buttons, selects, multi-select, forms, refusals, late
//! presses), `outbox.rs` (posting once across a crash, 429s), `socket.rs` (the connection's
//! drops and health), `render.rs` (agent text as Slack shows it), `config.rs` (tokens),
//! `http.rs` (the HTTP Events API mode's signed requests), `http_flows.rs` (its forms and
//! batches, delivered over HTTP by the stand-in), `both.rs` (a route in Slack and
//! Discord at once), `confirm.rs` (the confirm word), `edit.rs`
//! (edit-then-approve), `command.rs` (`/askrelay`), `batch.rs` (`/askrelay pending`'s
//! "Allow selected" and "Deny selected"), `grants.rs` ("Allow for …"), `remind.rs` (reminders
//! in the thread, escalation to DMs), `crash.rs` (the binary aborting at a press, a form, an
//! answer stored or the context's files shared, then started again), `quorum.rs` (a route's
//! approvals and the requester rule).

mod batch;
mod both;
mod command;
mod config;
mod confirm;
mod crash;
mod digest;
mod edit;
mod files;
mod grants;
mod http;
mod http_flows;
mod outbox;
mod press;
mod quorum;
mod remind;
mod render;
mod socket;
mod stop;

use crate::harness::*;
use askrelay::client::Client;
use askrelay::config::{Config, Secret};
use askrelay::domain::store::Store;
use askrelay_testkit::slack::{
    Action, Ephemeral, Person, Recorded, Sent, SlackStandIn, StoredView, APP_TOKEN, BOT_TOKEN,
    DEFAULT_CHANNEL,
};
use serde_json::Value;
use std::sync::Arc;

/// The daemon in this process with Slack (the stand-in) as its only answerer.
pub struct Slack {
    pub app: App,
    pub s: SlackStandIn,
}

/// `[slack]` pointed at the stand-in, with its default channel as the default route's.
pub fn slack_config(c: &mut Config, s: &SlackStandIn) {
    c.terminal.enabled = Some(false);
    c.slack.bot_token = Some(Secret::new(BOT_TOKEN));
    c.slack.app_token = Some(Secret::new(APP_TOKEN));
    c.slack.api_base = s.api_base();
    c.slack.channel_id = Some(DEFAULT_CHANNEL.to_owned());
}

impl Slack {
    pub async fn start() -> Slack {
        Self::start_with(|_| {}).await
    }

    /// With a change to the config (after [`slack_config`]).
    pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> Slack {
        let s = SlackStandIn::start().await;
        let app = App::start_with(|c| {
            slack_config(c, &s);
            tweak(c)
        })
        .await;
        within("the Socket Mode connection", s.wait_connected(1)).await;
        Slack { app, s }
    }

    /// With Discord (the harness's stand-in, channel [`CHANNEL`]) beside Slack and no default
    /// Slack channel: `tweak`'s routes say where each copy goes.
    pub async fn start_with_discord(tweak: impl FnOnce(&mut Config)) -> Slack {
        let s = SlackStandIn::start().await;
        let discord = askrelay_testkit::standin::StandIn::start().await;
        let hooks = askrelay::daemon::DaemonHooks::default();
        let app = App::build(Some(discord), hooks, |c| {
            slack_config(c, &s);
            c.slack.channel_id = None;
            tweak(c)
        })
        .await;
        within("the Socket Mode connection", s.wait_connected(1)).await;
        Slack { app, s }
    }

    /// Asks on a new connection and waits for `accepted`.
    pub async fn ask(&self, request_id: &str, input: &Value) -> (Client, Value) {
        let mut c = self.app.client().await;
        c.send_json(&ask_line(request_id, input)).await.unwrap();
        let ev = expect_event(&mut c, "accepted").await;
        (c, ev)
    }

    /// The `n`-th message posted in the default channel (0: the first), once it is there.
    pub async fn message(&self, n: usize) -> Value {
        message(&self.s, n).await
    }

    /// The message as the stand-in holds it now (after updates).
    pub fn now(&self, m: &Value) -> Value {
        self.s.message(DEFAULT_CHANNEL, ts(m)).unwrap()
    }

    /// `who` presses the button with this text on `m`.
    pub async fn press(&self, who: &Person, m: &Value, text: &str) -> Sent {
        self.s
            .click(who, DEFAULT_CHANNEL, ts(m), button(m, text))
            .await
    }

    /// `who` acts on `m` and the stand-in reads the ack; returns it with the interaction.
    pub async fn act(&self, who: &Person, m: &Value, action: Action) -> Sent {
        let sent = self.s.click(who, DEFAULT_CHANNEL, ts(m), action).await;
        within("the ack", self.s.wait_ack(sent.envelope_id())).await;
        sent
    }

    /// The `chat.update` of message `m` whose blocks have no actions any more (its outcome).
    pub async fn outcome_of(&self, m: &Value) -> Recorded {
        outcome_of(&self.s, m).await
    }

    /// The first `chat.update` of message `m` whose body has `needle`.
    pub async fn update_with(&self, m: &Value, needle: &str) -> Recorded {
        let (ts, needle) = (ts(m).to_owned(), needle.to_owned());
        within(
            &format!("an update of the message with {needle:?}"),
            self.s.wait_for_request("chat.update", move |r| {
                r.ok()
                    && r.param_str("ts") == Some(ts.as_str())
                    && r.params.to_string().contains(&needle)
            }),
        )
        .await
    }

    /// The first ephemeral message to `user` whose text has `needle`.
    pub async fn told(&self, user: &str, needle: &str) -> Ephemeral {
        told(&self.s, user, needle).await
    }
}

/// The `n`-th message posted in the default channel (0: the first), once it is there.
pub async fn message(s: &SlackStandIn, n: usize) -> Value {
    s.wait_for_messages(DEFAULT_CHANNEL, n + 1).await.remove(n)
}

/// The `chat.update` of message `m` whose blocks have no actions any more (its outcome).
pub async fn outcome_of(s: &SlackStandIn, m: &Value) -> Recorded {
    let ts = ts(m).to_owned();
    within(
        "the message's outcome",
        s.wait_for_request("chat.update", move |r| {
            r.ok()
                && r.param_str("ts") == Some(ts.as_str())
                && !r.params["blocks"]
                    .as_array()
                    .is_some_and(|b| b.iter().any(|b| b["type"] == "actions"))
        }),
    )
    .await
}

/// The first ephemeral message to `user` whose text has `needle`.
pub async fn told(s: &SlackStandIn, user: &str, needle: &str) -> Ephemeral {
    within(&format!("an ephemeral message to {user}"), async {
        let mut rx = s.subscribe();
        loop {
            if let Some(e) = s
                .ephemerals()
                .into_iter()
                .find(|e| e.user == user && e.text.as_deref().is_some_and(|t| t.contains(needle)))
            {
                return e;
            }
            rx.changed().await.unwrap();
        }
    })
    .await
}

/// The form a press opened (`views.open` with the press's `trigger_id`), once it is open: it
/// may be opened just after the press's ack.
pub async fn form_opened_by(s: &SlackStandIn, pressed: &Sent) -> StoredView {
    let trigger = pressed.trigger_id.clone();
    let open = within(
        "the form",
        s.wait_for_request("views.open", move |r| {
            r.ok() && r.param_str("trigger_id") == trigger.as_deref()
        }),
    )
    .await;
    let id = open.reply["view"]["id"]
        .as_str()
        .expect("an opened view's id");
    s.view(id).expect("the opened view")
}

/// `askrelay serve` (the binary) on the stand-in, as `[slack]` through the environment.
pub fn bin_on(s: &SlackStandIn) -> Bin {
    Bin::new()
        .env("ASKRELAY_SLACK_BOT_TOKEN", BOT_TOKEN)
        .env("ASKRELAY_SLACK_APP_TOKEN", APP_TOKEN)
        .env("ASKRELAY_SLACK__API_BASE", s.api_base())
        .env("ASKRELAY_SLACK__CHANNEL_ID", DEFAULT_CHANNEL)
}

/// `askrelay serve` of `bin` on the stand-in, aborting at the crash point `crash_at` when one
/// is given (`src/crash.rs`); returns once it listens and has a new Socket Mode connection.
pub async fn serve_on(bin: &Bin, s: &SlackStandIn, crash_at: Option<&str>) -> Served {
    let opened = s.connections_opened();
    let mut cmd = bin.cmd(&["serve"]);
    if let Some(point) = crash_at {
        cmd.env(askrelay::crash::ENV, point);
    }
    let served = bin.serve_cmd(cmd).await;
    within("the Socket Mode connection", s.wait_connected(opened + 1)).await;
    served
}

/// The daemon's deliberate abort at the crash point `point`: death by SIGABRT (not any
/// failure), said in its log.
pub async fn aborted(served: Served, point: &str) {
    use std::os::unix::process::ExitStatusExt;
    let (status, log) = served.finish().await;
    assert_eq!(
        status.signal(),
        Some(6),
        "{point}: the daemon should abort at the crash point; it exited with {status}:\n{log}"
    );
    assert!(
        log.contains(&format!("{}={point}", askrelay::crash::ENV)),
        "{log}"
    );
}

/// The store of `bin`'s database, opened beside its daemon (or after it died).
pub async fn store_of(bin: &Bin) -> Arc<dyn Store> {
    askrelay::store::open(bin.database_url(), &Default::default(), &Default::default())
        .await
        .unwrap()
}

/// A message's `ts`.
pub fn ts(m: &Value) -> &str {
    m["ts"].as_str().expect("a message has a ts")
}

/// Every element of the message's blocks (actions' elements and sections' accessories), with
/// its block's id.
pub fn elements(m: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for b in m["blocks"].as_array().into_iter().flatten() {
        let id = b["block_id"].as_str().unwrap_or_default().to_owned();
        for e in b["elements"].as_array().into_iter().flatten() {
            if e["type"] != "mrkdwn" && e["type"] != "plain_text" {
                out.push((id.clone(), e.clone()));
            }
        }
        if b["accessory"].is_object() {
            out.push((id.clone(), b["accessory"].clone()));
        }
    }
    out
}

/// The button with this text.
pub fn button(m: &Value, text: &str) -> Action {
    let (block, e) = elements(m)
        .into_iter()
        .find(|(_, e)| e["type"] == "button" && e["text"]["text"] == text)
        .unwrap_or_else(|| panic!("no button {text:?} on {m}"));
    Action::button(&block, e["action_id"].as_str().unwrap())
}

/// The element of this type (`static_select`, `multi_static_select`): its block and action ids.
pub fn element(m: &Value, kind: &str) -> (String, String) {
    let (block, e) = elements(m)
        .into_iter()
        .find(|(_, e)| e["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} on {m}"));
    (block, e["action_id"].as_str().unwrap().to_owned())
}

pub fn alice() -> Person {
    Person::new("U0ALICE01", "alice")
}

pub fn bob() -> Person {
    Person::new("U0BOB0001", "bob")
}
