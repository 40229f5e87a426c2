//! What a tool call would do, shown as the question's context: the command, the file, the
//! change as a unified diff; every text through the hook's one [`Reveal`].

use super::super::disk::{self, NotShown};
use super::super::{cap_bytes, safe_name, text_or_file};
use super::HOOK_FILE_MAX;
use crate::core::text::{Layout, Reveal};
use crate::core::{Context, ContextFile};
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
/// start after `offset` lines (where an edit's fragment sits in its file).
pub fn unified_diff(old: &str, new: &str, from: &str, to: &str, offset: usize) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = diff_lines(&a, &b);
    let mut out = format!("--- {from}\n+++ {to}\n");
    const CONTEXT: usize = 3;
    let mut hunks: Vec<(usize, usize)> = Vec::new();
    for (i, _) in ops.iter().enumerate().filter(|(_, (k, _))| *k != ' ') {
        let (start, end) = (i.saturating_sub(CONTEXT), (i + CONTEXT + 1).min(ops.len()));
        match hunks.last_mut() {
            Some(h) if start <= h.1 => h.1 = h.1.max(end),
            _ => hunks.push((start, end)),
        }
    }
    if hunks.is_empty() {
        out.push_str("(no change)\n");
        return out;
    }
    // The old and new line number before each op.
    let mut old_no = vec![offset; ops.len() + 1];
    let mut new_no = vec![offset; ops.len() + 1];
    for (i, (k, _)) in ops.iter().enumerate() {
        old_no[i + 1] = old_no[i] + usize::from(*k != '+');
        new_no[i + 1] = new_no[i] + usize::from(*k != '-');
    }
    for (s, e) in hunks {
        let (old_len, new_len) = (old_no[e] - old_no[s], new_no[e] - new_no[s]);
        let start = |no: usize, len: usize| if len == 0 { no } else { no + 1 };
        out.push_str(&format!(
            "@@ -{},{old_len} +{},{new_len} @@\n",
            start(old_no[s], old_len),
            start(new_no[s], new_len)
        ));
        for (k, line) in &ops[s..e] {
            out.push(*k);
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The line operations (' ' kept, '-' removed, '+' added) of a longest common subsequence;
/// past a size where that costs too much, every old line removed and every new one added.
pub(super) fn diff_lines<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<(char, &'a str)> {
    let (n, m) = (a.len(), b.len());
    if n.saturating_mul(m) > 4_000_000 {
        return a
            .iter()
            .map(|l| ('-', *l))
            .chain(b.iter().map(|l| ('+', *l)))
            .collect();
    }
    let w = m + 1;
    let mut lcs = vec![0u32; (n + 1) * w];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i * w + j] = if a[i] == b[j] {
                lcs[(i + 1) * w + j + 1] + 1
            } else {
                lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(n + m);
    while i < n && j < m {
        if a[i] == b[j] {
            out.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if lcs[(i + 1) * w + j] >= lcs[i * w + j + 1] {
            out.push(('-', a[i]));
            i += 1;
        } else {
            out.push(('+', b[j]));
            j += 1;
        }
    }
    out.extend(a[i..].iter().map(|l| ('-', *l)));
    out.extend(b[j..].iter().map(|l| ('+', *l)));
    out
}
