//! Every limit from both sides: exactly at the limit is accepted, one past it is refused with
//! `INVALID_REQUEST` and a message that starts with the field's path. Characters are counted as
//! Unicode scalar values, so the at-limit inputs use multi-byte characters too.

use crate::harness::*;
use askrelay::domain::{Question, Settlement};
use askrelay::protocol::{parse_line, Op};
use serde_json::{json, Value};

const MAX_QUESTIONS: usize = 10;

fn parse(line: &Value) -> Result<Op, String> {
    let bytes = serde_json::to_vec(line).unwrap();
    parse_line(&bytes, MAX_QUESTIONS).map_err(|bad| {
        assert_eq!(bad.error.code.as_str(), "INVALID_REQUEST", "{line}");
        bad.error.message
    })
}

fn accepted(what: &str, line: &Value) -> Op {
    match parse(line) {
        Ok(op) => op,
        Err(e) => panic!("{what}: at the limit, refused: {e}"),
    }
}

fn refused(what: &str, line: &Value, field: &str) {
    match parse(line) {
        Ok(_) => panic!("{what}: one past the limit, accepted"),
        Err(e) => assert!(
            e.starts_with(&format!("{field}: ")),
            "{what}: the message should name {field}: {e}"
        ),
    }
}

/// An ask with `n` questions of `options` options each, ids and labels unique.
fn ask(n: usize, options: usize) -> Value {
    let qs: Vec<Value> = (0..n)
        .map(|i| {
            let opts: Vec<Value> = (0..options)
                .map(|j| json!({"label": format!("option {j}")}))
                .collect();
            json!({"id": format!("q{i}"), "question": "Which one?", "options": opts})
        })
        .collect();
    json!({"op": "ask", "request_id": "limits", "questions": qs})
}

/// `s` repeated to exactly `n` characters (`s` is one character).
fn chars(s: &str, n: usize) -> String {
    s.repeat(n)
}

/// Both sides of a one-question text field: `set` puts a string of `n` characters in place.
fn both_sides(what: &str, limit: usize, field: &str, set: impl Fn(&mut Value, String)) {
    for c in ["a", "é", "語"] {
        let mut at = ask(1, 2);
        set(&mut at, chars(c, limit));
        accepted(&format!("{what} ({c})"), &at);
        let mut over = ask(1, 2);
        set(&mut over, chars(c, limit + 1));
        refused(&format!("{what} ({c})"), &over, field);
    }
}

#[test]
fn ten_questions_and_twenty_five_options() {
    match accepted("10 questions", &ask(10, 2)) {
        Op::Ask(a) => assert_eq!(a.questions.len(), 10),
        other => panic!("{other:?}"),
    }
    refused("11 questions", &ask(11, 2), "questions");
    match accepted("25 options", &ask(1, 25)) {
        Op::Ask(a) => assert_eq!(a.questions[0].options.len(), 25),
        other => panic!("{other:?}"),
    }
    refused("26 options", &ask(1, 26), "questions[0].options");
    // The configured maximum is the limit, not the default.
    let line = serde_json::to_vec(&ask(3, 2)).unwrap();
    assert!(parse_line(&line, 3).is_ok());
    let err = parse_line(&serde_json::to_vec(&ask(4, 2)).unwrap(), 3).unwrap_err();
    assert!(
        err.error.message.starts_with("questions: at most 3"),
        "{}",
        err.error.message
    );
}

#[test]
fn question_text_fields() {
    both_sides("question id", 64, "questions[0].id", |v, s| {
        v["questions"][0]["id"] = json!(s)
    });
    both_sides("question text", 4000, "questions[0].question", |v, s| {
        v["questions"][0]["question"] = json!(s)
    });
    both_sides("header", 80, "questions[0].header", |v, s| {
        v["questions"][0]["header"] = json!(s)
    });
    both_sides("label", 200, "questions[0].options[1].label", |v, s| {
        v["questions"][0]["options"][1]["label"] = json!(s)
    });
    both_sides(
        "description",
        1000,
        "questions[0].options[0].description",
        |v, s| v["questions"][0]["options"][0]["description"] = json!(s),
    );
}

#[test]
fn request_ids() {
    for c in ["a", "é", "語"] {
        let mut at = ask(1, 2);
        at["request_id"] = json!(chars(c, 128));
        match accepted("request_id of 128", &at) {
            Op::Ask(a) => assert_eq!(a.request_id.unwrap().chars().count(), 128),
            other => panic!("{other:?}"),
        }
        let mut over = ask(1, 2);
        over["request_id"] = json!(chars(c, 129));
        refused("request_id of 129", &over, "request_id");
    }
    // Control characters anywhere, of every kind: C0, DEL, C1.
    for bad in [
        "a\u{0}b", "a\nb", "\tab", "ab\u{1b}", "a\u{7f}", "a\u{85}b", "a\u{9f}",
    ] {
        let mut v = ask(1, 2);
        v["request_id"] = json!(bad);
        refused(&format!("request_id {bad:?}"), &v, "request_id");
    }
    // Printable punctuation and spaces inside are fine; blank is not.
    let mut v = ask(1, 2);
    v["request_id"] = json!("deploy 42 / step #3");
    accepted("request_id with spaces", &v);
    for blank in ["", "   "] {
        let mut v = ask(1, 2);
        v["request_id"] = json!(blank);
        refused("a blank request_id", &v, "request_id");
    }
    // The other ops check request ids the same way.
    for op in ["cancel", "pending"] {
        let at = json!({"op": op, "request_id": chars("x", 128)});
        accepted(&format!("{op} request_id of 128"), &at);
        let over = json!({"op": op, "request_id": chars("x", 129)});
        refused(&format!("{op} request_id of 129"), &over, "request_id");
    }
}

#[test]
fn scope_labels_and_values() {
    // 16 labels, values of every accepted kind; numbers and booleans become their JSON text
    // and a null label is left out.
    let mut scope = serde_json::Map::new();
    for i in 0..13 {
        scope.insert(format!("k{i}"), json!(format!("v{i}")));
    }
    scope.insert("n".into(), json!(42));
    scope.insert("b".into(), json!(true));
    scope.insert("z".into(), Value::Null);
    let mut v = ask(1, 2);
    v["scope"] = Value::Object(scope.clone());
    match accepted("16 scope labels", &v) {
        Op::Ask(a) => {
            assert_eq!(a.scope.len(), 15, "the null label is left out");
            assert_eq!(a.scope["n"], "42");
            assert_eq!(a.scope["b"], "true");
            assert!(!a.scope.contains_key("z"));
        }
        other => panic!("{other:?}"),
    }
    // A 17th label is refused, whatever its value (null ones count: the limit is on the input).
    for extra in [json!("v"), json!(7), json!(false), Value::Null] {
        let mut s = scope.clone();
        s.insert("extra".into(), extra.clone());
        let mut v = ask(1, 2);
        v["scope"] = Value::Object(s);
        refused(&format!("a 17th label ({extra})"), &v, "scope");
    }
    // Values: 200 characters, of any width.
    for c in ["a", "é", "語"] {
        let mut v = ask(1, 2);
        v["scope"] = json!({"k": chars(c, 200)});
        accepted("a 200-character value", &v);
        v["scope"] = json!({"k": chars(c, 201)});
        refused("a 201-character value", &v, "scope.k");
    }
    // Keys: 64 characters.
    let mut v = ask(1, 2);
    v["scope"] = json!({chars("k", 64): "v"});
    accepted("a 64-character key", &v);
    let long = chars("k", 65);
    v["scope"] = json!({long.clone(): "v"});
    refused("a 65-character key", &v, &format!("scope key {long:?}"));
    // Objects and arrays are not labels.
    for bad in [json!({"a": 1}), json!([1])] {
        let mut v = ask(1, 2);
        v["scope"] = json!({"k": bad});
        refused("a structured value", &v, "scope.k");
    }
}

#[test]
fn caller_ids_notes_and_reasons() {
    for name in ["agent_id", "owner_agent_id"] {
        let mut v = ask(1, 2);
        v["caller"] = json!({name: chars("é", 128)});
        accepted(&format!("caller.{name} of 128"), &v);
        v["caller"] = json!({name: chars("é", 129)});
        refused(
            &format!("caller.{name} of 129"),
            &v,
            &format!("caller.{name}"),
        );
    }
    let answer = |by: String| json!({"op": "answer", "request_id": "r", "question": "q", "select": ["a"], "by": by});
    accepted("a note of 200", &answer(chars("é", 200)));
    refused("a note of 201", &answer(chars("é", 201)), "by");
    let cancel = |reason: String| json!({"op": "cancel", "request_id": "r", "reason": reason});
    accepted("a reason of 500", &cancel(chars("é", 500)));
    refused("a reason of 501", &cancel(chars("é", 501)), "reason");
    for op in ["pending", "history"] {
        accepted(&format!("{op} limit 1"), &json!({"op": op, "limit": 1}));
        accepted(&format!("{op} limit 200"), &json!({"op": op, "limit": 200}));
        refused(
            &format!("{op} limit 0"),
            &json!({"op": op, "limit": 0}),
            "limit",
        );
        refused(
            &format!("{op} limit 201"),
            &json!({"op": op, "limit": 201}),
            "limit",
        );
    }
}

#[test]
fn custom_text_of_four_thousand_characters() {
    let q: Question = serde_json::from_value(
        json!({"id": "q", "question": "Why?", "options": [{"label": "a"}], "multiSelect": false}),
    )
    .unwrap();
    for c in ["a", "é", "語"] {
        let ok = Settlement::text(chars(c, 4000)).normalise(&q).unwrap();
        assert_eq!(ok.custom.unwrap().chars().count(), 4000);
        let err = Settlement::text(chars(c, 4001)).normalise(&q).unwrap_err();
        assert_eq!(err.code.as_str(), "INVALID_REQUEST");
        assert!(
            err.message.starts_with("custom: at most 4000"),
            "{}",
            err.message
        );
    }
}

/// The same limits over the real socket: the answer op carries 4000 characters of custom text
/// into the result, one more is refused and the request stays pending.
#[tokio::test]
async fn custom_text_at_the_limit_over_the_socket() {
    let app = App::start().await;
    let free = json!({"questions": [{"id": "why", "question": "Why?"}]});
    let (mut asker, _) = app.ask("free", &free).await;
    let mut c = app.client().await;
    let over = c
        .call_json(
            &json!({"op": "answer", "request_id": "free", "question": "why",
            "custom": chars("語", 4001)}),
        )
        .await
        .unwrap();
    assert_eq!(over["code"], "INVALID_REQUEST", "{over}");
    assert!(
        over["message"].as_str().unwrap().starts_with("custom: "),
        "{over}"
    );
    assert!(app.hub().is_pending("free"));
    let at = c
        .call_json(
            &json!({"op": "answer", "request_id": "free", "question": "why",
            "custom": chars("語", 4000)}),
        )
        .await
        .unwrap();
    assert_eq!(at["event"], "answer_accepted", "{at}");
    let ev = expect_event(&mut asker, "answered").await;
    assert_eq!(
        ev["result"]["answers"][0]["custom"],
        json!(chars("語", 4000))
    );
}

/// A line of exactly `limits.max_line_bytes` (newline not counted) is read; one byte more is
/// skipped with an error naming the key, and the connection goes on.
#[tokio::test]
async fn a_line_of_exactly_max_line_bytes() {
    const MAX: usize = 2048;
    let app = App::start_with(|c| c.limits.max_line_bytes = MAX).await;
    let padded = |id: &str, len: usize| {
        let mut line = serde_json::to_vec(&ask_line(id, &yes_no("q"))).unwrap();
        // Whitespace before the closing brace keeps it valid JSON.
        let close = line.pop().unwrap();
        line.resize(len - 1, b' ');
        line.push(close);
        line.push(b'\n');
        line
    };
    let mut c = app.client().await;
    c.send_raw(&padded("over", MAX + 1)).await.unwrap();
    let ev = recv(&mut c, "the reply to a line one byte too long").await;
    assert_eq!(ev["code"], "INVALID_REQUEST", "{ev}");
    assert!(
        ev["message"].as_str().unwrap().contains("max_line_bytes"),
        "{ev}"
    );
    c.send_raw(&padded("at", MAX)).await.unwrap();
    let ev = expect_event(&mut c, "accepted").await;
    assert_eq!(ev["request_id"], "at");
}
