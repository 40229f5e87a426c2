//! Property tests of the line parser and the validation: whatever bytes arrive, parsing never
//! panics, every error names a field or the cause, and every valid tool input is accepted as
//! given. Bounded case counts keep this quick in CI; `fuzz/` runs the same targets for longer.

use askrelay::protocol::{parse_line, Op};
use proptest::prelude::*;
use serde_json::{json, Value};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Arbitrary JSON, biased towards the shapes the parser looks at.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,80}".prop_map(Value::String),
        prop_oneof![
            Just("ask"),
            Just("cancel"),
            Just("answer"),
            Just("id"),
            Just("label"),
            Just("questions")
        ]
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("op".to_owned()),
                        Just("questions".to_owned()),
                        Just("id".to_owned()),
                        Just("question".to_owned()),
                        Just("header".to_owned()),
                        Just("options".to_owned()),
                        Just("label".to_owned()),
                        Just("description".to_owned()),
                        Just("multiSelect".to_owned()),
                        Just("request_id".to_owned()),
                        Just("caller".to_owned()),
                        Just("scope".to_owned()),
                        "[a-z_]{1,12}",
                    ],
                    inner
                ),
                0..8
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn valid_question(i: usize) -> impl Strategy<Value = Value> {
    (
        "\\PC{1,60}",
        "\\PC{1,400}",
        proptest::option::of("\\PC{0,80}"),
        // Labels: letters of several scripts, digits, punctuation and emoji, sometimes joined
        // (👩‍💻); invisible characters are not valid in labels.
        prop::collection::btree_set(
            "[a-zA-Zéß日本語Жя0-9🚀 ._()-]{1,120}(👩\u{200D}💻)?",
            0..25,
        ),
        any::<bool>(),
    )
        .prop_filter("non-blank text", |(id, q, _, labels, _)| {
            !id.trim().is_empty()
                && !q.trim().is_empty()
                && labels.iter().all(|l| !l.trim().is_empty())
        })
        .prop_filter("labels that do not look alike", |(_, _, _, labels, _)| {
            let skeletons: std::collections::BTreeSet<String> = labels
                .iter()
                .map(|l| unicode_security::skeleton(l).collect())
                .collect();
            skeletons.len() == labels.len()
        })
        .prop_map(move |(id, q, header, labels, multi)| {
            let options: Vec<Value> = labels.into_iter().map(|l| json!({"label": l})).collect();
            let multi = multi && !options.is_empty();
            let mut v = json!({"id": format!("{i}-{id}"), "question": q, "options": options, "multiSelect": multi});
            if let Some(h) = header {
                v["header"] = json!(h);
            }
            v
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = parse_line(&bytes, 10);
    }

    #[test]
    fn arbitrary_json_gets_an_op_or_an_error_that_names_something(v in any_json()) {
        let line = serde_json::to_vec(&v).unwrap();
        if let Err(bad) = parse_line(&line, 10) {
            prop_assert_eq!(bad.error.code.as_str(), "INVALID_REQUEST");
            // "field: rule" or a sentence about the line itself.
            prop_assert!(bad.error.message.contains(':') || bad.error.message.starts_with("the line"),
                "{}", bad.error.message);
        }
    }

    #[test]
    fn arbitrary_asks_never_panic(mut v in any_json()) {
        if let Value::Object(m) = &mut v {
            m.insert("op".into(), json!("ask"));
        }
        let _ = parse_line(&serde_json::to_vec(&v).unwrap(), 10);
    }

    #[test]
    fn valid_tool_inputs_are_accepted_as_given(
        qs in (1usize..4).prop_flat_map(|n| (0..n).map(valid_question).collect::<Vec<_>>())
    ) {
        let line = serde_json::to_vec(&json!({"op": "ask", "questions": qs})).unwrap();
        match parse_line(&line, 10) {
            Ok(Op::Ask(ask)) => {
                prop_assert_eq!(ask.questions.len(), qs.len());
                // Parsing keeps every string exactly (the answer returns labels byte for byte).
                let back = serde_json::to_value(&ask.questions).unwrap();
                for (a, b) in back.as_array().unwrap().iter().zip(&qs) {
                    prop_assert_eq!(&a["id"], &b["id"]);
                    prop_assert_eq!(&a["question"], &b["question"]);
                    prop_assert_eq!(&a["options"], &b["options"]);
                }
            }
            other => prop_assert!(false, "rejected a valid input: {:?}", other),
        }
    }
}
