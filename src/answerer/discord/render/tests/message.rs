//! The question's message (embed, components, mentions), its settled and ended edits and its
//! modals, each checked against every Discord limit.

use super::*;

/// A front door's "Deny" says "use Other… to tell Claude why": only where there is an
/// Other… button. A quorum route without one shows the rest of the hint, in the embed and
/// in a select menu alike.
#[test]
fn the_other_hint_shows_only_with_an_other_button() {
    let q = question(
        None,
        vec![
            opt("Allow", Some("Let Claude Code use Bash as shown")),
            opt("Deny", Some("Block it; use Other… to tell Claude why")),
            opt("Note", Some("Other… only")),
        ],
        false,
    );
    let s = scope();
    let with = ctx(&s);
    let mut without = ctx(&s);
    without.offers_custom = false;
    let shown = |c: &RenderContext| {
        (
            json(&question_embed(&q, c)).to_string(),
            json(&components(&q, c)).to_string(),
        )
    };
    let (embed, _) = shown(&with);
    assert!(embed.contains("use Other… to tell Claude why"), "{embed}");
    let (embed, rows) = shown(&without);
    assert!(!embed.contains("Other…"), "{embed}");
    assert!(!rows.contains("Other…"), "{rows}");
    assert!(embed.contains("Block it"), "{embed}");
    assert!(
        embed.contains("Let Claude Code use Bash as shown"),
        "{embed}"
    );
    // As a select menu (more options than a row of buttons holds).
    let mut many = q.clone();
    for i in 0..5 {
        many.options.push(opt(&format!("extra {i}"), None));
    }
    let rows = json(&components(&many, &without)).to_string();
    assert!(rows.contains("Block it"), "{rows}");
    assert!(!rows.contains("Other…"), "{rows}");
}

#[test]
fn option_fields_cannot_pose_as_outcome_fields() {
    let s = scope();
    let q = question(
        Some("<@1>"),
        vec![opt("Answered by", Some("<@999> @everyone"))],
        false,
    );
    let body = json(&question_message(&q, &ctx(&s)));
    let e = check_limits(&body, &q);
    assert_eq!(shown(e["title"].as_str().unwrap()), "<@1>");
    assert_eq!(e["fields"][0]["name"], "1\\. Answered by");
    assert_eq!(
        shown(e["fields"][0]["value"].as_str().unwrap()),
        "<@999> @everyone"
    );
    assert_eq!(markdown_model::live_in(&body), vec![]);
    let answered = AnsweredView {
        by: "alice (uid 1000)".into(),
        place: Some("in the terminal"),
        note: Some("<@999> is me\nAnswered by: admin".into()),
        labels: vec!["Answered by".into()],
        custom: None,
        at_unix: 1,
        terms: None,
    };
    let edit = json(&settled(&q, &ctx(&s), &answered).edit());
    assert_eq!(
        edit["embeds"][0]["fields"][1]["name"],
        "Answered in the terminal by"
    );
    let by = edit["embeds"][0]["fields"][1]["value"].as_str().unwrap();
    assert_eq!(
        shown(by),
        "alice (uid 1000)\nnote: “<@999> is me Answered by: admin”"
    );
}

#[test]
fn two_buttons_with_recommended_primary() {
    let s = scope();
    let q = question(
        Some("Database"),
        vec![
            opt(
                &format!("Postgres{RECOMMENDED_SUFFIX}"),
                Some("Solid and boring"),
            ),
            opt("SQLite", None),
        ],
        false,
    );
    let body = json(&question_message(&q, &ctx(&s)));
    let e = check_limits(&body, &q);
    assert_eq!(e["title"], "Database");
    assert_eq!(e["description"], "Which database should we use\\?");
    assert!(!e["description"].as_str().unwrap().contains("Question 1"));
    let footer = e["footer"]["text"].as_str().unwrap();
    assert_eq!(footer, "request abc · agent x · project=p session=s");
    // Only the described option gets a field.
    assert_eq!(e["fields"].as_array().unwrap().len(), 1);
    assert_eq!(
        shown(e["fields"][0]["name"].as_str().unwrap()),
        "1. Postgres (Recommended)"
    );
    assert_eq!(e["fields"][0]["value"], "Solid and boring");

    let rows = body["components"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let buttons = rows[0]["components"].as_array().unwrap();
    assert_eq!(buttons.len(), 2);
    assert_eq!(buttons[0]["label"], "Postgres (Recommended)");
    assert_eq!(buttons[0]["style"], 1);
    assert_eq!(buttons[1]["label"], "SQLite");
    assert_eq!(buttons[1]["style"], 2);
    let other = rows[1]["components"].as_array().unwrap();
    assert_eq!(other.len(), 1);
    assert_eq!(other[0]["label"], "Other…");
    assert_eq!(other[0]["style"], 2);
    assert_eq!(
        actions(&body, &q),
        vec![Action::Choose(0), Action::Choose(1), Action::Other]
    );
    // No mentions configured: no content, and nothing may be pinged.
    assert!(body.get("content").is_none());
    assert_eq!(body["allowed_mentions"]["parse"], serde_json::json!([]));
    assert_eq!(body["allowed_mentions"]["users"], serde_json::json!([]));
    assert_eq!(body["allowed_mentions"]["roles"], serde_json::json!([]));
}

#[test]
fn eight_options_make_a_select() {
    let s = scope();
    let options = (0..8)
        .map(|i| opt(&format!("Option {i}"), Some(&format!("About {i}"))))
        .collect();
    let q = question(None, options, false);
    let body = json(&question_message(&q, &ctx(&s)));
    let e = check_limits(&body, &q);
    assert_eq!(e["title"], "Question");
    assert_eq!(e["fields"].as_array().unwrap().len(), 8);
    let rows = body["components"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let menu = &rows[0]["components"][0];
    assert_eq!(menu["type"], 3);
    assert_eq!(menu["min_values"], 1);
    assert_eq!(menu["max_values"], 1);
    let opts = menu["options"].as_array().unwrap();
    assert_eq!(opts.len(), 8);
    assert_eq!(opts[3]["label"], "Option 3");
    assert_eq!(opts[3]["value"], "3");
    assert_eq!(opts[3]["description"], "About 3");
    assert_eq!(rows[1]["components"][0]["label"], "Other…");
    assert_eq!(actions(&body, &q), vec![Action::SelectOne, Action::Other]);
}

#[test]
fn five_options_are_still_buttons() {
    let s = scope();
    let options = (0..5).map(|i| opt(&format!("O{i}"), None)).collect();
    let q = question(None, options, false);
    let body = json(&question_message(&q, &ctx(&s)));
    check_limits(&body, &q);
    assert_eq!(
        body["components"][0]["components"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    assert!(body["embeds"][0].get("fields").is_none());
}

#[test]
fn multi_select() {
    let s = scope();
    let options = (0..3).map(|i| opt(&format!("O{i}"), None)).collect();
    let q = question(Some("Pick"), options, true);
    let body = json(&question_message(&q, &ctx(&s)));
    check_limits(&body, &q);
    let rows = body["components"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let menu = &rows[0]["components"][0];
    assert_eq!(menu["type"], 3);
    assert_eq!(menu["min_values"], 0);
    assert_eq!(menu["max_values"], 3);
    let buttons = rows[1]["components"].as_array().unwrap();
    assert_eq!(buttons[0]["label"], "Submit");
    assert_eq!(buttons[0]["style"], 1);
    assert_eq!(buttons[1]["label"], "Submit with note…");
    assert_eq!(buttons[1]["style"], 2);
    assert_eq!(
        actions(&body, &q),
        vec![Action::Draft, Action::Submit, Action::SubmitWithNote]
    );
}

#[test]
fn free_text() {
    let s = Scope::new();
    let q = question(Some("Name"), Vec::new(), false);
    let mut c = ctx(&s);
    c.agent = None;
    let body = json(&question_message(&q, &c));
    let e = check_limits(&body, &q);
    assert_eq!(e["footer"]["text"], "request abc");
    let rows = body["components"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    let b = &rows[0]["components"][0];
    assert_eq!(b["label"], "Answer…");
    assert_eq!(b["style"], 1);
    assert_eq!(actions(&body, &q), vec![Action::Answer]);
}

#[test]
fn numbering_with_several_questions() {
    let s = scope();
    let q = question(Some("Second"), vec![opt("A", None)], false);
    let mut c = ctx(&s);
    c.question_index = 1;
    c.question_count = 2;
    let body = json(&question_message(&q, &c));
    let e = check_limits(&body, &q);
    let d = e["description"].as_str().unwrap();
    assert!(d.starts_with("**Question 2 of 2**\n"), "{d}");
    assert_eq!(shown(d), "Question 2 of 2\nWhich database should we use?");
    let ids = check_custom_ids(&body, &q);
    assert!(ids.iter().all(|id| id.question == 1));
}

#[test]
fn long_labels_are_cut_and_never_in_custom_ids() {
    let s = scope();
    let long = |c: char| c.to_string().repeat(150);
    // Buttons.
    let q = question(
        None,
        vec![opt(&long('a'), None), opt(&long('b'), None)],
        false,
    );
    let body = json(&question_message(&q, &ctx(&s)));
    check_limits(&body, &q);
    for b in body["components"][0]["components"].as_array().unwrap() {
        let label = b["label"].as_str().unwrap();
        assert_eq!(label.chars().count(), BUTTON_LABEL_MAX);
        assert!(label.ends_with('…'));
    }
    // Select menu.
    let options = (0..8)
        .map(|i| opt(&format!("{i}{}", long('z')), Some(&long('d'))))
        .collect();
    let q = question(None, options, false);
    let body = json(&question_message(&q, &ctx(&s)));
    check_limits(&body, &q);
    for o in body["components"][0]["components"][0]["options"]
        .as_array()
        .unwrap()
    {
        let label = o["label"].as_str().unwrap();
        assert_eq!(label.chars().count(), SELECT_OPTION_TEXT_MAX);
        assert!(label.ends_with('…'));
        assert!(o["description"].as_str().unwrap().ends_with('…'));
    }
    // The components never carry a full label; the embed field names may (up to 256).
    let text = body["components"].to_string();
    assert!(!text.contains(&"z".repeat(SELECT_OPTION_TEXT_MAX)));
}

fn worst_case(multi: bool, options: usize) -> Question {
    Question {
        id: "q".repeat(64),
        question: "Q".repeat(4000),
        header: Some("H".repeat(80)),
        options: (0..options)
            .map(|i| {
                opt(
                    &format!("{i:02}{}", "L".repeat(198)),
                    Some(&"D".repeat(1000)),
                )
            })
            .collect(),
        multi_select: multi,
    }
}

#[test]
fn worst_case_stays_within_every_limit() {
    let mut s = Scope::new();
    for i in 0..16 {
        s.insert(format!("label{i:02}"), "v".repeat(200));
    }
    let request_id = "r".repeat(128);
    let agent = "a".repeat(64);
    let users: Vec<u64> = (1..=200).map(|i| u64::MAX - i).collect();
    let roles: Vec<u64> = (1..=200).map(|i| u64::MAX / 2 - i).collect();
    let c = RenderContext {
        token: "ffffffffffffffffffff",
        request_id: &request_id,
        question_index: 24,
        question_count: 25,
        agent: Some(&agent),
        scope: &s,
        mention_user_ids: &users,
        mention_role_ids: &roles,
        votes: &[],
        approvals: 1,
        offers_custom: true,
        grant_secs: &[],
        editable: None,
        approval: None,
        confirm_labels: &[],
        confirm_word: "approve",
    };
    let answered = AnsweredView {
        by: "b".repeat(5000),
        // The longest heading: the budget holds with it.
        place: Some("in the terminal"),
        note: Some("n".repeat(5000)),
        labels: (0..25).map(|i| format!("{i}{}", "L".repeat(199))).collect(),
        custom: Some("C".repeat(4000)),
        at_unix: i64::MIN,
        terms: None,
    };
    for (multi, n) in [(false, 25), (true, 25), (false, 5), (false, 0), (true, 1)] {
        let q = worst_case(multi, n);
        let body = json(&question_message(&q, &c));
        let e = check_limits(&body, &q);
        assert!(chars(&body["content"]) > 0);
        let d = e["description"].as_str().unwrap();
        assert!(d.contains("Question 25 of 25"));
        // The question keeps most of its text.
        assert!(d.chars().count() >= 2000, "{}", d.chars().count());
        if n == 25 {
            let fields = e["fields"].as_array().unwrap();
            assert_eq!(fields.len(), OPTION_FIELDS_MAX);
            assert_eq!(fields[OPTION_FIELDS_MAX - 1]["name"], "…and 4 more");
        }

        for edit in [
            json(&settled(&q, &c, &answered).edit()),
            json(&ended(&q, &c, "Expired", &"R".repeat(5000)).edit()),
        ] {
            let e2 = check_limits(&edit, &q);
            assert_eq!(edit["components"], serde_json::json!([]));
            assert_eq!(e2["title"], e["title"]);
            assert_eq!(e2["description"], e["description"]);
            assert_eq!(e2["footer"], e["footer"]);
        }
        for kind in [Form::Other, Form::Answer, Form::Note] {
            check_modal(&json(&modal(&q, &c, kind)));
        }
    }
}

#[test]
fn mentions_and_allowed_mentions() {
    let s = scope();
    let q = question(None, vec![opt("A", None)], false);
    let mut c = ctx(&s);
    c.mention_user_ids = &[111, 222];
    c.mention_role_ids = &[333];
    let body = json(&question_message(&q, &c));
    check_limits(&body, &q);
    assert_eq!(body["content"], "<@&333> <@111> <@222>");
    let am = &body["allowed_mentions"];
    assert_eq!(am["parse"], serde_json::json!([]));
    let ids = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| match x {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect()
    };
    assert_eq!(ids(&am["users"]), vec!["111", "222"]);
    assert_eq!(ids(&am["roles"]), vec!["333"]);

    // Too many mentions for 2000 characters: the content is cut at a whole mention, and only
    // the mentioned ones are allowed.
    let users: Vec<u64> = (1..=500).map(|i| 10_000_000_000_000_000 + i).collect();
    c.mention_user_ids = &users;
    c.mention_role_ids = &[0];
    let body = json(&question_message(&q, &c));
    let content = body["content"].as_str().unwrap();
    assert!(content.chars().count() <= CONTENT_MAX);
    let allowed = ids(&body["allowed_mentions"]["users"]);
    assert_eq!(content.split(' ').count(), allowed.len());
    for u in &allowed {
        assert!(content.contains(&format!("<@{u}>")));
    }
    assert!(ids(&body["allowed_mentions"]["roles"]).is_empty());
}

#[test]
fn settled_and_ended_edits() {
    let s = scope();
    let q = question(
        Some("Database"),
        vec![opt("Postgres", Some("Solid")), opt("SQLite", None)],
        true,
    );
    let c = ctx(&s);
    let original = json(&question_message(&q, &c));
    let answered = AnsweredView {
        by: "<@123>".to_owned(),
        place: None,
        note: None,
        labels: vec!["Postgres".to_owned(), "SQLite".to_owned()],
        custom: Some("both, please".to_owned()),
        at_unix: 1_700_000_000,
        terms: None,
    };
    let edit = json(&settled(&q, &c, &answered).edit());
    assert!(serde_json::to_string(&edit)
        .unwrap()
        .contains("\"components\":[]"));
    let e = check_limits(&edit, &q);
    assert_eq!(e["title"], original["embeds"][0]["title"]);
    assert_eq!(e["description"], original["embeds"][0]["description"]);
    assert_eq!(e["footer"], original["embeds"][0]["footer"]);
    let fields = e["fields"].as_array().unwrap();
    let value = |name: &str| {
        let f = fields.iter().find(|f| f["name"] == name).unwrap();
        f["value"].as_str().unwrap().to_owned()
    };
    assert_eq!(value("Answered by"), "<@123>");
    assert_eq!(
        value("Answer"),
        "Postgres\nSQLite\n**Note:** both\\, please"
    );
    assert_eq!(
        shown(&value("Answer")),
        "Postgres\nSQLite\nNote: both, please"
    );
    assert_eq!(value("Answered at"), "<t:1700000000:f>");
    assert!(edit.get("content").is_none());

    let edit = json(&ended(&q, &c, "Cancelled", "the agent went away").edit());
    assert!(serde_json::to_string(&edit)
        .unwrap()
        .contains("\"components\":[]"));
    let e = check_limits(&edit, &q);
    let text = e.to_string();
    assert!(text.contains("Cancelled"));
    assert!(text.contains("the agent went away"));
    assert_eq!(e["description"], original["embeds"][0]["description"]);

    // Withdrawn: the status says where it was settled, the reason what told; no buttons.
    use crate::domain::request::WithdrawReason;
    let err = crate::domain::AskError::aborted(
        "the request was cancelled: withdrawn: answered in the terminal (PostToolUse)",
    );
    let edit = json(&withdrawn(&q, &c, WithdrawReason::AnsweredInTerminal, &err).edit());
    assert_eq!(edit["components"], serde_json::json!([]));
    let e = check_limits(&edit, &q);
    let fields = e["fields"].as_array().unwrap();
    let value = |name: &str| fields.iter().find(|f| f["name"] == name).unwrap()["value"].clone();
    assert_eq!(value("Status"), "Answered in the terminal");
    assert_eq!(
        shown(value("Reason").as_str().unwrap()),
        "withdrawn: answered in the terminal (PostToolUse)"
    );
    // A reminder is edited to its text alone: no embed, no mention, no button.
    let note = json(&withdrawn_note(WithdrawReason::AgentMovedOn).edit());
    assert_eq!(
        note["content"],
        "**The agent moved on:** this question needs no answer any more."
    );
    assert!(note.get("embeds").is_none(), "{note}");
    assert_eq!(note["allowed_mentions"]["parse"], serde_json::json!([]));
    assert_eq!(note["components"], serde_json::json!([]));
}

#[test]
fn modals() {
    let s = scope();
    let mut c = ctx(&s);
    c.question_index = 3;
    let q = question(Some(&"T".repeat(80)), vec![opt("A", None)], false);
    for form in [Form::Other, Form::Answer, Form::Note] {
        let m = json(&modal(&q, &c, form));
        check_modal(&m);
        let id = ModalId::parse(m["custom_id"].as_str().unwrap()).unwrap();
        assert_eq!(id, ModalId::new("0123456789abcdef0123", 3, form));
        assert_eq!(m["title"].as_str().unwrap().chars().count(), 45);
        assert!(m["title"].as_str().unwrap().ends_with('…'));
    }
    let q = question(None, Vec::new(), false);
    let m = json(&modal(&q, &c, Form::Answer));
    check_modal(&m);
    assert_eq!(m["title"], "Your answer");
    assert_eq!(m["components"][0]["components"][0]["label"], "Your answer");
    let m = json(&modal(&q, &c, Form::Note));
    assert_eq!(m["components"][0]["components"][0]["label"], "Note");
}

#[test]
fn a_confirm_label_is_named_with_its_word_and_its_modal_fits() {
    let sc = scope();
    let labels = vec!["Allow".to_owned(), "Nuke *all*".to_owned()];
    let long = "w".repeat(64);
    let q = question(
        Some("Approve"),
        vec![
            opt("Allow", None),
            opt("Deny", None),
            opt("Nuke *all*", None),
        ],
        false,
    );
    let c = RenderContext {
        confirm_labels: &labels,
        confirm_word: "prod-eu",
        ..ctx(&sc)
    };
    let body = json(&question_embed(&q, &c));
    let d = body["description"].as_str().unwrap();
    assert!(
        d.starts_with(
            "**Typed confirmation:** Allow, Nuke \\*all\\* need typing `prod-eu` to confirm.\n"
        ),
        "{d}"
    );
    assert!(!json(&question_embed(&q, &ctx(&sc)))["description"]
        .as_str()
        .unwrap()
        .contains("confirm"));

    let m = json(&modal(&q, &c, Form::Confirm(0)));
    assert_eq!(m["title"], "Confirm: Allow");
    assert_eq!(m["custom_id"], "ar:0123456789abcdef0123:0:mC:0");
    let input = &m["components"][0]["components"][0];
    assert_eq!(input["label"], "Type prod-eu to confirm");
    assert_eq!(input["style"], 1, "short: {input}");
    assert_eq!(input["required"], true);
    assert_eq!(input["custom_id"], TEXT_INPUT_ID);
    // A long word and a long label are cut to Discord's 45 characters.
    let lq = question(None, vec![opt(&"L".repeat(80), None)], false);
    let c = RenderContext {
        confirm_word: &long,
        ..c
    };
    let m = json(&modal(&lq, &c, Form::Confirm(0)));
    assert_eq!(chars(&m["title"]), MODAL_TITLE_MAX);
    let label = &m["components"][0]["components"][0]["label"];
    assert_eq!(chars(label), TEXT_INPUT_LABEL_MAX, "{label}");
    assert!(label.as_str().unwrap().ends_with("… to confirm"), "{label}");
    let m = json(&modal(&q, &c, Form::ConfirmDraft));
    assert_eq!(m["title"], "Confirm your selection");
    assert_eq!(m["custom_id"], "ar:0123456789abcdef0123:0:mD");
}
