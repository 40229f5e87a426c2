//! The Slack renderer's tests: every body is checked against Block Kit's limits (text lengths,
//! element and option counts, unique ids) and for live syntax in agent text; the controls per
//! kind of question; the outcome and the form.

use super::*;
use crate::answerer::discord::custom_id::{self, ModalId};
use crate::domain::answer::Settlement;
use crate::domain::model::{Approval, ContextFile, QuestionOption};
use crate::domain::request::{Actor, Answered, Via};
use crate::domain::{AskError, ErrorCode};
use proptest::prelude::*;
use serde_json::Value;

const TOKEN: &str = "0123456789abcdef0123";

fn opt(label: &str, description: Option<&str>) -> QuestionOption {
    QuestionOption {
        label: label.to_owned(),
        description: description.map(str::to_owned),
    }
}

fn q(header: Option<&str>, text: &str, options: Vec<QuestionOption>, multi: bool) -> Question {
    Question {
        id: "q1".to_owned(),
        question: text.to_owned(),
        header: header.map(str::to_owned),
        options,
        multi_select: multi,
    }
}

fn view(scope: &Scope) -> View<'_> {
    View {
        token: TOKEN,
        request_id: "req-1",
        index: 0,
        count: 1,
        agent: Some("agent-7"),
        scope,
        votes: &[],
        approvals: 1,
        offers_custom: true,
        editable: false,
        command: None,
        grant_secs: &[],
        grant_pattern: false,
    }
}

fn json<T: serde::Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap()
}

fn chars(v: &Value) -> usize {
    v.as_str().map_or(0, |s| s.chars().count())
}

/// Checks a list of blocks against Block Kit's limits, as the stand-in does.
fn assert_within_limits(blocks: &Value) {
    let blocks = blocks.as_array().expect("blocks");
    assert!(blocks.len() <= MESSAGE_BLOCKS_MAX);
    let mut block_ids = Vec::new();
    let mut action_ids = Vec::new();
    let text_of = |t: &Value, max: usize, what: &str| {
        assert!(chars(&t["text"]) >= 1, "{what}: empty text");
        assert!(
            chars(&t["text"]) <= max,
            "{what}: {} > {max}",
            chars(&t["text"])
        );
    };
    let element = |e: &Value, action_ids: &mut Vec<String>| {
        if let Some(id) = e["action_id"].as_str() {
            assert!(id.len() <= ID_MAX);
            assert!(!action_ids.contains(&id.to_owned()), "action_id {id} twice");
            action_ids.push(id.to_owned());
        }
        match e["type"].as_str().unwrap() {
            "button" => {
                text_of(&e["text"], BUTTON_TEXT_MAX, "button");
                assert!(e["value"].as_str().is_none_or(|v| v.len() <= 2000));
            }
            "static_select" | "multi_static_select" => {
                let options = e["options"].as_array().unwrap();
                assert!(!options.is_empty() && options.len() <= SELECT_OPTIONS_MAX);
                text_of(&e["placeholder"], PLACEHOLDER_MAX, "placeholder");
                for o in options {
                    text_of(&o["text"], OPTION_TEXT_MAX, "option");
                    if !o["description"].is_null() {
                        text_of(&o["description"], OPTION_TEXT_MAX, "description");
                    }
                    assert!(o["value"].as_str().unwrap().len() <= 150);
                }
            }
            other => panic!("an element askrelay does not make: {other}"),
        }
    };
    for b in blocks {
        if let Some(id) = b["block_id"].as_str() {
            assert!(id.len() <= ID_MAX);
            assert!(!block_ids.contains(&id.to_owned()), "block_id {id} twice");
            block_ids.push(id.to_owned());
        }
        match b["type"].as_str().unwrap() {
            "header" => text_of(&b["text"], HEADER_MAX, "header"),
            "section" => {
                text_of(&b["text"], SECTION_TEXT_MAX, "section");
                if !b["accessory"].is_null() {
                    element(&b["accessory"], &mut action_ids);
                }
            }
            "context" => {
                let els = b["elements"].as_array().unwrap();
                assert!(!els.is_empty() && els.len() <= CONTEXT_ELEMENTS_MAX);
                for e in els {
                    text_of(e, CONTEXT_TEXT_MAX, "context");
                }
            }
            "actions" => {
                let els = b["elements"].as_array().unwrap();
                assert!(!els.is_empty() && els.len() <= ACTIONS_ELEMENTS_MAX);
                for e in els {
                    element(e, &mut action_ids);
                }
            }
            "input" => text_of(&b["label"], INPUT_LABEL_MAX, "label"),
            other => panic!("a block askrelay does not make: {other}"),
        }
    }
}

/// Every text object in `v` (a message's blocks, a view).
fn texts(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let (Some(Value::String(t)), Some(Value::String(kind))) =
                (m.get("text"), m.get("type"))
            {
                if kind == "mrkdwn" || kind == "plain_text" {
                    out.push(t.clone());
                }
            }
            for v in m.values() {
                texts(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| texts(v, out)),
        _ => {}
    }
}

/// The live constructs of Slack's markup in `text`: anything between `<` and `>`.
fn live(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        let Some(len) = rest[start..].find('>') else {
            break;
        };
        found.push(rest[start..start + len + 1].to_owned());
        rest = &rest[start + len + 1..];
    }
    found
}

/// Agent text full of Slack's live syntax.
const HOSTILE: &str =
    "<!channel> <@U0123ABCD> <!subteam^S0123> <https://evil.example|click> a&b > c";

fn yes_no() -> Question {
    q(
        Some("Confirm"),
        "Proceed with the destructive cleanup?",
        vec![
            opt(
                "Yes, delete them (Recommended)",
                Some("Removes the three stale files."),
            ),
            opt("No, keep them", None),
        ],
        false,
    )
}

#[test]
fn a_few_options_are_buttons_with_the_recommended_one_primary_then_other() {
    let scope = Scope::new();
    let m = question(&yes_no(), &view(&scope), None);
    let blocks = json(&m.blocks);
    assert_within_limits(&blocks);
    assert_eq!(blocks[0]["type"], "header");
    assert_eq!(blocks[0]["text"]["text"], "Confirm");
    assert_eq!(
        blocks[1]["text"]["text"],
        "Proceed with the destructive cleanup?"
    );
    assert_eq!(blocks[1]["text"]["verbatim"], true);
    let actions = blocks.as_array().unwrap().last().unwrap();
    let els = actions["elements"].as_array().unwrap();
    assert_eq!(els.len(), 3);
    assert_eq!(els[0]["text"]["text"], "Yes, delete them (Recommended)");
    assert_eq!(els[0]["style"], "primary");
    assert_eq!(els[1]["style"], Value::Null);
    assert_eq!(els[2]["text"]["text"], OTHER_LABEL);
    // The action ids are Discord's custom_ids: request token, question, option.
    let id = custom_id::parse(els[1]["action_id"].as_str().unwrap()).unwrap();
    assert_eq!((id.token.as_str(), id.question), (TOKEN, 0));
    assert_eq!(id.action, custom_id::Action::Choose(1));
    assert_eq!(
        custom_id::parse(els[2]["action_id"].as_str().unwrap())
            .unwrap()
            .action,
        custom_id::Action::Other
    );
    assert!(m.text.starts_with("Confirm: Proceed"));
}

#[test]
fn past_the_button_limit_the_options_are_a_static_select() {
    let scope = Scope::new();
    let many = |n: usize| {
        q(
            None,
            "Pick one",
            (0..n)
                .map(|i| opt(&format!("option {i}"), Some("d")))
                .collect(),
            false,
        )
    };
    // 24 options and Other…: 25 elements, the most an actions block holds.
    let blocks = json(&question(&many(24), &view(&scope), None).blocks);
    assert_within_limits(&blocks);
    let els = &blocks.as_array().unwrap().last().unwrap()["elements"];
    assert_eq!(els.as_array().unwrap().len(), 25);
    assert!(els
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["type"] == "button"));
    // 25 options and Other… would be 26: a select with every option, then Other….
    let blocks = json(&question(&many(25), &view(&scope), None).blocks);
    assert_within_limits(&blocks);
    let els = blocks.as_array().unwrap().last().unwrap()["elements"].clone();
    assert_eq!(els[0]["type"], "static_select");
    assert_eq!(els[0]["options"].as_array().unwrap().len(), 25);
    assert_eq!(els[0]["options"][24]["value"], "24");
    assert_eq!(
        custom_id::parse(els[0]["action_id"].as_str().unwrap())
            .unwrap()
            .action,
        custom_id::Action::SelectOne
    );
    assert_eq!(els[1]["text"]["text"], OTHER_LABEL);
    // Without Other… (a quorum route where free text does not decide), 25 buttons fit.
    let v = View {
        offers_custom: false,
        ..view(&scope)
    };
    let blocks = json(&question(&many(25), &v, None).blocks);
    let els = &blocks.as_array().unwrap().last().unwrap()["elements"];
    assert_eq!(els.as_array().unwrap().len(), 25);
    assert_eq!(els[0]["type"], "button");
}

#[test]
fn multi_select_is_a_menu_then_submit_and_submit_with_note() {
    let scope = Scope::new();
    let question_ = q(
        Some("Pick"),
        "Which?",
        vec![opt("a", None), opt("b", None), opt("c", None)],
        true,
    );
    let blocks = json(&question(&question_, &view(&scope), None).blocks);
    assert_within_limits(&blocks);
    let all = blocks.as_array().unwrap();
    let menu = &all[all.len() - 2]["accessory"];
    assert_eq!(menu["type"], "multi_static_select");
    assert_eq!(menu["max_selected_items"], 3);
    assert_eq!(
        custom_id::parse(menu["action_id"].as_str().unwrap())
            .unwrap()
            .action,
        custom_id::Action::Draft
    );
    let els = &all[all.len() - 1]["elements"];
    assert_eq!(els[0]["text"]["text"], SUBMIT_LABEL);
    assert_eq!(els[1]["text"]["text"], SUBMIT_WITH_NOTE_LABEL);
}

#[test]
fn a_question_without_options_has_answer() {
    let scope = Scope::new();
    let blocks = json(&question(&q(None, "Why?", vec![], false), &view(&scope), None).blocks);
    assert_within_limits(&blocks);
    let els = &blocks.as_array().unwrap().last().unwrap()["elements"];
    assert_eq!(els[0]["text"]["text"], ANSWER_LABEL);
    assert_eq!(blocks[0]["text"]["text"], "Question");
}

#[test]
fn agent_text_is_escaped_everywhere_so_nothing_is_live() {
    let mut scope = Scope::new();
    scope.insert("project".into(), HOSTILE.into());
    let question_ = q(
        Some(HOSTILE),
        HOSTILE,
        vec![opt(HOSTILE, Some(HOSTILE)), opt("b", None)],
        false,
    );
    let context = Context {
        text: Some(format!("{HOSTILE}\n```\n*bold*")),
        files: vec![ContextFile {
            name: "a.diff".into(),
            content: HOSTILE.into(),
        }],
        approval: Some(Approval {
            tool: "Bash".into(),
            command: HOSTILE.into(),
            ..Approval::default()
        }),
    };
    let v = View {
        agent: Some(HOSTILE),
        ..view(&scope)
    };
    let m = question(&question_, &v, Some(&context));
    let blocks = json(&m.blocks);
    assert_within_limits(&blocks);
    let mut all = Vec::new();
    texts(&blocks, &mut all);
    all.push(m.text.clone());
    assert!(all.len() > 8, "{all:?}");
    for t in &all {
        assert!(live(t).is_empty(), "live syntax in {t:?}");
    }
    // Shown as written once Slack decodes the entities.
    assert!(all
        .iter()
        .any(|t| t.contains("&lt;!channel&gt; &lt;@U0123ABCD&gt;")));
    assert!(all.iter().any(|t| t.contains("a&amp;b &gt; c")));
    // A code block in the context cannot be closed by the agent.
    let context_text = all.iter().find(|t| t.starts_with("*Context*")).unwrap();
    assert_eq!(context_text.matches("```").count(), 2, "{context_text}");
    // The outcome and the late press too.
    let a = Answered {
        actor: Actor {
            via: Via::Discord,
            id: "1".into(),
            name: HOSTILE.into(),
            note: Some(HOSTILE.into()),
        },
        at_ms: 1_700_000_000_000,
        settlement: Settlement {
            selected: vec![0],
            custom: Some(HOSTILE.into()),
            ..Settlement::default()
        },
    };
    let mut out = Vec::new();
    texts(&json(&settled(&question_, &v, &a).blocks), &mut out);
    out.push(already(&question_, &a));
    for t in &out {
        let ours: Vec<String> = live(t)
            .into_iter()
            .filter(|l| !l.starts_with("<!date^"))
            .collect();
        assert!(ours.is_empty(), "live syntax in {t:?}");
    }
}

#[test]
fn long_text_is_cut_to_each_limit_and_long_context_says_so() {
    let scope = Scope::new();
    let long = "x".repeat(5000);
    let question_ = q(
        Some(&"h".repeat(80)),
        &long,
        vec![
            opt(&"l".repeat(200), Some(&"d".repeat(1000))),
            opt(&"&".repeat(200), None),
        ],
        false,
    );
    let context = Context {
        text: Some("y".repeat(10_000)),
        files: (0..9)
            .map(|i| ContextFile {
                name: format!("f{i}.txt"),
                content: "z".repeat(5000),
            })
            .collect(),
        approval: None,
    };
    let v = View {
        count: 3,
        index: 2,
        ..view(&scope)
    };
    let m = question(&question_, &v, Some(&context));
    let blocks = json(&m.blocks);
    assert_within_limits(&blocks);
    assert!(blocks[0]["text"]["text"]
        .as_str()
        .unwrap()
        .ends_with("(3 of 3)"));
    let mut all = Vec::new();
    texts(&blocks, &mut all);
    assert!(
        all.iter()
            .any(|t| t
                .contains("7400 more characters not shown here; the whole of it is in the thread")),
        "{all:?}"
    );
    assert!(all
        .iter()
        .any(|t| t.contains("_In the thread:_ f5.txt, f6.txt")));
    // What was cut is shared whole in the thread.
    let up = uploads(&context);
    let names: Vec<&str> = up.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[0], CONTEXT_TEXT_FILE);
    assert_eq!(
        names.len(),
        10,
        "the text and every file (each is cut): {names:?}"
    );
    assert_eq!(up[0].1.len(), 10_000);
    // A context that fits shares nothing.
    let small = Context {
        text: Some("short".into()),
        files: vec![ContextFile {
            name: "a.diff".into(),
            content: "+x".into(),
        }],
        approval: None,
    };
    assert!(uploads(&small).is_empty());
    // An escape is never cut in two.
    let button = &blocks.as_array().unwrap().last().unwrap()["elements"][1]["text"]["text"];
    let b = button.as_str().unwrap();
    assert!(b.ends_with("&amp;…"), "{b}");
}

#[test]
fn the_outcome_names_who_where_and_what_and_removes_the_controls() {
    let scope = Scope::new();
    let v = view(&scope);
    let answered = |via: Via, id: &str, name: &str| Answered {
        actor: Actor {
            via,
            id: id.into(),
            name: name.into(),
            note: None,
        },
        at_ms: 1_700_000_000_000,
        settlement: Settlement {
            selected: vec![1],
            ..Settlement::default()
        },
    };
    let in_slack = settled(&yes_no(), &v, &answered(Via::Slack, "U0123ABCD", "alice"));
    let blocks = json(&in_slack.blocks);
    assert_within_limits(&blocks);
    assert!(blocks
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["type"] != "actions"));
    let text = blocks.as_array().unwrap().last().unwrap()["text"]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.starts_with("*Answered* by <@U0123ABCD> in Slack, <!date^1700000000^"),
        "{text}"
    );
    assert!(text.ends_with(":\nNo, keep them"), "{text}");
    // A Slack "id" that is not one is shown as a name, inert.
    let forged = settled(&yes_no(), &v, &answered(Via::Slack, "<!here>", "bob"));
    assert!(json(&forged.blocks).to_string().contains("by bob in Slack"));
    let in_discord = already(&yes_no(), &answered(Via::Discord, "42", "carol"));
    assert!(
        in_discord.starts_with("Already answered by carol in Discord, <!date^"),
        "{in_discord}"
    );
    let at_terminal = already(&yes_no(), &answered(Via::Terminal, "1000", "dave"));
    assert!(at_terminal.starts_with("Already answered by dave (uid 1000) in the terminal"));
    let err = AskError::new(
        ErrorCode::Aborted,
        "the request was cancelled: <@U1> said so",
    );
    let gone = json(&ended(&yes_no(), &v, &err, None).blocks);
    let last = gone.as_array().unwrap().last().unwrap()["text"]["text"].clone();
    assert_eq!(last, "*Cancelled:* &lt;@U1&gt; said so");
    assert_eq!(where_answered(Via::Policy), "by the expiry policy");
}

#[test]
fn votes_show_on_a_quorum_question() {
    let scope = Scope::new();
    let v = View {
        approvals: 2,
        ..view(&scope)
    };
    let blocks = json(&open(&yes_no(), &v).blocks);
    assert_within_limits(&blocks);
    assert!(blocks.to_string().contains("*Votes:* 0 of 2 needed"));
}

#[test]
fn the_form_carries_its_question_and_the_message_it_came_from() {
    let scope = Scope::new();
    let place = FormPlace {
        channel: "C0123ABCD".into(),
        ts: "1700000000.000100".into(),
    };
    let modal = text_modal(&yes_no(), &view(&scope), custom_id::Form::Other, &place);
    let v = json(&modal);
    assert_eq!(v["type"], "modal");
    assert!(chars(&v["title"]["text"]) <= MODAL_TITLE_MAX);
    let id = ModalId::parse(v["callback_id"].as_str().unwrap()).unwrap();
    assert_eq!(
        (id.token.as_str(), id.question, id.action),
        (TOKEN, 0, custom_id::Form::Other)
    );
    assert_eq!(
        FormPlace::parse(v["private_metadata"].as_str().unwrap()),
        Some(place)
    );
    assert_within_limits(&v["blocks"]);
    let input = &v["blocks"][1];
    assert_eq!(
        (
            input["block_id"].as_str(),
            input["element"]["action_id"].as_str()
        ),
        (Some(TEXT_BLOCK), Some(TEXT_ACTION))
    );
    assert!(input["element"]["max_length"].as_u64().unwrap() as usize <= TEXT_INPUT_MAX);
    assert_eq!(FormPlace::parse("C1 1.2 x"), None);
    assert_eq!(FormPlace::parse("C<1> 1.2"), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Escaped agent text holds no `<` or `>`, so Slack finds no mention, link or date in it;
    /// decoding the three entities gives the text back.
    #[test]
    fn escaped_text_is_never_live_and_reads_as_written(s in "[<>&@!a-zA-Z0-9^|: ]{0,80}") {
        let e = escape(&s);
        prop_assert!(!e.contains('<') && !e.contains('>'));
        let decoded = e.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
        prop_assert_eq!(decoded, s);
    }

    /// Cutting never leaves half an escape, and keeps to the limit.
    #[test]
    fn cut_text_keeps_to_its_limit_and_whole_escapes(s in "[<>&a ]{0,120}", max in 1usize..60) {
        let t = truncate(&escape(&s), max);
        prop_assert!(t.chars().count() <= max);
        let body = t.trim_end_matches('…');
        if let Some(amp) = body.rfind('&') {
            prop_assert!(body[amp..].contains(';'), "{}", t);
        }
    }
}
