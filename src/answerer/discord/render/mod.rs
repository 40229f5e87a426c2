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

use super::custom_id::{Action, CustomId, Form, ModalId, TEXT_INPUT_ID};
use super::route::dm_user;
use super::route::ResolvedRoute;
use crate::domain::expiry::human;
use crate::domain::model::{Context, Question, QuestionKind};
use crate::domain::quorum::Vote;
use crate::domain::request::{Answered, Post, Request, Slot};
use crate::domain::{AskError, ErrorCode, Scope};
use serenity::builder::{
    CreateActionRow, CreateAllowedMentions, CreateButton, CreateEmbed, CreateEmbedFooter,
    CreateInputText, CreateInteractionResponseMessage, CreateMessage, CreateModal,
    CreateSelectMenu, CreateSelectMenuKind, CreateSelectMenuOption, EditMessage,
};
use serenity::model::application::{ButtonStyle, InputTextStyle};
use serenity::model::id::{RoleId, UserId};

mod context;
mod markup;

use context::context_content;
pub use context::{question_post, QuestionPost};
pub use markup::{inert, inert_plain, one_line, truncate, truncate_md};

/// Discord's limits (docs/contract.md, "Discord limits").
pub const CONTENT_MAX: usize = 2000;
pub const EMBED_TOTAL_MAX: usize = 6000;
pub const EMBED_TITLE_MAX: usize = 256;
pub const EMBED_DESCRIPTION_MAX: usize = 4096;
pub const EMBED_FIELDS_MAX: usize = 25;
pub const EMBED_FIELD_NAME_MAX: usize = 256;
pub const EMBED_FIELD_VALUE_MAX: usize = 1024;
pub const EMBED_FOOTER_MAX: usize = 2048;
pub const ACTION_ROWS_MAX: usize = 5;
pub const BUTTON_LABEL_MAX: usize = 80;
pub const SELECT_OPTIONS_MAX: usize = 25;
pub const SELECT_OPTION_TEXT_MAX: usize = 100;
pub const SELECT_PLACEHOLDER_MAX: usize = 150;
pub const MODAL_TITLE_MAX: usize = 45;
pub const TEXT_INPUT_LABEL_MAX: usize = 45;
pub const TEXT_INPUT_PLACEHOLDER_MAX: usize = 100;
pub const TEXT_INPUT_VALUE_MAX: u16 = 4000;

/// Discord's most attachments per message.
pub const ATTACHMENTS_MAX: usize = 10;
/// A context text of more lines than this goes as a file even when it would fit the content:
/// a tall message pushes the question's buttons out of sight.
pub const CONTEXT_INLINE_LINES_MAX: usize = 40;
/// The file a context text goes in when it does not fit the message content.
pub const CONTEXT_TEXT_FILE: &str = "context.md";

/// Button texts (docs/contract.md, "Discord rendering"), exactly.
pub const OTHER_LABEL: &str = "Other…";
pub const ANSWER_LABEL: &str = "Answer…";
pub const SUBMIT_LABEL: &str = "Submit";
pub const SUBMIT_WITH_NOTE_LABEL: &str = "Submit with note…";

/// Our own budget inside the embed limits.
const FOOTER_BUDGET: usize = 300;
/// The fields added by the settled/ended edits; option fields leave room for them.
const OUTCOME_FIELDS: usize = 3;
/// Characters the outcome fields may take (names and values); see [`outcome_fields`].
const OUTCOME_BUDGET: usize = 1450;
const BY_MAX: usize = 200;
/// Room for the quoted note under "Answered by".
const NOTE_MAX: usize = 120;
const STATUS_MAX: usize = 64;
/// At most this many embed fields describe options.
const OPTION_FIELDS_MAX: usize = EMBED_FIELDS_MAX - OUTCOME_FIELDS;

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

    fn custom_id(&self, action: Action) -> String {
        CustomId::new(self.token, self.question_index, action).encode()
    }
}

/// How a question was settled, for the edit that follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnsweredView {
    /// Who settled it, e.g. `<@123>` or `alice (uid 1000) via terminal`: askrelay's own text,
    /// built from identities the platform vouches for (rendered as is).
    pub by: String,
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

/// The one line that announces a request a grant answered (grants are never silent): what
/// ran, which grant allowed it and who approved that, the agent and the request. No
/// components, no embed, no ping. The command is shown whole: in the line when it fits, in a
/// code block under it when it has several lines, else attached as [`GRANTED_COMMAND_FILE`]
/// (as a long context is), never cut.
pub fn grant_announcement(ctx: &RenderContext, answered: &Answered) -> QuestionPost {
    let mut line = format!(
        "**Allowed by grant** `{}` (approved by {}): ",
        inert_code(&a_id(&answered.actor.id)),
        inert(&truncate(&answered.actor.name, 200)),
    );
    let mut tail = format!(
        " · request `{}`",
        inert_code(&truncate(ctx.request_id, 120))
    );
    if let Some(agent) = ctx.agent.filter(|a| !a.trim().is_empty()) {
        tail.push_str(&format!(" · agent `{}`", inert_code(&truncate(agent, 80))));
    }
    let mut files = Vec::new();
    match ctx.approval {
        None => line.push_str(&format!("a request{tail}")),
        Some(a) => {
            let tool = format!("`{}`", inert_code(&truncate(&a.tool, 80)));
            let inline = format!("{line}{tool} `{}`{tail}", inert_code(&a.command));
            let block = format!(
                "{line}{tool}{tail}\n```\n{}\n```",
                context::fence_safe(&a.command)
            );
            line = if !a.command.contains('\n') && inline.chars().count() <= CONTENT_MAX {
                inline
            } else if block.chars().count() <= CONTENT_MAX {
                block
            } else {
                files.push((
                    GRANTED_COMMAND_FILE.to_owned(),
                    a.command.as_bytes().to_vec(),
                ));
                format!(
                    "{line}{tool}, the command attached as `{GRANTED_COMMAND_FILE}` ({} characters){tail}",
                    a.command.chars().count()
                )
            };
        }
    }
    QuestionPost {
        message: CreateMessage::new()
            .content(truncate_md(&line, CONTENT_MAX))
            .allowed_mentions(CreateAllowedMentions::new()),
        files,
    }
}

/// The attachment that carries a command a grant allowed, when it is too long for the line.
pub const GRANTED_COMMAND_FILE: &str = "command.txt";

fn a_id(id: &str) -> String {
    truncate(id, 40)
}

/// A message's final state: the question's embed with its outcome fields, no components.
#[derive(Debug, Clone)]
pub struct Outcome {
    embed: CreateEmbed,
    allowed: CreateAllowedMentions,
    /// None once settled or ended; an open question's (a vote changed its count) otherwise.
    components: Vec<CreateActionRow>,
}

impl Outcome {
    /// As an edit of the message (PATCH).
    pub fn edit(&self) -> EditMessage {
        EditMessage::new()
            .embed(self.embed.clone())
            .components(self.components.clone())
            .allowed_mentions(self.allowed.clone())
    }

    /// As the update-message callback (type 7) of the interaction that settled it (or voted).
    pub fn update(&self) -> CreateInteractionResponseMessage {
        CreateInteractionResponseMessage::new()
            .embed(self.embed.clone())
            .components(self.components.clone())
            .allowed_mentions(self.allowed.clone())
    }
}

/// An open question's message as it stands, with its votes (after a vote on a quorum route).
pub fn open(q: &Question, ctx: &RenderContext) -> Outcome {
    Outcome {
        embed: question_embed(q, ctx),
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
        (
            "Answered by".to_owned(),
            truncate_md(&by, BY_MAX + NOTE_MAX),
        ),
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

/// Text inside inline code: no backticks to close it early.
fn inert_code(s: &str) -> String {
    context::fence_safe(&one_line(s)).replace('`', "ˋ")
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

/// The modal for custom text: one required paragraph input with custom_id [`TEXT_INPUT_ID`].
pub fn modal(q: &Question, ctx: &RenderContext, form: Form) -> CreateModal {
    let (label, placeholder) = match form {
        Form::Other | Form::Answer => ("Your answer", q.question.as_str()),
        Form::Note => ("Note", "A note to send with your selection"),
        Form::Edit => ("The command to approve", ""),
        Form::Confirm(_) | Form::ConfirmDraft | Form::ConfirmGrant(_) => {
            return confirm_modal(q, ctx, form)
        }
        Form::GrantPattern => ("Pattern", ""),
    };
    let title = match header(q) {
        Some(h) => truncate(&inert_plain(h), MODAL_TITLE_MAX),
        None => "Your answer".to_owned(),
    };
    let mut input = CreateInputText::new(
        InputTextStyle::Paragraph,
        truncate(label, TEXT_INPUT_LABEL_MAX),
        TEXT_INPUT_ID,
    )
    .required(true)
    .max_length(TEXT_INPUT_VALUE_MAX);
    if !placeholder.trim().is_empty() {
        input = input.placeholder(truncate(
            &inert_plain(&one_line(placeholder)),
            TEXT_INPUT_PLACEHOLDER_MAX,
        ));
    }
    CreateModal::new(
        ModalId::new(ctx.token, ctx.question_index, form).encode(),
        title,
    )
    .components(vec![CreateActionRow::InputText(input)])
}

/// The confirm modal's label around the word; a word too long for Discord's 45 characters is
/// cut there (the message shows it whole).
const CONFIRM_LABEL_PREFIX: &str = "Type ";
const CONFIRM_LABEL_SUFFIX: &str = " to confirm";

/// The modal that asks for the word confirming a label of the route's `confirm_labels`
/// (opened by a click on it, or by Submit with it in the draft): one short required input,
/// labelled "Type WORD to confirm", with custom_id [`TEXT_INPUT_ID`].
pub fn confirm_modal(q: &Question, ctx: &RenderContext, form: Form) -> CreateModal {
    let title = match form {
        Form::Confirm(i) => q
            .options
            .get(i)
            .map(|o| format!("Confirm: {}", inert_plain(&one_line(&o.label))))
            .unwrap_or_else(|| "Confirm".to_owned()),
        Form::ConfirmGrant(g) => format!(
            "Confirm: {}",
            grant_label(ctx.grant_secs.get(g).copied().unwrap_or_default())
        ),
        _ => "Confirm your selection".to_owned(),
    };
    let room = TEXT_INPUT_LABEL_MAX
        - CONFIRM_LABEL_PREFIX.chars().count()
        - CONFIRM_LABEL_SUFFIX.chars().count();
    let label = format!(
        "{CONFIRM_LABEL_PREFIX}{}{CONFIRM_LABEL_SUFFIX}",
        truncate(&inert_plain(ctx.confirm_word), room)
    );
    let input = CreateInputText::new(
        InputTextStyle::Short,
        truncate(&label, TEXT_INPUT_LABEL_MAX),
        TEXT_INPUT_ID,
    )
    .required(true)
    .min_length(1)
    .max_length(100);
    CreateModal::new(
        ModalId::new(ctx.token, ctx.question_index, form).encode(),
        truncate(&title, MODAL_TITLE_MAX),
    )
    .components(vec![CreateActionRow::InputText(input)])
}

/// "**Typed confirmation:** Allow needs typing `prod-eu` to confirm." for a question with a
/// label of the route's `confirm_labels` (askrelay's own bold; the word is a plain word, see
/// [`crate::domain::confirm::is_word`], so a code span shows it as is); `None` elsewhere.
fn confirm_line(q: &Question, ctx: &RenderContext) -> Option<String> {
    let labels: Vec<String> = q
        .options
        .iter()
        .filter(|o| ctx.confirm_labels.contains(&o.label))
        .map(|o| inert(&one_line(&o.label)))
        .collect();
    if labels.is_empty() {
        return None;
    }
    let verb = if labels.len() == 1 { "needs" } else { "need" };
    Some(truncate_md(
        &format!(
            "**Typed confirmation:** {} {verb} typing `{}` to confirm.",
            labels.join(", "),
            ctx.confirm_word
        ),
        CONFIRM_LINE_MAX,
    ))
}

/// The most characters of the confirmation line.
const CONFIRM_LINE_MAX: usize = 400;

/// The question's embed as posted (and kept by the edits).
pub fn question_embed(q: &Question, ctx: &RenderContext) -> CreateEmbed {
    build_embed(&embed_text(q, ctx), &[])
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
                rows.push(CreateActionRow::Buttons(vec![CreateButton::new(
                    ctx.custom_id(Action::Other),
                )
                .label(OTHER_LABEL)
                .style(ButtonStyle::Secondary)]));
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

/// "Allow for 30 min" for each of the route's grant durations, and "Edit…", on an approval
/// whose first option allows: a row of its own, under the options.
fn terms_row(q: &Question, ctx: &RenderContext) -> Option<CreateActionRow> {
    q.options.first()?;
    let mut buttons: Vec<CreateButton> = ctx
        .grant_secs
        .iter()
        .enumerate()
        .map(|(i, &secs)| {
            CreateButton::new(ctx.custom_id(Action::Grant(i)))
                .label(grant_label(secs))
                .style(ButtonStyle::Secondary)
        })
        .collect();
    // A pattern's grant is saved from its preview, which has no room for a typed word; and a
    // pattern matches shell words, so a command that does not split into them takes none.
    let needs_word = ctx.confirm_labels.contains(&q.options[0].label);
    let splits = ctx
        .approval
        .is_some_and(|a| crate::domain::shell::split(&a.command).is_ok());
    if !ctx.grant_secs.is_empty() && !needs_word && splits {
        buttons.push(
            CreateButton::new(ctx.custom_id(Action::GrantPattern))
                .label(GRANT_PATTERN_LABEL)
                .style(ButtonStyle::Secondary),
        );
    }
    if ctx.editable.is_some() {
        buttons.push(
            CreateButton::new(ctx.custom_id(Action::Edit))
                .label(EDIT_LABEL)
                .style(ButtonStyle::Secondary),
        );
    }
    (!buttons.is_empty()).then_some(CreateActionRow::Buttons(buttons))
}

/// The button that opens the form to edit a command before approving it.
pub const EDIT_LABEL: &str = "Edit…";

/// The button that opens the form for a grant with a pattern.
pub const GRANT_PATTERN_LABEL: &str = "Allow matching…";

/// The custom_id of the grant form's second input: how long.
pub const LENGTH_INPUT_ID: &str = "length";

/// A grant length as the form shows and takes it: `30m`, `8h`, `2d`, `1h30m`.
pub fn grant_length_short(secs: u64) -> String {
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3600, secs % 3600 / 60);
    let mut out = String::new();
    for (n, unit) in [(d, "d"), (h, "h"), (m, "m")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    if out.is_empty() {
        out.push_str("0m");
    }
    out
}

/// The form for a grant with a pattern: the pattern (filled in with the command as asked) and
/// one of the route's lengths.
pub fn grant_pattern_modal(q: &Question, ctx: &RenderContext, command: &str) -> CreateModal {
    let lengths: Vec<String> = ctx
        .grant_secs
        .iter()
        .map(|&s| grant_length_short(s))
        .collect();
    let pattern = CreateInputText::new(
        InputTextStyle::Paragraph,
        "Pattern: * is any text but ; & | $ ( ) < >",
        TEXT_INPUT_ID,
    )
    .required(true)
    .max_length(TEXT_INPUT_VALUE_MAX)
    .value(truncate(command, usize::from(TEXT_INPUT_VALUE_MAX)));
    let length = CreateInputText::new(
        InputTextStyle::Short,
        truncate(
            &format!("For how long: {}", lengths.join(" or ")),
            TEXT_INPUT_LABEL_MAX,
        ),
        LENGTH_INPUT_ID,
    )
    .required(true)
    .max_length(20)
    .value(lengths.first().cloned().unwrap_or_default());
    let title = match header(q) {
        Some(h) => truncate(
            &format!("Allow matching: {}", inert_plain(h)),
            MODAL_TITLE_MAX,
        ),
        None => "Allow matching".to_owned(),
    };
    CreateModal::new(
        ModalId::new(ctx.token, ctx.question_index, Form::GrantPattern).encode(),
        title,
    )
    .components(vec![
        CreateActionRow::InputText(pattern),
        CreateActionRow::InputText(length),
    ])
}

/// The most characters of a pattern its preview shows: the rest of the preview (what it
/// matches, a warning) must fit Discord's 2000 characters with it.
const PREVIEW_PATTERN_MAX: usize = 800;

/// What a grant with `pattern` would allow, shown before it is saved, with its "Save grant"
/// button (grant length `g` of the route).
pub fn grant_preview(
    ctx: &RenderContext,
    pattern: &str,
    g: usize,
    requester: &str,
) -> (String, Vec<CreateActionRow>) {
    let secs = ctx.grant_secs.get(g).copied().unwrap_or_default();
    let tool = ctx.approval.map(|a| a.tool.as_str()).unwrap_or("the tool");
    let mut text = format!(
        "**Grant preview** ({}): `{}` commands matching `{}`{} for {}, for {requester} only, \
         starting with this request. It is matched on shell words: a `*` word stands for any \
         number of whole words, and a command matches only if it is one simple command that \
         splits cleanly into words (no `;` `&` `|` `<` `>` `$` backticks, line breaks, comments \
         or unclosed quotes).",
        crate::domain::grant::pattern_kind(pattern),
        inert_code(tool),
        inert_code(&truncate(pattern, PREVIEW_PATTERN_MAX)),
        match pattern.chars().count() {
            n if n > PREVIEW_PATTERN_MAX => {
                format!(" (the first {PREVIEW_PATTERN_MAX} of its {n} characters)")
            }
            _ => String::new(),
        },
        grant_length(secs),
    );
    if let Some((name, how)) = crate::domain::grant::runs_other_programs(pattern) {
        text.push_str(&format!(
            "\n⚠ `{}` can run other programs from its options or arguments ({how}): this grant \
             allows whatever those run too.",
            inert_code(&name)
        ));
    }
    text.push_str("\nNothing is saved until you press **Save grant**.");
    let save = CreateButton::new(ctx.custom_id(Action::SaveGrant(g)))
        .label("Save grant")
        .style(ButtonStyle::Primary);
    (
        truncate_md(&text, CONTENT_MAX),
        vec![CreateActionRow::Buttons(vec![save])],
    )
}

/// "Allow for 30 min", "Allow for 8 h", "Allow for 1 h 30 min".
pub fn grant_label(secs: u64) -> String {
    format!("Allow for {}", grant_length(secs))
}

/// "30 min", "8 h", "1 h 30 min", "2 days".
pub fn grant_length(secs: u64) -> String {
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3600, secs % 3600 / 60);
    let mut parts = Vec::new();
    if d > 0 {
        parts.push(format!("{d} day{}", if d == 1 { "" } else { "s" }));
    }
    if h > 0 {
        parts.push(format!("{h} h"));
    }
    if m > 0 || parts.is_empty() {
        parts.push(format!("{m} min"));
    }
    parts.join(" ")
}

/// The form to edit a command and approve the edited one, filled in with `command`.
pub fn edit_modal(q: &Question, ctx: &RenderContext, command: &str) -> CreateModal {
    let title = match header(q) {
        Some(h) => truncate(
            &format!("Edit, then approve: {}", inert_plain(h)),
            MODAL_TITLE_MAX,
        ),
        None => "Edit, then approve".to_owned(),
    };
    let input = CreateInputText::new(
        InputTextStyle::Paragraph,
        "The command to approve (it runs as written)",
        TEXT_INPUT_ID,
    )
    .required(true)
    .max_length(TEXT_INPUT_VALUE_MAX)
    .value(truncate(command, usize::from(TEXT_INPUT_VALUE_MAX)));
    let mut rows = vec![CreateActionRow::InputText(input)];
    // Approving needs the typed word too when the allow label is one of `confirm_labels`.
    if q.options
        .first()
        .is_some_and(|o| ctx.confirm_labels.contains(&o.label))
    {
        let room = TEXT_INPUT_LABEL_MAX
            - CONFIRM_LABEL_PREFIX.chars().count()
            - CONFIRM_LABEL_SUFFIX.chars().count();
        let label = format!(
            "{CONFIRM_LABEL_PREFIX}{}{CONFIRM_LABEL_SUFFIX}",
            truncate(&inert_plain(ctx.confirm_word), room)
        );
        rows.push(CreateActionRow::InputText(
            CreateInputText::new(
                InputTextStyle::Short,
                truncate(&label, TEXT_INPUT_LABEL_MAX),
                CONFIRM_INPUT_ID,
            )
            .required(true)
            .min_length(1)
            .max_length(100),
        ));
    }
    CreateModal::new(
        ModalId::new(ctx.token, ctx.question_index, Form::Edit).encode(),
        title,
    )
    .components(rows)
}

/// The custom_id of the edit form's second input: the word that confirms the allow.
pub const CONFIRM_INPUT_ID: &str = "confirm";

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
        embed: build_embed(&embed_text(q, ctx), &outcome),
        allowed,
        components: Vec::new(),
    }
}

/// The most characters of the votes line.
const VOTES_MAX: usize = 300;

/// "**Approvals: 1 of 2** · alice: Allow" on a quorum route (askrelay's own bold, which agent
/// text cannot write), with each voter's choice; `None` elsewhere.
fn votes_line(q: &Question, ctx: &RenderContext) -> Option<String> {
    let missing = ctx.votes_missing()?;
    let needed = ctx.approvals as usize;
    let mut line = format!("**Approvals: {} of {needed}**", needed - missing);
    for v in ctx.votes {
        let mut what: Vec<String> = v
            .selected
            .iter()
            .filter_map(|&i| q.options.get(i))
            .map(|o| inert(&o.label))
            .collect();
        if let Some(c) = &v.custom {
            what.push(format!("“{}”", inert(c)));
        }
        line.push_str(&format!(" · {}: {}", inert(&v.name), what.join(", ")));
    }
    Some(truncate_md(&line, VOTES_MAX))
}

fn header(q: &Question) -> Option<&str> {
    q.header.as_deref().filter(|h| !h.trim().is_empty())
}

fn nonempty_or<'a>(s: &'a str, fallback: &'a str) -> &'a str {
    if s.trim().is_empty() {
        fallback
    } else {
        s
    }
}

/// The texts of the question's embed, already cut to fit.
struct EmbedText {
    title: String,
    description: String,
    fields: Vec<(String, String)>,
    footer: String,
}

fn embed_text(q: &Question, ctx: &RenderContext) -> EmbedText {
    let title = truncate_md(&inert(header(q).unwrap_or("Question")), EMBED_TITLE_MAX);
    let footer = truncate(
        &inert_plain(&footer_text(ctx)),
        FOOTER_BUDGET.min(EMBED_FOOTER_MAX),
    );

    let mut description = String::new();
    if let Some(votes) = votes_line(q, ctx) {
        description.push_str(&votes);
        description.push('\n');
    }
    if let Some(line) = confirm_line(q, ctx) {
        description.push_str(&line);
        description.push('\n');
    }
    if ctx.question_count > 1 {
        description.push_str(&format!(
            "**Question {} of {}**\n",
            ctx.question_index.saturating_add(1),
            ctx.question_count
        ));
    }
    description.push_str(&inert(&q.question));

    // (number, label, description) of each option that has a description.
    let described: Vec<(usize, &str, &str)> = q
        .options
        .iter()
        .enumerate()
        .filter_map(|(i, o)| option_description(o, ctx).map(|d| (i + 1, o.label.as_str(), d)))
        .collect();
    // At most OPTION_FIELDS_MAX fields, numbered ("1. label", the dot escaped so that it is
    // never a list), so that no option can pose as an outcome field; past that, one field
    // lists the rest, a line each, each line starting with its number in bold, which agent
    // text cannot write.
    let field = |&(n, label, d): &(usize, &str, &str)| {
        (
            format!("{n}\\. {}", inert(label)),
            FieldText::Text(inert(d)),
        )
    };
    let mut wanted: Vec<(String, FieldText)> = Vec::new();
    if described.len() <= OPTION_FIELDS_MAX {
        wanted.extend(described.iter().map(field));
    } else {
        let keep = OPTION_FIELDS_MAX - 1;
        wanted.extend(described[..keep].iter().map(field));
        let rest = &described[keep..];
        let lines = rest
            .iter()
            .map(|&(n, label, d)| {
                (
                    format!("**{n}.** "),
                    format!("{}: {}", inert(label), inert(&one_line(d))),
                )
            })
            .collect();
        wanted.push((format!("…and {} more", rest.len()), FieldText::Lines(lines)));
    }

    // Share what is left of the embed total between the description and the fields.
    let body = EMBED_TOTAL_MAX - OUTCOME_BUDGET - title.chars().count() - footer.chars().count();
    let desc_need = description.chars().count().min(EMBED_DESCRIPTION_MAX);
    let needs: Vec<(usize, usize)> = wanted
        .iter()
        .map(|(n, v)| {
            (
                n.chars().count().min(EMBED_FIELD_NAME_MAX),
                v.len().min(EMBED_FIELD_VALUE_MAX),
            )
        })
        .collect();
    let fields_need: usize = needs.iter().map(|(n, v)| n + v).sum();
    let desc_budget = desc_need.min(body.saturating_sub(fields_need).max(body * 3 / 5));
    let fields_budget = body - desc_budget;
    let shares = fair_shares(
        &needs.iter().map(|(n, v)| n + v).collect::<Vec<_>>(),
        fields_budget,
    );
    let fields = wanted
        .iter()
        .zip(needs.iter().zip(shares))
        .filter_map(|((name, value), (&(name_need, value_need), share))| {
            let name_max = name_need.min((share / 2).max(share.saturating_sub(value_need)));
            let value_max = value_need.min(share - name_max);
            (name_max > 0 && value_max > 0)
                .then(|| (truncate_md(name, name_max), value.cut(value_max)))
        })
        .collect();

    EmbedText {
        title,
        description: truncate_md(&description, desc_budget),
        fields,
        footer,
    }
}

/// A field's value before it is cut to its share.
enum FieldText {
    Text(String),
    /// Lines, each as (its start, the rest): a line is cut in its rest, so that every line
    /// keeps its start.
    Lines(Vec<(String, String)>),
}

impl FieldText {
    fn len(&self) -> usize {
        match self {
            FieldText::Text(t) => t.chars().count(),
            FieldText::Lines(lines) => {
                let chars: usize = lines
                    .iter()
                    .map(|(a, b)| a.chars().count() + b.chars().count())
                    .sum();
                chars + lines.len().saturating_sub(1)
            }
        }
    }

    /// The value in at most `max` characters.
    fn cut(&self, max: usize) -> String {
        let lines = match self {
            FieldText::Text(t) => return truncate_md(t, max),
            FieldText::Lines(lines) => lines,
        };
        let whole = || {
            let all: Vec<String> = lines.iter().map(|(a, b)| format!("{a}{b}")).collect();
            all.join("\n")
        };
        if self.len() <= max {
            return whole();
        }
        let needs: Vec<usize> = lines
            .iter()
            .map(|(a, b)| a.chars().count() + b.chars().count())
            .collect();
        let shares = fair_shares(&needs, max.saturating_sub(lines.len().saturating_sub(1)));
        let mut out = Vec::with_capacity(lines.len());
        for (((start, rest), need), share) in lines.iter().zip(needs).zip(shares) {
            let start_len = start.chars().count();
            if share >= need {
                out.push(format!("{start}{rest}"));
            } else if share > start_len + 1 {
                out.push(format!("{start}{}", truncate_md(rest, share - start_len)));
            } else {
                // Too little room to keep each line's start: cut the whole.
                return truncate_md(&whole(), max);
            }
        }
        out.join("\n")
    }
}

fn footer_text(ctx: &RenderContext) -> String {
    let mut parts = vec![format!("request {}", ctx.request_id)];
    if let Some(agent) = ctx.agent.filter(|a| !a.trim().is_empty()) {
        parts.push(format!("agent {agent}"));
    }
    if !ctx.scope.is_empty() {
        let labels: Vec<String> = ctx.scope.iter().map(|(k, v)| format!("{k}={v}")).collect();
        parts.push(labels.join(" "));
    }
    parts.join(" · ")
}

/// Max-min fair shares of `budget` for the given needs; no share exceeds its need and the shares
/// never add up to more than `budget`.
fn fair_shares(needs: &[usize], budget: usize) -> Vec<usize> {
    let mut shares = vec![0; needs.len()];
    let mut order: Vec<usize> = (0..needs.len()).collect();
    order.sort_by_key(|&i| needs[i]);
    let mut left = budget;
    for (done, i) in order.into_iter().enumerate() {
        let share = needs[i].min(left / (needs.len() - done));
        shares[i] = share;
        left -= share;
    }
    shares
}

fn build_embed(text: &EmbedText, outcome: &[(String, String)]) -> CreateEmbed {
    let mut embed = CreateEmbed::new()
        .title(text.title.clone())
        .footer(CreateEmbedFooter::new(text.footer.clone()));
    if !text.description.is_empty() {
        embed = embed.description(text.description.clone());
    }
    embed.fields(
        text.fields
            .iter()
            .chain(outcome)
            .map(|(n, v)| (n.clone(), v.clone(), false)),
    )
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
/// clicker), anyone else by the identity the platform vouched for.
pub fn answered_view(q: &Question, a: &Answered) -> AnsweredView {
    use crate::domain::request::Via;
    let answer = crate::domain::QuestionAnswer::build(q, &a.settlement);
    let by = match a.actor.via {
        Via::Discord if a.actor.id.parse::<u64>().is_ok() => format!("<@{}>", a.actor.id),
        Via::Discord => inert(&a.actor.name),
        Via::Terminal => format!(
            "{} (uid {}) via terminal",
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
        note: a.actor.note.clone(),
        labels: answer.selected,
        custom: answer.custom,
        at_unix: a.at_ms / 1000,
        terms: a.settlement.terms.clone(),
    }
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

#[cfg(test)]
mod tests {
    use super::super::custom_id;
    use super::super::markdown_model;
    use super::*;
    use crate::domain::model::{QuestionOption, RECOMMENDED_SUFFIX};
    use serde_json::Value;

    fn opt(label: &str, description: Option<&str>) -> QuestionOption {
        QuestionOption {
            label: label.to_owned(),
            description: description.map(str::to_owned),
        }
    }

    fn question(header: Option<&str>, options: Vec<QuestionOption>, multi: bool) -> Question {
        Question {
            id: "q1".to_owned(),
            question: "Which database should we use?".to_owned(),
            header: header.map(str::to_owned),
            options,
            multi_select: multi,
        }
    }

    fn scope() -> Scope {
        let mut s = Scope::new();
        s.insert("project".to_owned(), "p".to_owned());
        s.insert("session".to_owned(), "s".to_owned());
        s
    }

    fn ctx<'a>(scope: &'a Scope) -> RenderContext<'a> {
        RenderContext {
            token: "0123456789abcdef0123",
            request_id: "abc",
            question_index: 0,
            question_count: 1,
            agent: Some("x"),
            scope,
            mention_user_ids: &[],
            mention_role_ids: &[],
            votes: &[],
            approvals: 1,
            offers_custom: true,
            grant_secs: &[],
            editable: None,
            approval: None,
            confirm_labels: &[],
            confirm_word: "approve",
        }
    }

    fn json<T: serde::Serialize>(b: &T) -> Value {
        serde_json::to_value(b).unwrap()
    }

    fn chars(v: &Value) -> usize {
        v.as_str().map_or(0, |s| s.chars().count())
    }

    /// Every custom_id in the value, at any depth.
    fn custom_ids(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    if k == "custom_id" {
                        out.push(v.as_str().unwrap().to_owned());
                    } else {
                        custom_ids(v, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| custom_ids(v, out)),
            _ => {}
        }
    }

    /// Checks every Discord limit on a message body (create or edit) and returns its embed.
    fn check_limits(body: &Value, q: &Question) -> Value {
        if let Some(c) = body.get("content") {
            assert!(chars(c) <= CONTENT_MAX);
        }
        let embeds = body["embeds"].as_array().unwrap();
        assert_eq!(embeds.len(), 1);
        let e = &embeds[0];
        assert!(chars(&e["title"]) <= EMBED_TITLE_MAX && chars(&e["title"]) > 0);
        assert!(chars(&e["description"]) <= EMBED_DESCRIPTION_MAX);
        assert!(chars(&e["footer"]["text"]) <= EMBED_FOOTER_MAX);
        let fields = e.get("fields").and_then(Value::as_array).cloned();
        let fields = fields.unwrap_or_default();
        assert!(fields.len() <= EMBED_FIELDS_MAX);
        let mut total = chars(&e["title"]) + chars(&e["description"]) + chars(&e["footer"]["text"]);
        for f in &fields {
            let (n, v) = (chars(&f["name"]), chars(&f["value"]));
            assert!(n > 0 && n <= EMBED_FIELD_NAME_MAX, "{f}");
            assert!(v > 0 && v <= EMBED_FIELD_VALUE_MAX, "{f}");
            total += n + v;
        }
        assert!(total <= EMBED_TOTAL_MAX, "embed total {total}");

        let rows = body
            .get("components")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        assert!(rows.len() <= ACTION_ROWS_MAX);
        for row in &rows {
            assert_eq!(row["type"], 1);
            let comps = row["components"].as_array().unwrap();
            assert!(!comps.is_empty() && comps.len() <= 5);
            for c in comps {
                match c["type"].as_u64().unwrap() {
                    2 => {
                        assert!(chars(&c["label"]) > 0 && chars(&c["label"]) <= BUTTON_LABEL_MAX);
                    }
                    3 => {
                        assert_eq!(comps.len(), 1, "a select menu is alone in its row");
                        let opts = c["options"].as_array().unwrap();
                        assert!(!opts.is_empty() && opts.len() <= SELECT_OPTIONS_MAX);
                        assert!(c["max_values"].as_u64().unwrap() as usize <= opts.len());
                        assert!(chars(&c["placeholder"]) <= SELECT_PLACEHOLDER_MAX);
                        for o in opts {
                            assert!(chars(&o["label"]) > 0);
                            assert!(chars(&o["label"]) <= SELECT_OPTION_TEXT_MAX);
                            assert!(chars(&o["value"]) <= SELECT_OPTION_TEXT_MAX);
                            assert!(chars(&o["description"]) <= SELECT_OPTION_TEXT_MAX);
                            let i = custom_id::parse_option_value(
                                o["value"].as_str().unwrap(),
                                q.options.len(),
                            );
                            assert!(i.is_some());
                        }
                    }
                    t => panic!("unexpected component type {t}"),
                }
            }
        }
        check_custom_ids(body, q);
        e.clone()
    }

    /// custom_ids are unique, at most 100 characters, parse back and hold no label text.
    fn check_custom_ids(body: &Value, q: &Question) -> Vec<CustomId> {
        let mut ids = Vec::new();
        custom_ids(body, &mut ids);
        let mut parsed = Vec::new();
        for id in &ids {
            assert!(!id.is_empty() && id.chars().count() <= 100, "{id}");
            assert_eq!(ids.iter().filter(|x| *x == id).count(), 1, "unique {id}");
            for o in &q.options {
                assert!(!id.contains(&o.label), "{id} holds a label");
            }
            let p = CustomId::parse(id).unwrap_or_else(|| panic!("{id} does not parse"));
            assert_eq!(p.encode(), *id);
            assert_eq!(custom_id::parse(id), Some(p.clone()));
            parsed.push(p);
        }
        parsed
    }

    fn actions(body: &Value, q: &Question) -> Vec<Action> {
        check_custom_ids(body, q)
            .into_iter()
            .map(|c| {
                assert_eq!(c.token, "0123456789abcdef0123");
                c.action
            })
            .collect()
    }

    /// A front door's "Deny" says "use Other… to tell Claude why": only where there is an
    /// Other… button. A quorum route without one shows the rest of the hint, in the embed and
    /// in a select menu alike.
    #[test]
    fn the_other_hint_shows_only_with_an_other_button() {
        let q = question(
            None,
            vec![
                opt("Allow", Some("Let Claude Code use Bash as shown")),
                opt("Deny", Some("Block it; use Other… to tell Claude why")),
                opt("Note", Some("Other… only")),
            ],
            false,
        );
        let s = scope();
        let with = ctx(&s);
        let mut without = ctx(&s);
        without.offers_custom = false;
        let shown = |c: &RenderContext| {
            (
                json(&question_embed(&q, c)).to_string(),
                json(&components(&q, c)).to_string(),
            )
        };
        let (embed, _) = shown(&with);
        assert!(embed.contains("use Other… to tell Claude why"), "{embed}");
        let (embed, rows) = shown(&without);
        assert!(!embed.contains("Other…"), "{embed}");
        assert!(!rows.contains("Other…"), "{rows}");
        assert!(embed.contains("Block it"), "{embed}");
        assert!(
            embed.contains("Let Claude Code use Bash as shown"),
            "{embed}"
        );
        // As a select menu (more options than a row of buttons holds).
        let mut many = q.clone();
        for i in 0..5 {
            many.options.push(opt(&format!("extra {i}"), None));
        }
        let rows = json(&components(&many, &without)).to_string();
        assert!(rows.contains("Block it"), "{rows}");
        assert!(!rows.contains("Other…"), "{rows}");
    }

    #[test]
    fn truncate_counts_chars_and_ends_in_ellipsis() {
        assert_eq!(truncate("hello", 5), "hello");
        assert_eq!(truncate("hello", 10), "hello");
        assert_eq!(truncate("hello!", 5), "hell…");
        assert_eq!(truncate("ééééé", 3), "éé…");
        assert_eq!(truncate("ab cd", 4), "ab…");
        assert_eq!(truncate("abc", 1), "…");
        assert_eq!(truncate("abc", 0), "");
        assert_eq!(truncate("", 0), "");
        let long = "日本語".repeat(100);
        let t = truncate(&long, 80);
        assert_eq!(t.chars().count(), 80);
        assert!(t.ends_with('…'));
    }

    /// What a person sees of a markdown text (Discord's model), the zero-width spaces askrelay
    /// adds left out.
    fn shown(s: &str) -> String {
        markdown_model::parse(s).display.replace('\u{200B}', "")
    }

    #[test]
    fn agent_text_cannot_mention_or_link() {
        assert_eq!(inert("plain, a < b"), "plain\\, a \\< b");
        assert_eq!(inert("<@123> <@&9>"), "\\<\\@123\\> \\<\\@\\&9\\>");
        assert_eq!(
            inert("hi @everyone and @Here"),
            "hi \\@\u{200B}everyone and \\@\u{200B}Here"
        );
        assert_eq!(
            inert("[docs](https://e)"),
            "\\[docs\\]\\(https\\:\\/\\/e\\)"
        );
        // The issue's example: a lone backtick escapes nothing after it.
        let issue = "Deploy? ` [Open the runbook](https://evil.example) <@&123456789012345678>";
        assert_eq!(markdown_model::live(&inert(issue)), vec![]);
        assert_eq!(shown(&inert(issue)), issue);
        // Code is escaped too: a code span could not hold an escape.
        assert_eq!(inert("`<@1>`"), "\\`\\<\\@1\\>\\`");
        assert_eq!(inert("\\<@1>"), "\\\\\\<\\@1\\>");
        // Line starts: headings, subtext, quotes, lists.
        assert_eq!(
            inert("# a\n-# b\n> c\n1. d"),
            "\\# a\n\\-\\# b\n\\> c\n1\\. d"
        );
        // Invisible controls and bidi overrides show as escapes.
        assert_eq!(
            inert("a\u{202E}b\u{7}c\r\nd\te"),
            concat!(r"a\\u\{202e\}b\\u\{7\}c\\r", "\nd\te")
        );
        assert_eq!(
            inert_plain("team=<@9> @everyone https://e [x](y) <t:1>"),
            "team=<\u{200B}@9> @\u{200B}everyone https:\u{200B}//e [x]\u{200B}(y) <\u{200B}t:1>"
        );
    }

    #[test]
    fn a_cut_never_leaves_an_escape_open() {
        let md = inert("ab*cd");
        assert_eq!(md, "ab\\*cd");
        assert_eq!(truncate_md(&md, 4), "ab…");
        assert_eq!(truncate_md(&md, 5), "ab\\*…");
        assert_eq!(truncate_md(&md, 6), md);
        assert_eq!(truncate_md("a\\\\\\\\b", 4), "a\\\\…");
        assert_eq!(truncate_md("a \\", 3), "a \\");
        assert_eq!(truncate_md("a \\ b", 4), "a…");
        assert_eq!(truncate_md("abc", 0), "");
    }

    #[test]
    fn option_fields_cannot_pose_as_outcome_fields() {
        let s = scope();
        let q = question(
            Some("<@1>"),
            vec![opt("Answered by", Some("<@999> @everyone"))],
            false,
        );
        let body = json(&question_message(&q, &ctx(&s)));
        let e = check_limits(&body, &q);
        assert_eq!(shown(e["title"].as_str().unwrap()), "<@1>");
        assert_eq!(e["fields"][0]["name"], "1\\. Answered by");
        assert_eq!(
            shown(e["fields"][0]["value"].as_str().unwrap()),
            "<@999> @everyone"
        );
        assert_eq!(markdown_model::live_in(&body), vec![]);
        let answered = AnsweredView {
            by: "alice (uid 1000) via terminal".into(),
            note: Some("<@999> is me\nAnswered by: admin".into()),
            labels: vec!["Answered by".into()],
            custom: None,
            at_unix: 1,
            terms: None,
        };
        let edit = json(&settled(&q, &ctx(&s), &answered).edit());
        let by = edit["embeds"][0]["fields"][1]["value"].as_str().unwrap();
        assert_eq!(
            shown(by),
            "alice (uid 1000) via terminal\nnote: “<@999> is me Answered by: admin”"
        );
    }

    #[test]
    fn two_buttons_with_recommended_primary() {
        let s = scope();
        let q = question(
            Some("Database"),
            vec![
                opt(
                    &format!("Postgres{RECOMMENDED_SUFFIX}"),
                    Some("Solid and boring"),
                ),
                opt("SQLite", None),
            ],
            false,
        );
        let body = json(&question_message(&q, &ctx(&s)));
        let e = check_limits(&body, &q);
        assert_eq!(e["title"], "Database");
        assert_eq!(e["description"], "Which database should we use\\?");
        assert!(!e["description"].as_str().unwrap().contains("Question 1"));
        let footer = e["footer"]["text"].as_str().unwrap();
        assert_eq!(footer, "request abc · agent x · project=p session=s");
        // Only the described option gets a field.
        assert_eq!(e["fields"].as_array().unwrap().len(), 1);
        assert_eq!(
            shown(e["fields"][0]["name"].as_str().unwrap()),
            "1. Postgres (Recommended)"
        );
        assert_eq!(e["fields"][0]["value"], "Solid and boring");

        let rows = body["components"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        let buttons = rows[0]["components"].as_array().unwrap();
        assert_eq!(buttons.len(), 2);
        assert_eq!(buttons[0]["label"], "Postgres (Recommended)");
        assert_eq!(buttons[0]["style"], 1);
        assert_eq!(buttons[1]["label"], "SQLite");
        assert_eq!(buttons[1]["style"], 2);
        let other = rows[1]["components"].as_array().unwrap();
        assert_eq!(other.len(), 1);
        assert_eq!(other[0]["label"], "Other…");
        assert_eq!(other[0]["style"], 2);
        assert_eq!(
            actions(&body, &q),
            vec![Action::Choose(0), Action::Choose(1), Action::Other]
        );
        // No mentions configured: no content, and nothing may be pinged.
        assert!(body.get("content").is_none());
        assert_eq!(body["allowed_mentions"]["parse"], serde_json::json!([]));
        assert_eq!(body["allowed_mentions"]["users"], serde_json::json!([]));
        assert_eq!(body["allowed_mentions"]["roles"], serde_json::json!([]));
    }

    #[test]
    fn eight_options_make_a_select() {
        let s = scope();
        let options = (0..8)
            .map(|i| opt(&format!("Option {i}"), Some(&format!("About {i}"))))
            .collect();
        let q = question(None, options, false);
        let body = json(&question_message(&q, &ctx(&s)));
        let e = check_limits(&body, &q);
        assert_eq!(e["title"], "Question");
        assert_eq!(e["fields"].as_array().unwrap().len(), 8);
        let rows = body["components"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        let menu = &rows[0]["components"][0];
        assert_eq!(menu["type"], 3);
        assert_eq!(menu["min_values"], 1);
        assert_eq!(menu["max_values"], 1);
        let opts = menu["options"].as_array().unwrap();
        assert_eq!(opts.len(), 8);
        assert_eq!(opts[3]["label"], "Option 3");
        assert_eq!(opts[3]["value"], "3");
        assert_eq!(opts[3]["description"], "About 3");
        assert_eq!(rows[1]["components"][0]["label"], "Other…");
        assert_eq!(actions(&body, &q), vec![Action::SelectOne, Action::Other]);
    }

    #[test]
    fn five_options_are_still_buttons() {
        let s = scope();
        let options = (0..5).map(|i| opt(&format!("O{i}"), None)).collect();
        let q = question(None, options, false);
        let body = json(&question_message(&q, &ctx(&s)));
        check_limits(&body, &q);
        assert_eq!(
            body["components"][0]["components"]
                .as_array()
                .unwrap()
                .len(),
            5
        );
        assert!(body["embeds"][0].get("fields").is_none());
    }

    #[test]
    fn multi_select() {
        let s = scope();
        let options = (0..3).map(|i| opt(&format!("O{i}"), None)).collect();
        let q = question(Some("Pick"), options, true);
        let body = json(&question_message(&q, &ctx(&s)));
        check_limits(&body, &q);
        let rows = body["components"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        let menu = &rows[0]["components"][0];
        assert_eq!(menu["type"], 3);
        assert_eq!(menu["min_values"], 0);
        assert_eq!(menu["max_values"], 3);
        let buttons = rows[1]["components"].as_array().unwrap();
        assert_eq!(buttons[0]["label"], "Submit");
        assert_eq!(buttons[0]["style"], 1);
        assert_eq!(buttons[1]["label"], "Submit with note…");
        assert_eq!(buttons[1]["style"], 2);
        assert_eq!(
            actions(&body, &q),
            vec![Action::Draft, Action::Submit, Action::SubmitWithNote]
        );
    }

    #[test]
    fn free_text() {
        let s = Scope::new();
        let q = question(Some("Name"), Vec::new(), false);
        let mut c = ctx(&s);
        c.agent = None;
        let body = json(&question_message(&q, &c));
        let e = check_limits(&body, &q);
        assert_eq!(e["footer"]["text"], "request abc");
        let rows = body["components"].as_array().unwrap();
        assert_eq!(rows.len(), 1);
        let b = &rows[0]["components"][0];
        assert_eq!(b["label"], "Answer…");
        assert_eq!(b["style"], 1);
        assert_eq!(actions(&body, &q), vec![Action::Answer]);
    }

    #[test]
    fn numbering_with_several_questions() {
        let s = scope();
        let q = question(Some("Second"), vec![opt("A", None)], false);
        let mut c = ctx(&s);
        c.question_index = 1;
        c.question_count = 2;
        let body = json(&question_message(&q, &c));
        let e = check_limits(&body, &q);
        let d = e["description"].as_str().unwrap();
        assert!(d.starts_with("**Question 2 of 2**\n"), "{d}");
        assert_eq!(shown(d), "Question 2 of 2\nWhich database should we use?");
        let ids = check_custom_ids(&body, &q);
        assert!(ids.iter().all(|id| id.question == 1));
    }

    #[test]
    fn long_labels_are_cut_and_never_in_custom_ids() {
        let s = scope();
        let long = |c: char| c.to_string().repeat(150);
        // Buttons.
        let q = question(
            None,
            vec![opt(&long('a'), None), opt(&long('b'), None)],
            false,
        );
        let body = json(&question_message(&q, &ctx(&s)));
        check_limits(&body, &q);
        for b in body["components"][0]["components"].as_array().unwrap() {
            let label = b["label"].as_str().unwrap();
            assert_eq!(label.chars().count(), BUTTON_LABEL_MAX);
            assert!(label.ends_with('…'));
        }
        // Select menu.
        let options = (0..8)
            .map(|i| opt(&format!("{i}{}", long('z')), Some(&long('d'))))
            .collect();
        let q = question(None, options, false);
        let body = json(&question_message(&q, &ctx(&s)));
        check_limits(&body, &q);
        for o in body["components"][0]["components"][0]["options"]
            .as_array()
            .unwrap()
        {
            let label = o["label"].as_str().unwrap();
            assert_eq!(label.chars().count(), SELECT_OPTION_TEXT_MAX);
            assert!(label.ends_with('…'));
            assert!(o["description"].as_str().unwrap().ends_with('…'));
        }
        // The components never carry a full label; the embed field names may (up to 256).
        let text = body["components"].to_string();
        assert!(!text.contains(&"z".repeat(SELECT_OPTION_TEXT_MAX)));
    }

    fn worst_case(multi: bool, options: usize) -> Question {
        Question {
            id: "q".repeat(64),
            question: "Q".repeat(4000),
            header: Some("H".repeat(80)),
            options: (0..options)
                .map(|i| {
                    opt(
                        &format!("{i:02}{}", "L".repeat(198)),
                        Some(&"D".repeat(1000)),
                    )
                })
                .collect(),
            multi_select: multi,
        }
    }

    #[test]
    fn worst_case_stays_within_every_limit() {
        let mut s = Scope::new();
        for i in 0..16 {
            s.insert(format!("label{i:02}"), "v".repeat(200));
        }
        let request_id = "r".repeat(128);
        let agent = "a".repeat(64);
        let users: Vec<u64> = (1..=200).map(|i| u64::MAX - i).collect();
        let roles: Vec<u64> = (1..=200).map(|i| u64::MAX / 2 - i).collect();
        let c = RenderContext {
            token: "ffffffffffffffffffff",
            request_id: &request_id,
            question_index: 24,
            question_count: 25,
            agent: Some(&agent),
            scope: &s,
            mention_user_ids: &users,
            mention_role_ids: &roles,
            votes: &[],
            approvals: 1,
            offers_custom: true,
            grant_secs: &[],
            editable: None,
            approval: None,
            confirm_labels: &[],
            confirm_word: "approve",
        };
        let answered = AnsweredView {
            by: "b".repeat(5000),
            note: Some("n".repeat(5000)),
            labels: (0..25).map(|i| format!("{i}{}", "L".repeat(199))).collect(),
            custom: Some("C".repeat(4000)),
            at_unix: i64::MIN,
            terms: None,
        };
        for (multi, n) in [(false, 25), (true, 25), (false, 5), (false, 0), (true, 1)] {
            let q = worst_case(multi, n);
            let body = json(&question_message(&q, &c));
            let e = check_limits(&body, &q);
            assert!(chars(&body["content"]) > 0);
            let d = e["description"].as_str().unwrap();
            assert!(d.contains("Question 25 of 25"));
            // The question keeps most of its text.
            assert!(d.chars().count() >= 2000, "{}", d.chars().count());
            if n == 25 {
                let fields = e["fields"].as_array().unwrap();
                assert_eq!(fields.len(), OPTION_FIELDS_MAX);
                assert_eq!(fields[OPTION_FIELDS_MAX - 1]["name"], "…and 4 more");
            }

            for edit in [
                json(&settled(&q, &c, &answered).edit()),
                json(&ended(&q, &c, "Expired", &"R".repeat(5000)).edit()),
            ] {
                let e2 = check_limits(&edit, &q);
                assert_eq!(edit["components"], serde_json::json!([]));
                assert_eq!(e2["title"], e["title"]);
                assert_eq!(e2["description"], e["description"]);
                assert_eq!(e2["footer"], e["footer"]);
            }
            for kind in [Form::Other, Form::Answer, Form::Note] {
                check_modal(&json(&modal(&q, &c, kind)));
            }
        }
    }

    #[test]
    fn mentions_and_allowed_mentions() {
        let s = scope();
        let q = question(None, vec![opt("A", None)], false);
        let mut c = ctx(&s);
        c.mention_user_ids = &[111, 222];
        c.mention_role_ids = &[333];
        let body = json(&question_message(&q, &c));
        check_limits(&body, &q);
        assert_eq!(body["content"], "<@&333> <@111> <@222>");
        let am = &body["allowed_mentions"];
        assert_eq!(am["parse"], serde_json::json!([]));
        let ids = |v: &Value| -> Vec<String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|x| match x {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        };
        assert_eq!(ids(&am["users"]), vec!["111", "222"]);
        assert_eq!(ids(&am["roles"]), vec!["333"]);

        // Too many mentions for 2000 characters: the content is cut at a whole mention, and only
        // the mentioned ones are allowed.
        let users: Vec<u64> = (1..=500).map(|i| 10_000_000_000_000_000 + i).collect();
        c.mention_user_ids = &users;
        c.mention_role_ids = &[0];
        let body = json(&question_message(&q, &c));
        let content = body["content"].as_str().unwrap();
        assert!(content.chars().count() <= CONTENT_MAX);
        let allowed = ids(&body["allowed_mentions"]["users"]);
        assert_eq!(content.split(' ').count(), allowed.len());
        for u in &allowed {
            assert!(content.contains(&format!("<@{u}>")));
        }
        assert!(ids(&body["allowed_mentions"]["roles"]).is_empty());
    }

    #[test]
    fn settled_and_ended_edits() {
        let s = scope();
        let q = question(
            Some("Database"),
            vec![opt("Postgres", Some("Solid")), opt("SQLite", None)],
            true,
        );
        let c = ctx(&s);
        let original = json(&question_message(&q, &c));
        let answered = AnsweredView {
            by: "<@123>".to_owned(),
            note: None,
            labels: vec!["Postgres".to_owned(), "SQLite".to_owned()],
            custom: Some("both, please".to_owned()),
            at_unix: 1_700_000_000,
            terms: None,
        };
        let edit = json(&settled(&q, &c, &answered).edit());
        assert!(serde_json::to_string(&edit)
            .unwrap()
            .contains("\"components\":[]"));
        let e = check_limits(&edit, &q);
        assert_eq!(e["title"], original["embeds"][0]["title"]);
        assert_eq!(e["description"], original["embeds"][0]["description"]);
        assert_eq!(e["footer"], original["embeds"][0]["footer"]);
        let fields = e["fields"].as_array().unwrap();
        let value = |name: &str| {
            let f = fields.iter().find(|f| f["name"] == name).unwrap();
            f["value"].as_str().unwrap().to_owned()
        };
        assert_eq!(value("Answered by"), "<@123>");
        assert_eq!(
            value("Answer"),
            "Postgres\nSQLite\n**Note:** both\\, please"
        );
        assert_eq!(
            shown(&value("Answer")),
            "Postgres\nSQLite\nNote: both, please"
        );
        assert_eq!(value("Answered at"), "<t:1700000000:f>");
        assert!(edit.get("content").is_none());

        let edit = json(&ended(&q, &c, "Cancelled", "the agent went away").edit());
        assert!(serde_json::to_string(&edit)
            .unwrap()
            .contains("\"components\":[]"));
        let e = check_limits(&edit, &q);
        let text = e.to_string();
        assert!(text.contains("Cancelled"));
        assert!(text.contains("the agent went away"));
        assert_eq!(e["description"], original["embeds"][0]["description"]);
    }

    fn check_modal(m: &Value) {
        let title = chars(&m["title"]);
        assert!(title > 0 && title <= MODAL_TITLE_MAX);
        let id = m["custom_id"].as_str().unwrap();
        assert!(id.chars().count() <= 100);
        assert!(ModalId::parse(id).is_some(), "{id}");
        assert!(CustomId::<Action>::parse(id).is_none(), "{id}");
        let rows = m["components"].as_array().unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0]["type"], 1);
        let inputs = rows[0]["components"].as_array().unwrap();
        assert_eq!(inputs.len(), 1);
        let input = &inputs[0];
        assert_eq!(input["type"], 4);
        assert_eq!(input["style"], 2);
        assert_eq!(input["custom_id"], TEXT_INPUT_ID);
        assert_eq!(input["required"], true);
        assert_eq!(input["max_length"], 4000);
        let label = chars(&input["label"]);
        assert!(label > 0 && label <= TEXT_INPUT_LABEL_MAX);
        assert!(chars(&input["placeholder"]) <= TEXT_INPUT_PLACEHOLDER_MAX);
    }

    #[test]
    fn modals() {
        let s = scope();
        let mut c = ctx(&s);
        c.question_index = 3;
        let q = question(Some(&"T".repeat(80)), vec![opt("A", None)], false);
        for form in [Form::Other, Form::Answer, Form::Note] {
            let m = json(&modal(&q, &c, form));
            check_modal(&m);
            let id = ModalId::parse(m["custom_id"].as_str().unwrap()).unwrap();
            assert_eq!(id, ModalId::new("0123456789abcdef0123", 3, form));
            assert_eq!(m["title"].as_str().unwrap().chars().count(), 45);
            assert!(m["title"].as_str().unwrap().ends_with('…'));
        }
        let q = question(None, Vec::new(), false);
        let m = json(&modal(&q, &c, Form::Answer));
        check_modal(&m);
        assert_eq!(m["title"], "Your answer");
        assert_eq!(m["components"][0]["components"][0]["label"], "Your answer");
        let m = json(&modal(&q, &c, Form::Note));
        assert_eq!(m["components"][0]["components"][0]["label"], "Note");
    }

    // --- agent text is inert: properties over random markdown ---------------------------------

    use markdown_model::{agent_text, comparable, live_in, plain_is_inert, plain_texts, visible};
    use proptest::prelude::*;

    fn config() -> ProptestConfig {
        ProptestConfig {
            cases: 256,
            failure_persistence: None,
            // Deterministic: the same cases every run (a property that fails fails always).
            rng_seed: proptest::test_runner::RngSeed::Fixed(20261202),
            ..ProptestConfig::default()
        }
    }

    proptest! {
        #![proptest_config(config())]

        /// Whatever the text, [`inert`] leaves nothing live and reads as the text.
        #[test]
        fn inert_text_renders_nothing_and_reads_as_written(s in agent_text()) {
            let md = inert(&s);
            prop_assert_eq!(markdown_model::live(&md), vec![], "{:?} → {:?}", s, md);
            prop_assert_eq!(shown(&md), visible(&s));
        }

        /// Cut anywhere, it stays inert and reads as the start of the text.
        #[test]
        fn a_cut_inert_text_renders_nothing(s in agent_text(), max in 0usize..80) {
            let cut = truncate_md(&inert(&s), max);
            prop_assert!(cut.chars().count() <= max);
            prop_assert_eq!(markdown_model::live(&cut), vec![], "{:?} → {:?}", s, cut);
            let shown = shown(&cut);
            prop_assert!(visible(&s).starts_with(shown.trim_end_matches('…')), "{:?} → {:?}", s, shown);
        }

        /// Plain text places: nothing reads as a mention or a link, and the text reads as
        /// written.
        #[test]
        fn inert_plain_text_reads_as_written(s in agent_text()) {
            let plain = inert_plain(&s);
            prop_assert!(plain_is_inert(&plain), "{:?} → {:?}", s, plain);
            prop_assert_eq!(plain.replace('\u{200B}', ""), visible(&s));
        }

        /// Metamorphic, per surface: a question (with its context, and as the second of two,
        /// with many described options), its DM or escalation copy, a reminder, the edits and
        /// the modal show the same live constructs with random agent text everywhere as with a
        /// plain placeholder; and no plain text reads as markup.
        #[test]
        fn agent_text_adds_no_markup_to_any_surface(
            // Text that is blank to Rust (a lone "\r\n") is left out of an answer's note on
            // purpose, so it cannot be compared with a placeholder that shows.
            s in agent_text().prop_filter("visible", |s| {
                !visible(s).trim().is_empty() && !s.trim().is_empty()
            }),
            options in 1usize..=25,
            second in any::<bool>(),
        ) {
            let random = surfaces(&s, options, second);
            let plain = surfaces("placeholder", options, second);
            for ((name, body), (_, reference)) in random.iter().zip(&plain) {
                let live = |b: &Value| -> Vec<markdown_model::Live> {
                    live_in(b).iter().map(|(_, l)| comparable(l)).collect()
                };
                prop_assert_eq!(live(body), live(reference), "{}: {}", name, body);
                for text in plain_texts(body) {
                    prop_assert!(plain_is_inert(&text), "{}: {:?}", name, text);
                }
            }
        }
    }

    /// Every surface of a question with `text` as every piece of agent text: (name, body).
    fn surfaces(text: &str, options: usize, second: bool) -> Vec<(&'static str, Value)> {
        let mut scope = Scope::new();
        scope.insert("team".to_owned(), text.to_owned());
        scope.insert(text.to_owned(), "v".to_owned());
        let q = Question {
            id: "q".to_owned(),
            question: text.to_owned(),
            header: Some(text.to_owned()),
            options: (0..options)
                .map(|i| opt(&format!("{i}{text}"), Some(text)))
                .collect(),
            multi_select: false,
        };
        let c = RenderContext {
            token: "0123456789abcdef0123",
            request_id: text,
            question_index: usize::from(second),
            question_count: 1 + usize::from(second),
            agent: Some(text),
            scope: &scope,
            mention_user_ids: &[11],
            mention_role_ids: &[22],
            votes: &[],
            approvals: 1,
            offers_custom: true,
            grant_secs: &[],
            editable: None,
            approval: None,
            confirm_labels: &[],
            confirm_word: "approve",
        };
        let context = Context {
            text: Some(text.to_owned()),
            files: Vec::new(),
            approval: None,
        };
        let answered = AnsweredView {
            by: format!("{} (uid 1000) via terminal", inert(text)),
            note: Some(text.to_owned()),
            labels: vec![text.to_owned(), format!("1{text}")],
            custom: Some(text.to_owned()),
            at_unix: 1_700_000_000,
            terms: None,
        };
        let lead =
            "**Escalated:** no answer after 5m. Original: https://discord.com/channels/1/2/3";
        vec![
            (
                "question",
                json(&question_post(&q, &c, Some(&context)).message),
            ),
            (
                "copy",
                json(&copy_post(&q, &c, lead, Some(&context)).message),
            ),
            (
                "reminder",
                json(&note("**Reminder:** waited 5m.", &c, Some((1, 2)))),
            ),
            ("settled", json(&settled(&q, &c, &answered).edit())),
            (
                "settled callback",
                json(&settled(&q, &c, &answered).update()),
            ),
            ("ended", json(&ended(&q, &c, "Cancelled", text).edit())),
            ("modal", json(&modal(&q, &c, Form::Other))),
        ]
    }

    #[test]
    fn a_confirm_label_is_named_with_its_word_and_its_modal_fits() {
        let sc = scope();
        let labels = vec!["Allow".to_owned(), "Nuke *all*".to_owned()];
        let long = "w".repeat(64);
        let q = question(
            Some("Approve"),
            vec![
                opt("Allow", None),
                opt("Deny", None),
                opt("Nuke *all*", None),
            ],
            false,
        );
        let c = RenderContext {
            confirm_labels: &labels,
            confirm_word: "prod-eu",
            ..ctx(&sc)
        };
        let body = json(&question_embed(&q, &c));
        let d = body["description"].as_str().unwrap();
        assert!(
            d.starts_with(
                "**Typed confirmation:** Allow, Nuke \\*all\\* need typing `prod-eu` to confirm.\n"
            ),
            "{d}"
        );
        assert!(!json(&question_embed(&q, &ctx(&sc)))["description"]
            .as_str()
            .unwrap()
            .contains("confirm"));

        let m = json(&modal(&q, &c, Form::Confirm(0)));
        assert_eq!(m["title"], "Confirm: Allow");
        assert_eq!(m["custom_id"], "ar:0123456789abcdef0123:0:mC:0");
        let input = &m["components"][0]["components"][0];
        assert_eq!(input["label"], "Type prod-eu to confirm");
        assert_eq!(input["style"], 1, "short: {input}");
        assert_eq!(input["required"], true);
        assert_eq!(input["custom_id"], TEXT_INPUT_ID);
        // A long word and a long label are cut to Discord's 45 characters.
        let lq = question(None, vec![opt(&"L".repeat(80), None)], false);
        let c = RenderContext {
            confirm_word: &long,
            ..c
        };
        let m = json(&modal(&lq, &c, Form::Confirm(0)));
        assert_eq!(chars(&m["title"]), MODAL_TITLE_MAX);
        let label = &m["components"][0]["components"][0]["label"];
        assert_eq!(chars(label), TEXT_INPUT_LABEL_MAX, "{label}");
        assert!(label.as_str().unwrap().ends_with("… to confirm"), "{label}");
        let m = json(&modal(&q, &c, Form::ConfirmDraft));
        assert_eq!(m["title"], "Confirm your selection");
        assert_eq!(m["custom_id"], "ar:0123456789abcdef0123:0:mD");
    }
}
