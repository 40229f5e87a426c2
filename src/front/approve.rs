//! `askrelay approve [...] -- CMD ARGS…`: asks whether to run a command, and runs it only when
//! a person approves. For deploy scripts, cron jobs and CI steps.
//!
//! The exact argv is shown as the context (shell-quoted, with the working directory and the
//! host), with any `--context` and `--context-file` after it. It is shown byte for byte: a
//! hidden character or a byte that is not UTF-8 shows as an escape (`⟨U+202E⟩`, `⟨0xFF⟩`,
//! [`Reveal`]) and the question says that there are some; the argv that runs is the original.
//! Approved, the command runs with this process's stdin, stdout and stderr, and its exit status
//! becomes askrelay's. Otherwise it never runs, and askrelay exits with the codes of
//! `askrelay ask`: 5 when it was denied (`denied by <who>: <reason>` on stderr) or cancelled, 6
//! when the request expired, 4 for `NO_ANSWERER`, 2 for a bad request, 7 when the daemon cannot
//! be reached, 1 otherwise.

use super::{context_from_flags, decide, flagged, text_or_file, Verdict};
use crate::client::Target;
use crate::domain::model::{
    Approval, Limits, Question, QuestionOption, MAX_APPROVAL_COMMAND_CHARS,
};
use crate::domain::text::{Escaped, Layout, Reveal};
use crate::domain::{Ask, Context, ErrorCode, Scope};
use clap::Args;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The options: run the command, or not (free text does not either, and is the reason).
pub use crate::domain::approval::{DO_NOT_RUN, RUN};

/// The exit code when the command was denied: `ABORTED`'s, since it did not run for a
/// person's decision, as a cancelled request does not.
pub const EXIT_DENIED: i32 = 5;

pub const APPROVE_EXAMPLES: &str = "\
Approved: runs CMD and exits with its status (127: not found, 126: cannot run).
Not approved, CMD does not run and askrelay exits like `askrelay ask`:
  5  denied (\"denied by <who>: <reason>\" on stderr) or cancelled (ABORTED)
  6  EXPIRED    4  NO_ANSWERER    2  INVALID_REQUEST
  7  the daemon cannot be reached    1  anything else
The question shows the exact argv, the working directory and the host; hidden
characters and bytes that are not UTF-8 show as escapes (⟨U+202E⟩, ⟨0xFF⟩), and
the question says so.

Examples:
  askrelay approve -- ./deploy.sh --env prod
  askrelay approve --question 'Ship release 4.2 to production?' \\
      --context-file CHANGELOG.md --route-scope project=infra-prod \\
      -- make deploy
  askrelay approve --timeout 3600 -- psql -f migrations/0042.sql   # in cron";

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The question (default: "Run this command?").
    #[arg(long, value_name = "TEXT")]
    pub question: Option<String>,
    /// The question's header (default: "Approve").
    #[arg(long, value_name = "TEXT")]
    pub header: Option<String>,
    /// More context shown after the command (markdown, up to 16 KiB).
    #[arg(long, value_name = "TEXT")]
    pub context: Option<String>,
    /// A text file to attach (a plan, a changelog); repeatable, up to 9.
    #[arg(long = "context-file", value_name = "PATH")]
    pub context_files: Vec<PathBuf>,
    /// A scope label for routes, KEY=VALUE; repeatable.
    #[arg(
        long = "route-scope",
        visible_alias = "scope",
        value_name = "KEY=VALUE"
    )]
    pub scope: Vec<String>,
    /// scope.project.
    #[arg(long, env = "ASKRELAY_SCOPE_PROJECT")]
    pub project: Option<String>,
    /// Idempotency key; re-running with it re-attaches to the same request.
    #[arg(long)]
    pub request_id: Option<String>,
    /// Cancel the request after SECS without an answer (exit 5, the command does not run).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// How long to keep trying to re-attach when the daemon goes away.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    pub reconnect_secs: u64,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Runs `askrelay approve` and returns the exit code.
pub async fn run(config_file: Option<&Path>, args: ApproveArgs) -> i32 {
    let target = match Target::from_config(config_file).await {
        Ok(t) => t,
        Err(e) => {
            eprintln!("askrelay: {e:#}");
            return 2;
        }
    };
    let ask = match build_ask(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("askrelay: {}: {}", ErrorCode::InvalidRequest, Escaped(&e));
            return ErrorCode::InvalidRequest.exit_code();
        }
    };
    let request_id = ask.request_id.clone().unwrap_or_default();
    let verdict = decide(
        &target,
        ask,
        RUN,
        Duration::from_secs(args.reconnect_secs),
        args.timeout.map(Duration::from_secs),
        |answerer, detail| {
            let link = detail
                .first_link()
                .map(|l| format!(" ({})", Escaped(l)))
                .unwrap_or_default();
            eprintln!(
                "askrelay: request {} is waiting for approval via {}{link}",
                Escaped(&request_id),
                Escaped(answerer)
            );
        },
    )
    .await;
    match verdict {
        // Edit…: the approver's text, split into argv by shell words, shown back exactly,
        // then run.
        Verdict::Allowed {
            by,
            edited: Some(text),
        } => match edited_argv(&text) {
            Ok(argv) => {
                eprintln!(
                    "askrelay: approved by {by} as edited; running exactly {} (argv {})",
                    Escaped(&shell_line(&argv, &mut Reveal::default())),
                    Escaped(&serde_json::to_string(&argv_strings(&argv)).unwrap_or_default())
                );
                execute(&argv).await
            }
            Err(why) => {
                eprintln!("askrelay: {by} approved an edited command that cannot run: {why}; it did not run");
                EXIT_DENIED
            }
        },
        Verdict::Allowed { by, edited: None } => {
            eprintln!(
                "askrelay: approved by {by}; running {}",
                Escaped(&shell_line(&args.command, &mut Reveal::default()))
            );
            execute(&args.command).await
        }
        Verdict::Denied { by, reason } => {
            match reason {
                Some(r) => eprintln!("askrelay: denied by {by}: {}", Escaped(&r)),
                None => eprintln!("askrelay: denied by {by}"),
            }
            EXIT_DENIED
        }
        Verdict::Failed(e) => {
            eprintln!("askrelay: {}: {}", e.code, Escaped(&e.message));
            e.code.exit_code()
        }
        Verdict::Unreachable(why) => {
            eprintln!(
                "askrelay: {}; start it with `askrelay serve`",
                Escaped(&why)
            );
            crate::domain::error::EXIT_UNREACHABLE
        }
        Verdict::TimedOut(after) => {
            eprintln!(
                "askrelay: ABORTED: nobody answered within {} s (--timeout); not running it",
                after.as_secs()
            );
            ErrorCode::Aborted.exit_code()
        }
    }
}

/// Runs the approved command with this process's stdio; its exit status, or 128 + the signal
/// that ended it, or 127 / 126 when it cannot be started (as shells do).
async fn execute(command: &[OsString]) -> i32 {
    let Some((program, rest)) = command.split_first() else {
        return 2;
    };
    match tokio::process::Command::new(program)
        .args(rest)
        .status()
        .await
    {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            status
                .code()
                .or_else(|| status.signal().map(|s| 128 + s))
                .unwrap_or(1)
        }
        Err(e) => {
            eprintln!(
                "askrelay: cannot run {}: {e}",
                Escaped(&Reveal::default().os(program, Layout::Line))
            );
            if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            }
        }
    }
}

fn build_ask(args: &ApproveArgs) -> Result<Ask, String> {
    // Every text shown goes through this one value, so that the question is flagged when any
    // of them hid something.
    let mut reveal = Reveal::default();
    let argv = shell_line(&args.command, &mut reveal);
    let cwd = std::env::current_dir()
        .map(|d| reveal.os(d.as_os_str(), Layout::Line))
        .unwrap_or_else(|_| "?".into());
    let host = nix::unistd::gethostname()
        .map(|h| reveal.os(&h, Layout::Line))
        .unwrap_or_else(|_| "?".into());
    let mut text = format!("$ {argv}\n(in {cwd} on {host})");
    let extra = context_from_flags(args.context.clone(), &args.context_files)?;
    let mut context = Context::default();
    if let Some(extra_text) = extra.as_ref().and_then(|c| c.text.as_deref()) {
        text.push_str("\n\n");
        text.push_str(&reveal.text(extra_text, Layout::Lines));
    }
    text_or_file(text, "command.txt", &mut context);
    // What grants match on: the command line as shown. It is editable (Edit…, on a route
    // with allow_edits) when the shell words of that line are exactly the argv: an edit is
    // split back into argv the same way.
    if !argv.trim().is_empty() && argv.chars().count() <= MAX_APPROVAL_COMMAND_CHARS {
        let exact = shell_words::split(&argv).is_ok_and(|words| {
            words.len() == args.command.len()
                && words
                    .iter()
                    .zip(&args.command)
                    .all(|(w, a)| a.to_str() == Some(w.as_str()))
        });
        context.approval = Some(Approval {
            tool: "command".into(),
            command: argv.clone(),
            session: None,
            editable: exact,
        });
    }
    context
        .files
        .extend(extra.map(|c| c.files).unwrap_or_default());

    // The command in the question too, when it is short: a terminal answerer sees the
    // question, not the context.
    let mut question = args
        .question
        .as_deref()
        .map(|q| reveal.text(q, Layout::Lines))
        .unwrap_or_else(|| "Run this command?".into());
    if argv.chars().count() <= 300 && !argv.contains('\n') {
        question.push_str(&format!("\n$ {argv}"));
    }
    let header = args
        .header
        .as_deref()
        .map(|h| reveal.text(h, Layout::Line))
        .unwrap_or_else(|| "Approve".into());
    // Scope labels show in the message's footer.
    let mut scope = Scope::new();
    if let Some(p) = &args.project {
        scope.insert("project".into(), reveal.text(p, Layout::Line));
    }
    for kv in &args.scope {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--route-scope {kv:?}: expected KEY=VALUE"))?;
        scope.insert(k.to_owned(), reveal.text(v, Layout::Line));
    }
    let question = flagged(question, &reveal);
    let ask = Ask {
        request_id: Some(
            args.request_id
                .clone()
                .unwrap_or_else(|| format!("approve-{}", uuid::Uuid::new_v4())),
        ),
        caller: Default::default(),
        scope,
        questions: vec![Question {
            id: "run".into(),
            question,
            header: Some(header),
            options: vec![
                QuestionOption {
                    label: RUN.into(),
                    description: Some(format!("Run it now on {host}")),
                },
                QuestionOption {
                    label: DO_NOT_RUN.into(),
                    description: Some("It does not run; use Other… to say why".into()),
                },
            ],
            multi_select: false,
        }],
        context: (!context.is_empty()).then_some(context),
        on_disconnect: Default::default(),
    };
    // Checked with the daemon's own rules, so that a problem is named here.
    ask.validate(&Limits::NONE).map_err(|e| e.message)?;
    Ok(ask)
}

/// An approver's edited command line as argv: shell words (quotes and backslashes as a POSIX
/// shell reads them, no expansion), at least a program.
fn edited_argv(text: &str) -> Result<Vec<OsString>, String> {
    let words = shell_words::split(text).map_err(|e| format!("{e} in {:?}", Escaped(text)))?;
    if words.is_empty() {
        return Err("it is empty".into());
    }
    Ok(words.into_iter().map(OsString::from).collect())
}

fn argv_strings(argv: &[OsString]) -> Vec<String> {
    argv.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// The argv as one shell line: each argument as is when it is plain, else in single quotes;
/// hidden characters and bytes that are not UTF-8 as `reveal` shows them. Newlines and tabs
/// inside an argument are shown as they are (a script given to `sh -c`).
pub fn shell_line(argv: &[OsString], reveal: &mut Reveal) -> String {
    argv.iter()
        .map(|a| shell_quote(&reveal.os(a, Layout::Lines)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_is_shown_exactly() {
        let argv: Vec<OsString> = ["./deploy.sh", "--env", "prod eu", "it's", ""]
            .iter()
            .map(OsString::from)
            .collect();
        let mut reveal = Reveal::default();
        assert_eq!(
            shell_line(&argv, &mut reveal),
            r#"./deploy.sh --env 'prod eu' 'it'\''s' ''"#
        );
        assert!(!reveal.found());
    }

    #[test]
    fn hidden_characters_and_bytes_show_escaped_and_are_flagged() {
        use std::os::unix::ffi::OsStringExt;
        let argv = vec![
            OsString::from("rm"),
            OsString::from("report\u{202E}fdp.exe"),
            OsString::from_vec(b"caf\xE9".to_vec()),
            OsString::from("echo a\necho b"),
        ];
        let mut reveal = Reveal::default();
        assert_eq!(
            shell_line(&argv, &mut reveal),
            "rm 'report⟨U+202E⟩fdp.exe' 'caf⟨0xE9⟩' 'echo a\necho b'"
        );
        assert_eq!(
            reveal.flag().as_deref(),
            Some("⚠ This contains hidden characters, shown as ⟨U+202E⟩ ⟨0xE9⟩")
        );
    }
}
