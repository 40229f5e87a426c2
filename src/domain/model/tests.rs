//! The ask's rules that need no JSON: options picked by label or number, and the one-line
//! rule. (What a line may hold, field by field, is tested with its parser: `protocol::ask`.)

use super::*;

fn s(n: usize) -> String {
    "é".repeat(n)
}

#[test]
fn picks_resolve_to_options_by_label_or_number() {
    let q = Question {
        id: "q".into(),
        question: "?".into(),
        header: None,
        options: ["a", "b", "2"]
            .iter()
            .map(|l| QuestionOption {
                label: (*l).into(),
                description: None,
            })
            .collect(),
        multi_select: true,
    };
    let picks = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(q.resolve(&picks(&["b", "a"]), false).unwrap(), [1, 0]);
    // A label wins over a number; numbers count from 1, and only for a person.
    assert_eq!(q.resolve(&picks(&["2", "1"]), true).unwrap(), [2, 0]);
    let e = q.resolve(&picks(&["1"]), false).unwrap_err();
    assert_eq!(e.code, super::super::error::ErrorCode::InvalidRequest);
    assert!(
        e.message
            .contains(r#"has no option "1"; its options are: "a", "b", "2""#),
        "{e}"
    );
    let e = q.resolve(&picks(&["9"]), true).unwrap_err();
    assert!(
        e.message
            .contains("give a label or a number: 1. a, 2. b, 3. 2"),
        "{e}"
    );
}

#[test]
fn check_line_is_the_one_line_rule() {
    assert!(check_line(&s(5), "f", 5).is_ok());
    assert_eq!(
        check_line(&s(6), "f", 5).unwrap_err().message,
        "f: at most 5 characters, got 6"
    );
    assert_eq!(
        check_line("a\u{1b}[2J", "f", 50).unwrap_err().message,
        "f: must not contain control characters"
    );
    assert_eq!(
        check_line(" ", "f", 5).unwrap_err().message,
        "f: must not be empty"
    );
}
