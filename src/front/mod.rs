//! Front doors for approvals: `askrelay hook claude-code` ([`hook`]) and `askrelay approve`
//! ([`approve`]). Each turns something that wants permission (a Claude Code tool call, a
//! command line) into one ask with two options and a context that shows exactly what is being
//! approved, follows it to its end through [`crate::client::AskSession`] like `askrelay ask`,
//! and reads the answer as a [`Verdict`]. They are socket clients with the same trust as `ask`.
//!
//! What they show is what runs: every text they put in the question and the context goes
//! through one [`Reveal`], which shows hidden characters and bytes that are not UTF-8 as
//! escapes, and the question then starts with its flag ([`flagged`]). The hook reads a file on
//! disk only through [`disk`].
//!
//! This module also builds a [`Context`] from command-line flags (`--context`,
//! `--context-file`), for `ask` and `approve`.

pub mod approve;
pub mod disk;
pub mod hook;
pub mod setup;

use crate::client::{AskSession, AskUpdate, Client, Target};
use crate::domain::answer::Terms;
use crate::domain::model::OnDisconnect;
use crate::domain::model::{MAX_CONTEXT_FILE_BYTES, MAX_CONTEXT_TEXT_BYTES, MAX_QUESTION_CHARS};
use crate::domain::text::{Escaped, Reveal};
use crate::domain::{Ask, AskError, Context, ContextFile, ErrorCode};
use crate::protocol::{Accepted, AnsweredView, Event, Op};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How an approval ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The allowing option was chosen; `by` describes who (best effort). `edited`: the
    /// command the approver edited, to run instead of the one asked (docs/approvals.md).
    Allowed { by: String, edited: Option<String> },
    /// The other option, or free text (`Other…`), which is the reason.
    Denied { by: String, reason: Option<String> },
    /// The request ended with an error: `EXPIRED`, `ABORTED`, `NO_ANSWERER`, …
    Failed(AskError),
    /// The daemon cannot be reached, or went away and did not come back.
    Unreachable(String),
    /// Nobody answered within the front door's own time limit; the request was cancelled.
    TimedOut(Duration),
}

/// How an ask ended, as a front door reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Answered: the result (docs/contract.md, "Result JSON"), who answered its first question
    /// (best effort), and what they attached to it (an edited command).
    Answered {
        result: String,
        by: String,
        terms: Option<Terms>,
    },
    /// The request ended with an error: `EXPIRED`, `ABORTED`, `NO_ANSWERER`, …
    Failed(AskError),
    /// The daemon cannot be reached, or went away and did not come back.
    Unreachable(String),
    /// Nobody answered within the front door's own time limit; the request was cancelled.
    TimedOut(Duration),
}

/// Asks and waits for the answer to the first question: `allow` (an option label) allows,
/// anything else denies. `timeout` cancels the request when it runs out; Ctrl-C cancels it too.
/// `on_accepted` hears each `accepted` event (answerer and its detail), for progress on stderr.
pub async fn decide(
    target: &Target,
    ask: Ask,
    allow: &str,
    reconnect: Duration,
    timeout: Option<Duration>,
    on_accepted: impl FnMut(&str, &Accepted),
) -> Verdict {
    match follow(target, ask, reconnect, timeout, on_accepted).await {
        Ended::Answered { result, by, terms } => read_answer(&result, allow, by, terms),
        Ended::Failed(e) => Verdict::Failed(e),
        Ended::Unreachable(why) => Verdict::Unreachable(why),
        Ended::TimedOut(after) => Verdict::TimedOut(after),
    }
}

/// Asks and follows the request to its end, re-attaching across daemon restarts. `timeout`
/// cancels the request when it runs out; Ctrl-C and SIGTERM cancel it too (the asker is going
/// away: the question must not stay answerable). An agent's hook (an ask with `on_disconnect:
/// withdraw`) withdraws it instead ("the agent moved on"), on SIGTERM and when the agent that
/// reads its stdout goes away.
pub async fn follow(
    target: &Target,
    ask: Ask,
    reconnect: Duration,
    timeout: Option<Duration>,
    mut on_accepted: impl FnMut(&str, &Accepted),
) -> Ended {
    let hook = ask.on_disconnect == OnDisconnect::Withdraw;
    let mut session = match AskSession::start(target.clone(), ask, reconnect).await {
        Ok(s) => s,
        Err(e) => {
            return Ended::Unreachable(format!(
                "cannot reach the askrelay daemon at {}: {e}",
                target.socket.display()
            ))
        }
    };
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let mut cancelled_for_time = false;
    let mut cancelling = false;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let agent_gone = reader_gone();
    tokio::pin!(agent_gone);
    loop {
        let update = tokio::select! {
            _ = sleep_until(deadline), if !cancelled_for_time && !cancelling => {
                cancelled_for_time = true;
                let why = format!(
                    "nobody answered within {} s (the front door's --timeout)",
                    timeout.unwrap_or_default().as_secs()
                );
                if let Err(e) = session.cancel(&why).await {
                    tracing::warn!(error = %format!("{e:#}"), "could not cancel the request");
                }
                continue;
            }
            r = &mut ctrl_c, if !cancelling => {
                cancelling = true;
                if r.is_ok() {
                    if let Err(e) = session.cancel("the asker pressed Ctrl-C").await {
                        tracing::warn!(error = %format!("{e:#}"), "could not cancel the request");
                    }
                }
                continue;
            }
            Some(()) = async { term.as_mut()?.recv().await }, if !cancelling => {
                cancelling = true;
                let done = if hook {
                    session.withdraw("SIGTERM").await
                } else {
                    session.cancel("the asker was stopped (SIGTERM)").await
                };
                if let Err(e) = done {
                    tracing::warn!(error = %format!("{e:#}"), "could not cancel the request");
                }
                continue;
            }
            () = &mut agent_gone, if hook && !cancelling => {
                cancelling = true;
                if let Err(e) = session.withdraw("its agent closed the hook's stdout").await {
                    tracing::warn!(error = %format!("{e:#}"), "could not withdraw the request");
                }
                continue;
            }
            u = session.next() => u,
        };
        match update {
            AskUpdate::Accepted { answerer, detail } => on_accepted(&answerer, &detail),
            AskUpdate::Lost { .. } | AskUpdate::Reattached | AskUpdate::Retrying { .. } => {}
            AskUpdate::Answered(result) => {
                let answered = answer_of(target, session.request_id()).await;
                let by = answered
                    .as_ref()
                    .map_or_else(|| "someone".to_owned(), describe);
                return Ended::Answered {
                    result: result.get().to_owned(),
                    by,
                    terms: answered.and_then(|a| a.terms),
                };
            }
            AskUpdate::Failed(_) if cancelled_for_time => {
                return Ended::TimedOut(timeout.unwrap_or_default())
            }
            AskUpdate::Failed(e)
                if e.code == ErrorCode::Internal
                    && e.message.starts_with("lost the askrelay daemon") =>
            {
                return Ended::Unreachable(e.message)
            }
            AskUpdate::Failed(e) => return Ended::Failed(e),
        }
    }
}

/// Resolves once the process reading this one's stdout has closed it: the agent that ran the
/// hook is gone (it died, or gave the hook up), and nobody will read the answer. Only a pipe or
/// a socket tells (the agent's, for a hook); on a terminal or a file it never resolves.
///
/// Not stdin: an agent writes the event and closes stdin at once (Claude Code's hook runner
/// does `stdin.write(event); stdin.end()`), so a closed stdin is every hook's normal state.
async fn reader_gone() {
    use nix::sys::stat::{fstat, SFlag};
    use std::os::fd::AsFd;
    use tokio::io::{unix::AsyncFd, Interest};
    let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return std::future::pending().await;
    };
    let kind = fstat(&fd).map(|s| SFlag::from_bits_truncate(s.st_mode) & SFlag::S_IFMT);
    if !matches!(kind, Ok(k) if k == SFlag::S_IFIFO || k == SFlag::S_IFSOCK) {
        return std::future::pending().await;
    }
    // A pipe's write end reports an error once its reader is gone; a socket (what libuv and
    // Bun hand a child as its stdout) reads as closed once its peer is.
    // Deprecated as unsound for a value whose fd can change under the registration; an
    // `OwnedFd` owns its fd until dropped with the registration, which is the contract its
    // `unsafe` successor states (and this crate denies unsafe code).
    #[allow(deprecated)]
    let watched = AsyncFd::with_interest(fd, Interest::READABLE | Interest::ERROR);
    let Ok(watch) = watched else {
        return std::future::pending().await;
    };
    loop {
        let Ok(mut ready) = watch.ready(Interest::READABLE | Interest::ERROR).await else {
            return std::future::pending().await;
        };
        let r = ready.ready();
        if r.is_error() || r.is_read_closed() {
            return;
        }
        // Bytes written back to us (nobody does): not a close.
        ready.clear_ready();
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The verdict in the result (docs/contract.md, "Result JSON") of a one-question approval.
fn read_answer(result: &str, allow: &str, by: String, terms: Option<Terms>) -> Verdict {
    let parsed: serde_json::Value = serde_json::from_str(result).unwrap_or_default();
    let first = &parsed["answers"][0];
    let selected: Vec<&str> = first["selected"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let custom = first["custom"].as_str().map(str::to_owned);
    if custom.is_none() && selected == [allow] {
        Verdict::Allowed {
            by,
            edited: terms.and_then(|t| t.edited),
        }
    } else {
        Verdict::Denied { by, reason: custom }
    }
}

/// Who answered the first question of an ended request, from the newest pages of `history`
/// (the answer does not say; the request just ended, so it is near the top). `None` when it
/// cannot be told.
pub async fn who_answered(target: &Target, request_id: &str) -> Option<String> {
    answer_of(target, request_id).await.as_ref().map(describe)
}

/// The answer to the first question of an ended request, from the newest pages of `history`
/// (the request just ended, so it is near the top). `None` when it cannot be told.
pub async fn answer_of(target: &Target, request_id: &str) -> Option<AnsweredView> {
    let mut client = Client::connect_to(target).await.ok()?;
    let mut before = None;
    for _ in 0..5 {
        let reply = client
            .call(&Op::History {
                limit: Some(50),
                before,
            })
            .await
            .ok()?;
        let Event::History { requests, next } = reply else {
            return None;
        };
        if let Some(r) = requests.into_iter().find(|r| r.request_id == request_id) {
            return r.questions.into_iter().next()?.answered;
        }
        before = Some(next?);
    }
    None
}

/// Who answered and where, once: `alice on Discord`, `bob (uid 1000) in the terminal`, `the
/// expiry policy`.
fn describe(a: &AnsweredView) -> String {
    let name = Escaped(&a.by).to_string();
    let id = Escaped(&a.id).to_string();
    match a.via.as_str() {
        "terminal" => format!("{name} (uid {id}) in the terminal"),
        "discord" => format!("{name} on Discord"),
        "slack" => format!("{name} in Slack"),
        "policy" => "the expiry policy".to_owned(),
        "grant" => format!("grant {id} (approved by {name})"),
        via => format!("{name} on {}", Escaped(via)),
    }
}

/// A context from `--context TEXT` and `--context-file PATH` (repeatable), or `None` when
/// neither is given. A file's name in the context is its own name, with anything but letters,
/// digits and `._-+` made `_`; a file that is not UTF-8 text is refused.
pub fn context_from_flags(
    text: Option<String>,
    files: &[PathBuf],
) -> Result<Option<Context>, String> {
    let mut context = Context {
        text: text.filter(|t| !t.trim().is_empty()),
        files: Vec::with_capacity(files.len()),
        approval: None,
    };
    for path in files {
        let bytes = std::fs::read(path)
            .map_err(|e| format!("--context-file {}: cannot read it: {e}", path.display()))?;
        let content = String::from_utf8(bytes).map_err(|_| {
            format!(
                "--context-file {}: is not UTF-8 text; only text files can be attached",
                path.display()
            )
        })?;
        context.files.push(ContextFile {
            name: file_name(path),
            content,
        });
    }
    Ok((!context.is_empty()).then_some(context))
}

/// A context file name for `path`: its last component, made to pass validation.
pub fn file_name(path: &Path) -> String {
    let raw = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    safe_name(&raw)
}

/// `raw` with anything but letters, digits and `._-+` made `_`, no leading dot, at most 100
/// characters; `file` when nothing is left.
pub fn safe_name(raw: &str) -> String {
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+') {
                c
            } else {
                '_'
            }
        })
        .collect();
    while name.starts_with('.') {
        name.remove(0);
    }
    if name.len() > crate::domain::model::MAX_CONTEXT_FILE_NAME_CHARS {
        let cut = name.len() - crate::domain::model::MAX_CONTEXT_FILE_NAME_CHARS;
        name.drain(..cut);
    }
    if name.is_empty() {
        "file".to_owned()
    } else {
        name
    }
}

/// `question` as asked: after the flag of hidden characters when `reveal` met any, and cut to
/// what a question may hold. The flag goes first so that it is seen wherever the question is
/// (a terminal's `pending` shows the start of it), however long the rest is.
pub fn flagged(question: String, reveal: &Reveal) -> String {
    let question = match reveal.flag() {
        Some(flag) => format!("{flag}\n{question}"),
        None => question,
    };
    question.chars().take(MAX_QUESTION_CHARS).collect()
}

/// `s` cut to at most `max` bytes at a character boundary, with a note of what was cut.
pub fn cap_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let note = format!("\n… (cut here: {} bytes in all)\n", s.len());
    let mut end = max.saturating_sub(note.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{note}", &s[..end])
}

/// A context text that may be too long for `context.text`: as the text when it fits, else as
/// a file named `name` (cut to what a file may hold).
pub fn text_or_file(text: String, name: &str, context: &mut Context) {
    if text.len() <= MAX_CONTEXT_TEXT_BYTES {
        context.text = Some(text);
    } else {
        context.files.push(ContextFile {
            name: name.to_owned(),
            content: cap_bytes(&text, MAX_CONTEXT_FILE_BYTES),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_as_verdicts() {
        let r = |s: &str| read_answer(s, "Allow", "alice".into(), None);
        assert_eq!(
            r(r#"{"answers":[{"id":"a","selected":["Allow"]}]}"#),
            Verdict::Allowed {
                by: "alice".into(),
                edited: None
            }
        );
        assert_eq!(
            r(r#"{"answers":[{"id":"a","selected":["Deny"]}]}"#),
            Verdict::Denied {
                by: "alice".into(),
                reason: None
            }
        );
        assert_eq!(
            r(r#"{"answers":[{"id":"a","selected":[],"custom":"not on a Friday"}]}"#),
            Verdict::Denied {
                by: "alice".into(),
                reason: Some("not on a Friday".into())
            }
        );
        // Anything unexpected denies.
        assert!(matches!(r("{}"), Verdict::Denied { .. }));
    }

    #[test]
    fn names_are_made_safe_and_text_is_cut_at_a_boundary() {
        assert_eq!(safe_name("my file (1).txt"), "my_file__1_.txt");
        assert_eq!(safe_name(".env"), "env");
        assert_eq!(safe_name("..."), "file");
        assert_eq!(safe_name(&"a".repeat(150)).len(), 100);
        let cut = cap_bytes(&"é".repeat(100), 120);
        assert!(cut.len() <= 120, "{}", cut.len());
        assert!(cut.ends_with("(cut here: 200 bytes in all)\n"), "{cut}");
        assert_eq!(cap_bytes("short", 120), "short");
    }
}
