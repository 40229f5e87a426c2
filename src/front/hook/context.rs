//! What a tool call would do, shown as the question's context: the command, the file, the
//! change as a unified diff; every text through the hook's one [`Reveal`].

use super::super::disk::{self, NotShown};
use super::super::{cap_bytes, safe_name, text_or_file};
use super::HOOK_FILE_MAX;
use crate::domain::text::{Layout, Reveal};
use crate::domain::{Context, ContextFile};
use serde_json::Value;
use std::path::Path;

/// What the tool call would do, as a context: Bash's command; the file and a diff for Edit,
/// MultiEdit and Write; the input as JSON for any other tool. Every text in it is revealed
/// (once: an escape revealed again would change). With it, why the file on disk is not shown,
/// when it is not.
pub(super) fn tool_context(
    tool: &str,
    input: &Value,
    cwd: Option<&Path>,
    reveal: &mut Reveal,
) -> (Context, Option<NotShown>) {
    let mut context = Context::default();
    let mut not_shown = None;
    let str_field = |k: &str| input.get(k).and_then(Value::as_str);
    let file = str_field("file_path").map(|p| shown_path(p, cwd, reveal));
    match (tool, str_field("command"), str_field("file_path")) {
        ("Bash", Some(command), _) => text_or_file(
            reveal.text(command, Layout::Lines),
            "command.sh",
            &mut context,
        ),
        ("Edit", _, Some(path)) => {
            let old = str_field("old_string").unwrap_or_default();
            let new = str_field("new_string").unwrap_or_default();
            let all = input.get("replace_all").and_then(Value::as_bool) == Some(true);
            // The file is read only for the line numbers of the fragment.
            let offset = match disk::read_text(Path::new(path)) {
                Ok(f) => f
                    .find(old)
                    .map(|at| f[..at].matches('\n').count())
                    .unwrap_or(0),
                Err(why) => {
                    not_shown = Some(why);
                    0
                }
            };
            let shown = file.clone().unwrap_or_default();
            let mut text = shown.clone();
            if all {
                text.push_str("\n(every occurrence is replaced)");
            }
            if let Some(why) = &not_shown {
                text.push_str(&format!(
                    "\n(the file on disk is not shown: {why}; the diff has the edited text \
                     alone, and its line numbers count from the edit)"
                ));
            }
            context.text = Some(text);
            let (old, new) = (
                reveal.text(old, Layout::Lines),
                reveal.text(new, Layout::Lines),
            );
            push_diff(
                &mut context,
                path,
                &unified_diff(&old, &new, &shown, &shown, offset),
            );
        }
        ("MultiEdit", _, Some(path)) => {
            let shown = file.clone().unwrap_or_default();
            let mut diff = String::new();
            for e in input
                .get("edits")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let old = e.get("old_string").and_then(Value::as_str).unwrap_or("");
                let new = e.get("new_string").and_then(Value::as_str).unwrap_or("");
                let (old, new) = (
                    reveal.text(old, Layout::Lines),
                    reveal.text(new, Layout::Lines),
                );
                let d = unified_diff(&old, &new, &shown, &shown, 0);
                if diff.is_empty() {
                    diff = d;
                } else {
                    // One header; the hunks of every edit after it.
                    diff.push_str(d.split_once("\n+++ ").map_or("", |(_, r)| {
                        r.split_once('\n').map_or("", |(_, hunks)| hunks)
                    }));
                }
            }
            context.text = Some(shown);
            push_diff(&mut context, path, &diff);
        }
        ("Write", _, Some(path)) => {
            let new = reveal.text(str_field("content").unwrap_or_default(), Layout::Lines);
            let shown = file.clone().unwrap_or_default();
            let (old, from, note) = match disk::read_text(Path::new(path)) {
                Ok(old) => (
                    reveal.text(&old, Layout::Lines),
                    shown.clone(),
                    "(replaces the file)".to_owned(),
                ),
                Err(NotShown::Missing) => (
                    String::new(),
                    "/dev/null".to_owned(),
                    "(a new file)".to_owned(),
                ),
                Err(why) => {
                    let note = format!("(replaces the file; the file on disk is not shown: {why})");
                    not_shown = Some(why);
                    (String::new(), format!("{shown} (on disk, not shown)"), note)
                }
            };
            context.text = Some(format!("{shown}\n{note}"));
            push_diff(
                &mut context,
                path,
                &unified_diff(&old, &new, &from, &shown, 0),
            );
        }
        _ => {
            let json = serde_json::to_string_pretty(input).unwrap_or_default();
            if json != "null" && json != "{}" {
                text_or_file(
                    reveal.text(&json, Layout::Lines),
                    "tool_input.json",
                    &mut context,
                );
            }
        }
    }
    (context, not_shown)
}

pub(super) fn push_diff(context: &mut Context, path: &str, diff: &str) {
    let base = Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    context.files.push(ContextFile {
        name: safe_name(&format!("{base}.diff")),
        content: cap_bytes(diff, HOOK_FILE_MAX),
    });
}

/// A path as shown: relative to the session's cwd when it is inside it, revealed as one line.
pub(super) fn shown_path(path: &str, cwd: Option<&Path>, reveal: &mut Reveal) -> String {
    let relative = cwd
        .and_then(|c| Path::new(path).strip_prefix(c).ok())
        .filter(|r| !r.as_os_str().is_empty());
    match relative {
        Some(r) => reveal.os(r.as_os_str(), Layout::Line),
        None => reveal.text(path, Layout::Line),
    }
}

/// A unified diff of `old` → `new` (whole lines), with three lines of context; line numbers
/// start after `offset` lines (where an edit's fragment sits in its file). Patience diff, so
/// that a change in a long file stays the few lines it is, and a moved block reads as moved.
pub fn unified_diff(old: &str, new: &str, from: &str, to: &str, offset: usize) -> String {
    const CONTEXT: usize = 3;
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = similar::capture_diff_slices(similar::Algorithm::Patience, &a, &b);
    let hunks = similar::group_diff_ops(ops, CONTEXT);
    let mut out = format!("--- {from}\n+++ {to}\n");
    if hunks.is_empty() {
        out.push_str("(no change)\n");
        return out;
    }
    for hunk in hunks {
        let (Some(first), Some(last)) = (hunk.first(), hunk.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        // A hunk that adds to an empty range is numbered by the line before it, as diff does.
        let start = |r: &std::ops::Range<usize>| offset + r.start + usize::from(!r.is_empty());
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            start(&old_range),
            old_range.len(),
            start(&new_range),
            new_range.len()
        ));
        let mut lines = |sign: char, lines: &[&str]| {
            for line in lines {
                out.push(sign);
                out.push_str(line);
                out.push('\n');
            }
        };
        for op in &hunk {
            let (tag, o, n) = op.as_tag_tuple();
            match tag {
                similar::DiffTag::Equal => lines(' ', &a[o]),
                similar::DiffTag::Delete => lines('-', &a[o]),
                similar::DiffTag::Insert => lines('+', &b[n]),
                similar::DiffTag::Replace => {
                    lines('-', &a[o]);
                    lines('+', &b[n]);
                }
            }
        }
    }
    out
}
