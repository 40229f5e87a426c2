//! The HTTP Events API mode's forms and batches: the real binary in `slack.mode = "http"`, and
//! the stand-in delivering every press, submission and command to its endpoint over HTTP,
//! signed (`deliver_over_http`), the response being the ack. The same steps and checks as the
//! Socket Mode tests: the grant pattern's form, its pushed preview and "Save grant"
//! (`grants.rs`); the confirm word's form, whose errors come in the response (`confirm.rs`);
//! `/askrelay pending`'s "Allow selected" (`batch.rs`); Edit… (`edit.rs`).

use super::http::{in_http_mode, listen_addr, SECRET};
use super::*;
use askrelay::domain::store::Store;
use askrelay_testkit::slack::{SelectedOption, StoredView, ViewValues};
use serde_json::json;
use std::sync::Arc;

/// `askrelay serve` in the HTTP mode with `config` (its routes) on the stand-in, which delivers
/// to it; its store, opened beside it.
struct HttpSlack {
    s: SlackStandIn,
    bin: Bin,
    daemon: Served,
    store: Arc<dyn Store>,
}

impl HttpSlack {
    async fn start(config: &str) -> HttpSlack {
        let s = SlackStandIn::start().await;
        let bin = Bin::new();
        let file = bin.dir().join("askrelay.toml");
        std::fs::write(&file, config).unwrap();
        let bin = in_http_mode(bin.env("ASKRELAY_CONFIG", file.display()), &s);
        let mut daemon = bin.serve().await;
        let addr = listen_addr(&mut daemon).await;
        s.deliver_over_http(&format!("http://{addr}/slack/events"), SECRET);
        let store = store_of(&bin).await;
        HttpSlack {
            s,
            bin,
            daemon,
            store,
        }
    }

    async fn client(&self) -> Client {
        Client::connect(&self.bin.socket()).await.unwrap()
    }

    /// Asks `input` on a new connection and waits for `accepted`.
    async fn ask(&self, request_id: &str, input: &Value) -> Client {
        let mut c = self.client().await;
        c.send_json(&ask_line(request_id, input)).await.unwrap();
        expect_event(&mut c, "accepted").await;
        c
    }

    /// The `n`-th message posted in the default channel (0: the first), once it is there.
    async fn message(&self, n: usize) -> Value {
        self.s
            .wait_for_messages(DEFAULT_CHANNEL, n + 1)
            .await
            .remove(n)
    }

    /// `who` presses the button with this text on `m`, and the response is read.
    async fn press(&self, who: &Person, m: &Value, text: &str) -> Sent {
        let sent = self
            .s
            .click(who, DEFAULT_CHANNEL, ts(m), button(m, text))
            .await;
        within("the press's response", self.s.wait_ack(sent.envelope_id())).await;
        sent
    }

    /// `who` submits the modal `view` with `values`: the response's payload (Null if empty).
    async fn submit(&self, who: &Person, view: &StoredView, values: &ViewValues) -> Value {
        let sent = self.s.submit_view(who, &view.id, values).await;
        let ack = within("the form's response", self.s.wait_ack(sent.envelope_id())).await;
        ack.payload.unwrap_or(Value::Null)
    }

    /// The `chat.update` of message `m` whose blocks have no actions any more (its outcome).
    async fn outcome_of(&self, m: &Value) -> String {
        outcome_of(&self.s, m).await.params.to_string()
    }

    /// The first ephemeral message to `user` whose text has `needle`.
    async fn told(&self, user: &str, needle: &str) -> Ephemeral {
        told(&self.s, user, needle).await
    }

    async fn is_pending(&self, id: &str) -> bool {
        let req = self.store.by_id(id).await.unwrap().unwrap();
        req.answers[0].is_none()
    }

    /// Whether the audit has a row from Slack with this action and acceptance.
    async fn audited(&self, action: &str, accepted: bool) -> bool {
        let audit = self.store.audit_rows(None).await.unwrap();
        audit
            .iter()
            .any(|r| r.source == "slack" && r.action == action && r.accepted == accepted)
    }

    /// Stops the daemon: every request was signed and acked, no Socket Mode was opened, and
    /// nothing broke Slack's limits.
    async fn finish(self) {
        assert!(
            self.s.http_failures().is_empty(),
            "{:?}",
            self.s.http_failures()
        );
        assert_eq!(self.s.connections_opened(), 0, "no Socket Mode");
        self.s.assert_no_violations();
        let (status, log) = self.daemon.terminate().await;
        assert!(status.success(), "{log}");
    }
}

/// A Bash approval as the hook asks it, for `command` in session `s1`.
fn approval(command: &str) -> Value {
    json!({"questions": [{
        "id": "permission",
        "question": "Allow Bash?",
        "header": "Claude Code",
        "options": [{"label": "Allow"}, {"label": "Deny"}],
        "multiSelect": false
    }],
    "context": {"text": command, "approval": {"tool": "Bash", "command": command, "session": "s1"}}})
}

/// A route in the stand-in's channel, with `more` of its keys.
fn route(name: &str, more: &str) -> String {
    format!("[[routes]]\nname = \"{name}\"\nslack_channel_id = \"{DEFAULT_CHANNEL}\"\n{more}\n")
}

#[tokio::test]
async fn over_http_allow_matching_previews_the_pattern_and_saved_it_answers_a_matching_command() {
    let t = HttpSlack::start(&route(
        "dev",
        "grant_durations = [\"30m\", \"8h\"]\nexclude_requester = false",
    ))
    .await;
    let mut c = t.ask("p-1", &approval("cargo test -p core")).await;
    let m = t.message(0).await;
    // The form, opened with the press's trigger_id before the response, filled in.
    let sent = t.press(&alice(), &m, "Allow matching…").await;
    let open = t.s.calls("views.open");
    assert_eq!(open.len(), 1, "one form");
    assert_eq!(open[0].param_str("trigger_id"), sent.trigger_id.as_deref());
    let form = t.s.views().remove(0);
    let blocks = &form.value["blocks"];
    assert_eq!(blocks[1]["element"]["initial_value"], "cargo test -p core");
    assert_eq!(blocks[2]["element"]["initial_option"]["value"], "30m");
    let values = |pattern: &str| {
        ViewValues::new()
            .text("answer", "text", Some(pattern))
            .static_select("length", "length", Some(&SelectedOption::new("8h", "8 h")))
    };

    // A pattern the chat layer refuses: the response keeps the form open saying why.
    let kept = t.submit(&alice(), &form, &values("*")).await;
    assert_eq!(kept["response_action"], "errors", "{kept}");
    let error = kept["errors"]["answer"].as_str().unwrap_or_default();
    assert!(error.contains("must start with the command"), "{kept}");
    assert!(!t.s.view(&form.id).unwrap().closed, "the form stays open");
    assert_eq!(t.s.views().len(), 1, "no preview");

    // Taken: the preview is pushed over the form; nothing is saved yet.
    let pushed = t.submit(&alice(), &form, &values("cargo test *")).await;
    assert_eq!(pushed["response_action"], "push", "{pushed}");
    let preview = t.s.views().pop().unwrap();
    assert!(!preview.closed, "{preview:?}");
    let text = preview.value.to_string();
    assert!(
        text.contains("`cargo test *`") && text.contains("(prefix)") && text.contains("8 h"),
        "{text}"
    );
    assert_eq!(preview.value["submit"]["text"], "Save grant");
    assert!(t.is_pending("p-1").await, "shown, not saved");

    // Save grant: both views close, the request is allowed, the message says what was granted.
    let cleared = t.submit(&alice(), &preview, &ViewValues::new()).await;
    assert_eq!(cleared["response_action"], "clear", "{cleared}");
    assert!(t.s.views().iter().all(|v| v.closed));
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"])
    );
    let update = t.outcome_of(&m).await;
    assert!(
        update.contains("Granted for 8 h") && update.contains("`cargo test *`"),
        "{update}"
    );
    t.told("U0ALICE01", "Saved: the grant is live").await;
    let grants = t
        .client()
        .await
        .call_json(&json!({"op": "grants"}))
        .await
        .unwrap();
    let g = grants["grants"].as_array().cloned().unwrap_or_default();
    assert_eq!(g.len(), 1, "{grants}");
    assert_eq!(g[0]["pattern"], "cargo test *");

    // Another command the pattern covers, from the same session: answered at once, announced.
    let mut again = t.client().await;
    again
        .send_json(&ask_line("p-2", &approval("cargo test --all")))
        .await
        .unwrap();
    let ev = loop {
        let ev = recv(&mut again, "the second ask's events").await;
        if ev["event"] != "accepted" {
            break ev;
        }
    };
    assert_eq!(ev["event"], "answered", "{ev}");
    assert_eq!(ev["result"]["answers"][0]["selected"], json!(["Allow"]));
    let announced = t.message(1).await.to_string();
    assert!(announced.contains("Allowed by grant"), "{announced}");
    assert!(t.audited("draft", true).await, "the preview is audited");
    assert!(
        t.audited("forbidden", false).await,
        "the refusal is audited"
    );
    t.finish().await;
}

#[tokio::test]
async fn over_http_a_confirm_label_asks_for_the_word_and_only_the_word_settles() {
    let t = HttpSlack::start(&route(
        "danger",
        "confirm_labels = [\"Yes, delete them (Recommended)\"]\nconfirm_word = \"{scope.project}\"",
    ))
    .await;
    let mut input = yes_no("cleanup");
    input["scope"] = json!({"project": "billing"});
    let mut c = t.ask("confirm", &input).await;
    let m = t.message(0).await;
    // The press opens the form with its trigger_id, before the response, and settles nothing.
    let sent = t
        .press(&alice(), &m, "Yes, delete them (Recommended)")
        .await;
    let open = &t.s.calls("views.open")[0];
    assert!(open.ok(), "{:?}", open.reply);
    assert_eq!(open.param_str("trigger_id"), sent.trigger_id.as_deref());
    let view = t.s.views().remove(0);
    let shown = view.value.to_string();
    assert!(shown.contains("Type `billing` to confirm"), "{shown}");
    assert!(
        t.is_pending("confirm").await,
        "the press alone settles nothing"
    );

    // A wrong word: the response keeps the form open with the error under the input; nothing
    // is recorded, and the attempt is audited.
    let wrong = ViewValues::new().text("answer", "text", Some("Billing"));
    let kept = t.submit(&alice(), &view, &wrong).await;
    assert_eq!(kept["response_action"], "errors", "{kept}");
    let error = kept["errors"]["answer"].as_str().unwrap();
    assert!(error.contains("type billing exactly"), "{error}");
    assert!(!t.s.view(&view.id).unwrap().closed, "the form stays open");
    assert!(
        t.is_pending("confirm").await,
        "a wrong word settles nothing"
    );
    assert!(t.audited("forbidden", false).await);

    // The word, as the scope says it: an empty response closes the form, and it settles.
    let right = ViewValues::new().text("answer", "text", Some(" billing "));
    let closed = t.submit(&alice(), &view, &right).await;
    assert_eq!(closed, Value::Null, "the form closes");
    assert!(t.s.view(&view.id).unwrap().closed);
    let ev = expect_event(&mut c, "answered").await;
    let selected = ev["result"]["answers"][0]["selected"][0].as_str().unwrap();
    assert!(selected.starts_with("Yes, delete them"), "{ev}");
    let update = t.outcome_of(&m).await;
    assert!(update.contains("by <@U0ALICE01> in Slack"), "{update}");
    t.finish().await;
}

#[tokio::test]
async fn over_http_allow_selected_answers_two_approvals_at_once() {
    const MENU: &str = "ar:batch:menu";
    const PICK: &str = "ar:batch:pick";
    let t = HttpSlack::start(&route("dev", "")).await;
    let mut c1 = t.ask("b-1", &approval("cargo test")).await;
    let m1 = t.message(0).await;
    let mut c2 = t.ask("b-2", &approval("cargo build")).await;
    let m2 = t.message(1).await;

    // /askrelay pending: the reply is the response's body, shown to alice alone.
    let sent =
        t.s.slash_command(&alice(), DEFAULT_CHANNEL, "/askrelay", "pending")
            .await;
    let ack = within("the command's response", t.s.wait_ack(sent.envelope_id())).await;
    let payload = ack.payload.expect("the reply is in the response");
    assert_eq!(payload["response_type"], "ephemeral", "{payload}");
    let listing =
        t.s.ephemerals()
            .into_iter()
            .find(|e| e.user == "U0ALICE01" && e.via == "ack")
            .expect("the response's reply is shown");
    let text = listing.text.clone().unwrap();
    assert!(text.contains("`b-1`") && text.contains("`b-2`"), "{text}");
    let store = &t.store;
    let token = |id: &'static str| async move { store.by_id(id).await.unwrap().unwrap().token };
    let (t1, t2) = (token("b-1").await, token("b-2").await);
    let blocks = listing.blocks.clone().expect("the reply has blocks");
    let menu = blocks
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["block_id"] == MENU)
        .unwrap_or_else(|| panic!("no batch menu in {blocks}"))["accessory"]
        .clone();
    let offered: Vec<&str> = menu["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(offered, [t1.as_str(), t2.as_str()]);

    // A choice in the menu answers nothing; "Allow selected" answers both.
    let picked =
        t.s.click_ephemeral(
            &alice(),
            &listing.ts,
            Action::multi_static_select(MENU, PICK, &[&t1, &t2]),
        )
        .await;
    within("the pick's response", t.s.wait_ack(picked.envelope_id())).await;
    assert!(t.is_pending("b-1").await && t.is_pending("b-2").await);
    let pressed =
        t.s.click_ephemeral(
            &alice(),
            &listing.ts,
            Action::button("ar:batch:do", "ar:batch:allow"),
        )
        .await;
    within("the button's response", t.s.wait_ack(pressed.envelope_id())).await;
    for c in [&mut c1, &mut c2] {
        let ev = expect_event(c, "answered").await;
        assert_eq!(ev["result"]["answers"][0]["selected"], json!(["Allow"]));
    }
    for m in [&m1, &m2] {
        let update = t.outcome_of(m).await;
        assert!(
            update.contains("alice") || update.contains("U0ALICE01"),
            "{update}"
        );
    }
    let told = t
        .told("U0ALICE01", "*Allow selected*: 2 done, 0 refused.")
        .await;
    let report = told.text.unwrap();
    assert!(
        report.contains("*done* · `b-1` · allowed") && report.contains("*done* · `b-2` · allowed"),
        "{report}"
    );
    assert!(t.audited("draft", true).await, "the choice is audited");
    t.finish().await;
}

#[tokio::test]
async fn over_http_edit_opens_the_command_and_the_edited_one_reaches_the_hook() {
    let t = HttpSlack::start(&route("dev", "allow_edits = true")).await;
    // Claude Code's PreToolUse hook, asking through the daemon until it is answered.
    let event = json!({
        "session_id": "sess-7",
        "cwd": "/work/shop",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf build/", "description": "Clean the build"},
        "tool_use_id": "toolu_e1"
    })
    .to_string();
    let mut child = t
        .bin
        .cmd(&["hook", "claude-code"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut pipe, event.as_bytes())
        .await
        .unwrap();
    drop(pipe);
    let m = t.message(0).await;
    t.press(&alice(), &m, "Edit…").await;
    let view = t.s.views().remove(0);
    let input = view.value["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["block_id"] == "answer")
        .cloned()
        .unwrap();
    assert_eq!(
        input["element"]["initial_value"], "rm -rf build/",
        "{input}"
    );
    // Sent: an empty response closes the form; the message shows the edit against the ask.
    let values = ViewValues::new().text("answer", "text", Some("rm -rf build/cache"));
    let closed = t.submit(&alice(), &view, &values).await;
    assert_eq!(closed, Value::Null, "the form closes");
    let update = t.outcome_of(&m).await;
    assert!(
        update.contains("Edited, then approved")
            && update.contains("- rm -rf build/")
            && update.contains("+ rm -rf build/cache"),
        "{update}"
    );
    let out = within("the hook to exit", child.wait_with_output())
        .await
        .unwrap();
    let v: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let d = &v["hookSpecificOutput"];
    assert_eq!(d["permissionDecision"], "allow", "{v}");
    assert_eq!(
        d["updatedInput"],
        json!({"command": "rm -rf build/cache", "description": "Clean the build"}),
        "{v}"
    );
    t.finish().await;
}
