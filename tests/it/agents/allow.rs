//! "Don't ask me again" for a command outside the project (issue 40, item 3), on both Claude
//! Codes of the matrix. For `touch ../outside/a.txt` Claude Code 2.1.197 and 2.1.332 both
//! suggest three things at once: the command as a rule (kept in `.claude/settings.local.json`),
//! the outside directory and acceptEdits (both for the session). askrelay offers them as one
//! option, and sends them all back; what each version suggests is read from a copy of the
//! hook's input and printed.

use super::*;

/// A project directory and a sibling `outside` in a temp dir of their own.
struct Layout {
    root: tempfile::TempDir,
}

impl Layout {
    fn new() -> Layout {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("project")).unwrap();
        std::fs::create_dir_all(root.path().join("outside")).unwrap();
        Layout { root }
    }

    fn project(&self) -> PathBuf {
        self.root.path().join("project")
    }

    fn outside(&self) -> PathBuf {
        self.root.path().join("outside")
    }

    /// Where the hooks copy each event they get, one JSON line each.
    fn log(&self) -> PathBuf {
        self.root.path().join("events.jsonl")
    }

    /// The events the hooks got, printed for the record.
    fn events(&self, cc: &Cc) -> Vec<Value> {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        let events: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        for e in &events {
            eprintln!(
                "Claude Code {}: {} {} suggests {}",
                cc.version, e["hook_event_name"], e["tool_input"], e["permission_suggestions"]
            );
        }
        events
    }

    /// What both versions suggest for `touch ../outside/a.txt`.
    fn suggested(&self) -> Value {
        json!([
            {"type": "addRules", "rules": [{"toolName": "Bash",
             "ruleContent": "touch ../outside/a.txt"}],
             "behavior": "allow", "destination": "localSettings"},
            {"type": "addDirectories", "directories": [self.outside().display().to_string()],
             "destination": "session"},
            {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
        ])
    }
}

/// The PermissionRequest hook `command` for every tool.
fn permission_hook(command: String) -> Value {
    json!({"hooks": {"PermissionRequest": [{"matcher": "*", "hooks": [
        {"type": "command", "command": command, "timeout": 60}]}]}})
}

fn touch_outside() -> ToolCall {
    ToolCall::new(
        "Bash",
        json!({"command": "touch ../outside/a.txt", "description": "Create a file outside"}),
    )
}

/// How many questions the daemon posted.
fn asked(app: &App) -> usize {
    app.standin()
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/messages"))
        .count()
}

claude_code_matrix!(claude_code_always_allow_outside_the_project_is_not_asked_again);
async fn claude_code_always_allow_outside_the_project_is_not_asked_again(cc: Cc) {
    let dirs = Layout::new();
    let settings = permission_hook(format!(
        "tee -a {} | {}",
        dirs.log().display(),
        hook_command("claude-code")
    ));
    // The same command twice in one session.
    let script = vec![touch_outside(), touch_outside()];
    let (app, llm, result) = permission_run_with(
        &cc.bin,
        settings.clone(),
        script,
        &dirs.project(),
        async |app: &App| {
            let (_, m) = first_question(app).await;
            // One option keeps all three; the rule alone is not offered (it would be asked
            // again, `claude_code_a_rule_alone_is_asked_again_outside_the_project`).
            let labels: Vec<String> = controls(&m).into_iter().map(|(_, l)| l).collect();
            let combined = labels
                .iter()
                .find(|l| l.starts_with("Always allow: Bash(touch ../outside/a.txt) + "))
                .unwrap_or_else(|| panic!("one option with every suggestion: {labels:?}"))
                .clone();
            assert_eq!(
                labels,
                ["Allow once", &combined, "Deny", "Deny and stop", "Other…"]
            );
            // Nothing is dropped silently: what the label cannot show, it counts.
            assert!(combined.ends_with(" more"), "{combined}");
            final_state(&app.press(&m, &alice(), &combined).await);
        },
    )
    .await;
    let events = dirs.events(&cc);
    assert_eq!(events.len(), 1, "the second identical call asked again");
    assert_eq!(events[0]["permission_suggestions"], dirs.suggested());
    assert_eq!(asked(&app), 1);
    let results = llm.tool_results();
    assert_eq!(results.len(), 2, "{result} {results:?}");
    assert!(dirs.outside().join("a.txt").exists(), "{results:?}");
    // The rule is kept; the directory and the mode were for that session only.
    let kept: Value = serde_json::from_str(
        &std::fs::read_to_string(dirs.project().join(".claude/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        kept["permissions"]["allow"],
        json!(["Bash(touch ../outside/a.txt)"]),
        "{kept}"
    );
    // So a new session asks again: the kept rule alone does not reach outside the project.
    let (app, _, _) = permission_run_with(
        &cc.bin,
        settings,
        vec![touch_outside()],
        &dirs.project(),
        async |app: &App| {
            let (_, m) = first_question(app).await;
            final_state(&app.press(&m, &alice(), "Allow once").await);
        },
    )
    .await;
    assert_eq!(asked(&app), 1, "a new session was not asked");
}

claude_code_matrix!(claude_code_a_rule_alone_is_asked_again_outside_the_project);
/// What askrelay offered before: a hook that sends back only the rule. Claude Code runs the
/// call, and asks again for the same call in the same session.
async fn claude_code_a_rule_alone_is_asked_again_outside_the_project(cc: Cc) {
    let dirs = Layout::new();
    let rule_only = json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
        "decision": {"behavior": "allow", "updatedPermissions": [dirs.suggested()[0]]}}});
    let settings = permission_hook(format!(
        "tee -a {} >/dev/null; echo {}",
        dirs.log().display(),
        shell_words::quote(&rule_only.to_string())
    ));
    let (_app, llm, result) = permission_run_with(
        &cc.bin,
        settings,
        vec![touch_outside(), touch_outside()],
        &dirs.project(),
        async |_: &App| {},
    )
    .await;
    let events = dirs.events(&cc);
    assert_eq!(events.len(), 2, "{result}");
    assert_eq!(llm.tool_results().len(), 2, "{result}");
    assert!(dirs.outside().join("a.txt").exists());
}
