//! Reminders and escalation in Slack: a reminder is a reply in the question's thread that
//! mentions the route's people, each taken once across a restart; an escalation step mentions
//! its people in the thread and sends a copy of the question to DMs (`conversations.open`),
//! whose press settles it everywhere. Deadlines are a second, and every test waits on the
//! post that follows them.

use super::*;
use askrelay::config::SlackEscalationStep;

const ONCALL: &str = "U0ONCALL1";
const ONCALL_GROUP: &str = "S0ONCALL1";
const LEAD: &str = "U0LEAD001";

fn lead() -> Person {
    Person::new(LEAD, "lead")
}

/// The replies posted (`chat.postMessage` answered ok) in the thread of `m`, once there are `n`.
async fn replies_to(t: &Slack, m: &Value, n: usize) -> Vec<Recorded> {
    let ts = ts(m).to_owned();
    within(
        &format!("{n} replies in the question's thread"),
        t.s.wait_for_requests(n, "chat.postMessage", move |r| {
            r.ok() && r.param_str("thread_ts") == Some(ts.as_str())
        }),
    )
    .await
}

/// The text of a posted message's first section.
fn section_text(r: &Recorded) -> String {
    r.params["blocks"][0]["text"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_reminder_replies_in_the_thread_with_the_mentions_once_across_a_restart() {
    let mut t = Slack::start_with(|c| {
        c.slack.mention_user_ids = vec![ONCALL.into()];
        c.slack.mention_usergroup_ids = vec![ONCALL_GROUP.into()];
        c.slack.remind_after_secs = Some(1);
        c.slack.remind_every_secs = Some(1);
        c.slack.remind_max = Some(2);
    })
    .await;
    let (c, _) = t.ask("remind", &yes_no("q")).await;
    let m = t.message(0).await;
    let first = replies_to(&t, &m, 1).await.remove(0);
    let text = section_text(&first);
    assert!(
        text.starts_with("*Reminder:* this question has waited"),
        "{text}"
    );
    assert!(
        text.ends_with(&format!("<@{ONCALL}> <!subteam^{ONCALL_GROUP}>")),
        "{text}"
    );
    assert_eq!(first.param_str("channel"), Some(DEFAULT_CHANNEL));
    assert!(first.param_str("client_msg_id").is_some(), "{first:?}");
    // A note, never a new question: no controls, and the channel shows the question alone.
    assert!(elements(&first.params).is_empty(), "{first:?}");
    assert_eq!(t.s.messages(DEFAULT_CHANNEL).len(), 1);

    // A restart: the stored timer says reminder 1 is taken, so only reminder 2 comes.
    drop(c);
    t.app.stop().await;
    t.app.restart().await;
    within("a new Socket Mode connection", t.s.wait_connected(2)).await;
    let replies = replies_to(&t, &m, 2).await;
    let req = t.app.store().by_id("remind").await.unwrap().unwrap();
    let notes: Vec<String> = t.app.store().posts(&[req.key]).await.unwrap()[&req.key]
        .iter()
        .filter(|p| p.answerer == "slack" && p.is_note())
        .map(|p| p.slot.to_string())
        .collect();
    assert_eq!(notes, ["note:r1", "note:r2"]);
    // The timer is done: nothing more is due, so these two are all there will be.
    assert!(t.app.store().timers("slack").await.unwrap().is_empty());
    assert_eq!(replies.len(), 2, "each reminder posted once: {replies:?}");
    assert_ne!(
        replies[0].param_str("client_msg_id"),
        replies[1].param_str("client_msg_id")
    );
    assert_eq!(t.s.thread(DEFAULT_CHANNEL, ts(&m)).len(), 2);
    // Reminder 2 belongs to a request from before the restart: its thread was searched for it
    // first (a crash could have left it posted and unrecorded).
    let searched: Vec<_> =
        t.s.calls("conversations.replies")
            .into_iter()
            .filter(|r| r.at > replies[0].at && r.at < replies[1].at)
            .collect();
    assert_eq!(searched.len(), 1, "{searched:?}");
    assert_eq!(searched[0].param_str("ts"), Some(ts(&m)));
}

#[tokio::test]
async fn an_escalation_sends_a_dm_copy_whose_press_settles_and_edits_every_copy() {
    let t = Slack::start_with(|c| {
        c.slack.allowed_user_ids = vec![alice().id];
        c.slack.escalate = vec![SlackEscalationStep {
            after_secs: 1,
            mention_usergroup_ids: vec![ONCALL_GROUP.into()],
            dm_user_ids: vec![LEAD.into()],
            ..Default::default()
        }];
    })
    .await;
    let (mut c, _) = t.ask("esc", &yes_no("q")).await;
    let m = t.message(0).await;
    // The step's mentions, in the question's thread.
    let note = replies_to(&t, &m, 1).await.remove(0);
    let text = section_text(&note);
    assert!(text.starts_with("*Escalated:* no answer after"), "{text}");
    assert!(
        text.ends_with(&format!("<!subteam^{ONCALL_GROUP}>")),
        "{text}"
    );
    // The DM: opened with conversations.open, then a copy with the same controls.
    let opened = within(
        "conversations.open",
        t.s.wait_for_request("conversations.open", |r| r.ok()),
    )
    .await;
    assert_eq!(opened.param_str("users"), Some(LEAD));
    let dm = t.s.dm_channel(LEAD).unwrap();
    let sent = within(
        "the DM copy",
        t.s.wait_for_request("chat.postMessage", |r| {
            r.ok() && r.reply["channel"].as_str() == Some(dm.as_str())
        }),
    )
    .await;
    assert!(sent.param_str("thread_ts").is_none());
    let copies = t.s.messages(&dm);
    assert_eq!(copies.len(), 1, "one copy per open question");
    let copy = copies[0].clone();
    let lead_line = copy["blocks"][0]["text"]["text"].as_str().unwrap();
    assert!(
        lead_line.starts_with("*Escalated:* no answer after")
            && lead_line.contains(&format!(
                "https://slack.com/archives/{DEFAULT_CHANNEL}/p{}",
                ts(&m).replace('.', "")
            )),
        "{lead_line}"
    );
    let ids = |m: &Value| -> Vec<Value> {
        elements(m)
            .into_iter()
            .map(|(_, e)| e["action_id"].clone())
            .collect()
    };
    assert_eq!(ids(&copy), ids(&m), "the same controls");

    // The lead, on no allowlist, answers from the DM once the step has begun.
    t.s.click(&lead(), &dm, ts(&copy), button(&copy, "No, keep them"))
        .await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
    // Both copies end up without controls, saying who answered.
    let channel_edit = t.outcome_of(&m).await;
    assert!(
        channel_edit.params.to_string().contains("No, keep them"),
        "{channel_edit:?}"
    );
    let copy_ts = ts(&copy).to_owned();
    let dm_edit = within(
        "the DM copy's outcome",
        t.s.wait_for_request("chat.update", move |r| {
            r.ok()
                && r.param_str("ts") == Some(copy_ts.as_str())
                && !r.params["blocks"]
                    .as_array()
                    .is_some_and(|b| b.iter().any(|b| b["type"] == "actions"))
        }),
    )
    .await;
    assert!(
        dm_edit
            .params
            .to_string()
            .contains(&format!("by <@{LEAD}> in Slack")),
        "{dm_edit:?}"
    );
    assert!(elements(&t.s.message(&dm, ts(&copy)).unwrap()).is_empty());
    assert!(elements(&t.now(&m)).is_empty());
    assert_eq!(t.s.calls("conversations.open").len(), 1);
    assert_eq!(t.s.messages(&dm).len(), 1, "one DM copy, never a second");
}

#[tokio::test]
async fn before_the_step_the_dm_user_may_not_answer_and_bob_never_may() {
    let t = Slack::start_with(|c| {
        c.slack.allowed_user_ids = vec![alice().id];
        c.slack.escalate = vec![SlackEscalationStep {
            after_secs: 3600,
            dm_user_ids: vec![LEAD.into()],
            ..Default::default()
        }];
    })
    .await;
    let (_c, _) = t.ask("early", &yes_no("q")).await;
    let m = t.message(0).await;
    t.press(&lead(), &m, "No, keep them").await;
    t.told(LEAD, "not allowed to answer").await;
    t.press(&bob(), &m, "No, keep them").await;
    t.told(&bob().id, "not allowed to answer").await;
    let req = t.app.store().by_id("early").await.unwrap().unwrap();
    assert_eq!(req.status, askrelay::domain::Status::Pending);
    // The step's timer is stored, due an hour after the ask.
    let timers = t.app.store().timers("slack").await.unwrap();
    assert_eq!(timers.len(), 1, "{timers:?}");
    assert_eq!(timers[0].name, "escalate");
    assert_eq!(timers[0].due_at_ms, Some(req.created_at_ms + 3_600_000));
}

#[tokio::test]
async fn a_crash_after_a_dm_copy_is_posted_posts_it_again_without_a_duplicate() {
    let s = SlackStandIn::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("askrelay.toml");
    std::fs::write(
        &config,
        format!(
            "[slack]\nallowed_user_ids = [\"{}\"]\n\
             [[slack.escalate]]\nafter_secs = 1\ndm_user_ids = [\"{LEAD}\"]\n",
            alice().id
        ),
    )
    .unwrap();
    let bin = bin_on(&s).env("ASKRELAY_CONFIG", config.display());
    let crashing = serve_on(&bin, &s, Some("posted_extra")).await;
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line("crashdm", &yes_no("q")))
        .await
        .unwrap();
    // Slack has the DM copy; the daemon dies before recording its ts.
    aborted(crashing, "posted_extra").await;
    let dm = s.dm_channel(LEAD).unwrap();
    assert_eq!(s.messages(&dm).len(), 1);
    let _daemon = bin.serve().await.drain();
    let mut c2 = Client::connect(&bin.socket()).await.unwrap();
    c2.send_json(&ask_line("crashdm", &yes_no("q")))
        .await
        .unwrap();
    expect_event(&mut c2, "accepted").await;
    drop(c);
    // Found in the DM's history by the nonce in its metadata: one copy, and the step is not
    // taken again.
    within(
        "the DM's history searched",
        s.wait_for_requests(1, "conversations.history", |r| {
            r.ok() && r.param_str("channel") == Some(dm.as_str())
        }),
    )
    .await;
    let dm_posts: Vec<_> = s
        .calls("chat.postMessage")
        .into_iter()
        .filter(|r| r.param_str("channel") == Some(dm.as_str()))
        .collect();
    assert_eq!(dm_posts.len(), 1, "never posted a second time");
    let copies = s.messages(&dm);
    assert_eq!(copies.len(), 1, "exactly one DM copy, never a duplicate");
    assert_eq!(s.messages(DEFAULT_CHANNEL).len(), 1);
    s.click(
        &lead(),
        &dm,
        ts(&copies[0]),
        button(&copies[0], "No, keep them"),
    )
    .await;
    let ev = expect_event(&mut c2, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
}

#[tokio::test]
async fn a_reminder_of_a_request_its_agent_went_on_without_says_it_is_not_needed() {
    let t = Slack::start_with(|c| {
        c.slack.mention_user_ids = vec![ONCALL.into()];
        c.slack.remind_after_secs = Some(1);
        c.slack.remind_max = Some(1);
    })
    .await;
    let mut line = ask_line("gone", &yes_no("q"));
    line["scope"] = serde_json::json!({"session": "s9", "call": "k9"});
    let mut c = t.app.client().await;
    c.send_json(&line).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let m = t.message(0).await;
    let reminder = replies_to(&t, &m, 1).await.remove(0);
    let reminder_ts = reminder.reply["ts"].as_str().unwrap().to_owned();
    let reply = t
        .app
        .client()
        .await
        .call_json(
            &serde_json::json!({"op": "withdraw", "reason": "answered_in_terminal",
                           "session": "s9", "call": "k9", "agent": "claude-code",
                           "event": "PostToolUse"}),
        )
        .await
        .unwrap();
    assert_eq!(reply["ended"], 1, "{reply}");
    expect_event(&mut c, "error").await;
    // The reminder no longer calls anyone: it says so, mentioning nobody.
    let edit = within(
        "the reminder's edit",
        t.s.wait_for_request("chat.update", move |r| {
            r.ok() && r.param_str("ts") == Some(reminder_ts.as_str())
        }),
    )
    .await;
    let text = section_text(&edit);
    assert!(text.starts_with("*No longer needed:*"), "{text}");
    assert!(!text.contains("<@"), "{text}");
    t.outcome_of(&m).await;
}

/// A step with `channel_id` posts a linked copy of each open question in that channel, with the
/// same controls; a press there settles it under the route's allowlists, and every copy is
/// edited to the outcome.
#[tokio::test]
async fn an_escalation_step_copies_the_question_to_its_channel_where_a_press_settles() {
    const ESCALATED: &str = "C0ESCALAT1";
    let t = Slack::start_with(|c| {
        c.slack.allowed_user_ids = vec![alice().id];
        c.slack.escalate = vec![SlackEscalationStep {
            after_secs: 1,
            channel_id: Some(ESCALATED.into()),
            ..Default::default()
        }];
    })
    .await;
    t.s.add_channel(ESCALATED, "escalations");
    let (mut c, _) = t.ask("esc-channel", &yes_no("q")).await;
    let m = t.message(0).await;
    let sent = within(
        "the copy in the step's channel",
        t.s.wait_for_request("chat.postMessage", |r| {
            r.ok() && r.param_str("channel") == Some(ESCALATED)
        }),
    )
    .await;
    assert!(sent.param_str("thread_ts").is_none());
    let copy = t.s.messages(ESCALATED).remove(0);
    let lead_line = copy["blocks"][0]["text"]["text"].as_str().unwrap();
    assert!(
        lead_line.starts_with("*Escalated:* no answer after")
            && lead_line.contains(&ts(&m).replace('.', "")),
        "a link to the question: {lead_line}"
    );
    // Bob is on no allowlist: refused there too.
    t.s.click(&bob(), ESCALATED, ts(&copy), button(&copy, "No, keep them"))
        .await;
    t.told("U0BOB0001", "You are not allowed to answer").await;
    t.s.click(
        &alice(),
        ESCALATED,
        ts(&copy),
        button(&copy, "No, keep them"),
    )
    .await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
    t.outcome_of(&m).await;
    let copy_ts = ts(&copy).to_owned();
    within(
        "the copy's outcome",
        t.s.wait_for_request("chat.update", move |r| {
            r.ok()
                && r.param_str("ts") == Some(copy_ts.as_str())
                && !r.params["blocks"]
                    .as_array()
                    .is_some_and(|b| b.iter().any(|b| b["type"] == "actions"))
        }),
    )
    .await;
    t.s.assert_no_violations();
}

/// `dm_user_ids` on a Slack route: a copy of each question in those users' DMs from the start,
/// linked to the question; they may answer there (and only they, beside the allowlists), and
/// every copy is edited to the outcome.
#[tokio::test]
async fn a_routes_dm_users_get_a_copy_from_the_start_and_may_answer_there() {
    let t = Slack::start_with(|c| {
        c.slack.allowed_user_ids = vec![alice().id];
        c.slack.dm_user_ids = vec![LEAD.into()];
    })
    .await;
    let (mut c, accepted) = t.ask("dm-start", &yes_no("q")).await;
    let m = t.message(0).await;
    let dm = within("the DM opened", async {
        loop {
            if let Some(dm) = t.s.dm_channel(LEAD) {
                return dm;
            }
            t.s.subscribe().changed().await.unwrap();
        }
    })
    .await;
    let copy = within(
        "the DM copy",
        t.s.wait_for_request("chat.postMessage", |r| {
            r.ok() && r.reply["channel"].as_str() == Some(dm.as_str())
        }),
    )
    .await;
    assert!(copy.param_str("thread_ts").is_none());
    let copy = t.s.messages(&dm).remove(0);
    let lead_line = copy["blocks"][0]["text"]["text"].as_str().unwrap();
    assert!(
        lead_line.starts_with("*Asked of you directly*")
            && lead_line.contains(&ts(&m).replace('.', "")),
        "{lead_line} ({accepted})"
    );
    // Bob is neither allowed nor a DM user.
    t.press(&bob(), &m, "No, keep them").await;
    t.told("U0BOB0001", "You are not allowed to answer").await;
    t.s.click(&lead(), &dm, ts(&copy), button(&copy, "No, keep them"))
        .await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
    let update = t.outcome_of(&m).await.params.to_string();
    assert!(update.contains(&format!("<@{LEAD}>")), "{update}");
    t.s.assert_no_violations();
}
