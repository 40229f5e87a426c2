//! What the lines on the socket mean (docs/contract.md, "Socket protocol"): client operations and daemon events, as one set
//! of types that the daemon and its clients (the CLI, the MCP front end) share.
//!
//! Framing (splitting bytes into lines) lives in [`crate::server::framing`]; this module turns
//! one line into an [`Op`] or an [`Event`] and back. The daemon parses operations with
//! [`parse_line`], whose errors name the field and the rule (serde's would not); clients write
//! them with serde. Events go the other way: the daemon writes them with serde, clients read
//! them with [`Event::from_line`], which keeps an answer's `result` byte for byte.

use crate::domain::answer::QuestionAnswer;
use crate::domain::audit::{ChainHead, ChainStart, ChainedRow};
use crate::domain::model::{
    check_line, check_request_id, parse_ask, parse_request_id, Caller, Context, Scope,
    MAX_NOTE_CHARS, MAX_REASON_CHARS,
};
use crate::domain::request::{Outcome, Post, Request};
use crate::domain::text::Escaped;
/// What an `accepted` event reports; the answerers build it, so it lives with them in the core.
pub use crate::domain::Accepted;
use crate::domain::{Ask, AskError, ErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::fmt;

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
];

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

fn opt_string(obj: &Map<String, Value>, name: &str) -> Result<Option<String>, AskError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(AskError::invalid(format!("{name}: must be a string"))),
    }
}

/// An optional one-line text of at most `max` characters.
fn opt_line(obj: &Map<String, Value>, name: &str, max: usize) -> Result<Option<String>, AskError> {
    match opt_string(obj, name)? {
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
    match opt_string(obj, name)? {
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
    },
    Cancelled {
        request_id: String,
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
}

/// The reply to `health` (also the body of the HTTP `/healthz`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Health {
    pub version: String,
    /// `ok`, or `degraded` when a part named in `failing` is down.
    #[serde(default)]
    pub status: HealthStatus,
    /// The parts that are down.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing: Vec<HealthPart>,
    /// The Discord gateway.
    #[serde(default)]
    pub gateway: GatewayHealth,
    pub pending: usize,
    pub answerers: Vec<String>,
    /// `ok`, or why a write to the store fails.
    pub store: StoreHealth,
    pub outbox: OutboxBacklog,
    /// In cluster mode: this node, its role and who leads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterHealth>,
}

/// The daemon as a whole: healthy, or with a part down.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    #[default]
    Ok,
    Degraded,
}

impl HealthStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            HealthStatus::Ok => "ok",
            HealthStatus::Degraded => "degraded",
        }
    }
}

/// A part of the daemon that can be down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthPart {
    Store,
    Gateway,
    /// In a cluster: no node leads, or the leader's last renewal is older than
    /// `cluster.failover_secs`.
    Lead,
    /// In a cluster: outbox work is overdue (questions not posted or not edited in time).
    Outbox,
}

impl HealthPart {
    pub fn as_str(self) -> &'static str {
        match self {
            HealthPart::Store => "store",
            HealthPart::Gateway => "gateway",
            HealthPart::Lead => "lead",
            HealthPart::Outbox => "outbox",
        }
    }
}

/// The Discord gateway, as `health` sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum GatewayHealth {
    #[serde(rename = "connected")]
    Connected,
    #[serde(rename = "disconnected")]
    Disconnected,
    /// No platform connection is configured (no Discord token).
    #[default]
    #[serde(rename = "not configured")]
    NotConfigured,
    /// A cluster's follower: the leader holds the session, by design.
    #[serde(rename = "held by the leader")]
    HeldByLeader,
}

impl GatewayHealth {
    pub fn as_str(self) -> &'static str {
        match self {
            GatewayHealth::Connected => "connected",
            GatewayHealth::Disconnected => "disconnected",
            GatewayHealth::NotConfigured => "not configured",
            GatewayHealth::HeldByLeader => "held by the leader",
        }
    }
}

/// The store: it takes a write, or why not. On the wire `"ok"`, or the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreHealth {
    Ok,
    Failing(String),
}

impl StoreHealth {
    pub fn is_ok(&self) -> bool {
        matches!(self, StoreHealth::Ok)
    }
}

impl fmt::Display for StoreHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreHealth::Ok => f.write_str("ok"),
            StoreHealth::Failing(why) => f.write_str(why),
        }
    }
}

impl Serialize for StoreHealth {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for StoreHealth {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(if s == "ok" {
            StoreHealth::Ok
        } else {
            StoreHealth::Failing(s)
        })
    }
}

/// A node's place in its cluster, as `health` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterHealth {
    pub node: String,
    /// "leader" or "follower".
    pub role: String,
    /// The leader's node id, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<String>,
    /// The lease's epoch: one more at every change of leader.
    #[serde(default)]
    pub epoch: i64,
    /// How long ago the leader last renewed its lease, in ms, as far as this node can tell
    /// (unknown when no node leads, or before this node's first beat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_heartbeat_ms: Option<u64>,
}

/// Outbox work due for longer than it should take: questions not posted yet and messages not
/// edited to their final state (Discord down or failing).
/// Votes for an answer on a quorum route: `count` of the `needed` people chose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoteCount {
    pub count: usize,
    pub needed: usize,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxBacklog {
    pub overdue: usize,
    /// How long the oldest overdue item has been due, in seconds.
    pub oldest_secs: u64,
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
            | Event::Revoked { .. } => None,
        }
    }
}

/// An RFC 3339 timestamp for a millisecond time (the core's, for the replies' fields).
pub use crate::domain::request::rfc3339;

/// How a request looks in `pending` and `history` replies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestView {
    pub request_id: String,
    pub status: String,
    pub answerer: Option<String>,
    pub route: Option<String>,
    pub created_at: String,
    pub ended_at: Option<String>,
    pub caller: Caller,
    pub scope: Scope,
    pub peer: PeerView,
    pub questions: Vec<QuestionView>,
    pub result: Option<Value>,
    pub error: Option<ErrorView>,
    /// The cluster node that owns the request (cluster mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// What is being approved (the ask's `context`): what Discord shows with the question.
    /// Each text is cut to [`VIEW_CONTEXT_MAX`] bytes in a listing; `truncated` says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextView>,
}

/// How much of each context text and file a listing carries: enough for a command or a diff
/// to review, while a page of 200 requests with 9 files each stays a reply a terminal can read.
pub const VIEW_CONTEXT_MAX: usize = 64 * 1024;

/// A request's context as `pending` and `history` show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextView {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<ContextText>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ContextFileView>,
}

/// A context text, cut to [`VIEW_CONTEXT_MAX`] bytes at a character boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextText {
    pub content: String,
    /// Its whole size in bytes.
    pub bytes: usize,
    /// Whether `content` is only the start of it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextFileView {
    pub name: String,
    #[serde(flatten)]
    pub text: ContextText,
}

impl ContextText {
    fn new(s: &str) -> ContextText {
        let mut end = s.len().min(VIEW_CONTEXT_MAX);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        ContextText {
            content: s[..end].to_owned(),
            bytes: s.len(),
            truncated: end < s.len(),
        }
    }
}

impl ContextView {
    fn new(c: &Context) -> ContextView {
        ContextView {
            text: c.text.as_deref().map(ContextText::new),
            files: c
                .files
                .iter()
                .map(|f| ContextFileView {
                    name: f.name.clone(),
                    text: ContextText::new(&f.content),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerView {
    pub uid: Option<u32>,
    pub pid: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorView {
    pub code: ErrorCode,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionView {
    pub id: String,
    pub header: Option<String>,
    pub question: String,
    #[serde(rename = "multiSelect")]
    pub multi_select: bool,
    pub options: Vec<String>,
    pub answered: Option<AnsweredView>,
    pub post: Option<PostView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnsweredView {
    /// Who answered, as the platform identified them: a Discord user name, or a local user
    /// name with its uid.
    pub by: String,
    /// A Discord user id, or a local uid.
    pub id: String,
    pub via: String,
    /// What the person wrote about themselves (`--as`); not an identity.
    pub note: Option<String>,
    pub at: String,
    pub selected: Vec<String>,
    pub custom: Option<String>,
    /// What the approver attached (docs/approvals.md): a grant, an edited command. The asking
    /// front door reads the edited command here; the result JSON never carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<crate::domain::answer::Terms>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostView {
    pub channel: String,
    pub message: Option<String>,
    pub posted: bool,
    pub attempts: i64,
    pub last_error: Option<String>,
}

impl RequestView {
    pub fn new(req: &Request, posts: &[Post]) -> RequestView {
        let questions = req
            .questions
            .iter()
            .zip(&req.answers)
            .enumerate()
            .map(|(i, (q, a))| QuestionView {
                id: q.id.clone(),
                header: q.header.clone(),
                question: q.question.clone(),
                multi_select: q.multi_select,
                options: q.options.iter().map(|o| o.label.clone()).collect(),
                answered: a.as_ref().map(|a| {
                    let qa = QuestionAnswer::build(q, &a.settlement);
                    AnsweredView {
                        by: a.actor.name.clone(),
                        id: a.actor.id.clone(),
                        via: a.actor.via.as_str().to_owned(),
                        note: a.actor.note.clone(),
                        at: rfc3339(a.at_ms),
                        selected: qa.selected,
                        custom: qa.custom,
                        terms: a.settlement.terms.clone(),
                    }
                }),
                post: posts.iter().find(|p| p.idx == i).map(|p| PostView {
                    channel: p.channel.clone(),
                    message: p.message.clone(),
                    posted: p.message.is_some(),
                    attempts: p.attempts,
                    last_error: p.last_error.clone(),
                }),
            })
            .collect();
        let (result, error) = match &req.outcome {
            Some(Outcome::Answered(r)) => (serde_json::from_str(r).ok(), None),
            Some(Outcome::Error(e)) => (
                None,
                Some(ErrorView {
                    code: e.code,
                    message: e.message.clone(),
                }),
            ),
            None => (None, None),
        };
        RequestView {
            request_id: req.request_id.clone(),
            status: req.status.as_str().to_owned(),
            answerer: req.answerer.clone(),
            route: req.route.clone(),
            created_at: rfc3339(req.created_at_ms),
            ended_at: req.ended_at_ms.map(rfc3339),
            caller: req.caller.clone(),
            scope: req.scope.clone(),
            peer: PeerView {
                uid: req.peer.uid,
                pid: req.peer.pid,
            },
            questions,
            result,
            error,
            node: req.node.clone(),
            context: req
                .context
                .as_deref()
                .filter(|c| !c.is_empty())
                .map(ContextView::new),
        }
    }
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
        let by =
            |s: String| format!(r#"{{"op":"answer","request_id":"r","question":"q","by":"{s}"}}"#);
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
    fn times_are_rfc3339_seconds_and_never_before_1970() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(-5_000), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_764_460_800_999), "2025-11-30T00:00:00Z");
        assert_eq!(rfc3339(1_796_455_274_500), "2026-12-05T07:21:14Z");
        // Past what a timestamp holds: its last second, not a panic.
        assert_eq!(rfc3339(i64::MAX), "9999-12-30T22:00:00Z");
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
}
