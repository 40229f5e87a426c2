//! Rendering for Slack (docs/slack.md, "Rendering"): pure functions that turn a question into
//! Block Kit blocks, and its outcome into the blocks of the edit. No network.
//!
//! A question is one message: a `header` (the question's header, or "Question k of n"), a
//! `section` with the question text, the options' descriptions, the request's context as Slack
//! shows code, a `context` line naming the request, and an `actions` block: one button per
//! option (the recommended one primary) and Other…; past [`ACTIONS_ELEMENTS_MAX`] elements a
//! `static_select` instead of the option buttons; for multi-select a `multi_static_select`
//! and Submit. Every control's `action_id` is the Discord adapter's custom_id
//! (`ar:{token}:{question}:{code}[:{option}]`, see [`crate::answerer::discord::custom_id`]), so
//! a press names exactly one request, question and option, and is then checked against the
//! message askrelay posted.
//!
//! Every text from the agent goes through [`escape`] (`&`, `<`, `>`), so it makes no mention
//! and no link, and is cut to its block's limit; mrkdwn objects are `verbatim`, so Slack links
//! nothing on its own. The parts: the limits and text helpers in `text.rs`, the edits after a
//! change in `outcome.rs`, the forms (Other…, the confirm word, Edit…, a grant's
//! pattern and its preview) in `modal.rs`, reminders and escalation's notes and DM copies in
//! `notes.rs`.

mod modal;
mod notes;
mod outcome;
mod text;

pub use modal::{
    edit_modal, grant_pattern_modal, grant_preview_modal, text_modal, word_modal, FormPlace,
    LENGTH_ACTION, LENGTH_BLOCK, TEXT_ACTION, TEXT_BLOCK, WORD_ACTION, WORD_BLOCK,
};
pub use notes::{copy, dm_lead, escalation_lead, mentions, note, note_withdrawn, reminder_lead};
pub use outcome::{already, ended, open, settled, where_answered, who};
pub use text::*;

use crate::answerer::discord::custom_id::{option_value, Action, CustomId};
use crate::domain::model::{Context, Question, QuestionKind};
use crate::domain::quorum::Policy;
use crate::domain::request::Request;
use crate::domain::vote::Vote;
use crate::domain::Scope;
use slack_morphism::prelude::*;

/// Button texts, as on Discord.
pub const OTHER_LABEL: &str = "Other…";
/// Other… on an agent's end of turn: the free text is a reply that keeps it working.
pub const REPLY_LABEL: &str = "Reply…";
pub const ANSWER_LABEL: &str = "Answer…";
pub const SUBMIT_LABEL: &str = "Submit";
pub const SUBMIT_WITH_NOTE_LABEL: &str = "Submit with note…";
pub const EDIT_LABEL: &str = "Edit…";

/// The context's text shown in one code block at most; the rest is said to be cut.
const CONTEXT_CODE_MAX: usize = 2600;
/// Context files shown (each in a code block of its own); the rest are named only.
const CONTEXT_FILES_SHOWN: usize = 5;

/// What rendering needs to know besides the question itself.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// The request's token, carried in every action_id.
    pub token: &'a str,
    pub request_id: &'a str,
    /// 0-based.
    pub index: usize,
    pub count: usize,
    pub agent: Option<&'a str>,
    pub scope: &'a Scope,
    /// The votes so far on this question (a quorum route), and how many must agree.
    pub votes: &'a [Vote],
    pub approvals: u32,
    /// Whether free text (Other…, Submit with note…) is offered.
    pub offers_custom: bool,
    /// Whether Edit… is offered: an approval whose front door marked its command editable, on
    /// a route with `allow_edits`, asked alone.
    pub editable: bool,
    /// The approval's command as asked, when the request is an approval: an edited one is
    /// shown against it.
    pub command: Option<&'a str>,
    /// The route's grant lengths, offered as "Allow for …" on an approval asked alone.
    pub grant_secs: &'a [u64],
    /// Whether "Allow matching…" is offered (the chat layer's rule; Slack's form has room for
    /// the confirm word beside the pattern).
    pub grant_pattern: bool,
}

impl<'a> View<'a> {
    /// Question `index` of `req`, under its route's `policy`.
    pub fn of(req: &'a Request, policy: &'a Policy, index: usize) -> View<'a> {
        View {
            token: &req.token,
            request_id: &req.request_id,
            index,
            count: req.questions.len(),
            agent: req.agent(),
            scope: &req.scope,
            votes: req.votes.get(index).map_or(&[], Vec::as_slice),
            approvals: policy.approvals,
            offers_custom: policy.offers_custom(),
            editable: req.questions.len() == 1
                && policy.allow_edits
                && req
                    .context
                    .as_deref()
                    .and_then(|c| c.approval.as_ref())
                    .is_some_and(|a| a.editable),
            command: req
                .context
                .as_deref()
                .and_then(|c| c.approval.as_ref())
                .map(|a| a.command.as_str()),
            grant_secs: Self::grant_secs(req, policy),
            grant_pattern: crate::answerer::chat::grant::offers_pattern(
                Self::grant_secs(req, policy),
                req.context.as_deref().and_then(|c| c.approval.as_ref()),
                req.questions
                    .get(index)
                    .is_some_and(|q| crate::answerer::chat::confirm::allow_needs_word(policy, q)),
                true,
            ),
        }
    }

    /// The route's grant lengths when `req` is an approval asked alone (else none).
    fn grant_secs(req: &'a Request, policy: &'a Policy) -> &'a [u64] {
        match req.context.as_deref().and_then(|c| c.approval.as_ref()) {
            Some(_) if req.questions.len() == 1 => &policy.grant_secs,
            _ => &[],
        }
    }

    /// Whether this is the end of an agent's turn (a `Stop` request): its free text is a
    /// reply ("Reply…"), not an answer of its own.
    pub fn is_turn_end(&self) -> bool {
        self.scope.get("tool").map(String::as_str) == Some(crate::answerer::discord::STOP_TOOL)
    }

    fn action_id(&self, action: Action) -> SlackActionId {
        CustomId::new(self.token, self.index, action)
            .encode()
            .into()
    }

    /// The actions block's id: unique in its message, and naming its question.
    fn actions_block_id(&self) -> SlackBlockId {
        format!("ar:{}:{}:actions", self.token, self.index).into()
    }
}

/// A message's content: the blocks, and the top-level text notifications show.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub text: String,
    pub blocks: Vec<SlackBlock>,
}

impl Message {
    pub fn content(&self) -> SlackMessageContent {
        SlackMessageContent::new()
            .with_text(self.text.clone())
            .with_blocks(self.blocks.clone())
    }
}

/// The message that asks question `q`, with the request's `context` (its first question only).
pub fn question(q: &Question, view: &View, context: Option<&Context>) -> Message {
    let mut blocks = question_blocks(q, view);
    if let Some(c) = context.filter(|c| !c.is_empty()) {
        blocks.extend(context_blocks(c));
    }
    blocks.push(footer(view));
    blocks.extend(controls(q, view));
    blocks.truncate(MESSAGE_BLOCKS_MAX);
    Message {
        text: fallback(q, view),
        blocks,
    }
}

/// The header and the question text (with its options' descriptions): what every rendering of
/// the question shows, open or settled.
pub(crate) fn question_blocks(q: &Question, view: &View) -> Vec<SlackBlock> {
    let mut blocks = vec![SlackHeaderBlock::new(plain(header(q, view)))
        .with_block_id("h".into())
        .into()];
    blocks.push(
        SlackSectionBlock::new()
            .with_block_id("q".into())
            .with_text(md(inert(&q.question, SECTION_TEXT_MAX)))
            .into(),
    );
    let described: Vec<String> = q
        .options
        .iter()
        .enumerate()
        .filter_map(|(i, o)| {
            let d = o.description.as_deref().filter(|d| !d.trim().is_empty())?;
            Some(format!(
                "*{}. {}*  {}",
                i + 1,
                escape(&one_line(&o.label)),
                escape(&one_line(d))
            ))
        })
        .collect();
    if !described.is_empty() {
        blocks.push(
            SlackSectionBlock::new()
                .with_block_id("o".into())
                .with_text(md(truncate(&described.join("\n"), SECTION_TEXT_MAX)))
                .into(),
        );
    }
    if view.approvals > 1 {
        blocks.push(votes_line(view));
    }
    blocks
}

/// The header: the question's own, else "Question k of n" (or "Question").
fn header(q: &Question, view: &View) -> String {
    let of = (view.count > 1).then(|| format!(" ({} of {})", view.index + 1, view.count));
    let text = match q.header.as_deref().filter(|h| !h.trim().is_empty()) {
        Some(h) => format!("{}{}", escape(&one_line(h)), of.unwrap_or_default()),
        None => match of {
            Some(_) => format!("Question {} of {}", view.index + 1, view.count),
            None => "Question".to_owned(),
        },
    };
    truncate(&text, HEADER_MAX)
}

/// What notifications show: the header and the start of the question, inert.
fn fallback(q: &Question, view: &View) -> String {
    let h = q.header.as_deref().unwrap_or("Question");
    let _ = view;
    truncate(
        &escape(&one_line(&format!("{h}: {}", q.question))),
        FALLBACK_MAX,
    )
}

/// The name of the context's text when it is shared as a file, and of an approval's command.
pub const CONTEXT_TEXT_FILE: &str = "context.txt";
pub const COMMAND_FILE: &str = "command.txt";

/// What the message of `c` cannot show whole, as files to share in its thread (name, bytes):
/// an approval's command or the context's text past [`CONTEXT_CODE_MAX`] characters, a file
/// past it, and every file past the first [`CONTEXT_FILES_SHOWN`] (at most 11: the core's 9
/// files, the text and the command).
pub fn uploads(c: &Context) -> Vec<(String, Vec<u8>)> {
    let cut = |s: &str| s.chars().count() > CONTEXT_CODE_MAX;
    let mut files = Vec::new();
    if let Some(a) = c.approval.as_ref().filter(|a| cut(&a.command)) {
        files.push((COMMAND_FILE.to_owned(), a.command.as_bytes().to_vec()));
    }
    if let Some(t) = c.text.as_deref().filter(|t| !t.trim().is_empty() && cut(t)) {
        files.push((CONTEXT_TEXT_FILE.to_owned(), t.as_bytes().to_vec()));
    }
    for (i, f) in c.files.iter().enumerate() {
        if i >= CONTEXT_FILES_SHOWN || cut(&f.content) {
            files.push((f.name.clone(), f.content.as_bytes().to_vec()));
        }
    }
    files
}

/// The request's context as Slack shows code: its text, then each file, in ``` blocks cut to
/// [`CONTEXT_CODE_MAX`]; what was cut, and the files past the first [`CONTEXT_FILES_SHOWN`],
/// are shared whole in the message's thread ([`uploads`]; Slack has no attachments on a
/// message), and the message says so.
fn context_blocks(c: &Context) -> Vec<SlackBlock> {
    let mut blocks = Vec::new();
    let mut block = |title: String, body: &str| {
        let total = body.chars().count();
        let shown: String = body.chars().take(CONTEXT_CODE_MAX).collect();
        let mut text = format!("{title}\n```{}```", code(&shown));
        if total > CONTEXT_CODE_MAX {
            text.push_str(&format!(
                "\n_{} more characters not shown here; the whole of it is in the thread_",
                total - CONTEXT_CODE_MAX
            ));
        }
        blocks.push(
            SlackSectionBlock::new()
                .with_block_id(format!("c{}", blocks.len()).into())
                .with_text(md(truncate(&text, SECTION_TEXT_MAX)))
                .into(),
        );
    };
    if let Some(a) = &c.approval {
        block(
            format!("*{}*", escape(&one_line(&a.tool))),
            a.command.as_str(),
        );
    }
    if let Some(t) = c.text.as_deref().filter(|t| !t.trim().is_empty()) {
        block("*Context*".to_owned(), t);
    }
    for f in c.files.iter().take(CONTEXT_FILES_SHOWN) {
        block(format!("*{}*", escape(&one_line(&f.name))), &f.content);
    }
    if c.files.len() > CONTEXT_FILES_SHOWN {
        let names: Vec<String> = c.files[CONTEXT_FILES_SHOWN..]
            .iter()
            .map(|f| escape(&one_line(&f.name)))
            .collect();
        blocks.push(
            SlackSectionBlock::new()
                .with_block_id("cmore".into())
                .with_text(md(truncate(
                    &format!("_In the thread:_ {}", names.join(", ")),
                    SECTION_TEXT_MAX,
                )))
                .into(),
        );
    }
    blocks
}

/// The line that names the request: its id, agent and scope, inert.
fn footer(view: &View) -> SlackBlock {
    let mut parts = vec![format!("request {}", escape(&one_line(view.request_id)))];
    if let Some(a) = view.agent {
        parts.push(format!("agent {}", escape(&one_line(a))));
    }
    for (k, v) in view.scope {
        parts.push(format!("{}={}", escape(&one_line(k)), escape(&one_line(v))));
    }
    SlackContextBlock::new(vec![SlackContextBlockElement::MarkDown(
        SlackBlockMarkDownText::new(truncate(&parts.join(" · "), CONTEXT_TEXT_MAX))
            .with_verbatim(true),
    )])
    .with_block_id("f".into())
    .into()
}

/// A quorum question's count: how many chose the leading answer of how many must.
fn votes_line(view: &View) -> SlackBlock {
    let most = crate::domain::quorum::leading(view.votes);
    let text = format!(
        "*Votes:* {most} of {} needed (the same answer from {} people settles it)",
        view.approvals, view.approvals
    );
    SlackContextBlock::new(vec![SlackContextBlockElement::MarkDown(
        SlackBlockMarkDownText::new(text),
    )])
    .with_block_id("v".into())
    .into()
}

/// The controls of an open question: an actions block (after the multi-select's section).
pub(crate) fn controls(q: &Question, view: &View) -> Vec<SlackBlock> {
    let options = &q.options[..q.options.len().min(SELECT_OPTIONS_MAX)];
    let button = |action: Action, label: &str| {
        SlackBlockButtonElement::new(plain(truncate(label, BUTTON_TEXT_MAX)))
            .with_action_id(view.action_id(action))
    };
    let mut blocks: Vec<SlackBlock> = Vec::new();
    let mut elements: Vec<SlackActionBlockElement> = Vec::new();
    match q.kind() {
        QuestionKind::FreeText => {
            elements.push(
                button(Action::Answer, ANSWER_LABEL)
                    .with_style(SlackBlockButtonStyle::Primary)
                    .into(),
            );
        }
        QuestionKind::Single => {
            // An approval's first option allows: its grants ("Allow for …") follow the options.
            let grants = if options.is_empty() {
                &[][..]
            } else {
                view.grant_secs
            };
            let pattern = view.grant_pattern && !options.is_empty();
            let extra = usize::from(view.offers_custom)
                + usize::from(view.editable)
                + usize::from(pattern)
                + grants.len();
            if options.len() + extra <= ACTIONS_ELEMENTS_MAX {
                for (i, o) in options.iter().enumerate() {
                    let mut b = button(Action::Choose(i), &escape(&one_line(&o.label)))
                        .with_value(option_value(i));
                    if o.is_recommended() {
                        b = b.with_style(SlackBlockButtonStyle::Primary);
                    }
                    elements.push(b.into());
                }
            } else {
                elements.push(
                    SlackBlockStaticSelectElement::new()
                        .with_action_id(view.action_id(Action::SelectOne))
                        .with_placeholder(plain("Choose an option"))
                        .with_options(choices(options))
                        .into(),
                );
            }
            for (g, &secs) in grants.iter().enumerate() {
                elements.push(
                    button(Action::Grant(g), &crate::answerer::chat::grant::label(secs)).into(),
                );
            }
            if pattern {
                elements.push(
                    button(
                        Action::GrantPattern,
                        crate::answerer::chat::grant::PATTERN_LABEL,
                    )
                    .into(),
                );
            }
            if view.editable {
                elements.push(button(Action::Edit, EDIT_LABEL).into());
            }
            if view.offers_custom {
                elements.push(match view.is_turn_end() {
                    true => button(Action::Other, REPLY_LABEL)
                        .with_style(SlackBlockButtonStyle::Primary)
                        .into(),
                    false => button(Action::Other, OTHER_LABEL).into(),
                });
            }
        }
        QuestionKind::Multi => {
            // A multi-select sits in a section (Block Kit takes it there and in inputs, not
            // in an actions block); Submit follows in the actions block.
            let menu = SlackBlockMultiStaticSelectElement::new()
                .with_action_id(view.action_id(Action::Draft))
                .with_placeholder(plain("Choose options"))
                .with_options(choices(options))
                .with_max_selected_items(options.len() as u64);
            blocks.push(
                SlackSectionBlock::new()
                    .with_block_id(format!("ar:{}:{}:menu", view.token, view.index).into())
                    .with_text(md("Choose any options, then press *Submit*."))
                    .with_accessory(menu.into())
                    .into(),
            );
            elements.push(
                button(Action::Submit, SUBMIT_LABEL)
                    .with_style(SlackBlockButtonStyle::Primary)
                    .into(),
            );
            if view.offers_custom {
                elements.push(button(Action::SubmitWithNote, SUBMIT_WITH_NOTE_LABEL).into());
            }
        }
    }
    blocks.push(
        SlackActionsBlock::new(elements)
            .with_block_id(view.actions_block_id())
            .into(),
    );
    blocks
}

/// A select's options: the option's index as its value, the label and description inert.
fn choices(
    options: &[crate::domain::QuestionOption],
) -> Vec<SlackBlockChoiceItem<SlackBlockPlainTextOnly>> {
    options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let item = SlackBlockChoiceItem::new(
                plain(inert(&one_line(&o.label), OPTION_TEXT_MAX)),
                option_value(i),
            );
            match o.description.as_deref().filter(|d| !d.trim().is_empty()) {
                Some(d) => item.with_description(plain(inert(&one_line(d), OPTION_TEXT_MAX))),
                None => item,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
