//! Interactions sent through a Discord stand-in the way Discord sends them, and what a message
//! or a callback shows: its controls, its markdown as a person sees it, and whether every body
//! Discord received was valid.

use super::within;
use crate::fixtures::{self, At, Clicker};
use crate::standin::{Recorded, StandIn};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_INTERACTION: AtomicU64 = AtomicU64::new(900_000);

/// What a person sees of a markdown text Discord renders (agent text is escaped in it).
pub fn shown(text: &str) -> String {
    crate::discord_markdown::shown(text)
}

/// What a person sees of a message body: each markdown text (content, embed titles,
/// descriptions, fields) as shown, one a line.
pub fn shown_body(body: &Value) -> String {
    crate::discord_markdown::markdown_texts(body)
        .into_iter()
        .map(|(_, text)| shown(&text))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Fails unless everything `body` shows is askrelay's own markup or inert text: every live
/// markdown construct (in Discord's model, `crate::discord_markdown`) is bold text
/// holding none of `agent_words`, a timestamp, a link to a Discord message, or one of
/// `mentions`; and every plain text (footers, labels) holds nothing that reads as a mention or a
/// link.
pub fn assert_markup_is_ours(body: &Value, agent_words: &[&str], mentions: &[&str]) {
    use crate::discord_markdown::{live_in, plain_is_inert, plain_texts, Live};
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

/// A fresh interaction id, for a payload built by hand.
pub fn next_interaction_id() -> u64 {
    NEXT_INTERACTION.fetch_add(1, Ordering::SeqCst)
}

/// Where a message of `standin` is, for an interaction on it.
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

/// Every body the stand-in recorded validates against the OpenAPI spec and Discord's limits,
/// and there was at least one.
pub fn assert_bodies_valid(standin: &StandIn) {
    if crate::discord_schema::validation_skipped() {
        return;
    }
    match crate::standin::check_bodies(&standin.requests()) {
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
