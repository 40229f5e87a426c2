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
        // Deterministic: the same cases every run (a property that fails fails always).
        rng_seed: proptest::test_runner::RngSeed::Fixed(20261202),
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

/// The fields a message may start with: the ones of every op, plus `op` itself.
const FIELDS: &[&str] = &[
    "op",
    "request_id",
    "caller",
    "scope",
    "questions",
    "question",
    "select",
    "custom",
    "by",
    "reason",
    "limit",
    "after",
    "before",
    "header",
    "options",
    "id",
];

/// Every refusal is `INVALID_REQUEST`, and its message starts with the path of the field it is
/// about (`questions[1].options[0].label: …`, `scope.project: …`, `scope key "k": …`), or with
/// "the line" when the line itself is the problem (not JSON, not an object). An unknown field
/// is named as given.
fn assert_names_a_field(bad: &askrelay::protocol::BadLine) -> Result<(), TestCaseError> {
    let msg = &bad.error.message;
    prop_assert_eq!(bad.error.code.as_str(), "INVALID_REQUEST", "{}", msg);
    if msg.starts_with("the line ") {
        return Ok(());
    }
    let Some((path, rule)) = msg.split_once(": ") else {
        return Err(TestCaseError::fail(format!(
            "no \"field: rule\" in {msg:?}"
        )));
    };
    prop_assert!(!rule.trim().is_empty(), "no rule in {:?}", msg);
    if rule.starts_with("unknown field") {
        return Ok(());
    }
    let root = path
        .strip_prefix("scope key ")
        .map(|_| "scope")
        .unwrap_or_else(|| path.split(['.', '[']).next().unwrap_or(""));
    prop_assert!(
        FIELDS.contains(&root),
        "{:?} does not start with a field",
        msg
    );
    // Indices are numbers: `questions[3]`, not `questions[x]`.
    for part in path.split('[').skip(1) {
        let n = part.split(']').next().unwrap_or("");
        prop_assert!(
            !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()),
            "{:?}: a bad index in the path",
            msg
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_never_panic_and_errors_name_the_cause(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        if let Err(bad) = parse_line(&bytes, 10) {
            assert_names_a_field(&bad)?;
        }
    }

    #[test]
    fn json_ish_bytes_get_an_op_or_an_error_that_names_something(
        s in r#"\{("(op|questions|request_id|id|label)"|[:,\[\]{}0-9"a-z ]){0,60}\}?"#
    ) {
        if let Err(bad) = parse_line(s.as_bytes(), 10) {
            assert_names_a_field(&bad)?;
        }
    }

    #[test]
    fn arbitrary_json_gets_an_op_or_an_error_that_names_something(v in any_json()) {
        let line = serde_json::to_vec(&v).unwrap();
        if let Err(bad) = parse_line(&line, 10) {
            assert_names_a_field(&bad)?;
        }
    }

    #[test]
    fn arbitrary_asks_get_an_error_that_names_the_field(mut v in any_json()) {
        if let Value::Object(m) = &mut v {
            m.insert("op".into(), json!("ask"));
        }
        if let Err(bad) = parse_line(&serde_json::to_vec(&v).unwrap(), 10) {
            assert_names_a_field(&bad)?;
        }
    }

    #[test]
    fn arbitrary_answers_and_cancels_name_the_field(mut v in any_json(), op in prop_oneof![
        Just("answer"), Just("cancel"), Just("pending"), Just("history"), Just("health")
    ]) {
        if let Value::Object(m) = &mut v {
            m.insert("op".into(), json!(op));
        }
        if let Err(bad) = parse_line(&serde_json::to_vec(&v).unwrap(), 10) {
            assert_names_a_field(&bad)?;
        }
    }

    #[test]
    fn broken_valid_inputs_name_the_broken_field(
        qs in (1usize..4).prop_flat_map(|n| (0..n).map(valid_question).collect::<Vec<_>>()),
        which in any::<prop::sample::Index>(),
        breakage in 0usize..6,
    ) {
        // One field of a valid input made invalid: the message names exactly that field.
        let mut v = json!({"op": "ask", "questions": qs});
        let q = which.index(qs.len());
        let (field, bad) = match breakage {
            0 => (format!("questions[{q}].id"), json!("")),
            1 => (format!("questions[{q}].question"), json!(7)),
            2 => (format!("questions[{q}].header"), json!("h".repeat(81))),
            3 => (format!("questions[{q}].multiSelect"), json!("yes")),
            4 => (format!("questions[{q}].options"), json!({"label": "a"})),
            _ => (format!("questions[{q}].bogus"), json!(1)),
        };
        let name = field.rsplit('.').next().unwrap().to_owned();
        v["questions"][q][name] = bad;
        let bad = parse_line(&serde_json::to_vec(&v).unwrap(), 10).unwrap_err();
        assert_names_a_field(&bad)?;
        prop_assert!(bad.error.message.starts_with(&format!("{field}: ")), "{}", bad.error.message);
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
