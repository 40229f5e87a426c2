//! Items 1 and 2 on Slack (issue 41): the ask and answer paths through the real daemon in this
//! process, Slack through its stand-in (real slack-morphism over real HTTP and a real Socket
//! Mode WebSocket), each sample beside a sample of the same floors as Discord's, so that the
//! two answerers' ratios compare.

use super::floors::{AnswerFloor, AskFloor};
use super::helpers::{ask_line, bounded, connect, expect_event};
use super::report::Latency;
use super::STEP_LIMIT;
use crate::slack::{Action, Person, Recorded, SlackStandIn, APP_TOKEN, BOT_TOKEN, DEFAULT_CHANNEL};
use askrelay::config::{Config, Secret};
use askrelay::daemon::Daemon;
use serde_json::Value;
use std::time::Instant;

/// The figures of Slack's items 1 and 2, with the floors sampled beside them.
#[derive(Clone, Debug)]
pub struct SlackPaths {
    /// Write `ask` → the stand-in has the `chat.postMessage`.
    pub ask: Latency,
    /// The press's envelope written to the socket → `answered` read.
    pub answer: Latency,
    pub ask_floor: Latency,
    pub answer_floor: Latency,
}

/// Each iteration asks on a fresh connection (timed: write → the stand-in has the
/// `chat.postMessage`), waits for `accepted`, presses the first button (timed: the envelope
/// written → `answered` read), then waits for the message's `chat.update`, so that the next
/// iteration starts quiet. Before the ask and before the press, a sample of that path's floor.
pub(super) async fn slack_paths(n: usize, warmup: usize) -> SlackPaths {
    let mut ask_floor = AskFloor::start().await;
    let mut answer_floor = AnswerFloor::start().await;
    let s = SlackStandIn::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config {
        socket_path: dir.path().join("askrelay.sock"),
        database_url: format!(
            "sqlite://{}",
            dir.path().join("state/askrelay.db").display()
        ),
        ..Config::default()
    };
    config.terminal.enabled = Some(false);
    config.slack.bot_token = Some(Secret::new(BOT_TOKEN));
    config.slack.app_token = Some(Secret::new(APP_TOKEN));
    config.slack.api_base = s.api_base();
    config.slack.channel_id = Some(DEFAULT_CHANNEL.to_owned());
    let daemon = Daemon::start(config.clone()).await.unwrap();
    bounded(
        "the Socket Mode connection",
        STEP_LIMIT,
        s.wait_connected(1),
    )
    .await;
    let who = Person::new("U0BENCH001", "bench-person");
    let (mut asks, mut answers) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut ask_floors, mut answer_floors) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..warmup + n {
        let request_id = format!("slack-path-{i}");
        let ask_floor_time = ask_floor.sample().await;
        let mut c = connect(&config.socket_path).await;
        let mut line = ask_line(&request_id, None).to_string();
        line.push('\n');
        let t0 = Instant::now();
        c.send_raw(line.as_bytes()).await.unwrap();
        expect_event(&mut c, "accepted").await;
        let posted = s
            .wait_for_requests(i + 1, "chat.postMessage", Recorded::ok)
            .await;
        let ask_time = posted[i].at.saturating_duration_since(t0);
        let message = s
            .messages(DEFAULT_CHANNEL)
            .pop()
            .expect("bench: the question is in the channel");
        let answer_floor_time = answer_floor.sample().await;
        let ts = message["ts"].as_str().unwrap_or_default().to_owned();
        let sent = s
            .click(&who, DEFAULT_CHANNEL, &ts, first_button(&message))
            .await;
        let answered = expect_event(&mut c, "answered").await;
        let answer_time = sent.envelope.sent_at.elapsed();
        assert_eq!(answered["request_id"], request_id.as_str());
        s.wait_for_requests(i + 1, "chat.update", Recorded::ok)
            .await;
        if i >= warmup {
            asks.push(ask_time);
            answers.push(answer_time);
            ask_floors.push(ask_floor_time);
            answer_floors.push(answer_floor_time);
        }
    }
    ask_floor.stop().await;
    answer_floor.stop().await;
    daemon.shutdown().await;
    s.assert_no_violations();
    SlackPaths {
        ask: Latency::of(asks),
        answer: Latency::of(answers),
        ask_floor: Latency::of(ask_floors),
        answer_floor: Latency::of(answer_floors),
    }
}

/// The first button of the message's actions block.
fn first_button(message: &Value) -> Action {
    message["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "actions")
        .find_map(|b| {
            let e = b["elements"].as_array()?.first()?;
            Some(Action::Button {
                block_id: b["block_id"].as_str()?.to_owned(),
                action_id: e["action_id"].as_str()?.to_owned(),
            })
        })
        .unwrap_or_else(|| panic!("bench: no button in {message}"))
}
