//! `Stop` (Claude Code and Codex): the agent ended its turn. Its last message is posted with
//! a `Done` option and free text (`Reply…`, a modal); a reply within the wait comes back as
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

/// Claude Code's cap on consecutive Stop blocks, as it reads it: `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`
/// through JavaScript's `parseInt` (leading digits), 8 when unset or not a number, no cap at 0 or
/// less. The hook runs in Claude Code's environment, so it sees the same value.
fn block_cap(var: Option<&str>) -> Option<u32> {
    const DEFAULT: i64 = 8;
    let parsed = var.and_then(|v| {
        let v = v.trim_start();
        let (sign, digits) = match v.strip_prefix('-') {
            Some(rest) => (-1, rest),
            None => (1, v.strip_prefix('+').unwrap_or(v)),
        };
        let end = digits
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(digits.len());
        digits[..end].parse::<i64>().ok().map(|n| sign * n)
    });
    u32::try_from(parsed.unwrap_or(DEFAULT))
        .ok()
        .filter(|c| *c > 0)
}

/// What the transcript says of this turn: how many times in a row a Stop hook has blocked it
/// (its `hook_blocking_error` attachments of the `Stop` event since the model last called a
/// tool or the user last wrote, where Claude Code resets its own count), and whether the
/// turn's last message (`last`) is there after the last of them.
#[derive(Debug, PartialEq, Eq)]
struct Blocks {
    in_a_row: u32,
    caught_up: bool,
}

/// Reads [`Blocks`] from Claude Code's transcript; `None` when it cannot be read.
fn blocks_in_a_row(transcript: &str, last: Option<&str>) -> Option<Blocks> {
    let file = std::fs::File::open(transcript).ok()?;
    let mut n = 0;
    // The text of the last assistant message after the last block (None: none yet).
    let mut said: Option<String> = None;
    for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let content = &v["message"]["content"];
        let has = |kind: &str| {
            content
                .as_array()
                .is_some_and(|parts| parts.iter().any(|p| p["type"] == kind))
        };
        match v["type"].as_str() {
            Some("attachment")
                if v["attachment"]["type"] == "hook_blocking_error"
                    && v["attachment"]["hookEvent"] == "Stop" =>
            {
                n += 1;
                said = None;
            }
            Some("assistant") => {
                if has("tool_use") {
                    n = 0;
                }
                let text: String = content
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|p| p["type"] == "text")
                    .filter_map(|p| p["text"].as_str())
                    .collect();
                if !text.trim().is_empty() {
                    said = Some(text);
                }
            }
            Some("user") if v["isMeta"] != true && !has("tool_result") => n = 0,
            _ => {}
        }
    }
    let caught_up = match last.map(str::trim).filter(|l| !l.is_empty()) {
        Some(l) => said.is_some_and(|s| s.trim() == l),
        None => true,
    };
    Some(Blocks {
        in_a_row: n,
        caught_up,
    })
}

/// Claude Code writes its transcript in batches (every 100 ms, 2.1.197 and 2.1.332), not
/// before it runs the Stop hooks: the end of this turn, and the block before it, may not be
/// in the file yet. So the count is read again until the turn's last message is there after
/// the last block, for at most this long.
const TRANSCRIPT_SETTLE: std::time::Duration = std::time::Duration::from_secs(3);

/// [`blocks_in_a_row`], once the transcript has caught up with the turn (or the wait is over).
async fn blocks_settled(transcript: &str, last: Option<&str>) -> Option<u32> {
    let give_up = tokio::time::Instant::now() + TRANSCRIPT_SETTLE;
    loop {
        let b = blocks_in_a_row(transcript, last)?;
        if b.caught_up || tokio::time::Instant::now() >= give_up {
            return Some(b.in_a_row);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Whether a reply now would be thrown away: Claude Code ends the turn anyway once the Stop
/// hooks have blocked it more than its cap allows, so askrelay does not ask for one.
async fn cap_reached(event: &StopEvent, agent: Agent, cap: Option<u32>) -> Option<String> {
    if agent != Agent::ClaudeCode || !event.stop_hook_active {
        return None;
    }
    let cap = cap?;
    let blocks = blocks_settled(
        event.transcript_path.as_deref()?,
        event.last_assistant_message.as_deref(),
    )
    .await?;
    (blocks >= cap).then(|| {
        format!(
            "the Stop hooks blocked this turn {blocks} times in a row, and Claude Code ends it \
             after {cap} (CLAUDE_CODE_STOP_HOOK_BLOCK_CAP); no reply is asked for"
        )
    })
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
        reason: None,
        permission_mode: None,
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
    // A Stop after a block (stop_hook_active) is asked again, until Claude Code's cap on
    // consecutive blocks would throw the reply away (CLAUDE_CODE_STOP_HOOK_BLOCK_CAP, 8 by
    // default; 0 or less: no cap): then the turn ends unasked.
    let cap = block_cap(
        std::env::var("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP")
            .ok()
            .as_deref(),
    );
    if let Some(why) = cap_reached(event, agent, cap).await {
        return Reply::NoDecision(format!("{why} ({fallback})"));
    }
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
    fn the_cap_is_read_as_claude_code_reads_it() {
        assert_eq!(block_cap(None), Some(8));
        assert_eq!(block_cap(Some("")), Some(8));
        assert_eq!(block_cap(Some("x")), Some(8));
        assert_eq!(block_cap(Some("3")), Some(3));
        assert_eq!(block_cap(Some(" 12abc")), Some(12));
        assert_eq!(block_cap(Some("0")), None);
        assert_eq!(block_cap(Some("-4")), None);
    }

    #[tokio::test]
    async fn blocks_in_a_row_reset_on_a_tool_call_or_a_prompt() {
        let block = r#"{"type":"attachment","attachment":{"type":"hook_blocking_error","hookEvent":"Stop"}}"#;
        let feedback =
            r#"{"type":"user","isMeta":true,"message":{"content":"Stop hook feedback:\nx"}}"#;
        let said = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"More?"}]}}"#;
        let tool = r#"{"type":"assistant","message":{"content":[{"type":"tool_use"}]}}"#;
        let result = r#"{"type":"user","message":{"content":[{"type":"tool_result"}]}}"#;
        let prompt = r#"{"type":"user","message":{"content":"Do the task."}}"#;
        let other = r#"{"type":"attachment","attachment":{"type":"hook_blocking_error","hookEvent":"PreToolUse"}}"#;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let count = |lines: &[&str]| {
            std::fs::write(&path, lines.join("\n")).unwrap();
            blocks_in_a_row(path.to_str().unwrap(), Some("More?")).map(|b| b.in_a_row)
        };
        assert_eq!(count(&[prompt, block, feedback, block, feedback]), Some(2));
        assert_eq!(count(&[block, feedback, tool, result, block]), Some(1));
        assert_eq!(count(&[block, block, prompt]), Some(0));
        assert_eq!(count(&[prompt, other, block]), Some(1));
        assert_eq!(blocks_in_a_row("/nonexistent/t.jsonl", None), None);
        // Caught up: the turn's last message is there after the last block.
        let caught = |lines: &[&str]| {
            std::fs::write(&path, lines.join("\n")).unwrap();
            blocks_in_a_row(path.to_str().unwrap(), Some(" More? "))
                .unwrap()
                .caught_up
        };
        assert!(caught(&[prompt, said, block, feedback, said]));
        assert!(!caught(&[prompt, said, block, feedback]), "not yet written");
        let active = |path: &str| StopEvent {
            stop_hook_active: true,
            transcript_path: Some(path.into()),
            last_assistant_message: Some("More?".into()),
            ..StopEvent::default()
        };
        std::fs::write(
            &path,
            [prompt, said, block, feedback, said, block, said].join("\n"),
        )
        .unwrap();
        let p = path.to_str().unwrap();
        assert!(cap_reached(&active(p), Agent::ClaudeCode, Some(2))
            .await
            .is_some());
        assert!(cap_reached(&active(p), Agent::ClaudeCode, Some(3))
            .await
            .is_none());
        assert!(cap_reached(&active(p), Agent::ClaudeCode, None)
            .await
            .is_none());
        assert!(cap_reached(&active(p), Agent::Codex, Some(2))
            .await
            .is_none());
        let first = StopEvent {
            stop_hook_active: false,
            ..active(p)
        };
        assert!(cap_reached(&first, Agent::ClaudeCode, Some(2))
            .await
            .is_none());
        // Unreadable: asked (Claude Code's own cap still ends the turn).
        assert!(
            cap_reached(&active("/nonexistent"), Agent::ClaudeCode, Some(1))
                .await
                .is_none()
        );
    }

    /// The last block and the turn's message are not written yet when the hook starts: it
    /// waits for them, then counts 2 (a count of 1 would ask once more, for a reply Claude
    /// Code would throw away).
    #[tokio::test]
    async fn the_count_waits_for_the_transcript_to_catch_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let said = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"More?"}]}}"#;
        let block = r#"{"type":"attachment","attachment":{"type":"hook_blocking_error","hookEvent":"Stop"}}"#;
        let turn = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Now?"}]}}"#;
        std::fs::write(&path, [said, block, said].join("\n")).unwrap();
        let late = path.clone();
        // Claude Code's batch, a moment later.
        let writer = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            std::fs::write(&late, [said, block, said, block, turn].join("\n")).unwrap();
        });
        let n = blocks_settled(path.to_str().unwrap(), Some("Now?")).await;
        writer.await.unwrap();
        assert_eq!(n, Some(2));
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
