//! What an approval adds to a question: the row of grant buttons and Edit… under its options,
//! a pattern grant's preview with its Save button, grant lengths as labels and as the form
//! takes them, and the line that announces a request a grant answered.

use super::super::custom_id::Action;
use super::context::{self, QuestionPost};
use super::limits::CONTENT_MAX;
use super::{inert, inert_code, truncate, truncate_md, RenderContext};
use crate::answerer::chat::grant::Preview;
use crate::domain::model::Question;
use crate::domain::request::Answered;
use serenity::builder::{CreateActionRow, CreateAllowedMentions, CreateButton, CreateMessage};
use serenity::model::application::ButtonStyle;

/// "Allow for 30 min" for each of the route's grant durations, and "Edit…", on an approval
/// whose first option allows: a row of its own, under the options.
pub(super) fn terms_row(q: &Question, ctx: &RenderContext) -> Option<CreateActionRow> {
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
    if offers_pattern(q, ctx) {
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

/// Whether question `q` offers "Allow matching…" on Discord (the chat layer's rule): a
/// pattern's grant is saved from its preview, a message with no room for a typed word, so not
/// where the allow label needs the word.
pub fn offers_pattern(q: &Question, ctx: &RenderContext) -> bool {
    let needs_word = q
        .options
        .first()
        .is_some_and(|o| ctx.confirm_labels.contains(&o.label));
    crate::answerer::chat::grant::offers_pattern(ctx.grant_secs, ctx.approval, needs_word, false)
}

/// The button that opens the form to edit a command before approving it.
pub const EDIT_LABEL: &str = "Edit…";

pub use crate::answerer::chat::grant::{
    short_length as grant_length_short, PATTERN_LABEL as GRANT_PATTERN_LABEL,
};

/// The most characters of a pattern its preview shows: the rest of the preview (what it
/// matches, a warning) must fit Discord's 2000 characters with it.
const PREVIEW_PATTERN_MAX: usize = 800;

/// What a grant would allow (the chat layer's [`Preview`]), shown before it is saved, with its
/// "Save grant" button; `requester` says who it allows.
pub fn grant_preview(
    ctx: &RenderContext,
    p: &Preview,
    requester: &str,
) -> (String, Vec<CreateActionRow>) {
    let mut text = format!(
        "**Grant preview** ({}): `{}` commands matching `{}`{} for {}, for {requester} only, \
         starting with this request. It is matched on shell words: a `*` word stands for any \
         number of whole words, and a command matches only if it is one simple command that \
         splits cleanly into words (no `;` `&` `|` `<` `>` `$` backticks, line breaks, comments \
         or unclosed quotes).",
        p.kind,
        inert_code(&p.tool),
        inert_code(&truncate(&p.pattern, PREVIEW_PATTERN_MAX)),
        match p.pattern.chars().count() {
            n if n > PREVIEW_PATTERN_MAX => {
                format!(" (the first {PREVIEW_PATTERN_MAX} of its {n} characters)")
            }
            _ => String::new(),
        },
        grant_length(p.secs),
    );
    if let Some((name, how)) = &p.runs_other {
        text.push_str(&format!(
            "\n⚠ `{}` can run other programs from its options or arguments ({how}): this grant \
             allows whatever those run too.",
            inert_code(name)
        ));
    }
    text.push_str("\nNothing is saved until you press **Save grant**.");
    let save = CreateButton::new(ctx.custom_id(Action::SaveGrant(p.g)))
        .label("Save grant")
        .style(ButtonStyle::Primary);
    (
        truncate_md(&text, CONTENT_MAX),
        vec![CreateActionRow::Buttons(vec![save])],
    )
}

pub use crate::answerer::chat::grant::{label as grant_label, length as grant_length};

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
