//! Discord's limits (docs/contract.md, "Discord limits"), the exact button texts, and
//! askrelay's own budgets inside those limits: what every other part of the renderer cuts to.

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
/// The free-text button at the end of a turn (a `Stop` request): what is typed is the reply
/// the agent carries on with.
pub const REPLY_LABEL: &str = "Reply…";
pub const ANSWER_LABEL: &str = "Answer…";
pub const SUBMIT_LABEL: &str = "Submit";
pub const SUBMIT_WITH_NOTE_LABEL: &str = "Submit with note…";

/// Our own budget inside the embed limits.
pub(super) const FOOTER_BUDGET: usize = 300;
/// The fields added by the settled/ended edits; option fields leave room for them.
pub(super) const OUTCOME_FIELDS: usize = 3;
/// Characters the outcome fields may take (names and values); see [`outcome_fields`].
pub(super) const OUTCOME_BUDGET: usize = 1450;
pub(super) const BY_MAX: usize = 200;
/// Room for the quoted note under "Answered by".
pub(super) const NOTE_MAX: usize = 120;
pub(super) const STATUS_MAX: usize = 64;
/// At most this many embed fields describe options.
pub(super) const OPTION_FIELDS_MAX: usize = EMBED_FIELDS_MAX - OUTCOME_FIELDS;
