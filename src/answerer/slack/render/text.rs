//! Text as Slack shows it: agent text escaped for mrkdwn, cut to Block Kit's limits, and code
//! blocks that agent text cannot close early; with the limits themselves, each from Slack's
//! Block Kit reference (docs.slack.dev/reference/block-kit).

use slack_morphism::prelude::{SlackBlockMarkDownText, SlackBlockPlainTextOnly, SlackBlockText};

/// Blocks in one message.
pub const MESSAGE_BLOCKS_MAX: usize = 50;
/// A header block's text (plain_text).
pub const HEADER_MAX: usize = 150;
/// A section block's text.
pub const SECTION_TEXT_MAX: usize = 3000;
/// A context block's elements, and each element's text (mrkdwn).
pub const CONTEXT_ELEMENTS_MAX: usize = 10;
pub const CONTEXT_TEXT_MAX: usize = 3000;
/// An actions block's elements.
pub const ACTIONS_ELEMENTS_MAX: usize = 25;
/// A button's text.
pub const BUTTON_TEXT_MAX: usize = 75;
/// A select's options, and each option's text and description.
pub const SELECT_OPTIONS_MAX: usize = 100;
pub const OPTION_TEXT_MAX: usize = 75;
/// A placeholder's text.
pub const PLACEHOLDER_MAX: usize = 150;
/// `action_id` and `block_id`.
pub const ID_MAX: usize = 255;
/// A modal's title, and its submit and close buttons' texts.
pub const MODAL_TITLE_MAX: usize = 24;
/// A modal's `private_metadata`.
pub const PRIVATE_METADATA_MAX: usize = 3000;
/// A plain_text_input's `max_length`.
pub const TEXT_INPUT_MAX: usize = 3000;
/// An input block's label.
pub const INPUT_LABEL_MAX: usize = 2000;
/// The message's top-level `text`: Slack's notifications and screen readers show it. Slack
/// truncates past 40,000 characters; a notification shows far less, so it is kept short.
pub const FALLBACK_MAX: usize = 300;

/// Agent text made inert for mrkdwn (and plain_text, where Slack decodes the same three
/// entities): `&`, `<` and `>` escaped, so that nothing it holds becomes a mention
/// (`<!channel>`, `<@U…>`, `<!subteam^…>`), a link (`<https://…|…>`) or a date.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` cut to at most `max` characters as Slack counts them, ending in `…` when cut, and never
/// inside an escape (`&amp;` is one character to a person but five to the limit).
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    // An entity cut in two would show as text ("&am"): drop the broken start.
    if let Some(amp) = out.rfind('&') {
        if !out[amp..].contains(';') {
            out.truncate(amp);
        }
    }
    out.push('…');
    out
}

/// Agent text for one line: line breaks become spaces.
pub fn one_line(s: &str) -> String {
    s.split(['\n', '\r']).collect::<Vec<_>>().join(" ")
}

/// Agent text escaped and cut to `max`.
pub fn inert(s: &str, max: usize) -> String {
    truncate(&escape(s), max)
}

/// Agent text inside a ``` block: escaped, and a run of three backticks (which would end the
/// block and let the rest be formatted) broken by zero-width spaces.
pub fn code(s: &str) -> String {
    escape(s).replace("```", "`\u{200B}`\u{200B}`")
}

/// Agent text inside `…` (an inline code span): inert, on one line, cut to 200 characters, and
/// unable to close the span (a backtick becomes `ˋ`).
pub fn span(s: &str) -> String {
    escape(&one_line(&truncate(s, 200))).replace('`', "ˋ")
}

/// A plain_text object (askrelay's own text, or agent text already made inert).
pub fn plain(s: impl Into<String>) -> SlackBlockPlainTextOnly {
    SlackBlockPlainTextOnly::from(s.into())
}

/// A mrkdwn object with `verbatim`, so that Slack links nothing on its own (no URL or channel
/// name in agent text turns into a link); its text is askrelay's or inert agent text.
pub fn md(s: impl Into<String>) -> SlackBlockText {
    SlackBlockText::MarkDown(SlackBlockMarkDownText::new(s.into()).with_verbatim(true))
}
