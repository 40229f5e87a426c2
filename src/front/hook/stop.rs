//! `Stop` (Claude Code and Codex): the agent ended its turn. Its last message is posted with
//! a `Done` option and free text (`Other…`, the reply); a reply within the wait comes back as
//! `{"decision":"block","reason":REPLY}`, so the agent carries on with it. Done, no answer in
//! time, or any failure: nothing printed, and the turn ends.

use super::super::Ended;
use super::{
    ask_and_follow, first_answer, no_answer, one_line, scope_of, validated, Agent, CommonArgs,
    HookEvent, Reply,
};
use crate::client::Target;
use crate::domain::model::{Context, Question, QuestionOption};
use crate::domain::text::{Layout, Reveal};
use crate::domain::Ask;
use serde_json::Value;
use std::io::BufRead;

/// The option that lets the turn end.
pub const DONE: &str = "Done";

/// The most of the agent's last message shown (the end is cut).
const TURN_END_MAX: usize = 16 * 1024;

/// The fields of a Stop event askrelay uses.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct StopEvent {
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub stop_hook_active: bool,
    #[serde(default)]
    pub last_assistant_message: Option<String>,
    #[serde(default)]
    pub transcript_path: Option<String>,
}

/// The agent's last message: `last_assistant_message`, or the last assistant text in the
/// transcript (JSON lines, Claude Code's shape).
pub(super) fn turn_end(event: &StopEvent) -> Option<String> {
    if let Some(m) = event
        .last_assistant_message
        .as_deref()
        .filter(|m| !m.trim().is_empty())
    {
        return Some(m.to_owned());
    }
    let path = event.transcript_path.as_deref()?;
    let file = std::fs::File::open(path).ok()?;
    let mut last = None;
    for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
        let v: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(_) => continue,
        };
        if v["type"] != "assistant" {
            continue;
        }
        let content = &v["message"]["content"];
        let text = match content {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter(|p| p["type"] == "text")
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        if !text.trim().is_empty() {
            last = Some(text);
        }
    }
    last
}

/// The ask for a Stop: the last message as context, Done, and free text for a reply.
pub(super) fn stop_ask(event: &StopEvent, args: &CommonArgs, agent: Agent) -> Result<Ask, String> {
    let mut reveal = Reveal::default();
    let as_hook = HookEvent {
        hook_event_name: Some("Stop".into()),
        tool_name: crate::answerer::discord::STOP_TOOL.into(),
        tool_input: Value::Null,
        tool_use_id: None,
        cwd: event.cwd.clone(),
        session_id: event.session_id.clone(),
        permission_suggestions: Vec::new(),
    };
    let scope = scope_of(&as_hook, args, &mut reveal)?;
    let text = turn_end(event).map(|m| {
        let n = m.chars().count();
        let cut: String = m.chars().skip(n.saturating_sub(TURN_END_MAX)).collect();
        reveal.text(&cut, Layout::Lines)
    });
    let ask = Ask {
        request_id: Some(format!("{}-stop-{}", agent.name(), uuid::Uuid::new_v4())),
        caller: crate::domain::Caller {
            agent_id: Some(agent.name().into()),
            owner_agent_id: None,
        },
        scope,
        questions: vec![Question {
            id: "q1".into(),
            question: format!(
                "{} finished its turn{}. Reply to keep it working, or Done.",
                agent.title(),
                if event.stop_hook_active {
                    " again, after a reply"
                } else {
                    ""
                }
            ),
            header: Some(one_line("Turn ended", 12, &mut reveal)),
            options: vec![QuestionOption {
                label: DONE.into(),
                description: Some("Let the turn end".into()),
            }],
            multi_select: false,
        }],
        context: text.map(|t| Context {
            text: Some(t),
            ..Context::default()
        }),
        on_disconnect: crate::domain::model::OnDisconnect::Withdraw,
    };
    validated(ask)
}

/// Runs a Stop: a reply blocks the stop with the reply as the reason; anything else, nothing.
pub(super) async fn stop(
    target: &Target,
    event: &StopEvent,
    args: &CommonArgs,
    agent: Agent,
) -> Reply {
    let fallback = "the turn ends";
    // A Stop after a block (stop_hook_active) is asked again: Claude Code itself ends the
    // turn after CLAUDE_CODE_STOP_HOOK_BLOCK_CAP consecutive blocks (8 by default; 0 or less:
    // no cap), so a reply can never keep it going for ever.
    let ask = match stop_ask(event, args, agent) {
        Ok(a) => a,
        Err(e) => return Reply::NoDecision(format!("{e}; no decision ({fallback})")),
    };
    // The wait is the route's stop_wait_secs (the request's expiry); --timeout cuts it short.
    let (result, by) = match ask_and_follow(target, ask, args).await {
        Ended::Answered { result, by, .. } => (result, by),
        other => return Reply::NoDecision(no_answer(&other, fallback)),
    };
    let answer = first_answer(&result);
    match answer.custom.filter(|c| !c.trim().is_empty()) {
        Some(reply) => Reply::Block {
            reason: reply,
            note: format!("replied by {by}; the agent carries on"),
        },
        None => Reply::NoDecision(format!(
            "{} by {by}; no decision ({fallback})",
            answer.selected.first().map_or(DONE, String::as_str)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_message_comes_from_the_event_or_the_transcript() {
        let e = StopEvent {
            last_assistant_message: Some("Which colour?".into()),
            ..StopEvent::default()
        };
        assert_eq!(turn_end(&e).as_deref(), Some("Which colour?"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"type":"user","message":{"content":"hi"}}"#,
                "\n",
                r#"{"type":"assistant","message":{"content":[{"type":"text","text":"first"}]}}"#,
                "\n",
                r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Red or blue?"}]}}"#,
                "\n"
            ),
        )
        .unwrap();
        let e = StopEvent {
            transcript_path: Some(path.display().to_string()),
            ..StopEvent::default()
        };
        assert_eq!(turn_end(&e).as_deref(), Some("Red or blue?"));
    }

    #[test]
    fn a_block_prints_decision_and_reason() {
        let r = Reply::Block {
            reason: "use blue".into(),
            note: String::new(),
        };
        let v: Value = serde_json::from_str(&r.to_line().unwrap()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"decision":"block","reason":"use blue"})
        );
    }
}
