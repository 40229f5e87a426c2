//! What the lines on the socket mean (SPEC §2): client operations and daemon events.
//!
//! Framing (splitting bytes into lines) lives in [`crate::server::framing`]; this module only
//! turns one line into an [`Op`] and an [`Event`] into one line. Every parse failure is an
//! [`AskError`] that names the field, so a bad line gets a structured reply, not a dropped socket.

use crate::core::answer::QuestionAnswer;
use crate::core::model::{parse_ask, parse_request_id};
use crate::core::{Ask, AskError, ErrorCode};
use crate::store::{Outcome, Post, StoredRequest};
use serde_json::{json, Map, Value};

/// The operations a client can send. `ask` and `cancel` are SPEC §2; the rest serve the
/// supervision CLI and are documented in docs/protocol.md.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Ask(Ask),
    Cancel {
        request_id: String,
        reason: Option<String>,
    },
    Pending,
    Answer {
        request_id: String,
        question: String,
        select: Vec<String>,
        custom: Option<String>,
        by: Option<String>,
    },
    History {
        limit: u32,
    },
    Health,
}

pub const OPS: &[&str] = &["ask", "cancel", "pending", "answer", "history", "health"];

/// A line that could not be understood, with the request id when it was readable.
#[derive(Debug, Clone, PartialEq)]
pub struct BadLine {
    pub request_id: Option<String>,
    pub error: AskError,
}

/// Parses one line (without its newline).
pub fn parse_line(line: &[u8], max_questions: usize) -> Result<Op, BadLine> {
    let value: Value = serde_json::from_slice(line).map_err(|e| BadLine {
        request_id: None,
        error: AskError::invalid(format!("the line is not valid JSON: {e}")),
    })?;
    let Value::Object(obj) = value else {
        return Err(BadLine {
            request_id: None,
            error: AskError::invalid("the line must be a JSON object with an \"op\" field"),
        });
    };
    let request_id = obj
        .get("request_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    parse_op(&obj, max_questions).map_err(|error| BadLine { request_id, error })
}

fn parse_op(obj: &Map<String, Value>, max_questions: usize) -> Result<Op, AskError> {
    let op = match obj.get("op") {
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(AskError::invalid("op: must be a string")),
        None => {
            return Err(AskError::invalid(format!(
                "op: is required; one of {}",
                OPS.join(", ")
            )))
        }
    };
    match op {
        "ask" => parse_ask(obj, max_questions).map(Op::Ask),
        "cancel" => {
            only(obj, &["op", "request_id", "reason"])?;
            Ok(Op::Cancel {
                request_id: required_request_id(obj)?,
                reason: opt_string(obj, "reason")?,
            })
        }
        "pending" => {
            only(obj, &["op"])?;
            Ok(Op::Pending)
        }
        "answer" => {
            only(
                obj,
                &["op", "request_id", "question", "select", "custom", "by"],
            )?;
            let question = opt_string(obj, "question")?
                .ok_or_else(|| AskError::invalid("question: is required (a question id)"))?;
            let select = match obj.get("select") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| AskError::invalid("select: must be an array of labels"))
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(AskError::invalid("select: must be an array of labels")),
            };
            Ok(Op::Answer {
                request_id: required_request_id(obj)?,
                question,
                select,
                custom: opt_string(obj, "custom")?,
                by: opt_string(obj, "by")?,
            })
        }
        "history" => {
            only(obj, &["op", "limit"])?;
            let limit = match obj.get("limit") {
                None | Some(Value::Null) => 20,
                Some(v) => v
                    .as_u64()
                    .filter(|n| (1..=1000).contains(n))
                    .ok_or_else(|| AskError::invalid("limit: must be a number from 1 to 1000"))?
                    as u32,
            };
            Ok(Op::History { limit })
        }
        "health" => {
            only(obj, &["op"])?;
            Ok(Op::Health)
        }
        other => Err(AskError::invalid(format!(
            "op: unknown operation {other:?}; expected one of {}",
            OPS.join(", ")
        ))),
    }
}

fn only(obj: &Map<String, Value>, known: &[&str]) -> Result<(), AskError> {
    match obj.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(AskError::invalid(format!(
            "{k}: unknown field for this op; expected {}",
            known.join(", ")
        ))),
        None => Ok(()),
    }
}

fn required_request_id(obj: &Map<String, Value>) -> Result<String, AskError> {
    match obj.get("request_id") {
        None | Some(Value::Null) => Err(AskError::invalid("request_id: is required")),
        Some(v) => parse_request_id(v),
    }
}

fn opt_string(obj: &Map<String, Value>, name: &str) -> Result<Option<String>, AskError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(AskError::invalid(format!("{name}: must be a string"))),
    }
}

/// A line from the daemon.
#[derive(Debug, Clone)]
pub enum Event {
    Accepted {
        request_id: String,
        answerer: String,
        detail: Map<String, Value>,
    },
    /// `result` is the exact §1 JSON, embedded byte for byte.
    Answered {
        request_id: String,
        result: String,
    },
    Error {
        request_id: Option<String>,
        error: AskError,
    },
    Cancelled {
        request_id: String,
    },
    /// The reply to `answer`: the settlement counted.
    AnswerAccepted {
        request_id: String,
        question: String,
        request_answered: bool,
    },
    /// Replies to `pending`, `history` and `health`.
    Report {
        event: &'static str,
        body: Value,
    },
}

impl Event {
    pub fn final_line(request_id: &str, outcome: &Outcome) -> Event {
        match outcome {
            Outcome::Answered(result) => Event::Answered {
                request_id: request_id.to_owned(),
                result: result.clone(),
            },
            Outcome::Error(e) => Event::Error {
                request_id: Some(request_id.to_owned()),
                error: e.clone(),
            },
        }
    }

    /// The line, without its newline.
    pub fn to_line(&self) -> String {
        match self {
            Event::Accepted {
                request_id,
                answerer,
                detail,
            } => {
                let mut m = Map::new();
                m.insert("event".into(), json!("accepted"));
                m.insert("request_id".into(), json!(request_id));
                m.insert("answerer".into(), json!(answerer));
                for (k, v) in detail {
                    m.entry(k.clone()).or_insert_with(|| v.clone());
                }
                Value::Object(m).to_string()
            }
            Event::Answered { request_id, result } => format!(
                "{{\"event\":\"answered\",\"request_id\":{},\"result\":{result}}}",
                Value::String(request_id.clone())
            ),
            Event::Error { request_id, error } => {
                let mut m = Map::new();
                m.insert("event".into(), json!("error"));
                if let Some(id) = request_id {
                    m.insert("request_id".into(), json!(id));
                }
                m.insert("code".into(), json!(error.code.as_str()));
                m.insert("message".into(), json!(error.message));
                Value::Object(m).to_string()
            }
            Event::Cancelled { request_id } => {
                json!({"event": "cancelled", "request_id": request_id}).to_string()
            }
            Event::AnswerAccepted {
                request_id,
                question,
                request_answered,
            } => json!({
                "event": "answer_accepted",
                "request_id": request_id,
                "question": question,
                "request_answered": request_answered,
            })
            .to_string(),
            Event::Report { event, body } => {
                let mut m = Map::new();
                m.insert("event".into(), json!(event));
                if let Value::Object(b) = body {
                    m.extend(b.clone());
                }
                Value::Object(m).to_string()
            }
        }
    }
}

/// An RFC 3339 timestamp for a millisecond time.
pub fn rfc3339(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// How a stored request looks in `pending` and `history` replies.
pub fn request_view(req: &StoredRequest, posts: &[Post]) -> Value {
    let questions: Vec<Value> = req
        .questions
        .iter()
        .zip(&req.answers)
        .enumerate()
        .map(|(i, (q, a))| {
            let answered = a.as_ref().map(|a| {
                let qa = QuestionAnswer::build(q, &a.settlement);
                json!({
                    "by": a.by,
                    "via": a.via,
                    "at": rfc3339(a.at_ms),
                    "selected": qa.selected,
                    "custom": qa.custom,
                })
            });
            let post = posts.iter().find(|p| p.idx == i).map(|p| {
                json!({
                    "channel": p.channel,
                    "message": p.message,
                    "posted": p.message.is_some(),
                    "attempts": p.attempts,
                    "last_error": p.last_error,
                })
            });
            json!({
                "id": q.id,
                "header": q.header,
                "question": q.question,
                "multiSelect": q.multi_select,
                "options": q.options.iter().map(|o| o.label.as_str()).collect::<Vec<_>>(),
                "answered": answered,
                "post": post,
            })
        })
        .collect();
    let (result, error) = match &req.outcome {
        Some(Outcome::Answered(r)) => (serde_json::from_str(r).unwrap_or(Value::Null), Value::Null),
        Some(Outcome::Error(e)) => (
            Value::Null,
            json!({"code": e.code.as_str(), "message": e.message}),
        ),
        None => (Value::Null, Value::Null),
    };
    json!({
        "request_id": req.request_id,
        "status": req.status.as_str(),
        "answerer": req.answerer,
        "accepted": req.accepted,
        "created_at": rfc3339(req.created_at_ms),
        "ended_at": req.ended_at_ms.map(rfc3339),
        "caller": req.caller,
        "scope": req.scope,
        "peer": {"uid": req.peer_uid, "pid": req.peer_pid},
        "questions": questions,
        "result": result,
        "error": error,
    })
}

/// Maps an error code read from a line back to the enum (unknown codes become `INTERNAL`).
pub fn parse_code(s: &str) -> ErrorCode {
    ErrorCode::parse(s).unwrap_or(ErrorCode::Internal)
}

#[cfg(test)]
mod tests {
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
    }

    #[test]
    fn answered_embeds_the_result_byte_for_byte() {
        let e = Event::Answered {
            request_id: "r".into(),
            result: r#"{"answers":[{"id":"a","selected":["x"]}]}"#.into(),
        };
        assert_eq!(
            e.to_line(),
            r#"{"event":"answered","request_id":"r","result":{"answers":[{"id":"a","selected":["x"]}]}}"#
        );
    }
}
