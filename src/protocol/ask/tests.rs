//! The ask parser's tests: what parses, what is refused and which field each error names.
//!
//! Every rule on both sides: at the limit accepted, one over refused, with the field named.
//! (The integration tests in tests/it/limits.rs do the same through the socket.)

use super::*;
use crate::domain::model::*;
use serde_json::json;

fn parse(v: Value) -> Result<Ask, String> {
    let Value::Object(obj) = v else {
        panic!("not an object")
    };
    parse_ask(&obj, 10).map_err(|e| {
        assert_eq!(e.code, crate::domain::ErrorCode::InvalidRequest);
        e.message
    })
}

/// An ask with one question built from `q`.
fn one(q: Value) -> Value {
    json!({ "questions": [q] })
}

#[track_caller]
fn refused(v: Value, starts: &str) {
    match parse(v.clone()) {
        Err(m) => assert!(m.starts_with(starts), "{v}: {m:?} should start {starts:?}"),
        Ok(a) => panic!("{v} was accepted: {a:?}"),
    }
}

#[track_caller]
fn accepted(v: Value) -> Ask {
    parse(v.clone()).unwrap_or_else(|m| panic!("{v} was refused: {m}"))
}

fn s(n: usize) -> String {
    "é".repeat(n)
}

fn labels(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({ "label": format!("option {i}") }))
        .collect()
}

#[test]
fn a_full_ask_comes_back_exactly() {
    let ask = accepted(json!({
        "op": "ask",
        "request_id": "deploy-42",
        "caller": {"agent_id": "main", "owner_agent_id": null},
        "scope": {"project": "infra", "n": 3, "on": true, "gone": null},
        "questions": [{
            "id": "go", "question": "Deploy?", "header": "Ship",
            "options": [{"label": "Yes (Recommended)", "description": "now"}, {"label": "No"}],
            "multiSelect": false
        }, {"id": "why", "question": "Why?", "multiSelect": null, "options": null, "header": null}]
    }));
    let want = Ask {
        request_id: Some("deploy-42".into()),
        caller: Caller {
            agent_id: Some("main".into()),
            owner_agent_id: None,
        },
        scope: [("n", "3"), ("on", "true"), ("project", "infra")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        questions: vec![
            Question {
                id: "go".into(),
                question: "Deploy?".into(),
                header: Some("Ship".into()),
                options: vec![
                    QuestionOption {
                        label: "Yes (Recommended)".into(),
                        description: Some("now".into()),
                    },
                    QuestionOption {
                        label: "No".into(),
                        description: None,
                    },
                ],
                multi_select: false,
            },
            Question {
                id: "why".into(),
                question: "Why?".into(),
                header: None,
                options: vec![],
                multi_select: false,
            },
        ],
        context: None,
        on_disconnect: Default::default(),
    };
    assert_eq!(ask, want);
    assert!(ask.questions[0].options[0].is_recommended());
    assert!(!ask.questions[0].options[1].is_recommended());
    assert_eq!(ask.questions[0].option_index("No"), Some(1));
    assert_eq!(ask.questions[0].option_index("no"), None);
    assert!(!ask.caller.is_root());
    let bare = accepted(one(json!({"id": "q", "question": "?"})));
    assert_eq!(bare.request_id, None);
    assert!(bare.caller.is_root());
    assert!(bare.scope.is_empty());
    let owned = Caller {
        agent_id: None,
        owner_agent_id: Some("o".into()),
    };
    assert!(!owned.is_root());
}

#[test]
fn kinds_follow_options_and_multi_select() {
    let q = |opts: usize, multi: bool| {
        accepted(one(
            json!({"id": "q", "question": "?", "options": labels(opts), "multiSelect": multi}),
        ))
        .questions
        .remove(0)
        .kind()
    };
    assert_eq!(q(0, false), QuestionKind::FreeText);
    assert_eq!(q(2, false), QuestionKind::Single);
    assert_eq!(q(2, true), QuestionKind::Multi);
    refused(
        one(json!({"id": "q", "question": "?", "multiSelect": true})),
        "questions[0].multiSelect: needs at least one option",
    );
    refused(
        one(json!({"id": "q", "question": "?", "multiSelect": "yes"})),
        "questions[0].multiSelect: must be true or false",
    );
}

#[test]
fn unknown_fields_are_named_where_they_are() {
    refused(
        json!({"questions": [], "x": 1}),
        "x: unknown field; expected one of request_id, caller, scope, questions",
    );
    refused(
        one(json!({"id": "q", "question": "?", "x": 1})),
        "questions[0].x: unknown field; expected one of id, question, header, options, multiSelect",
    );
    refused(
        one(json!({"id": "q", "question": "?", "options": [{"label": "a", "x": 1}]})),
        "questions[0].options[0].x: unknown field; expected one of label, description",
    );
    refused(
        json!({"caller": {"x": 1}, "questions": [{"id": "q", "question": "?"}]}),
        "caller.x: unknown field",
    );
}

#[test]
fn questions_count_from_one_to_the_limit() {
    let q = |i: usize| json!({"id": format!("q{i}"), "question": "?"});
    let n = |k: usize| json!({ "questions": (0..k).map(q).collect::<Vec<_>>() });
    assert_eq!(accepted(n(1)).questions.len(), 1);
    assert_eq!(accepted(n(10)).questions.len(), 10);
    refused(
        n(11),
        "questions: at most 10 questions (limits.max_questions), got 11",
    );
    refused(n(0), "questions: must hold at least 1 question");
    refused(json!({}), "questions: is required");
    refused(json!({"questions": null}), "questions: is required");
    refused(json!({"questions": {}}), "questions: must be an array");
    refused(json!({"questions": [1]}), "questions[0]: must be an object");
    refused(
        json!({"questions": [q(1), q(2), q(1)]}),
        "questions[2].id: \"q1\" is used twice",
    );
}

#[test]
fn question_texts_have_their_limits() {
    let q = |k: &str, v: Value| {
        let mut o = json!({"id": "q", "question": "?"});
        o[k] = v;
        one(o)
    };
    accepted(q("id", json!(s(MAX_ID_CHARS))));
    refused(
        q("id", json!(s(MAX_ID_CHARS + 1))),
        "questions[0].id: at most 64 characters, got 65",
    );
    refused(q("id", json!("  ")), "questions[0].id: must not be empty");
    refused(q("id", json!(null)), "questions[0].id: is required");
    refused(q("id", json!(1)), "questions[0].id: must be a string");
    refused(
        q("id", json!("a\u{1b}b")),
        "questions[0].id: must not contain control characters",
    );
    accepted(q("question", json!(s(MAX_QUESTION_CHARS))));
    refused(
        q("question", json!(s(MAX_QUESTION_CHARS + 1))),
        "questions[0].question: at most 4000",
    );
    accepted(q("header", json!(s(MAX_HEADER_CHARS))));
    accepted(q("header", json!("")));
    refused(
        q("header", json!(s(MAX_HEADER_CHARS + 1))),
        "questions[0].header: at most 80 characters, got 81",
    );
    refused(
        q("header", json!(7)),
        "questions[0].header: must be a string",
    );
    refused(
        q("header", json!("a\u{9b}b")),
        "questions[0].header: must not contain control characters",
    );
}

#[test]
fn options_have_their_limits() {
    let q = |opts: Value| one(json!({"id": "q", "question": "?", "options": opts}));
    assert_eq!(
        accepted(q(json!(labels(MAX_OPTIONS)))).questions[0]
            .options
            .len(),
        25
    );
    refused(
        q(json!(labels(MAX_OPTIONS + 1))),
        "questions[0].options: at most 25 options, got 26",
    );
    refused(q(json!("a")), "questions[0].options: must be an array");
    refused(
        q(json!(["a"])),
        "questions[0].options[0]: must be an object",
    );
    accepted(q(json!([{"label": s(MAX_LABEL_CHARS)}])));
    refused(
        q(json!([{"label": s(MAX_LABEL_CHARS + 1)}])),
        "questions[0].options[0].label: at most 200",
    );
    refused(
        q(json!([{"label": ""}])),
        "questions[0].options[0].label: must not be empty",
    );
    accepted(q(
        json!([{"label": "a", "description": s(MAX_DESCRIPTION_CHARS)}]),
    ));
    refused(
        q(json!([{"label": "a", "description": s(MAX_DESCRIPTION_CHARS + 1)}])),
        "questions[0].options[0].description: at most 1000 characters, got 1001",
    );
    refused(
        q(json!([{"label": "a", "description": false}])),
        "questions[0].options[0].description: must be a string",
    );
    refused(
        q(json!([{"label": "a"}, {"label": "a"}])),
        "questions[0].options[1].label: \"a\" is used twice",
    );
}

#[test]
fn labels_that_look_alike_or_hide_something_are_refused() {
    let q = |l: &[&str]| {
        let opts: Vec<Value> = l.iter().map(|l| json!({ "label": l })).collect();
        one(json!({"id": "q", "question": "?", "options": opts}))
    };
    refused(
        q(&["paypal", "pаypal"]),
        "questions[0].options[1].label: looks the same as questions[0].options[0].label",
    );
    for bad in [
        "a\u{200D}b",         // a joiner between letters
        "a\u{200D}\u{1F469}", // a joiner with an emoji after only
        "\u{1F469}\u{200D}b", // a joiner with an emoji before only
        "\u{200D}\u{1F469}",  // a joiner first
        "a\u{200B}b",         // zero width space
        "a\u{FE0F}",          // a variation selector after a letter
        "a\u{E0061}",         // a tag after a letter
        "a\u{00AD}b",         // soft hyphen
        "x\u{E0100}",         // a variation selector supplement
    ] {
        refused(
            q(&[bad]),
            "questions[0].options[0].label: must not contain invisible characters",
        );
    }
    refused(
        q(&["a\u{202E}b"]),
        "questions[0].options[0].label: must not contain control or bidi characters (U+202E)",
    );
    for good in [
        "\u{1F469}\u{200D}\u{1F4BB} dev", // woman technologist
        "\u{2764}\u{FE0F} yes",           // red heart with its selector
        "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}", // the flag of Scotland
        "\u{00A9}\u{FE0F} 2026",
        "plain",
    ] {
        let a = accepted(q(&[good]));
        assert_eq!(a.questions[0].options[0].label, good, "byte-exact");
    }
}

#[test]
fn request_ids_are_one_line_of_at_most_128() {
    let r = |v: Value| json!({"request_id": v, "questions": [{"id": "q", "question": "?"}]});
    assert_eq!(accepted(r(json!(s(128)))).request_id, Some(s(128)));
    refused(
        r(json!(s(129))),
        "request_id: at most 128 characters, got 129",
    );
    refused(r(json!(" ")), "request_id: must not be empty");
    refused(r(json!(5)), "request_id: must be a string");
    for c in ['\u{0}', '\u{1f}', '\u{7f}', '\u{85}', '\u{9f}'] {
        refused(
            r(json!(format!("a{c}b"))),
            "request_id: must not contain control characters",
        );
    }
    assert_eq!(accepted(r(json!(null))).request_id, None);
}

#[test]
fn the_caller_is_an_object_of_two_short_ids() {
    let c = |v: Value| json!({"caller": v, "questions": [{"id": "q", "question": "?"}]});
    assert_eq!(accepted(c(json!(null))).caller, Caller::default());
    let got = accepted(c(json!({"agent_id": s(128), "owner_agent_id": "boss"}))).caller;
    assert_eq!(got.agent_id, Some(s(128)));
    assert_eq!(got.owner_agent_id.as_deref(), Some("boss"));
    refused(
        c(json!({"agent_id": s(129)})),
        "caller.agent_id: at most 128 characters",
    );
    refused(
        c(json!({"owner_agent_id": s(129)})),
        "caller.owner_agent_id: at most 128 characters",
    );
    refused(
        c(json!({"agent_id": "a\nb"})),
        "caller.agent_id: must not contain control characters",
    );
    refused(
        c(json!({"agent_id": 1})),
        "caller.agent_id: must be a string or null",
    );
    refused(c(json!("main")), "caller: must be an object");
}

#[test]
fn scope_holds_sixteen_short_labels() {
    let sc = |v: Value| json!({"scope": v, "questions": [{"id": "q", "question": "?"}]});
    let n = |k: usize| Value::Object((0..k).map(|i| (format!("k{i}"), json!("v"))).collect());
    assert_eq!(accepted(sc(n(16))).scope.len(), 16);
    refused(sc(n(17)), "scope: at most 16 labels, got 17");
    // A null label counts toward the limit and is dropped.
    let mut with_null = n(15);
    with_null["gone"] = Value::Null;
    assert_eq!(accepted(sc(with_null.clone())).scope.len(), 15);
    with_null["one_more"] = json!(1);
    refused(sc(with_null), "scope: at most 16 labels, got 17");
    accepted(sc(json!({ s(64): "v" })));
    refused(sc(json!({ s(65): "v" })), "scope key");
    refused(sc(json!({ "a\u{1b}": "v" })), "scope key");
    accepted(sc(json!({ "k": s(200) })));
    refused(
        sc(json!({ "k": s(201) })),
        "scope.k: at most 200 characters",
    );
    refused(
        sc(json!({ "k": "a\u{7}" })),
        "scope.k: must not contain control characters",
    );
    refused(
        sc(json!({ "k": [1] })),
        "scope.k: must be a string, number or boolean",
    );
    refused(
        sc(json!({ "k": {"a": 1} })),
        "scope.k: must be a string, number or boolean",
    );
    refused(
        sc(json!(["a"])),
        "scope: must be an object of string labels",
    );
}

#[test]
fn context_comes_back_exactly_and_an_empty_one_is_none() {
    let c = |v: Value| json!({"questions": [{"id": "q", "question": "?"}], "context": v});
    let got = accepted(c(json!({
        "text": "rm -rf build/",
        "files": [{"name": "change.diff", "content": "+a\n"}, {"name": "PLAN+v2.md", "content": "x"}]
    })))
    .context
    .unwrap();
    assert_eq!(got.text.as_deref(), Some("rm -rf build/"));
    assert_eq!(got.files.len(), 2);
    assert_eq!(got.files[0].name, "change.diff");
    assert_eq!(got.files[0].content, "+a\n");
    assert_eq!(accepted(c(json!({}))).context, None);
    assert_eq!(accepted(c(json!({"files": []}))).context, None);
    assert_eq!(accepted(c(json!(null))).context, None);
}

#[test]
fn context_has_its_limits_and_names_the_field() {
    let c = |v: Value| json!({"questions": [{"id": "q", "question": "?"}], "context": v});
    let file = |name: &str, content: &str| json!({"name": name, "content": content});
    accepted(c(json!({ "text": "a".repeat(MAX_CONTEXT_TEXT_BYTES) })));
    refused(
        c(json!({ "text": "a".repeat(MAX_CONTEXT_TEXT_BYTES + 1) })),
        "context.text: at most 16384 bytes, got 16385",
    );
    // Bytes, not characters: 'é' is two.
    refused(
        c(json!({ "text": "é".repeat(MAX_CONTEXT_TEXT_BYTES / 2 + 1) })),
        "context.text: at most 16384 bytes",
    );
    refused(c(json!({"text": " "})), "context.text: must not be empty");
    refused(c(json!({"text": 1})), "context.text: must be a string");
    refused(c(json!("x")), "context: must be an object");
    refused(c(json!({"txt": "x"})), "context.txt: unknown field");
    let nine: Vec<Value> = (0..9).map(|i| file(&format!("f{i}"), "x")).collect();
    assert_eq!(
        accepted(c(json!({ "files": nine })))
            .context
            .unwrap()
            .files
            .len(),
        9
    );
    let ten: Vec<Value> = (0..10).map(|i| file(&format!("f{i}"), "x")).collect();
    refused(
        c(json!({ "files": ten })),
        "context.files: at most 9 files, got 10",
    );
    refused(c(json!({"files": {}})), "context.files: must be an array");
    refused(
        c(json!({"files": [1]})),
        "context.files[0]: must be an object",
    );
    refused(
        c(json!({"files": [file("a", "x"), file("", "x")]})),
        "context.files[1].name: must not be empty",
    );
    refused(
        c(json!({"files": [file("a", "x"), {"content": "x"}]})),
        "context.files[1].name: is required",
    );
    refused(
        c(json!({"files": [file("a.txt", "x"), file("A.TXT", "y")]})),
        "context.files[1].name: \"A.TXT\" is used twice",
    );
    for bad in ["../etc/passwd", "a b", "a\u{1b}", "`x`", "é.txt"] {
        refused(
            c(json!({"files": [file(bad, "x")]})),
            "context.files[0].name: ",
        );
    }
    refused(
        c(json!({"files": [file(".hidden", "x")]})),
        "context.files[0].name: must not start with '.'",
    );
    accepted(c(
        json!({"files": [file(&"a".repeat(MAX_CONTEXT_FILE_NAME_CHARS), "x")]}),
    ));
    refused(
        c(json!({"files": [file(&"a".repeat(MAX_CONTEXT_FILE_NAME_CHARS + 1), "x")]})),
        "context.files[0].name: at most 100 characters, got 101",
    );
    accepted(c(
        json!({"files": [file("a", &"x".repeat(MAX_CONTEXT_FILE_BYTES))]}),
    ));
    refused(
        c(json!({"files": [file("a", &"x".repeat(MAX_CONTEXT_FILE_BYTES + 1))]})),
        "context.files[0].content: at most 1048576 bytes, got 1048577",
    );
    refused(
        c(json!({"files": [file("a", "")]})),
        "context.files[0].content: must not be empty",
    );
    refused(
        c(json!({"files": [{"name": "a", "content": [1]}]})),
        "context.files[0].content: must be a string",
    );
    refused(
        c(json!({"files": [{"name": "a"}]})),
        "context.files[0].content: is required",
    );
    refused(
        c(json!({"files": [{"name": "a", "content": "x", "mode": 1}]})),
        "context.files[0].mode: unknown field",
    );
}
