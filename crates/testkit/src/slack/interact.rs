//! Interactions as Slack sends them: a person presses a button or picks in a select on a message
//! (or an ephemeral message, or a modal), submits or closes a modal, or runs a slash command. The
//! payload is built ([`super::fixtures`]) from the stand-in's current copy of the message or view,
//! with the element's own text and value (an action on an element that is not there fails the
//! test: Slack could not send it), the message's `state.values` (what this person picked in
//! each of its selects, kept until the message changes, else the selects' initial options),
//! a trigger_id the stand-in remembers for `views.open`, and a
//! response_url that points at it; checked against slack-morphism's types; then sent in an
//! envelope over Socket Mode.

use serde_json::Value;

use super::fixtures::{self, Person, SelectedOption, ViewValues};
use super::socket::{random_hex, EnvelopeType, SentEnvelope};
use super::{ResponseUrl, SlackStandIn, St, TriggerRec};

/// What a person does to an element, found by its block_id and action_id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Presses a button.
    Button { block_id: String, action_id: String },
    /// Picks the option with this value in a static_select.
    StaticSelect {
        block_id: String,
        action_id: String,
        value: String,
    },
    /// Leaves the options with these values picked in a multi_static_select.
    MultiStaticSelect {
        block_id: String,
        action_id: String,
        values: Vec<String>,
    },
}

impl Action {
    pub fn button(block_id: &str, action_id: &str) -> Action {
        Action::Button {
            block_id: block_id.to_owned(),
            action_id: action_id.to_owned(),
        }
    }

    pub fn static_select(block_id: &str, action_id: &str, value: &str) -> Action {
        Action::StaticSelect {
            block_id: block_id.to_owned(),
            action_id: action_id.to_owned(),
            value: value.to_owned(),
        }
    }

    pub fn multi_static_select(block_id: &str, action_id: &str, values: &[&str]) -> Action {
        Action::MultiStaticSelect {
            block_id: block_id.to_owned(),
            action_id: action_id.to_owned(),
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        }
    }

    fn ids(&self) -> (&str, &str) {
        match self {
            Action::Button {
                block_id,
                action_id,
            }
            | Action::StaticSelect {
                block_id,
                action_id,
                ..
            }
            | Action::MultiStaticSelect {
                block_id,
                action_id,
                ..
            } => (block_id, action_id),
        }
    }

    /// The `actions[]` entry, from the element in `blocks`; what is missing otherwise.
    fn entry(&self, blocks: &Value, action_ts: &str) -> Result<Value, String> {
        let (block_id, action_id) = self.ids();
        let element = find_element(blocks, block_id, action_id)?;
        let kind = element["type"].as_str().unwrap_or_default();
        let option = |value: &str| {
            options_of(element)
                .into_iter()
                .find(|o| o["value"] == value)
                .map(|o| SelectedOption::new(value, o["text"]["text"].as_str().unwrap_or_default()))
                .ok_or_else(|| format!("{kind} {action_id} has no option with value {value:?}"))
        };
        match (self, kind) {
            (Action::Button { .. }, "button") => Ok(fixtures::button_action(
                block_id,
                action_id,
                element["text"]["text"].as_str().unwrap_or_default(),
                element["value"].as_str(),
                action_ts,
            )),
            (Action::StaticSelect { value, .. }, "static_select") => Ok(
                fixtures::static_select_action(block_id, action_id, &option(value)?, action_ts),
            ),
            (Action::MultiStaticSelect { values, .. }, "multi_static_select") => {
                let picked = values
                    .iter()
                    .map(|v| option(v))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(fixtures::multi_static_select_action(
                    block_id, action_id, &picked, action_ts,
                ))
            }
            _ => Err(format!(
                "{action_id} in block {block_id} is a {kind}, not what {self:?} acts on"
            )),
        }
    }
}

/// The element with `action_id` in the block with `block_id`.
fn find_element<'v>(
    blocks: &'v Value,
    block_id: &str,
    action_id: &str,
) -> Result<&'v Value, String> {
    let block = blocks
        .as_array()
        .into_iter()
        .flatten()
        .find(|b| b["block_id"] == block_id)
        .ok_or_else(|| format!("no block with block_id {block_id:?} among {blocks}"))?;
    let mut candidates: Vec<&Value> = block["elements"].as_array().into_iter().flatten().collect();
    candidates.extend([&block["accessory"], &block["element"]]);
    candidates
        .into_iter()
        .find(|e| e["action_id"] == action_id)
        .ok_or_else(|| format!("no element with action_id {action_id:?} in block {block_id:?}"))
}

fn options_of(element: &Value) -> Vec<&Value> {
    let mut all: Vec<&Value> = element["options"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    for g in element["option_groups"].as_array().into_iter().flatten() {
        all.extend(g["options"].as_array().into_iter().flatten());
    }
    all
}

/// An interaction sent over Socket Mode.
#[derive(Clone, Debug)]
pub struct Sent {
    pub envelope: SentEnvelope,
    /// The trigger_id in the payload (absent from a view_closed).
    pub trigger_id: Option<String>,
    /// The response_url in the payload (block actions on a message, slash commands).
    pub response_url: Option<String>,
}

impl Sent {
    pub fn envelope_id(&self) -> &str {
        &self.envelope.envelope_id
    }

    pub fn payload(&self) -> &Value {
        &self.envelope.payload
    }
}

/// The stateful elements' types whose values `state.values` carries (the selects of a message).
const STATEFUL: &[&str] = &["static_select", "multi_static_select"];

impl St {
    /// Keeps what `user` picked in a select of the message `ts`, as Slack's client does.
    fn remember_pick(&mut self, ts: &str, user: &str, entry: &Value) {
        let kind = entry["type"].as_str().unwrap_or_default();
        if !STATEFUL.contains(&kind) {
            return;
        }
        let mut value = serde_json::json!({"type": kind});
        for key in ["selected_option", "selected_options"] {
            if let Some(v) = entry.get(key) {
                value[key] = v.clone();
            }
        }
        let block_id = entry["block_id"].as_str().unwrap_or_default().to_owned();
        let action_id = entry["action_id"].as_str().unwrap_or_default().to_owned();
        let picks = self
            .picks
            .entry((ts.to_owned(), user.to_owned()))
            .or_default();
        let block = picks
            .entry(block_id)
            .or_insert_with(|| Value::Object(Default::default()));
        block[action_id] = value;
    }

    /// `state.values` of a block_actions on the message `ts` with `blocks`, for `user`: every
    /// select of the message with what they picked in it, else its initial option(s), as Slack
    /// sends it with every action on a message.
    fn state_values(&self, ts: &str, user: &str, blocks: &Value) -> Value {
        let picks = self.picks.get(&(ts.to_owned(), user.to_owned()));
        let mut values = serde_json::Map::new();
        for block in blocks.as_array().into_iter().flatten() {
            let Some(block_id) = block["block_id"].as_str() else {
                continue;
            };
            let mut elements: Vec<&Value> =
                block["elements"].as_array().into_iter().flatten().collect();
            elements.extend([&block["accessory"], &block["element"]]);
            for e in elements {
                let (Some(kind), Some(action_id)) = (e["type"].as_str(), e["action_id"].as_str())
                else {
                    continue;
                };
                if !STATEFUL.contains(&kind) {
                    continue;
                }
                let picked = picks
                    .and_then(|p| p.get(block_id))
                    .and_then(|b| b.get(action_id))
                    .cloned();
                let value = picked.unwrap_or_else(|| match kind {
                    "multi_static_select" => serde_json::json!({"type": kind,
                        "selected_options": e.get("initial_options").cloned().unwrap_or(serde_json::json!([]))}),
                    _ => serde_json::json!({"type": kind,
                        "selected_option": e.get("initial_option").cloned().unwrap_or(Value::Null)}),
                });
                let entry = values
                    .entry(block_id.to_owned())
                    .or_insert_with(|| Value::Object(Default::default()));
                entry[action_id] = value;
            }
        }
        Value::Object(values)
    }

    fn issue_trigger(&mut self, user: &str) -> String {
        let n = self.counter + 1;
        self.counter = n;
        let id = format!("{n}.7000000001.{}", random_hex(16));
        self.triggers.insert(
            id.clone(),
            TriggerRec {
                issued: tokio::time::Instant::now(),
                user: user.to_owned(),
                used: false,
            },
        );
        id
    }

    fn issue_response_url(
        &mut self,
        base: &str,
        channel: &str,
        message_ts: Option<&str>,
        user: &str,
    ) -> String {
        let token = random_hex(12);
        self.response_urls.insert(
            token.clone(),
            ResponseUrl {
                channel: Some(channel.to_owned()),
                message_ts: message_ts.map(str::to_owned),
                user: user.to_owned(),
                uses: 0,
                issued: tokio::time::Instant::now(),
            },
        );
        format!("{base}/response/{token}")
    }

    fn channel_name(&self, channel: &str) -> String {
        self.channels
            .get(channel)
            .map(|c| {
                if c.dm_user.is_some() {
                    "directmessage".to_owned()
                } else {
                    c.name.clone()
                }
            })
            .unwrap_or_default()
    }
}

impl SlackStandIn {
    /// The base of the response_urls sent now: the scheme of the newest live connection.
    fn response_base(&self, st: &St) -> String {
        self.shared.http_base(st.socket.newest_tls())
    }

    async fn send_interaction(
        &self,
        payload: Value,
        accepts_response_payload: bool,
        trigger_id: Option<String>,
        response_url: Option<String>,
    ) -> Sent {
        if let Err(e) = fixtures::check_interaction(&payload) {
            panic!("slack stand-in: {e}");
        }
        let envelope = self
            .send_envelope(EnvelopeType::Interactive, payload, accepts_response_payload)
            .await;
        Sent {
            envelope,
            trigger_id,
            response_url,
        }
    }

    /// `who` acts on an element of the message `ts` in `channel` (block_actions with the
    /// message as it is now, a trigger_id and a response_url). Panics if the message or the
    /// element is not there.
    pub async fn click(&self, who: &Person, channel: &str, ts: &str, action: Action) -> Sent {
        let (payload, trigger_id, response_url) = {
            let mut st = self.shared.lock();
            let message = st
                .message(channel, ts)
                .map(|m| m.value.clone())
                .unwrap_or_else(|| {
                    panic!("slack stand-in: no message {ts} in {channel} to click on")
                });
            let action_ts = st.next_ts();
            let entry = action
                .entry(&message["blocks"], &action_ts)
                .unwrap_or_else(|e| panic!("slack stand-in: message {ts} in {channel}: {e}"));
            st.remember_pick(ts, &who.id, &entry);
            let state = st.state_values(ts, &who.id, &message["blocks"]);
            let trigger_id = st.issue_trigger(&who.id);
            let base = self.response_base(&st);
            let response_url = st.issue_response_url(&base, channel, Some(ts), &who.id);
            let mut payload = fixtures::block_actions_on_message(
                who,
                channel,
                &st.channel_name(channel),
                ts,
                Some(&message),
                vec![entry],
                &trigger_id,
                &response_url,
            );
            payload["state"]["values"] = state;
            (payload, trigger_id, response_url)
        };
        self.send_interaction(payload, false, Some(trigger_id), Some(response_url))
            .await
    }

    /// `who` acts on an element of the ephemeral message with `ts` (Slack sends no copy of an
    /// ephemeral message; `container.is_ephemeral` is true). Panics if it is not there.
    pub async fn click_ephemeral(&self, who: &Person, ts: &str, action: Action) -> Sent {
        let (payload, trigger_id, response_url) = {
            let mut st = self.shared.lock();
            let e = st
                .ephemerals
                .iter()
                .find(|e| e.ts == ts && !e.deleted)
                .cloned()
                .unwrap_or_else(|| panic!("slack stand-in: no ephemeral message {ts}"));
            assert_eq!(
                e.user, who.id,
                "slack stand-in: ephemeral message {ts} is shown to {}, not {}",
                e.user, who.id
            );
            let action_ts = st.next_ts();
            let blocks = e.blocks.clone().unwrap_or(Value::Null);
            let entry = action
                .entry(&blocks, &action_ts)
                .unwrap_or_else(|err| panic!("slack stand-in: ephemeral message {ts}: {err}"));
            st.remember_pick(ts, &who.id, &entry);
            let state = st.state_values(ts, &who.id, &blocks);
            let trigger_id = st.issue_trigger(&who.id);
            let base = self.response_base(&st);
            let response_url = st.issue_response_url(&base, &e.channel, Some(ts), &who.id);
            let mut payload = fixtures::block_actions_on_message(
                who,
                &e.channel,
                &st.channel_name(&e.channel),
                ts,
                None,
                vec![entry],
                &trigger_id,
                &response_url,
            );
            payload["state"]["values"] = state;
            (payload, trigger_id, response_url)
        };
        self.send_interaction(payload, false, Some(trigger_id), Some(response_url))
            .await
    }

    /// `who` acts on an element inside the open modal `view_id`.
    pub async fn act_in_view(&self, who: &Person, view_id: &str, action: Action) -> Sent {
        let (payload, trigger_id) = {
            let mut st = self.shared.lock();
            let view = self.open_view(&st, view_id);
            let action_ts = st.next_ts();
            let entry = action
                .entry(&view["blocks"], &action_ts)
                .unwrap_or_else(|e| panic!("slack stand-in: view {view_id}: {e}"));
            let trigger_id = st.issue_trigger(&who.id);
            let payload = fixtures::block_actions_in_view(who, &view, vec![entry], &trigger_id);
            (payload, trigger_id)
        };
        self.send_interaction(payload, false, Some(trigger_id), None)
            .await
    }

    /// `who` submits the open modal `view_id` with `values` (each must name an input element of
    /// the view). The ack may carry a `response_action`, which the stand-in applies.
    pub async fn submit_view(&self, who: &Person, view_id: &str, values: &ViewValues) -> Sent {
        let (payload, trigger_id) = {
            let mut st = self.shared.lock();
            let view = self.open_view(&st, view_id);
            if let Some(blocks) = values.json().as_object() {
                for (block_id, actions) in blocks {
                    for action_id in actions.as_object().into_iter().flatten().map(|a| a.0) {
                        let block = view["blocks"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .find(|b| b["block_id"] == block_id.as_str());
                        let is_input = block.is_some_and(|b| {
                            b["type"] == "input" && b["element"]["action_id"] == action_id.as_str()
                        });
                        assert!(
                            is_input,
                            "slack stand-in: view {view_id} has no input {block_id}/{action_id}"
                        );
                    }
                }
            }
            let trigger_id = st.issue_trigger(&who.id);
            let payload = fixtures::view_submission(who, &view, values, &trigger_id);
            (payload, trigger_id)
        };
        self.send_interaction(payload, true, Some(trigger_id), None)
            .await
    }

    /// `who` closes the modal `view_id`; Slack tells the app (view_closed) only when the view
    /// was opened with `notify_on_close`, so this sends something only then.
    pub async fn close_view(&self, who: &Person, view_id: &str) -> Option<Sent> {
        let payload = {
            let mut st = self.shared.lock();
            let view = self.open_view(&st, view_id);
            for v in st.views.iter_mut().filter(|v| v.id == view_id) {
                v.closed = true;
            }
            (view["notify_on_close"] == true).then(|| fixtures::view_closed(who, &view))
        };
        self.shared.bump();
        match payload {
            Some(payload) => Some(self.send_interaction(payload, false, None, None).await),
            None => None,
        }
    }

    /// `who` runs `/askrelay text` (or another `command`) in `channel`.
    pub async fn slash_command(
        &self,
        who: &Person,
        channel: &str,
        command: &str,
        text: &str,
    ) -> Sent {
        let (payload, trigger_id, response_url) = {
            let mut st = self.shared.lock();
            let trigger_id = st.issue_trigger(&who.id);
            let base = self.response_base(&st);
            let response_url = st.issue_response_url(&base, channel, None, &who.id);
            let payload = fixtures::slash_command(
                who,
                command,
                text,
                channel,
                &st.channel_name(channel),
                &trigger_id,
                &response_url,
            );
            (payload, trigger_id, response_url)
        };
        if let Err(e) = fixtures::check_command(&payload) {
            panic!("slack stand-in: {e}");
        }
        let envelope = self
            .send_envelope(EnvelopeType::SlashCommands, payload, true)
            .await;
        Sent {
            envelope,
            trigger_id: Some(trigger_id),
            response_url: Some(response_url),
        }
    }

    /// A trigger_id for `who`, as an interaction would carry it, issued now (tokio's clock): for a
    /// test that calls `views.open` without sending an interaction.
    pub fn new_trigger_id(&self, who: &Person) -> String {
        self.shared.lock().issue_trigger(&who.id)
    }

    /// A response_url for `who` on the message (or ephemeral message) `ts` in `channel`, as an
    /// interaction would carry it: for a test that sends a payload it built itself.
    pub fn new_response_url(&self, who: &Person, channel: &str, ts: &str) -> String {
        let mut st = self.shared.lock();
        let base = self.response_base(&st);
        st.issue_response_url(&base, channel, Some(ts), &who.id)
    }

    /// The view object of an open modal; panics if there is none.
    fn open_view(&self, st: &St, view_id: &str) -> Value {
        match st.views.iter().find(|v| v.id == view_id) {
            Some(v) if !v.closed => v.value.clone(),
            Some(_) => panic!("slack stand-in: view {view_id} is closed"),
            None => panic!("slack stand-in: no view {view_id} was opened"),
        }
    }
}
