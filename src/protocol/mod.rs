//! What the lines on the socket mean (docs/contract.md, "Socket protocol"): client operations and daemon events, as one set
//! of types that the daemon and its clients (the CLI, the MCP front end) share.
//!
//! Framing (splitting bytes into lines) lives in [`framing`], which both ends use; this module
//! turns one line into an [`Op`] or an [`Event`] and back. The daemon parses operations with
//! [`parse_line`], whose errors name the field and the rule (serde's would not); clients write
//! them with serde. Events go the other way: the daemon writes them with serde, clients read
//! them with [`Event::from_line`], which keeps an answer's `result` byte for byte.

use crate::domain::answer::QuestionAnswer;
use crate::domain::audit::{ChainHead, ChainStart, ChainedRow};
use crate::domain::model::{
    check_line, check_request_id, Caller, Context, Scope, MAX_NOTE_CHARS, MAX_REASON_CHARS,
};
use crate::domain::request::{Outcome, Post, Request};
use crate::domain::text::Escaped;
/// What an `accepted` event reports; the answerers build it, so it lives with them in the core.
pub use crate::domain::Accepted;
use crate::domain::{Ask, AskError, ErrorCode};
use ask::{parse_ask, parse_request_id};
use fields::optional_string;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub mod ask;
mod fields;
pub mod framing;
mod health;
mod views;
pub use health::*;
pub use views::*;

/// Page sizes of `pending` and `history`: the default and the most one reply may carry.
pub const PENDING_PAGE_DEFAULT: u32 = 100;
pub const HISTORY_PAGE_DEFAULT: u32 = 20;
pub const PAGE_MAX: u32 = 200;

/// The operations a client can send. `ask` and `cancel` are in docs/contract.md, "Socket protocol"; the rest serve the
/// supervision CLI and are documented in docs/protocol.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    Ask(Ask),
    Cancel {
        request_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Ends the pending requests of an agent session (or one call of it, or one request) that
    /// the agent no longer waits for (docs/protocol.md, "withdraw").
    Withdraw {
        reason: String,
        /// Required unless `request_id` is given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        event: Option<String>,
    },
    /// Mints the one-use grant of a request the caller asked and a person allowed once
    /// (docs/protocol.md, "once_grant").
    OnceGrant {
        request_id: String,
    },
    /// Uses the caller's one-use grant for one call of an agent session, if there is one
    /// (docs/protocol.md, "use_once_grant").
    UseOnceGrant {
        session: String,
        call: String,
    },
    Pending {
        /// Only this request (if it is pending and the caller may see it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// A `next` cursor from the previous page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
    },
    Answer {
        request_id: String,
        question: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        select: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        custom: Option<String>,
        /// A free-text note about who answers; the daemon records the peer's uid and name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        /// The word typed to confirm a label of the route's `confirm_labels`
        /// (docs/approvals.md, "Type to confirm").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        confirm: Option<String>,
    },
    History {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// A `next` cursor from the previous page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        before: Option<String>,
    },
    Health,
    /// The live grants this user may see (operators: all; docs/protocol.md).
    Grants,
    /// Ends a grant now (its approver or an operator).
    RevokeGrant {
        grant: String,
    },
    /// The audit chain, oldest first, page by page (operators only; docs/protocol.md).
    AuditExport {
        /// Start at the first row written at or after this time (milliseconds since the
        /// epoch); without it, at the chain's newest checkpoint.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since_ms: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// A `next` cursor from the previous page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
    },
}

pub const OPS: &[&str] = &[
    "ask",
    "cancel",
    "pending",
    "answer",
    "history",
    "health",
    "audit_export",
    "grants",
    "revoke_grant",
    "withdraw",
    "once_grant",
    "use_once_grant",
];

/// The longest `agent` a `withdraw` may name.
const MAX_AGENT_NAME_CHARS: usize = 40;

/// The page size of `audit_export` when the client gives none.
pub const AUDIT_PAGE_DEFAULT: u32 = PAGE_MAX;

impl Op {
    /// The line, without its newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("an operation always serializes")
    }
}

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
        .filter(|s| check_request_id(s).is_ok())
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
                reason: opt_line(obj, "reason", MAX_REASON_CHARS)?,
            })
        }
        "withdraw" => {
            only(
                obj,
                &[
                    "op",
                    "reason",
                    "session",
                    "call",
                    "request_id",
                    "agent",
                    "event",
                ],
            )?;
            let reason = optional_string(obj, "", "reason")?
                .filter(|r| crate::domain::hub::WithdrawReason::parse(r).is_some())
                .ok_or_else(|| {
                    AskError::invalid(
                        "reason: is required; one of answered_in_terminal, agent_moved_on, hook_killed",
                    )
                })?;
            let session = opt_line(obj, "session", MAX_NOTE_CHARS)?;
            let request_id = match obj.get("request_id") {
                None | Some(Value::Null) => None,
                Some(v) => Some(parse_request_id(v)?),
            };
            if session.is_none() && request_id.is_none() {
                return Err(AskError::invalid(
                    "session: is required (the agent session id) unless request_id is given",
                ));
            }
            let agent = opt_line(obj, "agent", MAX_NOTE_CHARS)?;
            // It names the decider in the audit (`terminal:claude-code`): a plain name.
            if agent.as_deref().is_some_and(|a| {
                a.len() > MAX_AGENT_NAME_CHARS
                    || !a
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            }) {
                return Err(AskError::invalid(format!(
                    "agent: must be a name of at most {MAX_AGENT_NAME_CHARS} letters, digits, \
                     '-', '_' or '.' (\"claude-code\")"
                )));
            }
            Ok(Op::Withdraw {
                reason,
                session,
                call: opt_line(obj, "call", MAX_NOTE_CHARS)?,
                request_id,
                agent,
                event: opt_line(obj, "event", MAX_NOTE_CHARS)?,
            })
        }
        "once_grant" => {
            only(obj, &["op", "request_id"])?;
            Ok(Op::OnceGrant {
                request_id: required_request_id(obj)?,
            })
        }
        "use_once_grant" => {
            only(obj, &["op", "session", "call"])?;
            let session = opt_line(obj, "session", MAX_NOTE_CHARS)?
                .ok_or_else(|| AskError::invalid("session: is required (the agent session id)"))?;
            let call = opt_line(obj, "call", MAX_NOTE_CHARS)?
                .ok_or_else(|| AskError::invalid("call: is required (the call's key)"))?;
            Ok(Op::UseOnceGrant { session, call })
        }
        "pending" => {
            only(obj, &["op", "request_id", "limit", "after"])?;
            Ok(Op::Pending {
                request_id: match obj.get("request_id") {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(parse_request_id(v)?),
                },
                limit: opt_limit(obj)?,
                after: opt_cursor(obj, "after")?,
            })
        }
        "answer" => {
            only(
                obj,
                &[
                    "op",
                    "request_id",
                    "question",
                    "select",
                    "custom",
                    "by",
                    "confirm",
                ],
            )?;
            let question = optional_string(obj, "", "question")?
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
                custom: optional_string(obj, "", "custom")?,
                by: opt_line(obj, "by", MAX_NOTE_CHARS)?,
                confirm: opt_line(obj, "confirm", MAX_NOTE_CHARS)?,
            })
        }
        "history" => {
            only(obj, &["op", "limit", "before"])?;
            Ok(Op::History {
                limit: opt_limit(obj)?,
                before: opt_cursor(obj, "before")?,
            })
        }
        "health" => {
            only(obj, &["op"])?;
            Ok(Op::Health)
        }
        "grants" => {
            only(obj, &["op"])?;
            Ok(Op::Grants)
        }
        "revoke_grant" => {
            only(obj, &["op", "grant"])?;
            let grant = obj.get("grant").and_then(Value::as_str).ok_or_else(|| {
                AskError::invalid("grant: must be a grant id such as \"g-0123456789ab\"")
            })?;
            Ok(Op::RevokeGrant {
                grant: grant.to_owned(),
            })
        }
        "audit_export" => {
            only(obj, &["op", "since_ms", "limit", "after"])?;
            let since_ms = match obj.get("since_ms") {
                None | Some(Value::Null) => None,
                Some(v) => Some(v.as_i64().filter(|n| *n >= 0).ok_or_else(|| {
                    AskError::invalid("since_ms: must be a time in milliseconds since the epoch")
                })?),
            };
            Ok(Op::AuditExport {
                since_ms,
                limit: opt_limit(obj)?,
                after: opt_cursor(obj, "after")?,
            })
        }
        other => Err(AskError::invalid(format!(
            "op: unknown operation {:?}; expected one of {}",
            Escaped(other),
            OPS.join(", ")
        ))),
    }
}

fn only(obj: &Map<String, Value>, known: &[&str]) -> Result<(), AskError> {
    match obj.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(AskError::invalid(format!(
            "{}: unknown field for this op; expected {}",
            Escaped(k),
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

/// An optional one-line text of at most `max` characters.
fn opt_line(obj: &Map<String, Value>, name: &str, max: usize) -> Result<Option<String>, AskError> {
    match optional_string(obj, "", name)? {
        None => Ok(None),
        Some(s) if s.trim().is_empty() => Ok(None),
        Some(s) => {
            check_line(&s, name, max)?;
            Ok(Some(s))
        }
    }
}

fn opt_limit(obj: &Map<String, Value>) -> Result<Option<u32>, AskError> {
    match obj.get("limit") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|n| (1..=u64::from(PAGE_MAX)).contains(n))
            .map(|n| Some(n as u32))
            .ok_or_else(|| {
                AskError::invalid(format!("limit: must be a number from 1 to {PAGE_MAX}"))
            }),
    }
}

fn opt_cursor(obj: &Map<String, Value>, name: &str) -> Result<Option<String>, AskError> {
    match optional_string(obj, "", name)? {
        None => Ok(None),
        Some(c) if parse_cursor(&c).is_some() => Ok(Some(c)),
        Some(_) => Err(AskError::invalid(format!(
            "{name}: must be the `next` value of a previous reply"
        ))),
    }
}

/// The request key a page cursor stands for.
pub fn parse_cursor(c: &str) -> Option<i64> {
    c.parse::<i64>().ok().filter(|k| *k >= 0)
}

/// A line from the daemon.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Accepted {
        request_id: String,
        answerer: String,
        /// What the answerer reported, flattened into the line.
        #[serde(flatten)]
        detail: Accepted,
    },
    /// `result` is the exact result JSON (docs/contract.md, "Result JSON"), embedded byte for byte.
    Answered {
        request_id: String,
        result: Box<RawValue>,
    },
    Error {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        code: ErrorCode,
        message: String,
        /// Nothing changed, and the same operation may be sent again as it is (the store could
        /// not be reached); absent otherwise.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        retry: bool,
    },
    Cancelled {
        request_id: String,
    },
    /// The reply to `withdraw`: how many pending requests it ended, and which.
    Withdrawn {
        ended: usize,
        request_ids: Vec<String>,
    },
    /// The daemon is going away; the request stays pending, so re-attach to the next daemon
    /// with the same `request_id`.
    ShuttingDown {
        request_id: String,
    },
    /// The reply to `answer`: the settlement counted. On a quorum route, a vote that did not
    /// settle the question yet carries `votes` (how many chose this answer, of how many
    /// needed).
    AnswerAccepted {
        request_id: String,
        question: String,
        request_answered: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        votes: Option<VoteCount>,
    },
    Pending {
        requests: Vec<RequestView>,
        /// Pass as `after` for the next page; absent on the last page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next: Option<String>,
        /// Outbox work overdue (questions not posted, messages not edited), when there is any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outbox: Option<OutboxBacklog>,
    },
    History {
        requests: Vec<RequestView>,
        /// Pass as `before` for the next page; absent on the last page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next: Option<String>,
    },
    Health(Health),
    /// A page of the audit chain: on the first page (no `after`), where it starts.
    Audit {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start: Option<ChainStart>,
        rows: Vec<ChainedRow>,
        /// Pass as `after` for the next page; absent on the last page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next: Option<String>,
        /// The chain's head as this page was read (the same snapshot): on the last page, its
        /// last row unless rows were deleted from the end.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        head: Option<ChainHead>,
    },
    /// The reply to `grants`.
    Grants {
        grants: Vec<crate::domain::grant::Grant>,
    },
    /// The reply to `revoke_grant`: the grant as it now stands.
    Revoked {
        grant: crate::domain::grant::Grant,
    },
    /// The reply to `once_grant`: the one-use grant minted.
    OnceGrant {
        grant: crate::domain::once_grant::OnceGrant,
    },
    /// The reply to `use_once_grant`: the grant used, or `null` when there was none.
    OnceGrantUsed {
        grant: Option<crate::domain::once_grant::OnceGrant>,
    },
}

/// Votes for an answer on a quorum route: `count` of the `needed` people chose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoteCount {
    pub count: usize,
    pub needed: usize,
}

/// The `answered` line as it is read, so that `result` stays the daemon's exact bytes.
#[derive(Deserialize)]
struct AnsweredLine {
    request_id: String,
    result: Box<RawValue>,
}

#[derive(Deserialize)]
struct Tag<'a> {
    #[serde(borrow)]
    event: std::borrow::Cow<'a, str>,
}

impl Event {
    pub fn error(request_id: Option<String>, error: AskError) -> Event {
        Event::Error {
            request_id,
            code: error.code,
            message: error.message,
            retry: error.retry,
        }
    }

    pub fn final_line(request_id: &str, outcome: &Outcome) -> Event {
        match outcome {
            Outcome::Answered(result) => Event::Answered {
                request_id: request_id.to_owned(),
                result: RawValue::from_string(result.clone())
                    .expect("a stored result is valid JSON"),
            },
            Outcome::Error(e) => Event::error(Some(request_id.to_owned()), e.clone()),
        }
    }

    /// The line, without its newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("an event always serializes")
    }

    /// Reads one line. An `answered` line keeps its `result` byte for byte (serde cannot carry
    /// a raw value through an internally tagged enum, so that one is read on its own).
    pub fn from_line(line: &str) -> serde_json::Result<Event> {
        let tag: Tag<'_> = serde_json::from_str(line)?;
        if tag.event == "answered" {
            let a: AnsweredLine = serde_json::from_str(line)?;
            return Ok(Event::Answered {
                request_id: a.request_id,
                result: a.result,
            });
        }
        serde_json::from_str(line)
    }

    /// The request this event is about, when it names one.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            Event::Accepted { request_id, .. }
            | Event::Answered { request_id, .. }
            | Event::Cancelled { request_id }
            | Event::ShuttingDown { request_id }
            | Event::AnswerAccepted { request_id, .. } => Some(request_id),
            Event::Error { request_id, .. } => request_id.as_deref(),
            Event::Pending { .. }
            | Event::History { .. }
            | Event::Health(_)
            | Event::Audit { .. }
            | Event::Grants { .. }
            | Event::Revoked { .. }
            | Event::OnceGrant { .. }
            | Event::OnceGrantUsed { .. }
            | Event::Withdrawn { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests;
