//! Batches on Slack: `/askrelay pending` offers, under its listing, the approvals its user may
//! answer in a `multi_static_select` with "Allow selected" and "Deny selected". Slack keeps the
//! choice in the person's client and sends it with the button in `state.values`; each selected
//! request is checked as a press on its own message, settled by the core, its message edited,
//! and the person told what was done and what was refused, and why.

use super::*;
use askrelay::config::Route;
use askrelay_testkit::slack::fixtures::{block_actions_on_message, button_action};
use askrelay_testkit::slack::EnvelopeType;
use serde_json::json;

const MENU: &str = "ar:batch:menu";
const PICK: &str = "ar:batch:pick";
const BUTTONS: &str = "ar:batch:do";

/// Route `ops` (scope `project=ops`) answered by alice only, and `dev` (everything else)
/// answered by anyone; both post in the default channel. Bob is an operator.
fn routes(c: &mut Config) {
    let mut ops = slack_route("ops");
    ops.matches.insert("project".into(), "ops".into());
    ops.slack_allowed_user_ids = Some(vec!["U0ALICE01".into()]);
    c.routes.push(ops);
    c.routes.push(slack_route("dev"));
    c.slack.operator_user_ids = vec!["U0BOB0001".into()];
}

/// A route named `name` that posts in Slack's default channel only.
fn slack_route(name: &str) -> Route {
    let mut r = Route::new(name, 0);
    r.channel_id = None;
    r.slack_channel_id = Some(DEFAULT_CHANNEL.into());
    r
}

/// A Bash approval as the hook asks it (its context has the approval), in `project`.
fn approval(command: &str, project: Option<&str>) -> Value {
    let mut v = json!({"questions": [{
        "id": "permission",
        "question": "Allow Bash?",
        "header": "Claude Code",
        "options": [{"label": "Allow"}, {"label": "Deny"}],
        "multiSelect": false
    }],
    "context": {"text": command, "approval": {"tool": "Bash", "command": command, "session": "s1"}}});
    if let Some(p) = project {
        v["scope"] = json!({ "project": p });
    }
    v
}

/// Asks `input` (its `scope`, if any, moved to the request line) and waits for `accepted`.
async fn ask(t: &Slack, id: &str, input: &Value) -> Client {
    let mut input = input.clone();
    let scope = input.as_object_mut().unwrap().remove("scope");
    let mut line = ask_line(id, &input);
    if let Some(scope) = scope {
        line["scope"] = scope;
    }
    let mut c = t.app.client().await;
    c.send_json(&line).await.unwrap();
    expect_event(&mut c, "accepted").await;
    c
}

async fn token(t: &Slack, id: &str) -> String {
    t.app.store().by_id(id).await.unwrap().unwrap().token
}

/// `who` runs `/askrelay pending`: the reply, as the stand-in shows the ack's payload.
pub(super) async fn pending(s: &SlackStandIn, who: &Person) -> Ephemeral {
    let sent = s
        .slash_command(who, DEFAULT_CHANNEL, "/askrelay", "pending")
        .await;
    let ack = within("the command's ack", s.wait_ack(sent.envelope_id())).await;
    let payload = ack.payload.expect("the reply is in the ack");
    assert_eq!(payload["response_type"], "ephemeral", "{payload}");
    s.ephemerals()
        .into_iter()
        .rev()
        .find(|e| e.user == who.id && e.via == "ack")
        .expect("the ack's reply is shown")
}

/// The values the reply's menu offers.
fn offered(e: &Ephemeral) -> Vec<String> {
    let blocks = e.blocks.clone().expect("the reply has blocks");
    let menu = blocks
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["block_id"] == MENU)
        .unwrap_or_else(|| panic!("no batch menu in {blocks}"))["accessory"]
        .clone();
    assert_eq!(menu["type"], "multi_static_select", "{menu}");
    menu["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap().to_owned())
        .collect()
}

/// `who` picks `values` in the reply's menu; the ack is read.
pub(super) async fn pick(s: &SlackStandIn, who: &Person, e: &Ephemeral, values: &[&str]) {
    let picked = s
        .click_ephemeral(who, &e.ts, Action::multi_static_select(MENU, PICK, values))
        .await;
    within("the pick's ack", s.wait_ack(picked.envelope_id())).await;
}

/// `who` presses `action` (`ar:batch:allow`, …) under the reply's menu; the ack is not read
/// (see [`press`]).
pub(super) async fn send_press(
    s: &SlackStandIn,
    who: &Person,
    e: &Ephemeral,
    action: &str,
) -> Sent {
    s.click_ephemeral(who, &e.ts, Action::button(BUTTONS, action))
        .await
}

/// `who` presses `action` (`ar:batch:allow`, …) under the reply's menu; the ack is read. The
/// press as the stand-in sent it.
pub(super) async fn press(s: &SlackStandIn, who: &Person, e: &Ephemeral, action: &str) -> Value {
    let pressed = send_press(s, who, e, action).await;
    within("the button's ack", s.wait_ack(pressed.envelope_id())).await;
    pressed.payload().clone()
}

/// `who` picks `values` in the reply's menu, then presses `action` (`ar:batch:allow`, …); the
/// acks are read.
async fn pick_and_press(
    s: &SlackStandIn,
    who: &Person,
    e: &Ephemeral,
    values: &[&str],
    action: &str,
) {
    pick(s, who, e, values).await;
    let pressed = press(s, who, e, action).await;
    // Slack sends the choice with the button, in state.values.
    assert_eq!(
        pressed["state"]["values"][MENU][PICK]["selected_options"]
            .as_array()
            .unwrap()
            .len(),
        values.len()
    );
}

async fn is_pending(t: &Slack, id: &str) -> bool {
    let req = t.app.store().by_id(id).await.unwrap().unwrap();
    req.answers[0].is_none()
}

#[tokio::test]
async fn allow_selected_answers_two_approvals_at_once_and_both_agents_get_their_answers() {
    let t = Slack::start_with(routes).await;
    let mut c1 = ask(&t, "b-1", &approval("cargo test", None)).await;
    let m1 = t.message(0).await;
    let mut c2 = ask(&t, "b-2", &approval("cargo build <!channel>", None)).await;
    let m2 = t.message(1).await;
    let listing = pending(&t.s, &alice()).await;
    let text = listing.text.clone().unwrap();
    assert!(text.contains("`b-1`") && text.contains("`b-2`"), "{text}");
    let (t1, t2) = (token(&t, "b-1").await, token(&t, "b-2").await);
    assert_eq!(offered(&listing), [t1.clone(), t2.clone()]);
    // Agent text in the listing's blocks is inert.
    let shown = listing.blocks.clone().unwrap().to_string();
    assert!(!shown.contains("<!channel>"), "{shown}");

    // A choice in the menu answers nothing.
    pick(&t.s, &alice(), &listing, &[&t1, &t2]).await;
    assert!(is_pending(&t, "b-1").await && is_pending(&t, "b-2").await);
    press(&t.s, &alice(), &listing, "ar:batch:allow").await;

    for c in [&mut c1, &mut c2] {
        let ev = expect_event(c, "answered").await;
        assert_eq!(ev["result"]["answers"][0]["selected"], json!(["Allow"]));
    }
    // Each message is edited as a press's would be.
    for m in [&m1, &m2] {
        let update = t.outcome_of(m).await.params.to_string();
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
    let audit = t.app.store().audit_rows(None).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|r| r.source == "slack" && r.action == "draft" && r.accepted),
        "the choice is audited: {audit:?}"
    );
    assert_eq!(
        audit
            .iter()
            .filter(|r| r.source == "slack" && r.action == "answer" && r.accepted)
            .count(),
        2,
        "{audit:?}"
    );
    assert!(
        audit.iter().any(|r| r.source == "slack"
            && r.action == "command"
            && r.accepted
            && r.detail
                .as_deref()
                .unwrap_or("")
                .contains("2 done, 0 refused")),
        "{audit:?}"
    );
    t.s.assert_no_violations();
}

/// Bob, an operator, is listed both routes' requests but may answer only `dev`'s: the menu
/// offers only that one; a selection that names `ops`'s anyway (the state is the client's to
/// send) gets it refused with why, and the other settles.
#[tokio::test]
async fn a_person_not_allowed_on_one_route_has_it_refused_with_why_and_the_other_settles() {
    let t = Slack::start_with(routes).await;
    let mut dev = ask(&t, "dev-1", &approval("cargo test", None)).await;
    let m_dev = t.message(0).await;
    let _ops = ask(&t, "ops-1", &approval("terraform apply", Some("ops"))).await;
    let listing = pending(&t.s, &bob()).await;
    let text = listing.text.clone().unwrap();
    assert!(
        text.contains("`dev-1`") && text.contains("`ops-1`"),
        "{text}"
    );
    let (t_dev, t_ops) = (token(&t, "dev-1").await, token(&t, "ops-1").await);
    assert_eq!(
        offered(&listing),
        std::slice::from_ref(&t_dev),
        "only what bob may answer"
    );

    // "Allow selected" with both in state.values, as a client could send it.
    let mut payload = block_actions_on_message(
        &bob(),
        DEFAULT_CHANNEL,
        "askrelay",
        &listing.ts,
        None,
        vec![button_action(
            BUTTONS,
            "ar:batch:allow",
            "Allow selected",
            None,
            "1.0",
        )],
        &t.s.new_trigger_id(&bob()),
        &t.s.new_response_url(&bob(), DEFAULT_CHANNEL, &listing.ts),
    );
    let option = |v: &str| json!({"text": {"type": "plain_text", "text": v}, "value": v});
    payload["state"]["values"] = json!({MENU: {PICK: {
        "type": "multi_static_select",
        "selected_options": [option(&t_ops), option(&t_dev)]
    }}});
    let sent =
        t.s.send_envelope(EnvelopeType::Interactive, payload, false)
            .await;
    within("the ack", t.s.wait_ack(&sent.envelope_id)).await;

    let ev = expect_event(&mut dev, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"], json!(["Allow"]));
    t.outcome_of(&m_dev).await;
    let told = t
        .told("U0BOB0001", "*Allow selected*: 1 done, 1 refused.")
        .await;
    let report = told.text.unwrap();
    assert!(
        report.contains("*done* · `dev-1` · allowed\n*refused* · `ops-1` · you are not allowed to answer it (the route's slack_allowed_user_ids"),
        "{report}"
    );
    assert!(is_pending(&t, "ops-1").await, "nothing settles on ops");
    let ops = t.app.store().by_id("ops-1").await.unwrap().unwrap();
    let audit = t.app.store().audit_rows(Some(ops.key)).await.unwrap();
    assert!(
        audit.iter().any(|r| r.source == "slack"
            && r.action == "denied"
            && !r.accepted
            && r.actor
                .as_deref()
                .unwrap_or("")
                .starts_with("slack:U0BOB0001")),
        "{audit:?}"
    );
    t.s.assert_no_violations();
}

#[tokio::test]
async fn deny_selected_denies_each_and_nothing_before_the_button_or_without_a_choice() {
    let t = Slack::start_with(routes).await;
    let mut c1 = ask(&t, "d-1", &approval("rm -rf build", None)).await;
    let mut c2 = ask(&t, "d-2", &approval("rm -rf target", None)).await;
    let listing = pending(&t.s, &alice()).await;
    // A button with nothing chosen answers nothing and says so.
    press(&t.s, &alice(), &listing, "ar:batch:deny").await;
    t.told("U0ALICE01", "Choose the requests in the menu first")
        .await;
    assert!(is_pending(&t, "d-1").await && is_pending(&t, "d-2").await);

    let (t1, t2) = (token(&t, "d-1").await, token(&t, "d-2").await);
    pick_and_press(&t.s, &alice(), &listing, &[&t2, &t1], "ar:batch:deny").await;
    for c in [&mut c1, &mut c2] {
        let ev = expect_event(c, "answered").await;
        assert_eq!(ev["result"]["answers"][0]["selected"], json!(["Deny"]));
    }
    let told = t
        .told("U0ALICE01", "*Deny selected*: 2 done, 0 refused.")
        .await;
    let report = told.text.unwrap();
    assert!(report.contains("`d-1` · denied"), "{report}");
    // Pressed again: both are answered already, and the reply says by whom.
    press(&t.s, &alice(), &listing, "ar:batch:deny").await;
    let again = t
        .told("U0ALICE01", "*Deny selected*: 0 done, 2 refused.")
        .await;
    assert!(
        again.text.unwrap().contains("Already answered"),
        "the late press says who answered"
    );
    t.s.assert_no_violations();
}

/// On a quorum route a batch's Allow is one vote: the message shows the count, and a second
/// person's batch settles it.
#[tokio::test]
async fn on_a_quorum_route_allow_selected_is_one_vote_shown_on_the_message() {
    let t = Slack::start_with(|c| {
        let mut r = slack_route("two");
        r.approvals = Some(2);
        c.routes.push(r);
    })
    .await;
    let mut c = ask(&t, "q-1", &approval("terraform apply", None)).await;
    let m = t.message(0).await;
    let tok = token(&t, "q-1").await;
    let listing = pending(&t.s, &alice()).await;
    pick_and_press(&t.s, &alice(), &listing, &[&tok], "ar:batch:allow").await;
    t.told(
        "U0ALICE01",
        "*done* · `q-1` · vote recorded, 1 of 2 approvals",
    )
    .await;
    let shown = t.update_with(&m, "1 of 2").await;
    assert!(
        shown.params["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == "actions"),
        "still open: {}",
        shown.params
    );
    assert!(is_pending(&t, "q-1").await);
    let listing = pending(&t.s, &bob()).await;
    pick_and_press(&t.s, &bob(), &listing, &[&tok], "ar:batch:allow").await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"], json!(["Allow"]));
    t.outcome_of(&m).await;
    t.s.assert_no_violations();
}
