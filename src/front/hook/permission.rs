//! Tool calls: what a tool would do, as the question and its context, and a permission prompt's
//! options (Allow once, Claude Code's own suggestions, Deny, Deny and stop).

use super::super::{decide, flagged, Ended, Verdict};
use super::context::tool_context;
use super::{
    ask_and_follow, denied_by, first_answer, no_answer, one_line, request_id, scope_of, tool_label,
    validated, waiting, Agent, CommonArgs, HookEvent, Reply, ALLOW, ALLOW_ONCE, DENY,
    DENY_AND_STOP, MAX_SUGGESTIONS,
};
use crate::client::Target;
use crate::domain::model::{
    Approval, Question, QuestionOption, MAX_APPROVAL_COMMAND_CHARS, MAX_LABEL_CHARS,
};
use crate::domain::text::{Layout, Reveal};
use crate::domain::Ask;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// Asks people whether the tool call may run (Allow / Deny) and follows it to its end.
pub(super) async fn tool_call(
    target: &Target,
    event: &HookEvent,
    args: &CommonArgs,
    agent: Agent,
) -> Verdict {
    let options = vec![
        QuestionOption {
            label: ALLOW.into(),
            description: Some(format!(
                "Let {} use {} as shown",
                agent.title(),
                tool_label(&event.tool_name)
            )),
        },
        QuestionOption {
            label: DENY.into(),
            description: Some(format!(
                "Block it; use Other… to tell {} why",
                agent.title()
            )),
        },
    ];
    let ask = match permission_ask(event, args, agent, options) {
        Ok(a) => a,
        Err(e) => return Verdict::Unreachable(e),
    };
    let request_id = ask.request_id.clone().unwrap_or_default();
    decide(
        target,
        ask,
        ALLOW,
        Duration::from_secs(args.reconnect_secs),
        args.timeout.map(Duration::from_secs),
        |answerer, _| waiting(&request_id, answerer),
    )
    .await
}

/// A permission request: Allow once, one option per suggestion of Claude Code's, Deny, Deny and
/// stop; free text denies with the person's words.
pub(super) async fn permission_request(
    target: &Target,
    event: &HookEvent,
    args: &CommonArgs,
) -> Reply {
    let tool = tool_label(&event.tool_name);
    let mut options = vec![QuestionOption {
        label: ALLOW_ONCE.into(),
        description: Some(format!("Let Claude Code use {tool} this time, as shown")),
    }];
    let mut suggestions = suggestion_options(&event.permission_suggestions);
    // Five options make a row of buttons, one tap on a phone; past that a select menu.
    suggestions.truncate(MAX_SUGGESTIONS);
    options.extend(suggestions.iter().map(|(o, _)| o.clone()));
    options.push(QuestionOption {
        label: DENY.into(),
        description: Some("Block it; use Other… to tell Claude why".into()),
    });
    options.push(QuestionOption {
        label: DENY_AND_STOP.into(),
        description: Some("Block it and stop Claude's turn".into()),
    });
    let ask = match permission_ask(event, args, Agent::ClaudeCode, options) {
        Ok(a) => a,
        Err(e) => return Reply::NoDecision(format!("{e}; no decision (Claude Code's own dialog)")),
    };
    let ended = ask_and_follow(target, ask, args).await;
    let (result, by, edited) = match ended {
        Ended::Answered { result, by, terms } => (result, by, terms.and_then(|t| t.edited)),
        other => return Reply::NoDecision(no_answer(&other, "Claude Code's own dialog")),
    };
    let answer = first_answer(&result);
    let deny = |message: String, interrupt: bool| {
        let mut decision = json!({"behavior": "deny", "message": message});
        if interrupt {
            decision["interrupt"] = json!(true);
        }
        Reply::PermissionRequest {
            note: message,
            decision,
        }
    };
    if let Some(text) = answer.custom {
        return deny(denied_by(&by, Some(&text)), false);
    }
    let chosen = answer.selected.first().map(String::as_str).unwrap_or(DENY);
    if chosen == ALLOW_ONCE {
        return match edited {
            None => Reply::PermissionRequest {
                decision: json!({"behavior": "allow"}),
                note: format!("allowed once by {by}"),
            },
            Some(command) => match edited_input(event, &command) {
                Some(input) => Reply::PermissionRequest {
                    decision: json!({"behavior": "allow", "updatedInput": input}),
                    note: format!("allowed once by {by}, edited to: {command}"),
                },
                None => deny(edit_not_applied(&by), false),
            },
        };
    }
    if let Some((o, suggestion)) = suggestions.iter().find(|(o, _)| o.label == chosen) {
        return Reply::PermissionRequest {
            decision: json!({"behavior": "allow", "updatedPermissions": [suggestion]}),
            note: format!("{} (chosen by {by})", o.label),
        };
    }
    deny(denied_by(&by, None), chosen == DENY_AND_STOP)
}

/// What a grant matches and an approver may edit: the tool, its exact input (a shell
/// command as it is; any other tool's input as its JSON), and the agent's session. Only a
/// Claude Code shell command is editable: its hook can run the edited one (`updatedInput`).
pub(super) fn approval_of(event: &HookEvent, agent: Agent) -> Option<Approval> {
    let shell = event.tool_input.get("command").and_then(Value::as_str);
    let command = match shell {
        Some(c) if event.tool_name == "Bash" => c.to_owned(),
        _ => serde_json::to_string(&event.tool_input).ok()?,
    };
    if command.trim().is_empty()
        || command.chars().count() > MAX_APPROVAL_COMMAND_CHARS
        || event.tool_name.trim().is_empty()
        || event.tool_name.chars().count() > 80
    {
        return None;
    }
    Some(Approval {
        tool: event.tool_name.clone(),
        command,
        session: event
            .session_id
            .clone()
            .filter(|s| !s.trim().is_empty() && s.chars().count() <= 200),
        editable: agent == Agent::ClaudeCode && event.tool_name == "Bash" && shell.is_some(),
    })
}

/// The tool input with the approver's edited command in place of the asked one (`None`
/// when the input has no command to replace).
pub(super) fn edited_input(event: &HookEvent, command: &str) -> Option<Value> {
    let mut input = event.tool_input.clone();
    let slot = input.as_object_mut()?.get_mut("command")?;
    slot.is_string().then_some(())?;
    *slot = Value::String(command.to_owned());
    Some(input)
}

/// Why an approved edit was not run: the hook could not carry it.
pub(super) fn edit_not_applied(by: &str) -> String {
    format!("{by} approved an edited command, which this hook cannot run here; denied")
}

/// An option for each of Claude Code's permission suggestions that allows something (adding
/// allow rules or directories, switching to a mode), with the suggestion to echo back as
/// `updatedPermissions` when it is chosen. The label says how long it lasts and what it allows;
/// the description, where it is kept.
pub(super) fn suggestion_options(suggestions: &[Value]) -> Vec<(QuestionOption, Value)> {
    let mut out: Vec<(QuestionOption, Value)> = Vec::new();
    let mut reveal = Reveal::default();
    for s in suggestions {
        let what = match s["type"].as_str() {
            Some("addRules") if s["behavior"].as_str().unwrap_or("allow") == "allow" => {
                let rules: Vec<String> = s["rules"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| {
                        let tool = r["toolName"].as_str()?;
                        Some(match r["ruleContent"].as_str() {
                            Some(c) => format!("{tool}({c})"),
                            None => format!("{tool} (any use)"),
                        })
                    })
                    .collect();
                if rules.is_empty() {
                    continue;
                }
                rules.join(", ")
            }
            Some("addDirectories") => {
                let dirs: Vec<&str> = s["directories"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                if dirs.is_empty() {
                    continue;
                }
                format!("work in {}", dirs.join(", "))
            }
            Some("setMode") => match s["mode"].as_str() {
                Some("acceptEdits") => "accept every file edit".to_owned(),
                Some(mode) => format!("switch to the {mode} mode"),
                None => continue,
            },
            _ => continue,
        };
        let (lasts, kept) = match s["destination"].as_str() {
            Some("session") | Some("cliArg") | None => (
                "Allow for this session",
                "until Claude Code exits".to_owned(),
            ),
            Some("localSettings") => (
                "Always allow",
                "kept in .claude/settings.local.json (this project, you)".to_owned(),
            ),
            Some("projectSettings") => (
                "Always allow",
                "kept in .claude/settings.json (this project, everyone)".to_owned(),
            ),
            Some("userSettings") => (
                "Always allow",
                "kept in ~/.claude/settings.json (every project)".to_owned(),
            ),
            Some(other) => ("Always allow", format!("kept in {other}")),
        };
        let what = reveal.text(&what, Layout::Line);
        let mut label: String = format!("{lasts}: {what}");
        if label.chars().count() > MAX_LABEL_CHARS {
            label = label.chars().take(MAX_LABEL_CHARS - 1).collect::<String>() + "…";
        }
        // Labels are unique within a question.
        let mut n = 2;
        let base = label.clone();
        while out.iter().any(|(o, _)| o.label == label) {
            let suffix = format!(" ({n})");
            label = base
                .chars()
                .take(MAX_LABEL_CHARS - suffix.chars().count())
                .collect::<String>()
                + &suffix;
            n += 1;
        }
        out.push((
            QuestionOption {
                label,
                description: Some(format!("Allows {what}; {kept}")),
            },
            s.clone(),
        ));
    }
    out
}

/// The ask for a tool call: "Allow <tool>?" with `options`, what the call would do as its
/// context, the description the agent gave, and the working directory.
pub(super) fn permission_ask(
    event: &HookEvent,
    args: &CommonArgs,
    agent: Agent,
    options: Vec<QuestionOption>,
) -> Result<Ask, String> {
    // Every text from the event goes through this one value, so that the question is flagged
    // when any of them hid something.
    let mut reveal = Reveal::default();
    let tool = one_line(&event.tool_name, 80, &mut reveal);
    if tool.is_empty() {
        return Err("the hook event has no tool_name".into());
    }
    let input = &event.tool_input;
    let str_field = |k: &str| input.get(k).and_then(Value::as_str);
    let cwd = event.cwd.as_deref().map(Path::new);
    let (context, not_shown) = tool_context(&event.tool_name, input, cwd, &mut reveal);
    let mut question = format!("Allow {tool}?");
    if let Some(why) = &not_shown {
        question.push_str(&format!("\n⚠ File on disk not shown: {why}"));
    }
    if let Some(d) = str_field("description").filter(|d| !d.trim().is_empty()) {
        question.push_str("\n\n");
        question.push_str(&reveal.text(d, Layout::Lines));
    }
    let scope = scope_of(event, args, &mut reveal)?;
    let request_id = request_id(event, agent, &mut reveal);
    let question = flagged(question, &reveal);
    let mut context = context;
    context.approval = approval_of(event, agent);
    let ask = Ask {
        request_id: Some(request_id),
        // The session's main agent: hooks run for the agent itself, not for a sub-agent.
        caller: crate::domain::Caller {
            agent_id: Some(agent.name().into()),
            owner_agent_id: None,
        },
        scope,
        questions: vec![Question {
            id: "permission".into(),
            question,
            header: Some(agent.title().into()),
            options,
            multi_select: false,
        }],
        context: (!context.is_empty()).then_some(context),
        on_disconnect: crate::domain::model::OnDisconnect::Withdraw,
    };
    validated(ask)
}
