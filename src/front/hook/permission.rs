//! Tool calls: what a tool would do, as the question and its context, and a permission prompt's
//! options (Allow once, Claude Code's own suggestions, Deny, Deny and stop).

use super::super::{decide, flagged, Ended, Verdict};
use super::context::tool_context;
use super::{
    ask_and_follow, denied_by, first_answer, no_answer, one_line, request_id, scope_of, tool_label,
    validated, waiting, Agent, CommonArgs, HookEvent, Reply, ALLOW, ALLOW_ONCE, DENY,
    DENY_AND_STOP,
};
use crate::client::Target;
use crate::domain::approval::KEEP_PREFIXES;
use crate::domain::model::{
    Approval, Question, QuestionOption, MAX_APPROVAL_COMMAND_CHARS, MAX_DESCRIPTION_CHARS,
};
use crate::domain::text::{Layout, Reveal};
use crate::domain::Ask;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// How much of auto mode's reason a question shows (Claude Code's are a rule name in brackets
/// and, on older versions, a sentence).
const MAX_DENIED_REASON_CHARS: usize = 500;

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
    let ask = match permission_ask(event, args, agent, options, None) {
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

/// A permission request: Allow once, what Claude Code suggested keeping ([`keep_options`]),
/// Deny, Deny and stop; free text denies with the person's words.
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
    // At most two keep options: with the others, five, a row of buttons (one tap on a phone).
    let keeps = keep_options(
        &event.permission_suggestions,
        event.cwd.as_deref().map(Path::new),
    );
    options.extend(keeps.iter().map(|k| k.option.clone()));
    options.push(QuestionOption {
        label: DENY.into(),
        description: Some("Block it; use Other… to tell Claude why".into()),
    });
    options.push(QuestionOption {
        label: DENY_AND_STOP.into(),
        description: Some("Block it and stop Claude's turn".into()),
    });
    let ask = match permission_ask(event, args, Agent::ClaudeCode, options, None) {
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
    if let Some(k) = keeps.iter().find(|k| k.option.label == chosen) {
        return Reply::PermissionRequest {
            decision: json!({"behavior": "allow", "updatedPermissions": k.permissions}),
            note: format!("{} (chosen by {by})", k.option.label),
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

/// How many characters a keep option's label has at most: a Discord button's label (80), so
/// that it is shown whole there. What does not fit is counted ("+ 2 more"); the description
/// has it all.
const KEEP_LABEL_CHARS: usize = 80;

/// What a person may choose to keep from Claude Code's permission suggestions: an option, and
/// the suggestions to echo back as `updatedPermissions` when it is chosen (exactly as Claude
/// Code sent them).
#[derive(Debug, Clone)]
pub(super) struct KeepOption {
    pub option: QuestionOption,
    pub permissions: Vec<Value>,
}

/// One of Claude Code's suggestions that allows something, as a person reads it.
struct Keep {
    /// What it allows: `Bash(touch ../outside/a.txt)`, `work in /w/outside`.
    what: String,
    /// Kept in a settings file (it outlasts the session).
    lasting: bool,
    /// Where it is kept, or how long it lasts.
    kept: String,
    /// An `addRules` suggestion.
    rule: bool,
    /// An `addDirectories` suggestion with a directory outside the working directory.
    outside: bool,
    value: Value,
}

impl Keep {
    /// The suggestion as a person reads it, or `None` when it takes something away
    /// (`removeRules`, a `deny` or `ask` rule) or is not understood.
    fn of(s: &Value, cwd: Option<&Path>, reveal: &mut Reveal) -> Option<Keep> {
        let mut rule = false;
        let mut outside = false;
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
                rule = true;
                Some(rules.join(", ")).filter(|r| !r.is_empty())?
            }
            Some("addDirectories") => {
                let dirs: Vec<&str> = s["directories"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                if dirs.is_empty() {
                    return None;
                }
                // A directory is outside unless it is the working directory or below it (an
                // unknown working directory: outside, so that nothing is offered on its own).
                outside = dirs
                    .iter()
                    .any(|d| !cwd.is_some_and(|c| Path::new(d).starts_with(c)));
                format!("work in {}", dirs.join(", "))
            }
            Some("setMode") => match s["mode"].as_str()? {
                "acceptEdits" => "accept every file edit".to_owned(),
                mode => format!("switch to the {mode} mode"),
            },
            _ => return None,
        };
        let (lasting, kept) = match s["destination"].as_str() {
            Some("session") | Some("cliArg") | None => {
                (false, "until Claude Code exits".to_owned())
            }
            Some("localSettings") => (
                true,
                "kept in .claude/settings.local.json (this project, you)".to_owned(),
            ),
            Some("projectSettings") => (
                true,
                "kept in .claude/settings.json (this project, everyone)".to_owned(),
            ),
            Some("userSettings") => (
                true,
                "kept in ~/.claude/settings.json (every project)".to_owned(),
            ),
            Some(other) => (
                true,
                format!("kept in {}", reveal.text(other, Layout::Line)),
            ),
        };
        Some(Keep {
            what: reveal.text(&what, Layout::Line),
            lasting,
            kept,
            rule,
            outside,
            value: s.clone(),
        })
    }
}

/// "Always allow" when any of `keeps` is kept in a settings file, else "Allow for this
/// session".
fn lasts(keeps: &[&Keep]) -> &'static str {
    if keeps.iter().any(|k| k.lasting) {
        KEEP_PREFIXES[0]
    } else {
        KEEP_PREFIXES[1]
    }
}

/// `text` cut to `max` characters, ending in "…" when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    text.chars().take(max.saturating_sub(1)).collect::<String>() + "…"
}

/// The label of an option that keeps `keeps`: "Always allow: A + B + C", as many of them as
/// fit [`KEEP_LABEL_CHARS`], the rest counted ("Always allow: A + 2 more").
fn keep_label(keeps: &[&Keep]) -> String {
    let head = format!("{}: ", lasts(keeps));
    let all = keeps.iter().map(|k| k.what.as_str()).collect::<Vec<_>>();
    let whole = format!("{head}{}", all.join(" + "));
    if whole.chars().count() <= KEEP_LABEL_CHARS {
        return whole;
    }
    for shown in (1..keeps.len()).rev() {
        let label = format!(
            "{head}{} + {} more",
            all[..shown].join(" + "),
            keeps.len() - shown
        );
        if label.chars().count() <= KEEP_LABEL_CHARS {
            return label;
        }
    }
    // Not even the first fits whole: it is cut, and the rest counted.
    let more = match keeps.len() {
        1 => String::new(),
        n => format!(" + {} more", n - 1),
    };
    let room = KEEP_LABEL_CHARS - head.chars().count() - more.chars().count();
    format!("{head}{}{more}", cut(all[0], room))
}

/// The description of an option that keeps `keeps`: each, with where it is kept.
fn keep_description(keeps: &[&Keep]) -> String {
    let parts: Vec<String> = keeps
        .iter()
        .map(|k| format!("{}, {}", k.what, k.kept))
        .collect();
    let text = match &parts[..] {
        [one] => format!("Allows {one}"),
        many => format!("Allows all {} together: {}", many.len(), many.join("; ")),
    };
    cut(&text, MAX_DESCRIPTION_CHARS)
}

/// The options that keep what Claude Code suggested (its `permission_suggestions` that allow
/// something: allow rules, directories, a mode; those that take something away are not
/// offered). `cwd` is the session's working directory.
///
/// - One option sends back every one of them together, labelled with all of them: Claude Code
///   made them as one set (its own dialog's "don't ask again" applies them all), and for a
///   call outside the project a rule alone does not stop the prompt. With one suggestion, this
///   is that suggestion.
/// - The rule alone is offered too, after it, only where a rule alone stops the prompt: when
///   there is exactly one allow-rule suggestion and no suggested directory lies outside the
///   working directory (the call stays inside the project). A directory or a mode alone never
///   allows a shell command, so neither is offered on its own.
///
/// Nothing is dropped: the first option carries every suggestion, whatever its label shows.
pub(super) fn keep_options(suggestions: &[Value], cwd: Option<&Path>) -> Vec<KeepOption> {
    let mut reveal = Reveal::default();
    let keeps: Vec<Keep> = suggestions
        .iter()
        .filter_map(|s| Keep::of(s, cwd, &mut reveal))
        .collect();
    if keeps.is_empty() {
        return Vec::new();
    }
    let all: Vec<&Keep> = keeps.iter().collect();
    let option = |keeps: &[&Keep]| KeepOption {
        option: QuestionOption {
            label: keep_label(keeps),
            description: Some(keep_description(keeps)),
        },
        permissions: keeps.iter().map(|k| k.value.clone()).collect(),
    };
    let mut out = vec![option(&all)];
    let rules: Vec<&Keep> = keeps.iter().filter(|k| k.rule).collect();
    if keeps.len() > 1 && rules.len() == 1 && !keeps.iter().any(|k| k.outside) {
        let mut alone = option(&rules);
        // Labels are unique within a question.
        if alone.option.label == out[0].option.label {
            let base = cut(&alone.option.label, KEEP_LABEL_CHARS - 4);
            alone.option.label = format!("{base} (2)");
        }
        out.push(alone);
    }
    out
}

/// The ask for a tool call: "Allow <tool>?" with `options`, what the call would do as its
/// context, the description the agent gave, and the working directory. `denied`: auto mode's
/// reason for denying the call (a PermissionDenied event), which the question then starts with.
pub(super) fn permission_ask(
    event: &HookEvent,
    args: &CommonArgs,
    agent: Agent,
    options: Vec<QuestionOption>,
    denied: Option<&str>,
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
    let mut question = match denied {
        None => format!("Allow {tool}?"),
        Some(reason) => format!(
            "Auto mode blocked {tool}. Allow this call once?\nAuto mode's reason: {}",
            one_line(reason, MAX_DENIED_REASON_CHARS, &mut reveal)
        ),
    };
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
    if denied.is_some() {
        // The retried call is the agent's own: an edited command could not run in its place.
        if let Some(a) = context.approval.as_mut() {
            a.editable = false;
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What Claude Code 2.1.197 and 2.1.332 both suggest for a shell command (seen in
    /// `agents::allow`): the command as a rule, the directory it touches, and acceptEdits.
    fn suggested(command: &str, dir: &str) -> Vec<Value> {
        vec![
            json!({"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": command}],
                   "behavior": "allow", "destination": "localSettings"}),
            json!({"type": "addDirectories", "directories": [dir], "destination": "session"}),
            json!({"type": "setMode", "mode": "acceptEdits", "destination": "session"}),
        ]
    }

    fn labels(keeps: &[KeepOption]) -> Vec<&str> {
        keeps.iter().map(|k| k.option.label.as_str()).collect()
    }

    #[test]
    fn outside_the_project_one_option_sends_back_every_suggestion() {
        let s = suggested("touch ../outside/a.txt", "/w/outside");
        let keeps = keep_options(&s, Some(Path::new("/w/project")));
        // No rule alone: it would not stop the prompt for a path outside the project.
        assert_eq!(
            labels(&keeps),
            ["Always allow: Bash(touch ../outside/a.txt) + work in /w/outside + 1 more"]
        );
        assert_eq!(keeps[0].permissions, s);
        assert_eq!(
            keeps[0].option.description.as_deref(),
            Some(
                "Allows all 3 together: Bash(touch ../outside/a.txt), kept in \
                 .claude/settings.local.json (this project, you); work in /w/outside, until \
                 Claude Code exits; accept every file edit, until Claude Code exits"
            )
        );
    }

    #[test]
    fn inside_the_project_the_rule_alone_is_offered_after_all_of_them() {
        let s = suggested("npm test", "/w/project");
        let keeps = keep_options(&s, Some(Path::new("/w/project")));
        assert_eq!(
            labels(&keeps),
            [
                "Always allow: Bash(npm test) + work in /w/project + accept every file edit",
                "Always allow: Bash(npm test)"
            ]
        );
        assert_eq!(keeps[0].permissions, s);
        assert_eq!(keeps[1].permissions, [s[0].clone()]);
        assert_eq!(
            keeps[1].option.description.as_deref(),
            Some(
                "Allows Bash(npm test), kept in .claude/settings.local.json (this project, \
                 you)"
            )
        );
        // A directory below the working directory is inside too.
        let s = suggested("touch a/b", "/w/project/a");
        assert_eq!(keep_options(&s, Some(Path::new("/w/project"))).len(), 2);
    }

    #[test]
    fn the_rule_alone_is_not_offered_when_it_may_not_be_enough() {
        let s = suggested("npm test", "/w/project");
        // The working directory unknown: the directory may be outside.
        assert_eq!(keep_options(&s, None).len(), 1);
        // Two rule suggestions (a compound command): neither alone covers it.
        let mut two = s.clone();
        two.push(
            json!({"type": "addRules", "behavior": "allow", "destination": "localSettings",
                        "rules": [{"toolName": "Bash", "ruleContent": "npm run lint"}]}),
        );
        let keeps = keep_options(&two, Some(Path::new("/w/project")));
        assert_eq!(keeps.len(), 1);
        assert_eq!(keeps[0].permissions, two);
        // A Write outside: a mode and a directory, never offered alone.
        let write = vec![
            json!({"type": "setMode", "mode": "acceptEdits", "destination": "session"}),
            json!({"type": "addDirectories", "directories": ["/w/outside"],
                   "destination": "session"}),
        ];
        let keeps = keep_options(&write, Some(Path::new("/w/project")));
        assert_eq!(
            labels(&keeps),
            ["Allow for this session: accept every file edit + work in /w/outside"]
        );
    }

    #[test]
    fn one_suggestion_is_one_option_and_what_takes_away_is_never_offered() {
        let s = vec![
            json!({"type": "removeRules", "rules": [{"toolName": "Bash"}], "behavior": "allow",
                   "destination": "session"}),
            json!({"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "deny",
                   "destination": "session"}),
            json!({"type": "addRules", "rules": [{"toolName": "WebFetch"}], "behavior": "allow",
                   "destination": "userSettings"}),
        ];
        let keeps = keep_options(&s, Some(Path::new("/w")));
        assert_eq!(labels(&keeps), ["Always allow: WebFetch (any use)"]);
        assert_eq!(keeps[0].permissions, [s[2].clone()]);
        assert_eq!(
            keeps[0].option.description.as_deref(),
            Some("Allows WebFetch (any use), kept in ~/.claude/settings.json (every project)")
        );
        assert!(keep_options(&s[..2], Some(Path::new("/w"))).is_empty());
        assert!(keep_options(&[], Some(Path::new("/w"))).is_empty());
    }

    #[test]
    fn nothing_is_dropped_and_the_label_counts_what_it_cannot_show() {
        let many: Vec<Value> = (0..7)
            .map(|i| {
                json!({"type": "addDirectories", "directories": [format!("/srv/data-{i}")],
                       "destination": "session"})
            })
            .collect();
        let keeps = keep_options(&many, Some(Path::new("/w")));
        assert_eq!(keeps.len(), 1);
        assert_eq!(keeps[0].permissions, many);
        let label = &keeps[0].option.label;
        assert_eq!(
            label,
            "Allow for this session: work in /srv/data-0 + work in /srv/data-1 + 5 more"
        );
        assert!(label.chars().count() <= KEEP_LABEL_CHARS);
        let described = keeps[0].option.description.as_deref().unwrap();
        assert!(
            described.starts_with("Allows all 7 together: ") && described.contains("/srv/data-6"),
            "{described}"
        );
        // A first item too long for the label is cut, and the rest still counted.
        let long = format!("make {}", "x".repeat(200));
        let s = suggested(&long, "/elsewhere");
        let keeps = keep_options(&s, Some(Path::new("/w")));
        let label = &keeps[0].option.label;
        assert!(
            label.starts_with("Always allow: Bash(make xxx") && label.ends_with("… + 2 more"),
            "{label}"
        );
        assert_eq!(label.chars().count(), KEEP_LABEL_CHARS);
        assert_eq!(keeps[0].permissions, s);
        assert!(keeps[0]
            .option
            .description
            .as_deref()
            .unwrap()
            .contains(&long));
    }

    #[test]
    fn hidden_characters_in_a_suggestion_show_escaped() {
        let s = suggested("rm \u{202E}txt.exe", "/w");
        let keeps = keep_options(&s, Some(Path::new("/w")));
        assert_eq!(
            keeps[1].option.label,
            "Always allow: Bash(rm ⟨U+202E⟩txt.exe)"
        );
    }
}
