//! The renderer's tests: shared helpers that check every Discord limit on a body, agent text
//! made inert and cut, and properties over random markdown on every surface; the question's
//! message, its edits and its modals are checked in `tests/message.rs`.

use super::super::custom_id::{self, Form, ModalId, TEXT_INPUT_ID};
use super::super::markdown_model;
use super::*;
use crate::domain::model::{Context, QuestionOption, RECOMMENDED_SUFFIX};
use serde_json::Value;

mod message;

fn opt(label: &str, description: Option<&str>) -> QuestionOption {
    QuestionOption {
        label: label.to_owned(),
        description: description.map(str::to_owned),
    }
}

fn question(header: Option<&str>, options: Vec<QuestionOption>, multi: bool) -> Question {
    Question {
        id: "q1".to_owned(),
        question: "Which database should we use?".to_owned(),
        header: header.map(str::to_owned),
        options,
        multi_select: multi,
    }
}

fn scope() -> Scope {
    let mut s = Scope::new();
    s.insert("project".to_owned(), "p".to_owned());
    s.insert("session".to_owned(), "s".to_owned());
    s
}

fn ctx<'a>(scope: &'a Scope) -> RenderContext<'a> {
    RenderContext {
        token: "0123456789abcdef0123",
        request_id: "abc",
        question_index: 0,
        question_count: 1,
        agent: Some("x"),
        scope,
        mention_user_ids: &[],
        mention_role_ids: &[],
        votes: &[],
        approvals: 1,
        offers_custom: true,
        grant_secs: &[],
        editable: None,
        approval: None,
        confirm_labels: &[],
        confirm_word: "approve",
    }
}

fn json<T: serde::Serialize>(b: &T) -> Value {
    serde_json::to_value(b).unwrap()
}

fn chars(v: &Value) -> usize {
    v.as_str().map_or(0, |s| s.chars().count())
}

/// Every custom_id in the value, at any depth.
fn custom_ids(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                if k == "custom_id" {
                    out.push(v.as_str().unwrap().to_owned());
                } else {
                    custom_ids(v, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| custom_ids(v, out)),
        _ => {}
    }
}

/// Checks every Discord limit on a message body (create or edit) and returns its embed.
fn check_limits(body: &Value, q: &Question) -> Value {
    if let Some(c) = body.get("content") {
        assert!(chars(c) <= CONTENT_MAX);
    }
    let embeds = body["embeds"].as_array().unwrap();
    assert_eq!(embeds.len(), 1);
    let e = &embeds[0];
    assert!(chars(&e["title"]) <= EMBED_TITLE_MAX && chars(&e["title"]) > 0);
    assert!(chars(&e["description"]) <= EMBED_DESCRIPTION_MAX);
    assert!(chars(&e["footer"]["text"]) <= EMBED_FOOTER_MAX);
    let fields = e.get("fields").and_then(Value::as_array).cloned();
    let fields = fields.unwrap_or_default();
    assert!(fields.len() <= EMBED_FIELDS_MAX);
    let mut total = chars(&e["title"]) + chars(&e["description"]) + chars(&e["footer"]["text"]);
    for f in &fields {
        let (n, v) = (chars(&f["name"]), chars(&f["value"]));
        assert!(n > 0 && n <= EMBED_FIELD_NAME_MAX, "{f}");
        assert!(v > 0 && v <= EMBED_FIELD_VALUE_MAX, "{f}");
        total += n + v;
    }
    assert!(total <= EMBED_TOTAL_MAX, "embed total {total}");

    let rows = body
        .get("components")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    assert!(rows.len() <= ACTION_ROWS_MAX);
    for row in &rows {
        assert_eq!(row["type"], 1);
        let comps = row["components"].as_array().unwrap();
        assert!(!comps.is_empty() && comps.len() <= 5);
        for c in comps {
            match c["type"].as_u64().unwrap() {
                2 => {
                    assert!(chars(&c["label"]) > 0 && chars(&c["label"]) <= BUTTON_LABEL_MAX);
                }
                3 => {
                    assert_eq!(comps.len(), 1, "a select menu is alone in its row");
                    let opts = c["options"].as_array().unwrap();
                    assert!(!opts.is_empty() && opts.len() <= SELECT_OPTIONS_MAX);
                    assert!(c["max_values"].as_u64().unwrap() as usize <= opts.len());
                    assert!(chars(&c["placeholder"]) <= SELECT_PLACEHOLDER_MAX);
                    for o in opts {
                        assert!(chars(&o["label"]) > 0);
                        assert!(chars(&o["label"]) <= SELECT_OPTION_TEXT_MAX);
                        assert!(chars(&o["value"]) <= SELECT_OPTION_TEXT_MAX);
                        assert!(chars(&o["description"]) <= SELECT_OPTION_TEXT_MAX);
                        let i = custom_id::parse_option_value(
                            o["value"].as_str().unwrap(),
                            q.options.len(),
                        );
                        assert!(i.is_some());
                    }
                }
                t => panic!("unexpected component type {t}"),
            }
        }
    }
    check_custom_ids(body, q);
    e.clone()
}

/// custom_ids are unique, at most 100 characters, parse back and hold no label text.
fn check_custom_ids(body: &Value, q: &Question) -> Vec<CustomId> {
    let mut ids = Vec::new();
    custom_ids(body, &mut ids);
    let mut parsed = Vec::new();
    for id in &ids {
        assert!(!id.is_empty() && id.chars().count() <= 100, "{id}");
        assert_eq!(ids.iter().filter(|x| *x == id).count(), 1, "unique {id}");
        for o in &q.options {
            assert!(!id.contains(&o.label), "{id} holds a label");
        }
        let p = CustomId::parse(id).unwrap_or_else(|| panic!("{id} does not parse"));
        assert_eq!(p.encode(), *id);
        assert_eq!(custom_id::parse(id), Some(p.clone()));
        parsed.push(p);
    }
    parsed
}

fn actions(body: &Value, q: &Question) -> Vec<Action> {
    check_custom_ids(body, q)
        .into_iter()
        .map(|c| {
            assert_eq!(c.token, "0123456789abcdef0123");
            c.action
        })
        .collect()
}

#[test]
fn truncate_counts_chars_and_ends_in_ellipsis() {
    assert_eq!(truncate("hello", 5), "hello");
    assert_eq!(truncate("hello", 10), "hello");
    assert_eq!(truncate("hello!", 5), "hell…");
    assert_eq!(truncate("ééééé", 3), "éé…");
    assert_eq!(truncate("ab cd", 4), "ab…");
    assert_eq!(truncate("abc", 1), "…");
    assert_eq!(truncate("abc", 0), "");
    assert_eq!(truncate("", 0), "");
    let long = "日本語".repeat(100);
    let t = truncate(&long, 80);
    assert_eq!(t.chars().count(), 80);
    assert!(t.ends_with('…'));
}

/// What a person sees of a markdown text (Discord's model), the zero-width spaces askrelay
/// adds left out.
fn shown(s: &str) -> String {
    markdown_model::parse(s).display.replace('\u{200B}', "")
}

#[test]
fn agent_text_cannot_mention_or_link() {
    assert_eq!(inert("plain, a < b"), "plain\\, a \\< b");
    assert_eq!(inert("<@123> <@&9>"), "\\<\\@123\\> \\<\\@\\&9\\>");
    assert_eq!(
        inert("hi @everyone and @Here"),
        "hi \\@\u{200B}everyone and \\@\u{200B}Here"
    );
    assert_eq!(
        inert("[docs](https://e)"),
        "\\[docs\\]\\(https\\:\\/\\/e\\)"
    );
    // The issue's example: a lone backtick escapes nothing after it.
    let issue = "Deploy? ` [Open the runbook](https://evil.example) <@&123456789012345678>";
    assert_eq!(markdown_model::live(&inert(issue)), vec![]);
    assert_eq!(shown(&inert(issue)), issue);
    // Code is escaped too: a code span could not hold an escape.
    assert_eq!(inert("`<@1>`"), "\\`\\<\\@1\\>\\`");
    assert_eq!(inert("\\<@1>"), "\\\\\\<\\@1\\>");
    // Line starts: headings, subtext, quotes, lists.
    assert_eq!(
        inert("# a\n-# b\n> c\n1. d"),
        "\\# a\n\\-\\# b\n\\> c\n1\\. d"
    );
    // Invisible controls and bidi overrides show as escapes.
    assert_eq!(
        inert("a\u{202E}b\u{7}c\r\nd\te"),
        concat!(r"a\\u\{202e\}b\\u\{7\}c\\r", "\nd\te")
    );
    assert_eq!(
        inert_plain("team=<@9> @everyone https://e [x](y) <t:1>"),
        "team=<\u{200B}@9> @\u{200B}everyone https:\u{200B}//e [x]\u{200B}(y) <\u{200B}t:1>"
    );
}

#[test]
fn a_cut_never_leaves_an_escape_open() {
    let md = inert("ab*cd");
    assert_eq!(md, "ab\\*cd");
    assert_eq!(truncate_md(&md, 4), "ab…");
    assert_eq!(truncate_md(&md, 5), "ab\\*…");
    assert_eq!(truncate_md(&md, 6), md);
    assert_eq!(truncate_md("a\\\\\\\\b", 4), "a\\\\…");
    assert_eq!(truncate_md("a \\", 3), "a \\");
    assert_eq!(truncate_md("a \\ b", 4), "a…");
    assert_eq!(truncate_md("abc", 0), "");
}

fn check_modal(m: &Value) {
    let title = chars(&m["title"]);
    assert!(title > 0 && title <= MODAL_TITLE_MAX);
    let id = m["custom_id"].as_str().unwrap();
    assert!(id.chars().count() <= 100);
    assert!(ModalId::parse(id).is_some(), "{id}");
    assert!(CustomId::<Action>::parse(id).is_none(), "{id}");
    let rows = m["components"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["type"], 1);
    let inputs = rows[0]["components"].as_array().unwrap();
    assert_eq!(inputs.len(), 1);
    let input = &inputs[0];
    assert_eq!(input["type"], 4);
    assert_eq!(input["style"], 2);
    assert_eq!(input["custom_id"], TEXT_INPUT_ID);
    assert_eq!(input["required"], true);
    assert_eq!(input["max_length"], 4000);
    let label = chars(&input["label"]);
    assert!(label > 0 && label <= TEXT_INPUT_LABEL_MAX);
    assert!(chars(&input["placeholder"]) <= TEXT_INPUT_PLACEHOLDER_MAX);
}

// --- agent text is inert: properties over random markdown ---------------------------------

use markdown_model::{agent_text, comparable, live_in, plain_is_inert, plain_texts, visible};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        // Deterministic: the same cases every run (a property that fails fails always).
        rng_seed: proptest::test_runner::RngSeed::Fixed(20261202),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// Whatever the text, [`inert`] leaves nothing live and reads as the text.
    #[test]
    fn inert_text_renders_nothing_and_reads_as_written(s in agent_text()) {
        let md = inert(&s);
        prop_assert_eq!(markdown_model::live(&md), vec![], "{:?} → {:?}", s, md);
        prop_assert_eq!(shown(&md), visible(&s));
    }

    /// Cut anywhere, it stays inert and reads as the start of the text.
    #[test]
    fn a_cut_inert_text_renders_nothing(s in agent_text(), max in 0usize..80) {
        let cut = truncate_md(&inert(&s), max);
        prop_assert!(cut.chars().count() <= max);
        prop_assert_eq!(markdown_model::live(&cut), vec![], "{:?} → {:?}", s, cut);
        let shown = shown(&cut);
        prop_assert!(visible(&s).starts_with(shown.trim_end_matches('…')), "{:?} → {:?}", s, shown);
    }

    /// Plain text places: nothing reads as a mention or a link, and the text reads as
    /// written.
    #[test]
    fn inert_plain_text_reads_as_written(s in agent_text()) {
        let plain = inert_plain(&s);
        prop_assert!(plain_is_inert(&plain), "{:?} → {:?}", s, plain);
        prop_assert_eq!(plain.replace('\u{200B}', ""), visible(&s));
    }

    /// Metamorphic, per surface: a question (with its context, and as the second of two,
    /// with many described options), its DM or escalation copy, a reminder, the edits and
    /// the modal show the same live constructs with random agent text everywhere as with a
    /// plain placeholder; and no plain text reads as markup.
    #[test]
    fn agent_text_adds_no_markup_to_any_surface(
        // Text that is blank to Rust (a lone "\r\n") is left out of an answer's note on
        // purpose, so it cannot be compared with a placeholder that shows.
        s in agent_text().prop_filter("visible", |s| {
            !visible(s).trim().is_empty() && !s.trim().is_empty()
        }),
        options in 1usize..=25,
        second in any::<bool>(),
    ) {
        let random = surfaces(&s, options, second);
        let plain = surfaces("placeholder", options, second);
        for ((name, body), (_, reference)) in random.iter().zip(&plain) {
            let live = |b: &Value| -> Vec<markdown_model::Live> {
                live_in(b).iter().map(|(_, l)| comparable(l)).collect()
            };
            prop_assert_eq!(live(body), live(reference), "{}: {}", name, body);
            for text in plain_texts(body) {
                prop_assert!(plain_is_inert(&text), "{}: {:?}", name, text);
            }
        }
    }
}

/// Every surface of a question with `text` as every piece of agent text: (name, body).
fn surfaces(text: &str, options: usize, second: bool) -> Vec<(&'static str, Value)> {
    let mut scope = Scope::new();
    scope.insert("team".to_owned(), text.to_owned());
    scope.insert(text.to_owned(), "v".to_owned());
    let q = Question {
        id: "q".to_owned(),
        question: text.to_owned(),
        header: Some(text.to_owned()),
        options: (0..options)
            .map(|i| opt(&format!("{i}{text}"), Some(text)))
            .collect(),
        multi_select: false,
    };
    let c = RenderContext {
        token: "0123456789abcdef0123",
        request_id: text,
        question_index: usize::from(second),
        question_count: 1 + usize::from(second),
        agent: Some(text),
        scope: &scope,
        mention_user_ids: &[11],
        mention_role_ids: &[22],
        votes: &[],
        approvals: 1,
        offers_custom: true,
        grant_secs: &[],
        editable: None,
        approval: None,
        confirm_labels: &[],
        confirm_word: "approve",
    };
    let context = Context {
        text: Some(text.to_owned()),
        files: Vec::new(),
        approval: None,
    };
    let answered = AnsweredView {
        by: format!("{} (uid 1000)", inert(text)),
        place: Some("in the terminal"),
        note: Some(text.to_owned()),
        labels: vec![text.to_owned(), format!("1{text}")],
        custom: Some(text.to_owned()),
        at_unix: 1_700_000_000,
        terms: None,
    };
    let lead = "**Escalated:** no answer after 5m. Original: https://discord.com/channels/1/2/3";
    vec![
        (
            "question",
            json(&question_post(&q, &c, Some(&context)).message),
        ),
        (
            "copy",
            json(&copy_post(&q, &c, lead, Some(&context)).message),
        ),
        (
            "reminder",
            json(&note("**Reminder:** waited 5m.", &c, Some((1, 2)))),
        ),
        ("settled", json(&settled(&q, &c, &answered).edit())),
        (
            "settled callback",
            json(&settled(&q, &c, &answered).update()),
        ),
        ("ended", json(&ended(&q, &c, "Cancelled", text).edit())),
        ("modal", json(&modal(&q, &c, Form::Other))),
    ]
}
