//! A request's context on its first question's message: the text in a code block when it
//! fits, a short diff in a `diff` block, and the rest as attachments.

use super::{
    mentions, question_message, RenderContext, ATTACHMENTS_MAX, CONTENT_MAX,
    CONTEXT_INLINE_LINES_MAX, CONTEXT_TEXT_FILE,
};
use crate::domain::model::{Context, Question};
use serenity::builder::CreateMessage;

/// A question's message with the request's context: the message to create, and the files to
/// upload with it (name, bytes), in order.
#[derive(Debug, Clone)]
pub struct QuestionPost {
    pub message: CreateMessage,
    pub files: Vec<(String, Vec<u8>)>,
}

/// [`question_message`], with `context` (the request's, on its first question's message only)
/// shown in the message content: the text in a code block under the mentions when it fits
/// (2000 characters with them, and [`CONTEXT_INLINE_LINES_MAX`] lines), otherwise as the file
/// [`CONTEXT_TEXT_FILE`]; a `.diff` file that fits the same way in a `diff` code block after
/// it; every other context file as an attachment, named in the content.
/// The edits that follow set no content and no attachments, so both stay as posted.
pub fn question_post(q: &Question, ctx: &RenderContext, context: Option<&Context>) -> QuestionPost {
    let mut message = question_message(q, ctx);
    let Some(context) = context.filter(|c| !c.is_empty()) else {
        return QuestionPost {
            message,
            files: Vec::new(),
        };
    };
    let (mentions, _) = mentions(ctx);
    let (content, files) = context_content(mentions.as_deref(), context);
    message = message.content(content);
    QuestionPost { message, files }
}

/// The message content for a context under `mentions`, and the files to attach.
pub(super) fn context_content(
    mentions: Option<&str>,
    context: &Context,
) -> (String, Vec<(String, Vec<u8>)>) {
    let mut content = mentions.unwrap_or_default().to_owned();
    let push = |content: &mut String, line: &str| -> bool {
        let sep = usize::from(!content.is_empty());
        if content.chars().count() + sep + line.chars().count() > CONTENT_MAX {
            return false;
        }
        if sep == 1 {
            content.push('\n');
        }
        content.push_str(line);
        true
    };
    push(&mut content, "**Context**");
    let mut files = Vec::new();
    if let Some(text) = &context.text {
        let block = format!("```\n{}\n```", fence_safe(text));
        let inline = text.lines().count() <= CONTEXT_INLINE_LINES_MAX && push(&mut content, &block);
        if !inline {
            files.push((text_file_name(context), text.as_bytes().to_vec()));
        }
    }
    for f in &context.files {
        // A short diff reads best in the message, coloured as one; a long one is a file.
        if f.name.ends_with(".diff") && f.content.lines().count() <= CONTEXT_INLINE_LINES_MAX {
            let block = format!("```diff\n{}\n```", fence_safe(f.content.trim_end()));
            if push(&mut content, &block) {
                continue;
            }
        }
        files.push((f.name.clone(), f.content.as_bytes().to_vec()));
    }
    files.truncate(ATTACHMENTS_MAX);
    if !files.is_empty() {
        // Names are letters, digits and `._-+` (core validation), so a code span shows them
        // as they are.
        let names: Vec<String> = files.iter().map(|(n, _)| format!("`{n}`")).collect();
        let line = format!("Attached: {}", names.join(", "));
        if !push(&mut content, &line) {
            push(&mut content, "Attached below.");
        }
    }
    (content, files)
}

/// Text that cannot close the code block it is shown in: no run of three backticks can form (a
/// zero-width space goes between two, so runs of at most two are left), and a code block shows
/// everything else as it is. Control and bidi characters other than newline, tab and carriage
/// return are shown as escapes (`\u{202e}`), as on a terminal: in a command or a diff someone
/// approves, a bidi override would make the text look like something it is not.
pub(super) fn fence_safe(text: &str) -> String {
    let shown: String = text
        .chars()
        .map(|c| {
            if matches!(c, '\n' | '\t' | '\r') || !crate::domain::text::is_display_control(c) {
                c.to_string()
            } else {
                crate::domain::text::escape(&c.to_string())
            }
        })
        .collect();
    shown.replace("``", "`\u{200B}`")
}

/// [`CONTEXT_TEXT_FILE`], or a name no context file has.
pub(super) fn text_file_name(context: &Context) -> String {
    let taken = |n: &str| context.files.iter().any(|f| f.name.eq_ignore_ascii_case(n));
    if !taken(CONTEXT_TEXT_FILE) {
        return CONTEXT_TEXT_FILE.to_owned();
    }
    (2..)
        .map(|i| format!("context-{i}.md"))
        .find(|n| !taken(n))
        .unwrap_or_else(|| CONTEXT_TEXT_FILE.to_owned())
}
