//! The commands that ask and answer: `ask` (follows its request to the end, as an agent would),
//! `answer` (labels matched by the question's own rules) and `cancel`.

use super::{
    connect, report_error, unexpected, unreachable_daemon, AnswerArgs, AskArgs, EXIT_UNREACHABLE,
};
use crate::client::{AskSession, AskUpdate, Target};
use crate::domain::model::QuestionKind;
use crate::domain::text::Escaped;
use crate::domain::ErrorCode;
use crate::protocol::ask::parse_ask;
use crate::protocol::{Event, Op, RequestView};
use anyhow::Result;
use serde_json::{json, Map, Value};
use std::io::Read;
use std::time::Duration;

/// The ask to send: the input file's `{"questions":[...]}` with the flags merged in, checked
/// with the daemon's own rules (the daemon checks again, with its limits).
fn build_ask(args: &AskArgs) -> Result<crate::domain::Ask, String> {
    let text = if args.input == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| format!("cannot read the question from stdin: {e}"))?;
        s
    } else {
        std::fs::read_to_string(&args.input)
            .map_err(|e| format!("cannot read {}: {e}", args.input))?
    };
    let mut obj: Map<String, Value> = match serde_json::from_str(&text) {
        Ok(Value::Object(o)) => o,
        Ok(_) => return Err("the input must be a JSON object like {\"questions\":[...]}".into()),
        Err(e) => return Err(format!("the input is not valid JSON: {e}")),
    };
    let request_id = args
        .request_id
        .clone()
        .or_else(|| {
            obj.get("request_id")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    obj.insert("request_id".into(), json!(request_id));
    if args.agent_id.is_some() || args.owner_agent_id.is_some() {
        obj.insert(
            "caller".into(),
            json!({"agent_id": args.agent_id, "owner_agent_id": args.owner_agent_id}),
        );
    }
    let mut scope = match obj.remove("scope") {
        Some(Value::Object(s)) => s,
        _ => Map::new(),
    };
    for (k, v) in [
        ("project", &args.project),
        ("agent", &args.agent),
        ("session", &args.session),
    ] {
        if let Some(v) = v {
            scope.insert(k.into(), json!(v));
        }
    }
    for kv in &args.scope {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--scope {kv:?}: expected KEY=VALUE"))?;
        scope.insert(k.into(), json!(v));
    }
    if !scope.is_empty() {
        obj.insert("scope".into(), Value::Object(scope));
    }
    // The flags' context replaces the input's text and adds to its files.
    if let Some(flags) =
        crate::front::context_from_flags(args.context.clone(), &args.context_files)?
    {
        let mut context = match obj.remove("context") {
            Some(Value::Object(c)) => c,
            _ => Map::new(),
        };
        if let Some(text) = flags.text {
            context.insert("text".into(), json!(text));
        }
        let mut files = match context.remove("files") {
            Some(Value::Array(f)) => f,
            _ => Vec::new(),
        };
        files.extend(
            flags
                .files
                .iter()
                .map(|f| json!({"name": f.name, "content": f.content})),
        );
        if !files.is_empty() {
            context.insert("files".into(), Value::Array(files));
        }
        obj.insert("context".into(), Value::Object(context));
    }
    parse_ask(&obj, usize::MAX).map_err(|e| e.message)
}

pub(super) async fn ask(target: &Target, args: AskArgs) -> Result<i32> {
    let ask = match build_ask(&args) {
        Ok(a) => a,
        Err(e) => return Ok(report_error(ErrorCode::InvalidRequest, &e)),
    };
    let request_id = ask.request_id.clone().unwrap_or_default();
    let shown_id = Escaped(&request_id).to_string();
    let mut session = match AskSession::start(
        target.clone(),
        ask,
        Duration::from_secs(args.reconnect_secs),
    )
    .await
    {
        Ok(s) => s,
        Err(e) => return Ok(unreachable_daemon(target, &e)),
    };
    let mut cancelling = false;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        let update = tokio::select! {
            r = &mut ctrl_c, if !cancelling => {
                r?;
                eprintln!("askrelay: cancelling request {shown_id}… (Ctrl-C again to quit now)");
                cancelling = true;
                if let Err(e) = session.cancel("the asker pressed Ctrl-C").await {
                    eprintln!("askrelay: could not cancel: {e:#}");
                }
                continue;
            }
            _ = tokio::signal::ctrl_c(), if cancelling => return Ok(130),
            u = session.next() => u,
        };
        match update {
            AskUpdate::Accepted { answerer, detail } => {
                let mut msg = format!(
                    "askrelay: request {shown_id} is waiting for an answer via {}",
                    Escaped(&answerer)
                );
                if let Some(link) = detail.first_link() {
                    msg.push_str(&format!(" ({})", Escaped(link)));
                }
                eprintln!("{msg}");
                if let Some(hint) = &detail.hint {
                    eprintln!("askrelay: {}", Escaped(hint));
                }
                if let Some(posting) = &detail.posting {
                    eprintln!("askrelay: not posted yet: {}", Escaped(posting));
                }
                if let Some(secs) = detail.expires_in_secs {
                    eprintln!("askrelay: the request expires if nobody answers within {secs} s");
                }
            }
            AskUpdate::Lost { window } => eprintln!(
                "askrelay: lost the daemon at {}; reconnecting to re-attach request {shown_id} (for up to {} s)…",
                target.socket.display(),
                window.as_secs()
            ),
            AskUpdate::Retrying { error, window } => eprintln!(
                "askrelay: the daemon could not save request {shown_id} ({}); asking again until it is saved (for up to {} s)…",
                Escaped(&error.message),
                window.as_secs()
            ),
            AskUpdate::Reattached => eprintln!("askrelay: reconnected; re-attached"),
            AskUpdate::Answered(result) => {
                // The result, byte for byte as the daemon sent it.
                crate::outln!("{}", result.get());
                return Ok(0);
            }
            AskUpdate::Failed(e) if e.code == ErrorCode::Internal && e.message.starts_with("lost the askrelay daemon") => {
                eprintln!("askrelay: {}", Escaped(&e.message));
                return Ok(EXIT_UNREACHABLE);
            }
            AskUpdate::Failed(e) => return Ok(report_error(e.code, &e.message)),
        }
    }
}

/// The answer to send: the question (the only one when `--question` is left out) and the
/// labels for `--select` values given as numbers, checked against the request when it can be
/// seen. When it cannot (ended, not yours), the daemon's reply says why.
/// `askrelay answer --all`: every pending request the caller may see (on `--route`), each
/// answered with the same choice on its own; a summary of what counted and what was refused,
/// and why.
pub(super) async fn answer_all(target: &Target, args: AnswerArgs) -> Result<i32> {
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let (requests, _) = match super::views::all_pending(&mut client).await? {
        Ok(r) => r,
        Err(other) => return Ok(super::unexpected(&other)),
    };
    let chosen: Vec<&RequestView> = requests
        .iter()
        .filter(|r| {
            args.route
                .as_deref()
                .is_none_or(|want| r.route.as_deref() == Some(want))
        })
        .collect();
    if chosen.is_empty() {
        crate::outln!("No pending requests{}.", on_route(&args));
        return Ok(0);
    }
    let what = args
        .select
        .iter()
        .map(|s| Escaped(s).to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if !args.yes {
        let ids: Vec<String> = chosen
            .iter()
            .map(|r| Escaped(&r.request_id).to_string())
            .collect();
        if !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            eprintln!(
                "askrelay: {} request(s){} would be answered with {what}; give --yes to confirm \
                 without a terminal",
                chosen.len(),
                on_route(&args)
            );
            return Ok(2);
        }
        eprint!(
            "Answer {} request(s){} with {what}? {}\n[y/N] ",
            chosen.len(),
            on_route(&args),
            ids.join(", ")
        );
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        if !matches!(line.trim(), "y" | "Y" | "yes") {
            eprintln!("askrelay: nothing was answered");
            return Ok(1);
        }
    }
    let mut refused = 0;
    for r in chosen {
        let one = AnswerArgs {
            request_id: Some(r.request_id.clone()),
            all: false,
            route: None,
            yes: false,
            ..args.clone()
        };
        let outcome = match resolve_answer(&one, Some(r)) {
            Err(e) => Err(e),
            Ok((question, select)) => {
                let reply = client
                    .call(&Op::Answer {
                        request_id: r.request_id.clone(),
                        question,
                        select,
                        custom: args.custom.clone(),
                        by: args.note.clone(),
                        confirm: args.confirm.clone(),
                    })
                    .await?;
                match reply {
                    Event::AnswerAccepted { votes: Some(v), .. } => Ok(format!(
                        "vote recorded, {} of {} approvals",
                        v.count, v.needed
                    )),
                    Event::AnswerAccepted { .. } => Ok("answered".to_owned()),
                    Event::Error { message, .. } => Err(message),
                    other => Err(format!("unexpected reply {other:?}")),
                }
            }
        };
        match outcome {
            Ok(done) => crate::outln!("done     {}: {done}", Escaped(&r.request_id)),
            Err(why) => {
                refused += 1;
                crate::outln!("refused  {}: {}", Escaped(&r.request_id), Escaped(&why));
            }
        }
    }
    Ok(if refused == 0 { 0 } else { 1 })
}

fn on_route(args: &AnswerArgs) -> String {
    args.route
        .as_deref()
        .map(|r| format!(" on route {}", Escaped(r)))
        .unwrap_or_default()
}

fn resolve_answer(
    args: &AnswerArgs,
    req: Option<&RequestView>,
) -> Result<(String, Vec<String>), String> {
    let Some(req) = req else {
        // Not pending (or not yours): the daemon says whether it ended, and how, or that there
        // is no such request; the question and the options no longer matter.
        return Ok((
            args.question.clone().unwrap_or_default(),
            args.select.clone(),
        ));
    };
    let q = match &args.question {
        Some(id) => req.questions.iter().find(|q| &q.id == id).ok_or_else(|| {
            let ids: Vec<String> = req
                .questions
                .iter()
                .map(|q| Escaped(&q.id).to_string())
                .collect();
            format!(
                "request {} has no question {}; its questions are: {}",
                Escaped(&req.request_id),
                Escaped(id),
                ids.join(", ")
            )
        })?,
        None if req.questions.len() == 1 => &req.questions[0],
        None => {
            let ids: Vec<String> = req
                .questions
                .iter()
                .map(|q| Escaped(&q.id).to_string())
                .collect();
            return Err(format!(
                "request {} has {} questions; say which with --question ({})",
                Escaped(&req.request_id),
                req.questions.len(),
                ids.join(", ")
            ));
        }
    };
    let q = crate::domain::Question {
        id: q.id.clone(),
        question: q.question.clone(),
        header: q.header.clone(),
        options: q
            .options
            .iter()
            .map(|label| crate::domain::QuestionOption {
                label: label.clone(),
                description: None,
            })
            .collect(),
        multi_select: q.multi_select,
    };
    let kind = q.kind();
    if kind == QuestionKind::FreeText && !args.select.is_empty() {
        return Err(format!(
            "question {} has no options and takes free text: use --text TEXT",
            Escaped(&q.id)
        ));
    }
    if kind == QuestionKind::Single && !args.select.is_empty() && args.custom.is_some() {
        return Err(format!(
            "question {} is single-select: free text would replace the selection, so pass \
             --select or --custom, not both",
            Escaped(&q.id)
        ));
    }
    let labels = q
        .resolve(&args.select, true)
        .map_err(|e| e.message)?
        .into_iter()
        .map(|i| q.options[i].label.clone())
        .collect();
    Ok((q.id.clone(), labels))
}

pub(super) async fn answer(target: &Target, args: AnswerArgs) -> Result<i32> {
    let request_id = args.request_id.clone().unwrap_or_default();
    if args.select.is_empty() && args.custom.is_none() {
        eprintln!("askrelay: give --select LABEL|N (repeatable) or --text TEXT");
        return Ok(2);
    }
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let lookup = client
        .call(&Op::Pending {
            request_id: Some(request_id.clone()),
            limit: None,
            after: None,
        })
        .await?;
    let req = match &lookup {
        Event::Pending { requests, .. } => requests.first(),
        _ => None,
    };
    let (question, select) = match resolve_answer(&args, req) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("askrelay: {e}");
            return Ok(2);
        }
    };
    let reply = client
        .call(&Op::Answer {
            request_id: request_id.clone(),
            question: question.clone(),
            select,
            custom: args.custom.clone(),
            by: args.note.clone(),
            confirm: args.confirm.clone(),
        })
        .await?;
    match reply {
        Event::AnswerAccepted {
            request_answered,
            votes,
            ..
        } => {
            if let Some(v) = votes {
                crate::outln!(
                    "Vote recorded for question {}: {} of {} approvals; it settles when {} more \
                     choose the same.",
                    Escaped(&question),
                    v.count,
                    v.needed,
                    v.needed.saturating_sub(v.count)
                );
            } else if request_answered {
                crate::outln!(
                    "Answer recorded; request {} is now answered and its agent has the result.",
                    Escaped(&request_id)
                );
            } else {
                crate::outln!(
                    "Answer recorded for question {}; the request still has open questions.",
                    Escaped(&question)
                );
            }
            Ok(0)
        }
        Event::Error { code, message, .. } if message.starts_with("unknown request_id") => {
            eprintln!(
                "askrelay: no such request {:?} ({})",
                Escaped(&request_id),
                Escaped(&message)
            );
            Ok(code.exit_code())
        }
        Event::Error { code, message, .. } => {
            eprintln!("askrelay: your answer did not count: {}", Escaped(&message));
            Ok(if code == ErrorCode::Conflict {
                1
            } else {
                code.exit_code()
            })
        }
        other => Ok(unexpected(&other)),
    }
}

pub(super) async fn cancel(
    target: &Target,
    request_id: String,
    reason: Option<String>,
) -> Result<i32> {
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let reply = client
        .call(&Op::Cancel {
            request_id: request_id.clone(),
            reason,
        })
        .await?;
    match reply {
        Event::Cancelled { .. } => {
            crate::outln!(
                "Cancelled request {}; its agent gets ABORTED.",
                Escaped(&request_id)
            );
            Ok(0)
        }
        other => Ok(unexpected(&other)),
    }
}
