//! The modals: custom text (Other…, Answer…, Submit with note…), the typed word that confirms
//! a label, a grant with a pattern, and a command edited before it is approved.

use super::super::custom_id::{Form, ModalId, TEXT_INPUT_ID};
use super::limits::{
    MODAL_TITLE_MAX, TEXT_INPUT_LABEL_MAX, TEXT_INPUT_PLACEHOLDER_MAX, TEXT_INPUT_VALUE_MAX,
};
use super::RenderContext;
use super::{grant_label, grant_length_short, header, inert_plain, one_line, truncate};
use crate::domain::model::Question;
use serenity::builder::{CreateActionRow, CreateInputText, CreateModal};
use serenity::model::application::InputTextStyle;

/// The modal for custom text: one required paragraph input with custom_id [`TEXT_INPUT_ID`].
pub fn modal(q: &Question, ctx: &RenderContext, form: Form) -> CreateModal {
    let (label, placeholder) = match form {
        Form::Other if ctx.is_turn_end() => ("Your reply", "What the agent should do next"),
        Form::Other | Form::Answer => ("Your answer", q.question.as_str()),
        Form::Note => ("Note", "A note to send with your selection"),
        Form::Edit => ("The command to approve", ""),
        Form::Confirm(_) | Form::ConfirmDraft | Form::ConfirmGrant(_) => {
            return confirm_modal(q, ctx, form)
        }
        Form::GrantPattern | Form::SaveGrant(_) => ("Pattern", ""),
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

/// The custom_id of the grant form's second input: how long.
pub const LENGTH_INPUT_ID: &str = "length";

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
