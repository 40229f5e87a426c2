//! Claude Code's own questions (its AskUserQuestion tool): asked as they are, answered as
//! `updatedInput` with `answers`.

use super::super::Ended;
use super::{
    ask_and_follow, no_answer, request_id, scope_of, validated, Agent, CommonArgs, HookEvent, Reply,
};
use crate::client::Target;
use crate::domain::model::{Question, QuestionOption};
use crate::domain::text::Reveal;
use crate::domain::Ask;
use serde_json::{json, Map, Value};

/// How a hook answers Claude Code's own questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    PreToolUse,
    Permission,
}

/// Claude Code's AskUserQuestion, asked through askrelay: its questions as they are, the
/// answers back as `updatedInput` (the input with `answers`). Any other end: no decision.
pub(super) async fn questions(
    target: &Target,
    event: &HookEvent,
    args: &CommonArgs,
    agent: Agent,
    shape: Shape,
) -> Reply {
    let fallback = "Claude Code asks in its own terminal";
    let (ask, texts) = match questions_ask(event, args, agent) {
        Ok(a) => a,
        Err(e) => return Reply::NoDecision(format!("{e}; no decision ({fallback})")),
    };
    let ended = ask_and_follow(target, ask, args).await;
    let (result, by) = match ended {
        Ended::Answered { result, by, .. } => (result, by),
        other => return Reply::NoDecision(no_answer(&other, fallback)),
    };
    let parsed: Value = serde_json::from_str(&result).unwrap_or_default();
    let mut answers = Map::new();
    for (text, a) in texts
        .iter()
        .zip(parsed["answers"].as_array().into_iter().flatten())
    {
        let mut parts: Vec<String> = a["selected"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect();
        if let Some(custom) = a["custom"].as_str() {
            parts.push(custom.to_owned());
        }
        answers.insert(text.clone(), Value::String(parts.join(", ")));
    }
    let mut input = event.tool_input.clone();
    input["answers"] = Value::Object(answers);
    let reason = format!("Answered by {by}");
    match shape {
        Shape::PreToolUse => Reply::PreToolUse {
            permission: "allow",
            reason,
            updated_input: Some(input),
        },
        Shape::Permission => Reply::PermissionRequest {
            decision: json!({"behavior": "allow", "updatedInput": input}),
            note: reason,
        },
    }
}

/// The ask for Claude Code's questions, and each question's text (the keys of `answers`).
pub(super) fn questions_ask(
    event: &HookEvent,
    args: &CommonArgs,
    agent: Agent,
) -> Result<(Ask, Vec<String>), String> {
    let list = event.tool_input["questions"]
        .as_array()
        .filter(|l| !l.is_empty())
        .ok_or("AskUserQuestion has no questions")?;
    let mut questions = Vec::with_capacity(list.len());
    let mut texts = Vec::with_capacity(list.len());
    for (i, q) in list.iter().enumerate() {
        let text = q["question"]
            .as_str()
            .ok_or_else(|| format!("AskUserQuestion's question {} has no text", i + 1))?;
        texts.push(text.to_owned());
        let options = q["options"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| {
                Ok(QuestionOption {
                    label: o["label"]
                        .as_str()
                        .ok_or_else(|| format!("question {}: an option has no label", i + 1))?
                        .to_owned(),
                    description: o["description"]
                        .as_str()
                        .filter(|d| !d.trim().is_empty())
                        .map(str::to_owned),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        questions.push(Question {
            id: format!("q{}", i + 1),
            question: text.to_owned(),
            header: q["header"]
                .as_str()
                .filter(|h| !h.trim().is_empty())
                .map(str::to_owned),
            options,
            multi_select: q["multiSelect"].as_bool().unwrap_or(false),
        });
    }
    let mut reveal = Reveal::default();
    let scope = scope_of(event, args, &mut reveal)?;
    let ask = Ask {
        request_id: Some(request_id(event, agent, &mut reveal)),
        caller: crate::domain::Caller {
            agent_id: Some(agent.name().into()),
            owner_agent_id: None,
        },
        scope,
        questions,
        context: None,
        on_disconnect: crate::domain::model::OnDisconnect::Withdraw,
    };
    Ok((validated(ask)?, texts))
}
