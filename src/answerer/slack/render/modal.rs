//! The forms a press opens (`views.open` with the press's `trigger_id`): for Other…, Answer…
//! or "Submit with note…" the question and one multi-line `plain_text_input`; for a label of
//! the route's `confirm_labels` what it settles and one short input for the confirm word; for
//! Edit… the command; for "Allow matching…" the pattern, its length and (when the allow label
//! needs it) the word, and, pushed over it once sent, the grant's preview with "Save grant".
//! Its `callback_id` is the modal's custom_id (request token, question, form), and its
//! `private_metadata` the message it was opened from, which its submission must still match.

use super::text::{code, escape, inert, md, one_line, plain, truncate};
use super::text::{MODAL_TITLE_MAX, OPTION_TEXT_MAX, SECTION_TEXT_MAX, TEXT_INPUT_MAX};
use super::View;
use crate::answerer::chat::grant::{self, Preview};
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

/// The pattern form's length input: a select of the route's lengths (its values as
/// [`grant::short_length`] writes them, which [`grant::preview`] reads).
pub const LENGTH_BLOCK: &str = "length";
pub const LENGTH_ACTION: &str = "length";

/// The form of "Allow matching…": the pattern, filled in with `command` (the command asked, as
/// on Discord), one of the route's `grant_secs` (the first picked), and, when `word` is given
/// (the allow label is one of `confirm_labels`), an input for it. Sent, it shows the preview.
pub fn grant_pattern_modal(
    q: &Question,
    view: &View,
    place: &FormPlace,
    command: &str,
    word: Option<&str>,
) -> SlackView {
    let pattern = SlackBlockPlainTextInputElement::new()
        .with_action_id(TEXT_ACTION.into())
        .with_max_length(TEXT_INPUT_MAX as u64)
        .with_initial_value(command.chars().take(TEXT_INPUT_MAX).collect())
        .with_focus_on_load(true);
    let lengths: Vec<SlackBlockChoiceItem<SlackBlockPlainTextOnly>> = view
        .grant_secs
        .iter()
        .map(|&secs| {
            SlackBlockChoiceItem::new(
                plain(truncate(&grant::length(secs), OPTION_TEXT_MAX)),
                grant::short_length(secs),
            )
        })
        .collect();
    let mut length = SlackBlockStaticSelectElement::new()
        .with_action_id(LENGTH_ACTION.into())
        .with_options(lengths.clone());
    if let Some(first) = lengths.into_iter().next() {
        length = length.with_initial_option(first);
    }
    let mut blocks: Vec<SlackBlock> = vec![
        SlackSectionBlock::new()
            .with_block_id("q".into())
            .with_text(md(inert(&q.question, SECTION_TEXT_MAX)))
            .into(),
        SlackInputBlock::new(plain("Allow commands matching"), pattern.into())
            .with_block_id(TEXT_BLOCK.into())
            .with_hint(plain(
                "Matched on shell words: a * word stands for any number of whole words. You \
                 see what it allows before anything is saved.",
            ))
            .into(),
        SlackInputBlock::new(plain("For how long"), length.into())
            .with_block_id(LENGTH_BLOCK.into())
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
        SlackModalView::new(plain(grant::PATTERN_LABEL), blocks)
            .with_submit(plain("Preview"))
            .with_close(plain("Cancel"))
            .with_callback_id(
                CustomId::new(view.token, view.index, Form::GrantPattern)
                    .encode()
                    .into(),
            )
            .with_private_metadata(place.encode()),
    )
}

/// The most characters of a pattern its preview shows (the section holds the rest of the
/// preview too).
const PREVIEW_PATTERN_MAX: usize = 1500;

/// The preview of a grant the person wrote, pushed over the pattern form once it is sent: what
/// it would allow (`p`), for whom (`requester`, already inert), and "Save grant" as the
/// submit button; its close button ("Back") returns to the form. Nothing is saved before.
pub fn grant_preview_modal(
    view: &View,
    place: &FormPlace,
    p: &Preview,
    requester: &str,
) -> SlackView {
    let shown = p
        .pattern
        .chars()
        .take(PREVIEW_PATTERN_MAX)
        .collect::<String>();
    let cut = match p.pattern.chars().count() {
        n if n > PREVIEW_PATTERN_MAX => {
            format!(" (the first {PREVIEW_PATTERN_MAX} of its {n} characters)")
        }
        _ => String::new(),
    };
    let what = format!(
        "*Allow* `{}` commands matching `{}`{cut} ({}) for *{}*, for {requester} only, starting \
         with this request.",
        code(&one_line(&p.tool)),
        code(&shown),
        p.kind,
        grant::length(p.secs),
    );
    let mut blocks: Vec<SlackBlock> = vec![
        SlackSectionBlock::new()
            .with_block_id("grant".into())
            .with_text(md(truncate(&what, SECTION_TEXT_MAX)))
            .into(),
        SlackSectionBlock::new()
            .with_block_id("words".into())
            .with_text(md(
                "It is matched on shell words: a `*` word stands for any number of whole words, \
                 and a command matches only if it is one simple command that splits cleanly into \
                 words (no `;` `&amp;` `|` `&lt;` `&gt;` `$`, backticks, line breaks, comments or \
                 unclosed quotes).",
            ))
            .into(),
    ];
    if let Some((name, how)) = &p.runs_other {
        blocks.push(
            SlackSectionBlock::new()
                .with_block_id("runs".into())
                .with_text(md(format!(
                    ":warning: `{}` can run other programs from its options or arguments \
                     ({how}): this grant allows whatever those run too.",
                    code(name)
                )))
                .into(),
        );
    }
    blocks.push(
        SlackContextBlock::new(vec![SlackContextBlockElement::MarkDown(
            SlackBlockMarkDownText::new(
                "Nothing is saved until you press *Save grant*; *Back* returns to the pattern."
                    .to_owned(),
            ),
        )])
        .with_block_id("save".into())
        .into(),
    );
    SlackView::Modal(
        SlackModalView::new(plain("Grant preview"), blocks)
            .with_submit(plain("Save grant"))
            .with_close(plain("Back"))
            .with_callback_id(
                CustomId::new(view.token, view.index, Form::SaveGrant(p.g))
                    .encode()
                    .into(),
            )
            .with_private_metadata(place.encode()),
    )
}
