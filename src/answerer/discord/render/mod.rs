//! Rendering (docs/contract.md, "Discord rendering"): pure functions that turn a question into serenity builders. No network.
//!
//! Text from agents and clients is made inert with [`inert`] wherever Discord renders markdown
//! (message content, embed titles, descriptions and fields): every ASCII punctuation mark is
//! escaped, so it makes nothing live (no link, mention, formatting, code, heading, quote or
//! list) and reads as written; with [`inert_plain`] where Discord shows plain text (footers,
//! labels, modal titles). askrelay's own status is marked with what agent text cannot be: the
//! outcome fields ("Answered by", "Status") are its own (option fields are numbered), and its
//! notes and the lines of its lists start in bold (docs/security.md). Every text that reaches
//! Discord is cut to its limit with [`truncate`], or [`truncate_md`] for markdown, which never
//! cuts an escape in two. The embed works to a
//! fixed budget: the title, the footer, a reserve for the outcome fields that
//! [`settled`] / [`ended`] add later, and what is left shared between the question text
//! and the option descriptions. So the message and its edits stay under Discord's 6000-character
//! embed total whatever the input, and the edits keep the question's embed exactly as it was.
//!
//! The parts: the question's message (its context, mentions and components) here, Discord's
//! limits and our budgets in `limits.rs`, the embed in `embed.rs`, the edits after a change in
//! `outcome.rs`, the modals in `modals.rs`, an approval's controls and grant texts in
//! `approval.rs`, copies and notes in `copies.rs`; agent text made inert in `markup.rs`, the
//! request's context in `context.rs`.

use super::custom_id::{Action, CustomId};
use super::route::ResolvedRoute;
use crate::domain::model::{Question, QuestionKind};
use crate::domain::request::Request;
use crate::domain::vote::Vote;
use crate::domain::Scope;
use serenity::builder::{
    CreateActionRow, CreateAllowedMentions, CreateButton, CreateMessage, CreateSelectMenu,
    CreateSelectMenuKind, CreateSelectMenuOption,
};
use serenity::model::application::ButtonStyle;
use serenity::model::id::{RoleId, UserId};

mod approval;
mod context;
mod copies;
mod embed;
mod limits;
mod markup;
mod modals;
mod outcome;

use approval::terms_row;
pub use approval::{
    grant_announcement, grant_label, grant_length, grant_length_short, grant_preview,
    offers_pattern, EDIT_LABEL, GRANTED_COMMAND_FILE, GRANT_PATTERN_LABEL,
};
pub use context::{question_post, QuestionPost};
pub use copies::{copy_lead, copy_mentions, copy_post, note};
pub use embed::question_embed;
pub use limits::*;
pub use markup::{inert, inert_plain, one_line, truncate, truncate_md};
pub use modals::{
    confirm_modal, edit_modal, grant_pattern_modal, modal, CONFIRM_INPUT_ID, LENGTH_INPUT_ID,
};
pub use outcome::{
    answered_view, ended, ended_status, open, settled, withdrawn, withdrawn_note, AnsweredView,
    Outcome,
};

/// What the renderer needs to know besides the question itself.
#[derive(Debug, Clone, Copy)]
pub struct RenderContext<'a> {
    /// The request's token, carried in every custom_id.
    pub token: &'a str,
    /// The request id shown in the footer.
    pub request_id: &'a str,
    /// 0-based.
    pub question_index: usize,
    pub question_count: usize,
    /// The asking agent's id, if known.
    pub agent: Option<&'a str>,
    pub scope: &'a Scope,
    pub mention_user_ids: &'a [u64],
    pub mention_role_ids: &'a [u64],
    /// The votes so far on this question (a quorum route), and how many must agree.
    pub votes: &'a [Vote],
    pub approvals: u32,
    /// Whether free text (Other…, Submit with note…) is offered.
    pub offers_custom: bool,
    /// The grants offered beside the options ("Allow for 30 min"), in seconds: an approval on
    /// a route with `grant_durations`.
    pub grant_secs: &'a [u64],
    /// The command an approver may edit before approving it (Edit…), where the route and the
    /// front door allow it.
    pub editable: Option<&'a str>,
    /// What the request approves, when it is an approval.
    pub approval: Option<&'a crate::domain::Approval>,
    /// Labels that need a typed word to confirm (the route's `confirm_labels`), and the word
    /// this request asks for.
    pub confirm_labels: &'a [String],
    pub confirm_word: &'a str,
}

impl<'a> RenderContext<'a> {
    /// The context of question `index` of `req`, posted through `route`.
    pub fn of(req: &'a Request, route: &'a ResolvedRoute, index: usize) -> RenderContext<'a> {
        let approval = req.context.as_deref().and_then(|c| c.approval.as_ref());
        RenderContext {
            token: &req.token,
            request_id: &req.request_id,
            question_index: index,
            question_count: req.questions.len(),
            agent: req.agent(),
            scope: &req.scope,
            mention_user_ids: &route.mention_user_ids,
            mention_role_ids: &route.mention_role_ids,
            votes: req.votes.get(index).map_or(&[], Vec::as_slice),
            approvals: route.policy.approvals,
            offers_custom: route.policy.offers_custom(),
            grant_secs: match approval {
                Some(_) if req.questions.len() == 1 => &route.policy.grant_secs,
                _ => &[],
            },
            editable: approval
                .filter(|a| a.editable && route.policy.allow_edits && req.questions.len() == 1)
                .map(|a| a.command.as_str()),
            approval,
            confirm_labels: &route.policy.confirm.labels,
            confirm_word: route.policy.confirm.word.resolve(&req.scope),
        }
    }

    /// How many more people must choose the leading answer, on a quorum route.
    pub fn votes_missing(&self) -> Option<usize> {
        (self.approvals > 1).then(|| {
            let most = crate::domain::quorum::leading(self.votes);
            (self.approvals as usize).saturating_sub(most)
        })
    }

    /// Whether this is the end of an agent's turn (a `Stop` request): its free text is a
    /// reply ("Reply…"), not an answer of its own.
    pub fn is_turn_end(&self) -> bool {
        self.scope.get("tool").map(String::as_str) == Some(super::STOP_TOOL)
    }

    fn custom_id(&self, action: Action) -> String {
        CustomId::new(self.token, self.question_index, action).encode()
    }
}

/// The message that asks the question: mentions, one embed, components.
pub fn question_message(q: &Question, ctx: &RenderContext) -> CreateMessage {
    let (content, allowed) = mentions(ctx);
    let mut msg = CreateMessage::new()
        .embed(question_embed(q, ctx))
        .components(components(q, ctx))
        .allowed_mentions(allowed);
    if let Some(content) = content {
        msg = msg.content(content);
    }
    msg
}

/// The components of a question still open (at most 3 action rows).
pub fn components(q: &Question, ctx: &RenderContext) -> Vec<CreateActionRow> {
    let options = &q.options[..q.options.len().min(SELECT_OPTIONS_MAX)];
    match q.kind() {
        QuestionKind::FreeText => vec![CreateActionRow::Buttons(vec![CreateButton::new(
            ctx.custom_id(Action::Answer),
        )
        .label(ANSWER_LABEL)
        .style(ButtonStyle::Primary)])],
        QuestionKind::Single => {
            let first = if options.len() <= 5 {
                let buttons = options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| {
                        let style = if o.is_recommended() {
                            ButtonStyle::Primary
                        } else {
                            ButtonStyle::Secondary
                        };
                        CreateButton::new(ctx.custom_id(Action::Choose(i)))
                            .label(truncate(&inert_plain(&o.label), BUTTON_LABEL_MAX))
                            .style(style)
                    })
                    .collect();
                CreateActionRow::Buttons(buttons)
            } else {
                let menu = CreateSelectMenu::new(
                    ctx.custom_id(Action::SelectOne),
                    CreateSelectMenuKind::String {
                        options: select_options(options, ctx),
                    },
                )
                .placeholder(truncate("Choose an option", SELECT_PLACEHOLDER_MAX))
                .min_values(1)
                .max_values(1);
                CreateActionRow::SelectMenu(menu)
            };
            let mut rows = vec![first];
            rows.extend(terms_row(q, ctx));
            if ctx.offers_custom {
                let (label, style) = if ctx.is_turn_end() {
                    (REPLY_LABEL, ButtonStyle::Primary)
                } else {
                    (OTHER_LABEL, ButtonStyle::Secondary)
                };
                rows.push(CreateActionRow::Buttons(vec![CreateButton::new(
                    ctx.custom_id(Action::Other),
                )
                .label(label)
                .style(style)]));
            }
            rows
        }
        QuestionKind::Multi => {
            let max = u8::try_from(options.len()).unwrap_or(SELECT_OPTIONS_MAX as u8);
            let menu = CreateSelectMenu::new(
                ctx.custom_id(Action::Draft),
                CreateSelectMenuKind::String {
                    options: select_options(options, ctx),
                },
            )
            .placeholder(truncate(
                "Choose any options, then press Submit",
                SELECT_PLACEHOLDER_MAX,
            ))
            .min_values(0)
            .max_values(max);
            let mut buttons = vec![CreateButton::new(ctx.custom_id(Action::Submit))
                .label(SUBMIT_LABEL)
                .style(ButtonStyle::Primary)];
            if ctx.offers_custom {
                buttons.push(
                    CreateButton::new(ctx.custom_id(Action::SubmitWithNote))
                        .label(SUBMIT_WITH_NOTE_LABEL)
                        .style(ButtonStyle::Secondary),
                );
            }
            let submit = CreateActionRow::Buttons(buttons);
            vec![CreateActionRow::SelectMenu(menu), submit]
        }
    }
}

/// The message content (mentions only, `None` when there are none) and the allowed mentions that
/// let exactly those users and roles be pinged and parse nothing from text.
pub fn mentions(ctx: &RenderContext) -> (Option<String>, CreateAllowedMentions) {
    let mut content = String::new();
    let mut roles: Vec<u64> = Vec::new();
    let mut users: Vec<u64> = Vec::new();
    let push = |token: String, content: &mut String| -> bool {
        let extra = token.len() + usize::from(!content.is_empty());
        if content.len() + extra > CONTENT_MAX {
            return false;
        }
        if !content.is_empty() {
            content.push(' ');
        }
        content.push_str(&token);
        true
    };
    for &id in ctx.mention_role_ids {
        if id != 0 && !roles.contains(&id) && push(format!("<@&{id}>"), &mut content) {
            roles.push(id);
        }
    }
    for &id in ctx.mention_user_ids {
        if id != 0 && !users.contains(&id) && push(format!("<@{id}>"), &mut content) {
            users.push(id);
        }
    }
    let allowed = CreateAllowedMentions::new()
        .users(users.into_iter().map(UserId::new))
        .roles(roles.into_iter().map(RoleId::new));
    ((!content.is_empty()).then_some(content), allowed)
}

fn select_options(
    options: &[crate::domain::QuestionOption],
    ctx: &RenderContext,
) -> Vec<CreateSelectMenuOption> {
    options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let opt = CreateSelectMenuOption::new(
                truncate(&inert_plain(&o.label), SELECT_OPTION_TEXT_MAX),
                super::custom_id::option_value(i),
            );
            match option_description(o, ctx) {
                Some(d) => {
                    opt.description(truncate(&inert_plain(&one_line(d)), SELECT_OPTION_TEXT_MAX))
                }
                None => opt,
            }
        })
        .collect()
}

/// An option's description as shown, or none when it is empty. The front doors' deny options
/// say "Block it; use Other… to tell Claude why"; where the route offers no Other… (a quorum
/// route whose free text does not decide alone) that clause would point at a button that is not
/// there, so the clauses from the first one naming it are left out.
fn option_description<'o>(
    o: &'o crate::domain::QuestionOption,
    ctx: &RenderContext,
) -> Option<&'o str> {
    let d = o.description.as_deref()?;
    let d = match d.find(OTHER_LABEL).filter(|_| !ctx.offers_custom) {
        Some(at) => d[..at].rfind("; ").map_or("", |cut| &d[..cut]),
        None => d,
    };
    Some(d).filter(|d| !d.trim().is_empty())
}

fn header(q: &Question) -> Option<&str> {
    q.header.as_deref().filter(|h| !h.trim().is_empty())
}

/// Text inside inline code: no backticks to close it early.
fn inert_code(s: &str) -> String {
    context::fence_safe(&one_line(s)).replace('`', "ˋ")
}

#[cfg(test)]
mod tests;
