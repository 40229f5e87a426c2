//! Complete interaction payloads, shaped like what Slack sends over Socket Mode, that
//! slack-morphism 2.31.1 deserializes: `block_actions` (a button, a static_select, a
//! multi_static_select, on a message or in a modal), `view_submission`, `view_closed`
//! ([`SlackInteractionEvent`]) and slash commands ([`SlackCommandEvent`]).
//!
//! These are pure functions of what they are given; the stand-in's `click`, `submit_view`, … call
//! them with its current copy of the message or view, a trigger_id it remembers and a
//! response_url that points at it ([`super::interact`]). A test that feeds a payload straight to a
//! handler can call them itself. [`check_interaction`] and [`check_command`] say whether
//! slack-morphism would read a payload; the stand-in runs them on everything it sends, so a
//! fixture slack-morphism would drop fails the test instead of being lost silently.

use serde_json::{json, Map, Value};
use slack_morphism::events::SlackInteractionEvent;
use slack_morphism::prelude::SlackCommandEvent;

use super::{APP_ID, TEAM_DOMAIN, TEAM_ID};

/// Someone in the workspace: who clicks, submits or runs a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    /// `U…`
    pub id: String,
    /// Slack's `username` / `name` (the handle).
    pub username: String,
    pub real_name: String,
    pub team_id: String,
}

impl Person {
    /// A person of the stand-in's workspace ([`TEAM_ID`]).
    pub fn new(id: &str, username: &str) -> Person {
        Person {
            id: id.to_owned(),
            username: username.to_owned(),
            real_name: username.to_owned(),
            team_id: TEAM_ID.to_owned(),
        }
    }

    /// `user` of a block_actions or view payload.
    pub fn json(&self) -> Value {
        json!({
            "id": self.id,
            "username": self.username,
            "name": self.username,
            "team_id": self.team_id,
        })
    }
}

/// The workspace as interaction payloads carry it.
pub fn team_json() -> Value {
    json!({"id": TEAM_ID, "domain": TEAM_DOMAIN})
}

/// One option picked in a select: its value and its text as the element shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectedOption {
    pub value: String,
    pub text: String,
}

impl SelectedOption {
    pub fn new(value: &str, text: &str) -> SelectedOption {
        SelectedOption {
            value: value.to_owned(),
            text: text.to_owned(),
        }
    }

    fn json(&self) -> Value {
        json!({
            "text": {"type": "plain_text", "text": self.text, "emoji": true},
            "value": self.value,
        })
    }
}

/// An `actions[]` entry of a block_actions payload for a button: `text` and `value` as the
/// button has them (`value` may be absent, as on a button without one).
pub fn button_action(
    block_id: &str,
    action_id: &str,
    text: &str,
    value: Option<&str>,
    action_ts: &str,
) -> Value {
    let mut a = json!({
        "action_id": action_id,
        "block_id": block_id,
        "text": {"type": "plain_text", "text": text, "emoji": true},
        "type": "button",
        "action_ts": action_ts,
    });
    if let Some(value) = value {
        a["value"] = json!(value);
    }
    a
}

/// An `actions[]` entry for a static_select.
pub fn static_select_action(
    block_id: &str,
    action_id: &str,
    selected: &SelectedOption,
    action_ts: &str,
) -> Value {
    json!({
        "type": "static_select",
        "action_id": action_id,
        "block_id": block_id,
        "selected_option": selected.json(),
        "action_ts": action_ts,
    })
}

/// An `actions[]` entry for a multi_static_select.
pub fn multi_static_select_action(
    block_id: &str,
    action_id: &str,
    selected: &[SelectedOption],
    action_ts: &str,
) -> Value {
    json!({
        "type": "multi_static_select",
        "action_id": action_id,
        "block_id": block_id,
        "selected_options": selected.iter().map(SelectedOption::json).collect::<Vec<_>>(),
        "action_ts": action_ts,
    })
}

/// A block_actions payload for an action on a message in `channel`: `message` is the message as
/// it is now (Slack sends its current copy; `None` for an ephemeral message, which Slack does not
/// send back), `actions` the entries above.
#[allow(clippy::too_many_arguments)] // reason: each is one field Slack sends, named at the call.
pub fn block_actions_on_message(
    who: &Person,
    channel: &str,
    channel_name: &str,
    message_ts: &str,
    message: Option<&Value>,
    actions: Vec<Value>,
    trigger_id: &str,
    response_url: &str,
) -> Value {
    let mut p = json!({
        "type": "block_actions",
        "user": who.json(),
        "api_app_id": APP_ID,
        "token": "standin-verification-token",
        "container": {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel,
            "is_ephemeral": message.is_none(),
        },
        "trigger_id": trigger_id,
        "team": team_json(),
        "enterprise": null,
        "is_enterprise_install": false,
        "channel": {"id": channel, "name": channel_name},
        "state": {"values": {}},
        "response_url": response_url,
        "actions": actions,
    });
    if let Some(message) = message {
        p["message"] = message.clone();
    }
    p
}

/// A block_actions payload for an action inside a modal: `view` is the view object as it is now
/// (with `id`, `hash`, `state`…). Slack sends no response_url for these.
pub fn block_actions_in_view(
    who: &Person,
    view: &Value,
    actions: Vec<Value>,
    trigger_id: &str,
) -> Value {
    json!({
        "type": "block_actions",
        "user": who.json(),
        "api_app_id": APP_ID,
        "token": "standin-verification-token",
        "container": {"type": "view", "view_id": view["id"]},
        "trigger_id": trigger_id,
        "team": team_json(),
        "enterprise": null,
        "is_enterprise_install": false,
        "view": view,
        "actions": actions,
    })
}

/// What a person entered in a modal's inputs: `view.state.values`, keyed by block_id then
/// action_id, as Slack sends it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ViewValues {
    values: Map<String, Value>,
}

impl ViewValues {
    pub fn new() -> ViewValues {
        ViewValues::default()
    }

    fn put(mut self, block_id: &str, action_id: &str, v: Value) -> ViewValues {
        let block = self
            .values
            .entry(block_id.to_owned())
            .or_insert_with(|| json!({}));
        block[action_id] = v;
        self
    }

    /// A plain_text_input (`None`: left empty, which Slack sends as `null`).
    pub fn text(self, block_id: &str, action_id: &str, value: Option<&str>) -> ViewValues {
        self.put(
            block_id,
            action_id,
            json!({"type": "plain_text_input", "value": value}),
        )
    }

    /// A static_select (`None`: nothing picked).
    pub fn static_select(
        self,
        block_id: &str,
        action_id: &str,
        selected: Option<&SelectedOption>,
    ) -> ViewValues {
        self.put(
            block_id,
            action_id,
            json!({
                "type": "static_select",
                "selected_option": selected.map(SelectedOption::json),
            }),
        )
    }

    /// A multi_static_select.
    pub fn multi_static_select(
        self,
        block_id: &str,
        action_id: &str,
        selected: &[SelectedOption],
    ) -> ViewValues {
        self.put(
            block_id,
            action_id,
            json!({
                "type": "multi_static_select",
                "selected_options": selected.iter().map(SelectedOption::json).collect::<Vec<_>>(),
            }),
        )
    }

    /// Checkboxes.
    pub fn checkboxes(
        self,
        block_id: &str,
        action_id: &str,
        selected: &[SelectedOption],
    ) -> ViewValues {
        self.put(
            block_id,
            action_id,
            json!({
                "type": "checkboxes",
                "selected_options": selected.iter().map(SelectedOption::json).collect::<Vec<_>>(),
            }),
        )
    }

    /// The `values` object.
    pub fn json(&self) -> Value {
        Value::Object(self.values.clone())
    }
}

/// `view` as a view_submission carries it: the view object with `state.values` set.
pub fn submitted_view(view: &Value, values: &ViewValues) -> Value {
    let mut view = view.clone();
    view["state"] = json!({"values": values.json()});
    view
}

/// A view_submission payload: `view` is the view object as it is now (with `id`, `hash`,
/// `callback_id`, `private_metadata`…); `values` what the person entered.
pub fn view_submission(who: &Person, view: &Value, values: &ViewValues, trigger_id: &str) -> Value {
    json!({
        "type": "view_submission",
        "team": team_json(),
        "user": who.json(),
        "api_app_id": APP_ID,
        "token": "standin-verification-token",
        "trigger_id": trigger_id,
        "view": submitted_view(view, values),
        "response_urls": [],
        "is_enterprise_install": false,
        "enterprise": null,
    })
}

/// A view_closed payload (sent only for a view opened with `notify_on_close`).
pub fn view_closed(who: &Person, view: &Value) -> Value {
    json!({
        "type": "view_closed",
        "team": team_json(),
        "user": who.json(),
        "api_app_id": APP_ID,
        "token": "standin-verification-token",
        "view": view,
        "is_cleared": false,
        "is_enterprise_install": false,
        "enterprise": null,
    })
}

/// A slash command payload, as Socket Mode carries it (a JSON object of the form fields Slack
/// would post).
pub fn slash_command(
    who: &Person,
    command: &str,
    text: &str,
    channel: &str,
    channel_name: &str,
    trigger_id: &str,
    response_url: &str,
) -> Value {
    json!({
        "token": "standin-verification-token",
        "team_id": who.team_id,
        "team_domain": TEAM_DOMAIN,
        "channel_id": channel,
        "channel_name": channel_name,
        "user_id": who.id,
        "user_name": who.username,
        "command": command,
        "text": text,
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id,
    })
}

/// Whether slack-morphism reads `payload` as an interaction, and as which kind; the error says
/// why not.
pub fn check_interaction(payload: &Value) -> Result<&'static str, String> {
    let event: SlackInteractionEvent = serde_json::from_value(payload.clone())
        .map_err(|e| format!("slack-morphism cannot read the interaction: {e}\n{payload:#}"))?;
    Ok(match event {
        SlackInteractionEvent::BlockActions(_) => "block_actions",
        SlackInteractionEvent::BlockSuggestion(_) => "block_suggestion",
        SlackInteractionEvent::DialogSubmission(_) => "dialog_submission",
        SlackInteractionEvent::MessageAction(_) => "message_action",
        SlackInteractionEvent::Shortcut(_) => "shortcut",
        SlackInteractionEvent::ViewSubmission(_) => "view_submission",
        SlackInteractionEvent::ViewClosed(_) => "view_closed",
    })
}

/// Whether slack-morphism reads `payload` as a slash command.
pub fn check_command(payload: &Value) -> Result<(), String> {
    serde_json::from_value::<SlackCommandEvent>(payload.clone())
        .map(|_| ())
        .map_err(|e| format!("slack-morphism cannot read the command: {e}\n{payload:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use slack_morphism::events::{SlackInteractionActionContainer, SlackInteractionEvent};

    fn alice() -> Person {
        Person::new("U0ALICE001", "alice")
    }

    fn message() -> Value {
        json!({
            "type": "message",
            "user": "U0STANDBOT",
            "bot_id": "B0STANDBOT",
            "app_id": APP_ID,
            "text": "Deploy?",
            "ts": "1733300000.000100",
            "team": TEAM_ID,
            "blocks": [{
                "type": "actions",
                "block_id": "q",
                "elements": [{
                    "type": "button",
                    "action_id": "yes",
                    "text": {"type": "plain_text", "text": "Yes"},
                    "value": "v-yes",
                }],
            }],
        })
    }

    fn view() -> Value {
        json!({
            "id": "V0000000001",
            "team_id": TEAM_ID,
            "type": "modal",
            "title": {"type": "plain_text", "text": "Answer"},
            "submit": {"type": "plain_text", "text": "Send"},
            "close": {"type": "plain_text", "text": "Cancel"},
            "blocks": [],
            "private_metadata": "q-1",
            "callback_id": "answer",
            "state": {"values": {}},
            "hash": "1733300000.abcdef",
            "clear_on_close": false,
            "notify_on_close": true,
            "root_view_id": "V0000000001",
            "previous_view_id": null,
            "app_id": APP_ID,
            "external_id": "",
            "bot_id": "B0STANDBOT",
        })
    }

    fn parsed(payload: &Value) -> SlackInteractionEvent {
        check_interaction(payload).unwrap();
        serde_json::from_value(payload.clone()).unwrap()
    }

    #[test]
    fn a_button_press_deserializes_with_its_value_message_and_response_url() {
        let action = button_action("q", "yes", "Yes", Some("v-yes"), "1733300001.000200");
        let payload = block_actions_on_message(
            &alice(),
            "C0STANDIN1",
            "askrelay",
            "1733300000.000100",
            Some(&message()),
            vec![action],
            "1.2.abc",
            "http://127.0.0.1:9/response/r1",
        );
        let SlackInteractionEvent::BlockActions(ev) = parsed(&payload) else {
            panic!("not block_actions")
        };
        let act = &ev.actions.as_ref().unwrap()[0];
        assert_eq!(act.value.as_deref(), Some("v-yes"));
        assert_eq!(act.action_id.0, "yes");
        assert_eq!(ev.user.as_ref().unwrap().id.0, "U0ALICE001");
        assert_eq!(ev.user.as_ref().unwrap().username.as_deref(), Some("alice"));
        assert_eq!(
            ev.message.as_ref().unwrap().origin.ts.0,
            "1733300000.000100"
        );
        assert!(ev.message.as_ref().unwrap().content.blocks.is_some());
        assert_eq!(
            ev.response_url.as_ref().unwrap().0.as_str(),
            "http://127.0.0.1:9/response/r1"
        );
        assert!(matches!(
            ev.container,
            SlackInteractionActionContainer::Message(ref c) if c.message_ts.0 == "1733300000.000100"
        ));
    }

    #[test]
    fn a_static_select_deserializes_with_its_selected_option() {
        let pick = SelectedOption::new("b", "Option B");
        let payload = block_actions_on_message(
            &alice(),
            "C0STANDIN1",
            "askrelay",
            "1733300000.000100",
            Some(&message()),
            vec![static_select_action(
                "q",
                "pick",
                &pick,
                "1733300001.000200",
            )],
            "1.2.abc",
            "http://127.0.0.1:9/response/r1",
        );
        let SlackInteractionEvent::BlockActions(ev) = parsed(&payload) else {
            panic!("not block_actions")
        };
        let act = &ev.actions.as_ref().unwrap()[0];
        assert_eq!(act.action_type.0, "static_select");
        assert_eq!(act.selected_option.as_ref().unwrap().value, "b");
    }

    #[test]
    fn a_multi_static_select_deserializes_with_its_selected_options() {
        let picks = [SelectedOption::new("a", "A"), SelectedOption::new("c", "C")];
        let payload = block_actions_on_message(
            &alice(),
            "C0STANDIN1",
            "askrelay",
            "1733300000.000100",
            Some(&message()),
            vec![multi_static_select_action(
                "q",
                "many",
                &picks,
                "1733300001.000200",
            )],
            "1.2.abc",
            "http://127.0.0.1:9/response/r1",
        );
        let SlackInteractionEvent::BlockActions(ev) = parsed(&payload) else {
            panic!("not block_actions")
        };
        let act = &ev.actions.as_ref().unwrap()[0];
        let values: Vec<&str> = act
            .selected_options
            .as_ref()
            .unwrap()
            .iter()
            .map(|o| o.value.as_str())
            .collect();
        assert_eq!(values, ["a", "c"]);
    }

    #[test]
    fn a_press_on_an_ephemeral_message_deserializes_without_a_message() {
        let payload = block_actions_on_message(
            &alice(),
            "C0STANDIN1",
            "askrelay",
            "1733300000.000100",
            None,
            vec![button_action("q", "yes", "Yes", None, "1733300001.000200")],
            "1.2.abc",
            "http://127.0.0.1:9/response/r1",
        );
        let SlackInteractionEvent::BlockActions(ev) = parsed(&payload) else {
            panic!("not block_actions")
        };
        assert!(ev.message.is_none());
        assert!(ev.actions.unwrap()[0].value.is_none());
    }

    #[test]
    fn an_action_in_a_modal_deserializes_with_its_view() {
        let payload = block_actions_in_view(
            &alice(),
            &view(),
            vec![button_action(
                "q",
                "more",
                "More",
                Some("m"),
                "1733300001.000200",
            )],
            "1.2.abc",
        );
        let SlackInteractionEvent::BlockActions(ev) = parsed(&payload) else {
            panic!("not block_actions")
        };
        assert!(ev.view.is_some());
        assert!(matches!(
            ev.container,
            SlackInteractionActionContainer::View(_)
        ));
    }

    #[test]
    fn a_view_submission_deserializes_with_its_metadata_and_values() {
        let values = ViewValues::new()
            .text("why", "why_input", Some("because"))
            .static_select("pick", "pick_input", Some(&SelectedOption::new("b", "B")))
            .multi_static_select("many", "many_input", &[SelectedOption::new("a", "A")])
            .checkboxes("boxes", "boxes_input", &[]);
        let payload = view_submission(&alice(), &view(), &values, "1.2.abc");
        let SlackInteractionEvent::ViewSubmission(ev) = parsed(&payload) else {
            panic!("not view_submission")
        };
        assert_eq!(ev.view.state_params.id.0, "V0000000001");
        let slack_morphism::prelude::SlackView::Modal(modal) = &ev.view.view else {
            panic!("not a modal")
        };
        assert_eq!(modal.private_metadata.as_deref(), Some("q-1"));
        assert_eq!(modal.callback_id.as_ref().unwrap().0, "answer");
        let state = ev.view.state_params.state.unwrap();
        let why = &state.values[&"why".into()][&"why_input".into()];
        assert_eq!(why.value.as_deref(), Some("because"));
        let pick = &state.values[&"pick".into()][&"pick_input".into()];
        assert_eq!(pick.selected_option.as_ref().unwrap().value, "b");
    }

    #[test]
    fn a_view_submission_with_an_empty_text_input_deserializes() {
        let values = ViewValues::new()
            .text("why", "why_input", None)
            .static_select("pick", "pick_input", None);
        let payload = view_submission(&alice(), &view(), &values, "1.2.abc");
        assert_eq!(check_interaction(&payload), Ok("view_submission"));
    }

    #[test]
    fn a_view_closed_deserializes() {
        let payload = view_closed(&alice(), &view());
        let SlackInteractionEvent::ViewClosed(ev) = parsed(&payload) else {
            panic!("not view_closed")
        };
        assert_eq!(ev.user.id.0, "U0ALICE001");
    }

    #[test]
    fn a_slash_command_deserializes() {
        let payload = slash_command(
            &alice(),
            "/askrelay",
            "pending",
            "C0STANDIN1",
            "askrelay",
            "1.2.abc",
            "http://127.0.0.1:9/response/r2",
        );
        check_command(&payload).unwrap();
        let ev: SlackCommandEvent = serde_json::from_value(payload).unwrap();
        assert_eq!(ev.command.0, "/askrelay");
        assert_eq!(ev.text.as_deref(), Some("pending"));
        assert_eq!(ev.user_id.0, "U0ALICE001");
        assert_eq!(ev.channel_id.0, "C0STANDIN1");
        assert_eq!(ev.trigger_id.0, "1.2.abc");
    }

    #[test]
    fn a_payload_slack_morphism_cannot_read_is_said() {
        let mut payload = view_closed(&alice(), &view());
        payload["view"]["hash"] = json!(null);
        let err = check_interaction(&payload).unwrap_err();
        assert!(err.contains("cannot read"), "{err}");
        let mut command = slash_command(&alice(), "/askrelay", "", "C1", "c", "t", "http://x/");
        command.as_object_mut().unwrap().remove("trigger_id");
        assert!(check_command(&command).is_err());
    }
}
