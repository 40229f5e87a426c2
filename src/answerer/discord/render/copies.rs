//! Copies of a question and notes about it (DMs, escalation steps, reminders): the copy with
//! its lead line and the request's context, the note that replies to the question's message,
//! what each says first and whom it mentions.

use super::super::route::{dm_user, ResolvedRoute};
use super::context::{context_content, QuestionPost};
use super::limits::CONTENT_MAX;
use super::{mentions, question_message, truncate_md, RenderContext};
use crate::domain::expiry::human;
use crate::domain::model::{Context, Question};
use crate::domain::request::{Post, Slot};
use serenity::builder::CreateMessage;

/// A copy of the question (a DM, an escalation step's channel): the same embed and controls,
/// with `lead` (why it is here) before the copy's mentions, and the request's context as the
/// question's own message shows it.
pub fn copy_post(
    q: &Question,
    ctx: &RenderContext,
    lead: &str,
    context: Option<&Context>,
) -> QuestionPost {
    let (mentions, _) = mentions(ctx);
    let head = match mentions {
        Some(m) => format!("{lead} {m}"),
        None => lead.to_owned(),
    };
    let message = question_message(q, ctx);
    match context.filter(|c| !c.is_empty()) {
        None => QuestionPost {
            message: message.content(truncate_md(&head, CONTENT_MAX)),
            files: Vec::new(),
        },
        Some(c) => {
            let (content, files) = context_content(Some(&truncate_md(&head, 1000)), c);
            QuestionPost {
                message: message.content(content),
                files,
            }
        }
    }
}

/// A note about a question (a reminder, an escalation step's mentions): `text` and the
/// mentions, as a reply to the question's message when it is known; no components, so it is
/// never a new question. Only the mentioned ids are pinged, not the replied-to author.
pub fn note(text: &str, ctx: &RenderContext, reply_to: Option<(u64, u64)>) -> CreateMessage {
    let (mentions, allowed) = mentions(ctx);
    let content = match mentions {
        Some(m) => format!("{text} {m}"),
        None => text.to_owned(),
    };
    let mut msg = CreateMessage::new()
        .content(truncate_md(&content, CONTENT_MAX))
        .allowed_mentions(allowed.replied_user(false));
    if let Some((channel, message)) = reply_to {
        msg = msg.reference_message((
            serenity::model::id::ChannelId::new(channel),
            serenity::model::id::MessageId::new(message),
        ));
    }
    msg
}

/// What a copy or a note says before its mentions, e.g. "**Escalated:** no answer after
/// 30m.", for a question that has `waited` so far: askrelay's status starts in bold, which
/// agent text cannot be (docs/security.md).
pub fn copy_lead(
    post: &Post,
    waited: std::time::Duration,
    original: Option<String>,
    votes_missing: Option<usize>,
) -> String {
    let age = human(waited);
    let link = original
        .map(|l| format!(" Original: {l}"))
        .unwrap_or_default();
    if matches!(post.slot, Slot::Reminder(_)) {
        match votes_missing {
            Some(n) => format!(
                "**Reminder:** this question has waited {age}; it needs {n} more approval{}.",
                if n == 1 { "" } else { "s" }
            ),
            None => format!("**Reminder:** this question has waited {age} for an answer."),
        }
    } else if post.slot.step().is_some() {
        format!("**Escalated:** no answer after {age}.{link}")
    } else {
        format!("**A question for you from askrelay.**{link}")
    }
}

/// The mentions of a copy or a note (users, roles): a reminder repeats the route's; an
/// escalation step's rows carry the step's (a DM carries none).
pub fn copy_mentions<'r>(route: &'r ResolvedRoute, post: &Post) -> (&'r [u64], &'r [u64]) {
    if dm_user(&post.channel).is_some() || post.slot.dm_user().is_some() {
        return (&[], &[]);
    }
    if matches!(post.slot, Slot::Reminder(_)) {
        return (&route.mention_user_ids, &route.mention_role_ids);
    }
    match post.slot.step().and_then(|k| route.escalate.get(k - 1)) {
        Some(step) => (&step.mention_user_ids, &step.mention_role_ids),
        None => (&[], &[]),
    }
}
