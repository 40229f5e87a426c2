//! A question's message after a change (docs/slack.md, "Rendering"): open with its votes, or
//! settled (who answered, where, what and when) or ended (the status and why), with its
//! controls removed; and the private reply to a late press.
//!
//! Who answered is askrelay's own text, built from what a platform vouches for: a Slack user
//! by a mention of their id (checked to be one), anyone else by name, inert, and where.

use super::text::{code, escape, inert, md, one_line, truncate, SECTION_TEXT_MAX};
use super::{controls, question_blocks, Message, View};
use crate::config::{is_id, IdKind};
use crate::domain::model::Question;
use crate::domain::request::{Actor, Answered, Via, WithdrawReason};
use crate::domain::{AskError, ErrorCode, QuestionAnswer};
use slack_morphism::prelude::*;

/// The most of the answer (labels and text) an outcome shows.
const ANSWER_SHOWN_MAX: usize = 2400;

/// Where a settlement came from, as people read it after "answered".
pub fn where_answered(via: Via) -> &'static str {
    match via {
        Via::Slack => "in Slack",
        Via::Discord => "in Discord",
        Via::Terminal => "in the terminal",
        Via::Policy => "by the expiry policy",
        Via::Grant => "by a grant",
    }
}

/// Who answered, in mrkdwn: a Slack user as a mention of their id, anyone else by the name
/// their surface gave (inert).
pub fn who(actor: &Actor) -> String {
    match actor.via {
        Via::Slack if is_id(IdKind::User, &actor.id) => format!("<@{}>", actor.id),
        Via::Terminal => format!(
            "{} (uid {})",
            escape(&one_line(&actor.name)),
            escape(&actor.id)
        ),
        Via::Grant => format!(
            "grant `{}`, approved by {}",
            escape(&actor.id),
            escape(&one_line(&actor.name))
        ),
        _ => escape(&one_line(&actor.name)),
    }
}

/// What was answered: the labels, then the text, inert.
fn what(q: &Question, a: &Answered) -> String {
    let qa = QuestionAnswer::build(q, &a.settlement);
    let mut parts: Vec<String> = qa.selected.iter().map(|l| escape(l)).collect();
    if let Some(c) = qa.custom.as_deref() {
        parts.push(format!("“{}”", escape(c)));
    }
    if parts.is_empty() {
        "(nothing selected)".to_owned()
    } else {
        truncate(&parts.join(", "), ANSWER_SHOWN_MAX)
    }
}

/// A time as Slack shows it to each reader in their own zone, with UTC for clients that cannot.
fn when(at_ms: i64) -> String {
    format!(
        "<!date^{}^{{date_short_pretty}} at {{time}}|{}>",
        at_ms / 1000,
        crate::domain::clock::rfc3339(at_ms)
    )
}

/// An open question's message as it stands (a vote changed its count).
pub fn open(q: &Question, view: &View) -> Message {
    let mut blocks = question_blocks(q, view);
    blocks.extend(controls(q, view));
    Message {
        text: fallback_of(q),
        blocks,
    }
}

/// The message of a settled question: the question, then who answered it, where, when and
/// what; no controls.
pub fn settled(q: &Question, view: &View, a: &Answered) -> Message {
    let mut text = match a.actor.via {
        Via::Grant => format!(
            "*Allowed by grant* `{}` (approved by {}), {}:\n{}",
            code(&one_line(&a.actor.id)),
            escape(&one_line(&a.actor.name)),
            when(a.at_ms),
            what(q, a)
        ),
        _ => format!(
            "*Answered* by {} {}, {}:\n{}",
            who(&a.actor),
            where_answered(a.actor.via),
            when(a.at_ms),
            what(q, a)
        ),
    };
    if let Some(note) = a.actor.note.as_deref().filter(|n| !n.trim().is_empty()) {
        text.push_str(&format!("\n_note:_ “{}”", inert(&one_line(note), 200)));
    }
    if let Some(g) = a.settlement.terms.as_ref().and_then(|t| t.grant.as_ref()) {
        let what = match &g.pattern {
            Some(p) => format!("`{}`", code(&one_line(p))),
            None => "this exact command".to_owned(),
        };
        text.push_str(&format!(
            "\n*Granted for {}*{}: {what}, until {}",
            crate::answerer::chat::grant::length(g.secs),
            g.id.as_deref()
                .map(|id| format!(" (`{}`)", code(id)))
                .unwrap_or_default(),
            when(a.at_ms.saturating_add(g.secs as i64 * 1000))
        ));
    }
    if let Some(edited) = a
        .settlement
        .terms
        .as_ref()
        .and_then(|t| t.edited.as_deref())
    {
        let side = |sign: char, s: &str| -> String {
            s.chars()
                .take(EDIT_SIDE_MAX)
                .collect::<String>()
                .lines()
                .map(|l| format!("{sign} {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        text.push_str(&format!(
            "\n*Edited, then approved:*\n```{}\n{}```",
            code(&side('-', view.command.unwrap_or_default())),
            code(&side('+', edited))
        ));
    }
    outcome(q, view, text)
}

/// The message of a question whose request ended without its answer: the status and why.
pub fn ended(
    q: &Question,
    view: &View,
    err: &AskError,
    withdrawn: Option<WithdrawReason>,
) -> Message {
    let status = match withdrawn {
        Some(r) => r.status(),
        None if err.code == ErrorCode::Expired => "Expired",
        None => "Cancelled",
    };
    let reason = err
        .message
        .strip_prefix("the request was cancelled: ")
        .unwrap_or(&err.message);
    let reason = if reason.trim().is_empty() {
        "(none given)".to_owned()
    } else {
        escape(reason)
    };
    outcome(q, view, format!("*{status}:* {reason}"))
}

/// Each side of an edited command's diff, in characters (the section holds 3,000).
const EDIT_SIDE_MAX: usize = 600;

fn outcome(q: &Question, view: &View, text: String) -> Message {
    let mut blocks = question_blocks(q, view);
    blocks.push(
        SlackSectionBlock::new()
            .with_block_id("outcome".into())
            .with_text(md(truncate(&text, SECTION_TEXT_MAX)))
            .into(),
    );
    Message {
        text: fallback_of(q),
        blocks,
    }
}

fn fallback_of(q: &Question) -> String {
    let h = q.header.as_deref().unwrap_or("Question");
    truncate(
        &escape(&one_line(&format!("{h}: {}", q.question))),
        super::FALLBACK_MAX,
    )
}

/// Why a press on a question already settled did not count: by whom, where, when and what.
pub fn already(q: &Question, a: &Answered) -> String {
    truncate(
        &format!(
            "Already answered by {} {}, {}: {}",
            who(&a.actor),
            where_answered(a.actor.via),
            when(a.at_ms),
            what(q, a)
        ),
        SECTION_TEXT_MAX,
    )
}
