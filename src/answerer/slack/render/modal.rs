//! The forms a press opens (`views.open` with the press's `trigger_id`): for Other…, Answer…
//! or "Submit with note…" the question and one multi-line `plain_text_input`; for a label of
//! the route's `confirm_labels` what it settles and one short input for the confirm word. Its
//! `callback_id` is the modal's custom_id (request token, question, form), and its
//! `private_metadata` the message it was opened from, which its submission must still match.

use super::text::{escape, inert, md, one_line, plain, truncate};
use super::text::{MODAL_TITLE_MAX, SECTION_TEXT_MAX, TEXT_INPUT_MAX};
use super::View;
use crate::answerer::discord::custom_id::{CustomId, Form};
use crate::domain::model::{Question, MAX_CUSTOM_CHARS};
use slack_morphism::prelude::*;

/// The input block and its element, whose value a submission carries.
pub const TEXT_BLOCK: &str = "answer";
pub const TEXT_ACTION: &str = "text";

/// The message a form was opened from: its channel and `ts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormPlace {
    pub channel: String,
    pub ts: String,
}

impl FormPlace {
    /// As `private_metadata`: `CHANNEL TS`.
    pub fn encode(&self) -> String {
        format!("{} {}", self.channel, self.ts)
    }

    /// From `private_metadata`; `None` for anything [`FormPlace::encode`] would not write.
    pub fn parse(s: &str) -> Option<FormPlace> {
        let (channel, ts) = s.split_once(' ')?;
        let ok = |p: &str| {
            !p.is_empty()
                && p.len() <= 40
                && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
        };
        (ok(channel) && ok(ts)).then(|| FormPlace {
            channel: channel.to_owned(),
            ts: ts.to_owned(),
        })
    }
}

/// The modal for `form` on question `q`, opened from the message at `place`.
pub fn text_modal(q: &Question, view: &View, form: Form, place: &FormPlace) -> SlackView {
    let title = q
        .header
        .as_deref()
        .filter(|h| !h.trim().is_empty())
        .map_or_else(|| "Answer".to_owned(), |h| escape(&one_line(h)));
    let (label, hint) = match form {
        Form::Note => ("Your note", "Sent with your selection."),
        Form::Other if view.is_turn_end() => ("Your reply", "What the agent should do next."),
        Form::Answer => ("Your answer", "Sent as the answer to this question."),
        _ => ("Your answer", "Sent in place of the options."),
    };
    let input = SlackBlockPlainTextInputElement::new()
        .with_action_id(TEXT_ACTION.into())
        .with_multiline(true)
        .with_max_length(MAX_CUSTOM_CHARS.min(TEXT_INPUT_MAX) as u64)
        .with_focus_on_load(true);
    let blocks: Vec<SlackBlock> = vec![
        SlackSectionBlock::new()
            .with_block_id("q".into())
            .with_text(md(inert(&q.question, SECTION_TEXT_MAX)))
            .into(),
        SlackInputBlock::new(plain(label), input.into())
            .with_block_id(TEXT_BLOCK.into())
            .with_hint(plain(hint))
            .into(),
    ];
    SlackView::Modal(
        SlackModalView::new(plain(truncate(&title, MODAL_TITLE_MAX)), blocks)
            .with_submit(plain("Send"))
            .with_close(plain("Cancel"))
            .with_callback_id(CustomId::new(view.token, view.index, form).encode().into())
            .with_private_metadata(place.encode()),
    )
}

/// The longest confirm word a form takes (as on Discord).
const WORD_MAX: u64 = 100;

/// The form that asks for the confirm `word` before `form` (one of the `Confirm` forms)
/// settles: `what` is what it settles, as the person chose it (an option's label, or their
/// selection). Agent text in it (the label, a word from the scope) is escaped.
pub fn word_modal(
    q: &Question,
    view: &View,
    form: Form,
    place: &FormPlace,
    what: &str,
    word: &str,
) -> SlackView {
    let input = SlackBlockPlainTextInputElement::new()
        .with_action_id(TEXT_ACTION.into())
        .with_max_length(WORD_MAX)
        .with_focus_on_load(true);
    let ask = format!(
        "*{}* needs confirming. Type `{}` to confirm it.",
        escape(&one_line(what)),
        escape(word)
    );
    let blocks: Vec<SlackBlock> = vec![
        SlackSectionBlock::new()
            .with_block_id("q".into())
            .with_text(md(inert(&q.question, SECTION_TEXT_MAX)))
            .into(),
        SlackSectionBlock::new()
            .with_block_id("confirm".into())
            .with_text(md(truncate(&ask, SECTION_TEXT_MAX)))
            .into(),
        SlackInputBlock::new(
            plain(truncate(
                &format!("Type {} to confirm", escape(word)),
                super::text::INPUT_LABEL_MAX,
            )),
            input.into(),
        )
        .with_block_id(TEXT_BLOCK.into())
        .into(),
    ];
    SlackView::Modal(
        SlackModalView::new(plain("Confirm"), blocks)
            .with_submit(plain("Confirm"))
            .with_close(plain("Cancel".to_owned()))
            .with_callback_id(CustomId::new(view.token, view.index, form).encode().into())
            .with_private_metadata(place.encode()),
    )
}

/// The edit form's second input, for the confirm word when the allow label needs it (its own
/// action_id: a view's action_ids are unique).
pub const WORD_BLOCK: &str = "word";
pub const WORD_ACTION: &str = "word";

/// The form of Edit…: the command to approve, filled in with `command` (it runs as written),
/// and, when `word` is given (the allow label is one of `confirm_labels`), an input for it.
pub fn edit_modal(
    q: &Question,
    view: &View,
    place: &FormPlace,
    command: &str,
    word: Option<&str>,
) -> SlackView {
    let input = SlackBlockPlainTextInputElement::new()
        .with_action_id(TEXT_ACTION.into())
        .with_multiline(true)
        .with_max_length(TEXT_INPUT_MAX as u64)
        .with_initial_value(command.chars().take(TEXT_INPUT_MAX).collect())
        .with_focus_on_load(true);
    let mut blocks: Vec<SlackBlock> = vec![
        SlackSectionBlock::new()
            .with_block_id("q".into())
            .with_text(md(inert(&q.question, SECTION_TEXT_MAX)))
            .into(),
        SlackInputBlock::new(
            plain("The command to approve (it runs as written)"),
            input.into(),
        )
        .with_block_id(TEXT_BLOCK.into())
        .into(),
    ];
    if let Some(word) = word {
        let input = SlackBlockPlainTextInputElement::new()
            .with_action_id(WORD_ACTION.into())
            .with_max_length(WORD_MAX);
        blocks.push(
            SlackInputBlock::new(
                plain(truncate(
                    &format!("Type {} to confirm", escape(word)),
                    super::text::INPUT_LABEL_MAX,
                )),
                input.into(),
            )
            .with_block_id(WORD_BLOCK.into())
            .into(),
        );
    }
    SlackView::Modal(
        SlackModalView::new(plain("Edit, then approve"), blocks)
            .with_submit(plain("Approve"))
            .with_close(plain("Cancel"))
            .with_callback_id(
                CustomId::new(view.token, view.index, Form::Edit)
                    .encode()
                    .into(),
            )
            .with_private_metadata(place.encode()),
    )
}
