//! A question's message after a change: open with its votes, settled (who, what and when, and
//! what an approver attached) or ended (the status and reason). The question's embed stays as
//! posted; the outcome fields are added under it, within the budget kept for them.

use super::embed::{build_embed, embed_text};
use super::limits::{
    BY_MAX, EMBED_FIELD_VALUE_MAX, NOTE_MAX, OUTCOME_BUDGET, OUTCOME_FIELDS, STATUS_MAX,
};
use super::{
    components, context, grant_length, inert, inert_code, mentions, one_line, question_embed,
    truncate, truncate_md, RenderContext,
};
use crate::domain::model::Question;
use crate::domain::request::{Answered, WithdrawReason};
use crate::domain::{AskError, ErrorCode};
use serenity::builder::{
    CreateActionRow, CreateAllowedMentions, CreateEmbed, CreateInteractionResponseMessage,
    EditMessage,
};

/// How a question was settled, for the edit that follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnsweredView {
    /// Who settled it, e.g. `<@123>` or `alice (uid 1000)`: askrelay's own text, built from
    /// identities the platform vouches for (rendered as is).
    pub by: String,
    /// Where, when a person answered on another surface than Discord: `in the terminal`, `in
    /// Slack` (the field then reads "Answered in the terminal by").
    pub place: Option<&'static str>,
    /// Free text the person wrote about themselves; shown quoted and inert.
    pub note: Option<String>,
    /// The chosen options' full labels.
    pub labels: Vec<String>,
    /// The custom text (Other…, Answer…, or the note of Submit with note…).
    pub custom: Option<String>,
    pub at_unix: i64,
    /// What the approver attached: a grant, an edited command.
    pub terms: Option<crate::domain::answer::Terms>,
}

/// A message's final state: the question's embed with its outcome fields, no components; or,
/// for a note (a reminder, an escalation step's mentions), its text.
#[derive(Debug, Clone)]
pub struct Outcome {
    embed: Option<CreateEmbed>,
    /// The message's text, replacing what it said (notes only).
    content: Option<String>,
    allowed: CreateAllowedMentions,
    /// None once settled or ended; an open question's (a vote changed its count) otherwise.
    components: Vec<CreateActionRow>,
}

impl Outcome {
    /// As an edit of the message (PATCH).
    pub fn edit(&self) -> EditMessage {
        let mut edit = EditMessage::new()
            .components(self.components.clone())
            .allowed_mentions(self.allowed.clone());
        if let Some(e) = &self.embed {
            edit = edit.embed(e.clone());
        }
        if let Some(c) = &self.content {
            edit = edit.content(c.clone());
        }
        edit
    }

    /// As the update-message callback (type 7) of the interaction that settled it (or voted).
    pub fn update(&self) -> CreateInteractionResponseMessage {
        let mut update = CreateInteractionResponseMessage::new()
            .components(self.components.clone())
            .allowed_mentions(self.allowed.clone());
        if let Some(e) = &self.embed {
            update = update.embed(e.clone());
        }
        if let Some(c) = &self.content {
            update = update.content(c.clone());
        }
        update
    }
}

impl AnsweredView {
    /// The name of the field that says who answered: "Answered by", or where too ("Answered in
    /// the terminal by").
    pub fn heading(&self) -> String {
        match self.place {
            Some(place) => format!("Answered {place} by"),
            None => "Answered by".to_owned(),
        }
    }
}

/// An open question's message as it stands, with its votes (after a vote on a quorum route).
pub fn open(q: &Question, ctx: &RenderContext) -> Outcome {
    Outcome {
        embed: Some(question_embed(q, ctx)),
        content: None,
        allowed: CreateAllowedMentions::new(),
        components: components(q, ctx),
    }
}

/// A question's message after it is settled: the same embed plus who, what and when.
pub fn settled(q: &Question, ctx: &RenderContext, answered: &AnsweredView) -> Outcome {
    let mut by = truncate_md(nonempty_or(&answered.by, "someone"), BY_MAX);
    if let Some(note) = answered.note.as_deref().filter(|n| !n.trim().is_empty()) {
        let room = BY_MAX.saturating_sub(by.chars().count() + 12);
        by.push_str(&format!(
            "\nnote: “{}”",
            truncate_md(&inert(&one_line(note)), room)
        ));
    }
    let fields = vec![
        (answered.heading(), truncate_md(&by, BY_MAX + NOTE_MAX)),
        ("Answer".to_owned(), answer_value(answered, ctx)),
        (
            "Answered at".to_owned(),
            format!("<t:{}:f>", answered.at_unix),
        ),
    ];
    outcome_edit(q, ctx, fields)
}

/// Marks the custom text after the chosen labels; bold, which agent text cannot be.
const NOTE_MARK: &str = "\n**Note:** ";

/// The "Answer" field: the chosen labels, one a line, then the custom text after
/// [`NOTE_MARK`]. Each part is cut to its share, so that the mark is always shown.
fn answer_value(answered: &AnsweredView, ctx: &RenderContext) -> String {
    let mut labels = inert(&answered.labels.join("\n"));
    if let Some(t) = &answered.terms {
        labels.push_str(&terms_text(t, ctx, answered.at_unix));
    }
    let custom = answered
        .custom
        .as_deref()
        .filter(|c| !c.trim().is_empty())
        .map(inert);
    match (labels.trim().is_empty(), custom) {
        (true, None) => "(nothing selected)".to_owned(),
        (true, Some(custom)) => truncate_md(&custom, EMBED_FIELD_VALUE_MAX),
        (false, None) => truncate_md(&labels, EMBED_FIELD_VALUE_MAX),
        (false, Some(custom)) => {
            let room = EMBED_FIELD_VALUE_MAX - NOTE_MARK.chars().count();
            let custom_need = custom.chars().count().min(room / 2);
            let labels = truncate_md(&labels, room - custom_need);
            let custom = truncate_md(&custom, room - labels.chars().count());
            format!("{labels}{NOTE_MARK}{custom}")
        }
    }
}

/// The most characters of each side of an edited command's diff.
const EDIT_SIDE_MAX: usize = 400;

/// What an approver attached to an allow, after the label: the grant with its end, or the
/// asked and the approved command as a diff. askrelay's own bold starts each.
fn terms_text(t: &crate::domain::answer::Terms, ctx: &RenderContext, at_unix: i64) -> String {
    let mut out = String::new();
    if let Some(g) = &t.grant {
        let what = match (&g.pattern, ctx.approval) {
            (Some(p), _) => format!(
                "commands matching `{}` ({})",
                inert_code(p),
                crate::domain::grant::pattern_kind(p)
            ),
            (None, Some(a)) => format!("`{}`", inert_code(&truncate(&a.command, EDIT_SIDE_MAX))),
            (None, None) => "this command".to_owned(),
        };
        out.push_str(&format!(
            "\n**Granted for {}**{}: {what}, until <t:{}:f>",
            grant_length(g.secs),
            g.id.as_deref()
                .map(|id| format!(" (`{}`)", inert_code(id)))
                .unwrap_or_default(),
            at_unix.saturating_add(g.secs as i64)
        ));
    }
    if let Some(e) = &t.edited {
        let asked = ctx.approval.map(|a| a.command.as_str()).unwrap_or_default();
        let side = |sign: char, text: &str| -> String {
            truncate(text, EDIT_SIDE_MAX)
                .lines()
                .map(|l| format!("{sign} {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        out.push_str(&format!(
            "\n**Edited, then approved:**\n```diff\n{}\n{}\n```",
            context::fence_safe(&side('-', asked)),
            context::fence_safe(&side('+', e))
        ));
    }
    out
}

/// A question's message after its request is cancelled or expires: the same embed plus the
/// status and reason.
pub fn ended(q: &Question, ctx: &RenderContext, status: &str, reason: &str) -> Outcome {
    let reason = if reason.trim().is_empty() {
        "(none given)".to_owned()
    } else {
        truncate_md(&inert(reason), EMBED_FIELD_VALUE_MAX)
    };
    let fields = vec![
        (
            "Status".to_owned(),
            truncate(nonempty_or(status, "Ended"), STATUS_MAX),
        ),
        ("Reason".to_owned(), reason),
    ];
    outcome_edit(q, ctx, fields)
}

fn outcome_edit(q: &Question, ctx: &RenderContext, outcome: Vec<(String, String)>) -> Outcome {
    debug_assert!(outcome.len() <= OUTCOME_FIELDS);
    debug_assert!(
        outcome
            .iter()
            .map(|(n, v)| n.chars().count() + v.chars().count())
            .sum::<usize>()
            <= OUTCOME_BUDGET
    );
    let (_, allowed) = mentions(ctx);
    Outcome {
        embed: Some(build_embed(&embed_text(q, ctx), &outcome)),
        content: None,
        allowed,
        components: Vec::new(),
    }
}

fn nonempty_or<'a>(s: &'a str, fallback: &'a str) -> &'a str {
    if s.trim().is_empty() {
        fallback
    } else {
        s
    }
}

/// A question's message after its request was withdrawn (its agent went on without the
/// answer): the status says how ("Answered in the terminal"), the reason what told.
pub fn withdrawn(
    q: &Question,
    ctx: &RenderContext,
    reason: WithdrawReason,
    err: &AskError,
) -> Outcome {
    let told = err
        .message
        .strip_prefix("the request was cancelled: ")
        .unwrap_or(&err.message);
    ended(q, ctx, reason.status(), told)
}

/// A note (a reminder, an escalation step's mentions) of a withdrawn request: it says that
/// the question needs no answer any more, and why, and mentions nobody.
pub fn withdrawn_note(reason: WithdrawReason) -> Outcome {
    Outcome {
        embed: None,
        content: Some(format!(
            "**{}:** this question needs no answer any more.",
            reason.status()
        )),
        allowed: CreateAllowedMentions::new(),
        components: Vec::new(),
    }
}

/// The status an ended question shows: "Expired", or "Cancelled" for any other end.
pub fn ended_status(err: &AskError) -> &'static str {
    if err.code == ErrorCode::Expired {
        "Expired"
    } else {
        "Cancelled"
    }
}

/// Who answered, as the edited message shows it: a Discord member as a mention (of the real
/// clicker), anyone else by the identity the platform vouched for, with where they answered
/// when it was not in Discord (a request a route shows on several surfaces).
pub fn answered_view(q: &Question, a: &Answered) -> AnsweredView {
    use crate::domain::request::Via;
    let answer = crate::domain::QuestionAnswer::build(q, &a.settlement);
    let place = match a.actor.via {
        Via::Terminal => Some("in the terminal"),
        Via::Slack => Some("in Slack"),
        Via::Discord | Via::Policy | Via::Grant => None,
    };
    let by = match a.actor.via {
        Via::Discord if a.actor.id.parse::<u64>().is_ok() => format!("<@{}>", a.actor.id),
        Via::Discord => inert(&a.actor.name),
        Via::Terminal => format!("{} (uid {})", inert(&a.actor.name), inert(&a.actor.id)),
        // A Slack member by the name Slack vouched for, and their Slack id: a mention would
        // not resolve here.
        Via::Slack => format!(
            "{} (Slack user {})",
            inert(&a.actor.name),
            inert(&a.actor.id)
        ),
        // "No answer within 2h: defaulted to “No, keep them”".
        Via::Policy => format!(
            "{}: defaulted to “{}”",
            inert(&a.actor.name),
            inert(&answer.selected.join("”, “"))
        ),
        // "grant g-…, approved by <@111>": the approver is text the daemon wrote.
        Via::Grant => format!(
            "grant `{}`, approved by {}",
            inert(&a.actor.id),
            inert(&a.actor.name)
        ),
    };
    AnsweredView {
        by,
        place,
        note: a.actor.note.clone(),
        labels: answer.selected,
        custom: answer.custom,
        at_unix: a.at_ms / 1000,
        terms: a.settlement.terms.clone(),
    }
}
