//! The protocol's tests: lines parse into the ops and events they mean, errors name the field,
//! and events read back byte for byte.

use super::*;

fn bad(line: &str) -> String {
    match parse_line(line.as_bytes(), 10) {
        Err(b) => b.error.message,
        Ok(op) => panic!("{line} parsed as {op:?}"),
    }
}

#[test]
fn bad_lines_name_the_problem() {
    assert!(bad("{nope").contains("not valid JSON"));
    assert!(bad("[1]").contains("JSON object"));
    assert!(bad(r#"{"op":"fly"}"#).contains("unknown operation \"fly\""));
    assert!(bad(r#"{"op":"cancel"}"#).contains("request_id: is required"));
    assert!(bad(r#"{"op":"history","limit":0}"#).contains("limit"));
    assert!(bad(r#"{"op":"history","limit":201}"#).contains("limit"));
    assert!(bad(r#"{"op":"pending","after":"x"}"#).contains("after"));
}

#[test]
fn answered_embeds_the_result_byte_for_byte() {
    let result = r#"{"answers":[{"id":"a","selected":["x"]}]}"#;
    let e = Event::final_line("r", &Outcome::Answered(result.into()));
    let line = e.to_line();
    assert_eq!(
        line,
        r#"{"event":"answered","request_id":"r","result":{"answers":[{"id":"a","selected":["x"]}]}}"#
    );
    let Event::Answered { result: back, .. } = Event::from_line(&line).unwrap() else {
        panic!()
    };
    assert_eq!(back.get(), result);
}

#[test]
fn ops_round_trip_through_the_server_parser() {
    let ops = [
        Op::Cancel {
            request_id: "r".into(),
            reason: Some("why".into()),
        },
        Op::Pending {
            request_id: None,
            limit: Some(5),
            after: Some("12".into()),
        },
        Op::Answer {
            request_id: "r".into(),
            question: "q".into(),
            select: vec!["a".into()],
            custom: None,
            by: Some("me".into()),
            confirm: Some("prod-eu".into()),
        },
        Op::History {
            limit: None,
            before: None,
        },
        Op::Health,
    ];
    for op in ops {
        let line = op.to_line();
        assert_eq!(parse_line(line.as_bytes(), 10).unwrap(), op, "{line}");
    }
}

#[test]
fn events_round_trip() {
    let events = [
        Event::error(Some("r".into()), AskError::invalid("x: bad")),
        Event::Cancelled {
            request_id: "r".into(),
        },
        Event::ShuttingDown {
            request_id: "r".into(),
        },
        Event::Accepted {
            request_id: "r".into(),
            answerer: "terminal".into(),
            detail: Accepted {
                hint: Some("h".into()),
                ..Accepted::default()
            },
        },
    ];
    for e in events {
        let line = e.to_line();
        assert_eq!(Event::from_line(&line).unwrap().to_line(), line);
    }
}

fn parse(line: &str) -> Result<Op, BadLine> {
    parse_line(line.as_bytes(), 10)
}

/// The whole message of a refused line, and the request id it was filed under.
fn refused(line: &str) -> (String, Option<String>) {
    match parse(line) {
        Err(b) => {
            assert_eq!(b.error.code, ErrorCode::InvalidRequest, "{line}");
            (b.error.message, b.request_id)
        }
        Ok(op) => panic!("{line} parsed as {op:?}"),
    }
}

#[test]
fn every_op_parses_to_exactly_what_it_says() {
    assert_eq!(
        parse(r#"{"op":"cancel","request_id":"r1","reason":"  "}"#).unwrap(),
        Op::Cancel {
            request_id: "r1".into(),
            reason: None
        },
        "a blank reason is no reason"
    );
    assert_eq!(
        parse(r#"{"op":"pending","request_id":"r1","limit":1,"after":"0"}"#).unwrap(),
        Op::Pending {
            request_id: Some("r1".into()),
            limit: Some(1),
            after: Some("0".into())
        }
    );
    assert_eq!(
        parse(r#"{"op":"pending","request_id":null}"#).unwrap(),
        Op::Pending {
            request_id: None,
            limit: None,
            after: None
        }
    );
    assert_eq!(
        parse(
            r#"{"op":"answer","request_id":"r1","question":"q","select":["a","b"],"custom":"c","by":"on call"}"#
        )
        .unwrap(),
        Op::Answer {
            request_id: "r1".into(),
            question: "q".into(),
            select: vec!["a".into(), "b".into()],
            custom: Some("c".into()),
            by: Some("on call".into()),
            confirm: None
        }
    );
    assert_eq!(
        parse(r#"{"op":"answer","request_id":"r1","question":"q","select":null}"#).unwrap(),
        Op::Answer {
            request_id: "r1".into(),
            question: "q".into(),
            select: vec![],
            custom: None,
            by: None,
            confirm: None
        }
    );
    assert_eq!(
        parse(r#"{"op":"history","limit":200,"before":"7"}"#).unwrap(),
        Op::History {
            limit: Some(200),
            before: Some("7".into())
        }
    );
    assert_eq!(parse(r#"{"op":"health"}"#).unwrap(), Op::Health);
    let Op::Ask(ask) =
        parse(r#"{"op":"ask","request_id":"r1","questions":[{"id":"q","question":"Go?"}]}"#)
            .unwrap()
    else {
        panic!("not an ask")
    };
    assert_eq!(ask.request_id.as_deref(), Some("r1"));
    assert_eq!(ask.questions[0].question, "Go?");
}

#[test]
fn each_op_refuses_fields_it_does_not_have() {
    for (line, known) in [
        (
            r#"{"op":"cancel","request_id":"r","x":1}"#,
            "op, request_id, reason",
        ),
        (r#"{"op":"pending","x":1}"#, "op, request_id, limit, after"),
        (
            r#"{"op":"answer","request_id":"r","question":"q","x":1}"#,
            "op, request_id, question, select, custom, by, confirm",
        ),
        (r#"{"op":"history","x":1}"#, "op, limit, before"),
        (r#"{"op":"health","x":1}"#, "op"),
    ] {
        assert_eq!(
            refused(line).0,
            format!("x: unknown field for this op; expected {known}"),
            "{line}"
        );
    }
}

#[test]
fn each_broken_field_is_named() {
    let cases = [
        (r#"{"op":1}"#, "op: must be a string"),
        (
            r#"{"nop":"ask"}"#,
            "op: is required; one of ask, cancel, pending, answer, history, health, \
             audit_export",
        ),
        (
            r#"{"op":"cancel","request_id":null}"#,
            "request_id: is required",
        ),
        (
            r#"{"op":"answer","request_id":"r"}"#,
            "question: is required (a question id)",
        ),
        (
            r#"{"op":"answer","request_id":"r","question":"q","select":"a"}"#,
            "select: must be an array of labels",
        ),
        (
            r#"{"op":"answer","request_id":"r","question":"q","select":[1]}"#,
            "select: must be an array of labels",
        ),
        (
            r#"{"op":"answer","request_id":"r","question":"q","custom":1}"#,
            "custom: must be a string",
        ),
        (
            r#"{"op":"answer","question":"q"}"#,
            "request_id: is required",
        ),
        (
            r#"{"op":"history","limit":0}"#,
            "limit: must be a number from 1 to 200",
        ),
        (
            r#"{"op":"history","limit":201}"#,
            "limit: must be a number from 1 to 200",
        ),
        (
            r#"{"op":"history","limit":"5"}"#,
            "limit: must be a number from 1 to 200",
        ),
        (
            r#"{"op":"history","before":"-1"}"#,
            "before: must be the `next` value of a previous reply",
        ),
        (
            r#"{"op":"pending","after":"x"}"#,
            "after: must be the `next` value of a previous reply",
        ),
        (
            r#"{"op":"pending","request_id":""}"#,
            "request_id: must not be empty",
        ),
    ];
    for (line, want) in cases {
        let (message, _) = refused(line);
        assert!(message.starts_with(want), "{line}: {message}");
    }
    let long = |n: usize| "x".repeat(n);
    let by = |s: String| format!(r#"{{"op":"answer","request_id":"r","question":"q","by":"{s}"}}"#);
    assert!(parse(&by(long(MAX_NOTE_CHARS))).is_ok());
    assert!(refused(&by(long(MAX_NOTE_CHARS + 1))).0.starts_with("by: "));
    assert!(refused(&by("a\\u001bb".into())).0.starts_with("by: "));
    let reason = |s: String| format!(r#"{{"op":"cancel","request_id":"r","reason":"{s}"}}"#);
    assert!(parse(&reason(long(MAX_REASON_CHARS))).is_ok());
    assert!(refused(&reason(long(MAX_REASON_CHARS + 1)))
        .0
        .starts_with("reason: "));
}

#[test]
fn a_refused_line_keeps_its_request_id_only_when_it_is_valid() {
    assert_eq!(
        refused(r#"{"op":"cancel","request_id":"r1","x":1}"#)
            .1
            .as_deref(),
        Some("r1")
    );
    assert_eq!(
        refused(r#"{"op":"cancel","request_id":"r\u0007","x":1}"#).1,
        None
    );
    assert_eq!(refused(r#"{"op":"cancel","request_id":7,"x":1}"#).1, None);
    assert_eq!(refused("[]").1, None);
    assert_eq!(
        refused("[]").0,
        "the line must be a JSON object with an \"op\" field"
    );
    assert!(refused("{").0.starts_with("the line is not valid JSON: "));
}

#[test]
fn cursors_are_non_negative_keys() {
    assert_eq!(parse_cursor("0"), Some(0));
    assert_eq!(parse_cursor("42"), Some(42));
    assert_eq!(parse_cursor("-1"), None);
    assert_eq!(parse_cursor("4x"), None);
}

#[test]
fn every_event_names_its_request_or_none() {
    let r = || "r".to_owned();
    let named = [
        Event::Accepted {
            request_id: r(),
            answerer: "terminal".into(),
            detail: Accepted::default(),
        },
        Event::final_line("r", &Outcome::Answered("{}".into())),
        Event::Cancelled { request_id: r() },
        Event::ShuttingDown { request_id: r() },
        Event::AnswerAccepted {
            request_id: r(),
            question: "q".into(),
            request_answered: true,
            votes: None,
        },
        Event::final_line("r", &Outcome::Error(AskError::invalid("x"))),
    ];
    for e in &named {
        assert_eq!(e.request_id(), Some("r"), "{e:?}");
    }
    let unnamed = [
        Event::error(None, AskError::invalid("x")),
        Event::Pending {
            requests: vec![],
            next: None,
            outbox: None,
        },
        Event::History {
            requests: vec![],
            next: Some("3".into()),
        },
        Event::Health(Health {
            version: "1".into(),
            status: HealthStatus::Ok,
            failing: vec![],
            gateway: GatewayHealth::NotConfigured,
            connections: Default::default(),
            pending: 0,
            answerers: vec![],
            store: StoreHealth::Ok,
            outbox: OutboxBacklog::default(),
            cluster: None,
        }),
    ];
    for e in &unnamed {
        assert_eq!(e.request_id(), None, "{e:?}");
        let line = e.to_line();
        assert_eq!(Event::from_line(&line).unwrap().to_line(), line);
    }
    let Event::Error { code, message, .. } = Event::final_line(
        "r",
        &Outcome::Error(AskError::new(ErrorCode::Aborted, "gone")),
    ) else {
        panic!("not an error line")
    };
    assert_eq!((code, message.as_str()), (ErrorCode::Aborted, "gone"));
}
