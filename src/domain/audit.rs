//! The audit chain: every audit row carries the hash of the row before it, so that an export
//! of the log can be checked for a changed, removed or reordered row (docs/security.md,
//! "The audit chain").
//!
//! What is hashed is defined once, here, by [`canonical`]: the row's stored fields and the hash
//! of the row before it, as a compact JSON array in a fixed order. A row's hash is the
//! lowercase hex SHA-256 of those bytes. The first row of a chain follows [`GENESIS`]; a chain
//! whose head was pruned (or that began when the chain was added to an existing log) starts at
//! a checkpoint that names the last row before it and that row's hash.
//!
//! The stores compute the hash with these functions as they append a row, in the transaction
//! that appends it; [`verify`] checks an export without the daemon.

use super::answer::{Settlement, Terms};
use super::model::Question;
use super::request::{Actor, AuditEntry, AuditRow, Peer, Via};
use super::vote::Vote;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// The `prev_hash` of the first row of a chain that starts from nothing.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// An audit row as stored, with its place in the chain: the line of an export. An export line
/// with a key it does not know is refused, so that a file cannot carry text the chain does not
/// cover. On the line, the row's fields stand beside the chain's ([`ExportedRow`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "ExportedRow", into = "ExportedRow")]
pub struct ChainedRow {
    /// The row's stored fields (its `at_ms` is the line's `at`).
    pub row: AuditRow,
    /// `at` as RFC 3339 in UTC, to the millisecond ([`time_of`]), for a reader without the
    /// database; not hashed, but checked against `at` by [`verify`]. Absent in rows read
    /// from exports written before it existed.
    pub time: String,
    /// The request's id as its client gave it: hashed with the row when present (rows written
    /// before it was recorded have none).
    pub request_id: Option<String>,
    pub prev_hash: String,
    pub hash: String,
}

/// A [`ChainedRow`] as an export line spells it, every field at the top level in this order.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportedRow {
    id: i64,
    /// Milliseconds since the epoch.
    at: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    time: String,
    request_key: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    request_id: Option<String>,
    question_idx: Option<i64>,
    source: String,
    actor: Option<String>,
    action: String,
    detail: Option<String>,
    accepted: bool,
    prev_hash: String,
    hash: String,
}

impl From<ExportedRow> for ChainedRow {
    fn from(r: ExportedRow) -> ChainedRow {
        ChainedRow {
            row: AuditRow {
                id: r.id,
                at_ms: r.at,
                request_key: r.request_key,
                question_idx: r.question_idx,
                source: r.source,
                actor: r.actor,
                action: r.action,
                detail: r.detail,
                accepted: r.accepted,
            },
            time: r.time,
            request_id: r.request_id,
            prev_hash: r.prev_hash,
            hash: r.hash,
        }
    }
}

impl From<ChainedRow> for ExportedRow {
    fn from(c: ChainedRow) -> ExportedRow {
        let r = c.row;
        ExportedRow {
            id: r.id,
            at: r.at_ms,
            time: c.time,
            request_key: r.request_key,
            request_id: c.request_id,
            question_idx: r.question_idx,
            source: r.source,
            actor: r.actor,
            action: r.action,
            detail: r.detail,
            accepted: r.accepted,
            prev_hash: c.prev_hash,
            hash: c.hash,
        }
    }
}

/// The row a store appends next: its content, before the chain gives it an id and hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowContent<'a> {
    pub at: i64,
    pub request_key: Option<i64>,
    pub request_id: Option<&'a str>,
    pub question_idx: Option<i64>,
    pub source: &'a str,
    pub actor: Option<&'a str>,
    pub action: &'a str,
    pub detail: Option<&'a str>,
    pub accepted: bool,
}

impl AuditEntry {
    /// What the chain hashes of this entry, written at `at`.
    pub fn content(&self, at: i64) -> RowContent<'_> {
        RowContent {
            at,
            request_key: self.request_key,
            request_id: self.request_id.as_deref(),
            question_idx: self.question_idx.map(|i| i as i64),
            source: self.source.as_str(),
            actor: self.actor.as_deref(),
            action: self.action.as_str(),
            detail: self.detail.as_deref(),
            accepted: self.accepted,
        }
    }
}

/// The last row of the chain (or its checkpoint when no row follows it): what the next row
/// follows. Stored in the one-row table `audit_head`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainHead {
    pub id: i64,
    pub hash: String,
}

impl ChainHead {
    /// The row that follows this head, with its id and hashes.
    pub fn next(&self, row: &RowContent<'_>) -> ChainedRow {
        let id = self.id + 1;
        let hash = row_hash(id, row, &self.hash);
        ChainedRow {
            row: AuditRow {
                id,
                at_ms: row.at,
                request_key: row.request_key,
                question_idx: row.question_idx,
                source: row.source.to_owned(),
                actor: row.actor.map(str::to_owned),
                action: row.action.to_owned(),
                detail: row.detail.map(str::to_owned),
                accepted: row.accepted,
            },
            time: time_of(row.at),
            request_id: row.request_id.map(str::to_owned),
            prev_hash: self.hash.clone(),
            hash,
        }
    }
}

/// The bytes a row's hash is taken over: the JSON array
/// `[id, at, request_key, question_idx, source, actor, action, detail, accepted, prev_hash]`,
/// with `request_id` after `prev_hash` when the row has one, compact (no spaces), with `null`
/// for a missing value, `true`/`false` for `accepted`, strings escaped as serde_json does
/// (`"`, `\` and control characters only; other characters as UTF-8). Rows from before the
/// request id was recorded hash as they always did.
pub fn canonical(id: i64, row: &RowContent<'_>, prev_hash: &str) -> Vec<u8> {
    let base = (
        id,
        row.at,
        row.request_key,
        row.question_idx,
        row.source,
        row.actor,
        row.action,
        row.detail,
        row.accepted,
        prev_hash,
    );
    match row.request_id {
        None => serde_json::to_vec(&base),
        Some(rid) => {
            let (a, b, c, d, e, f, g, h, i, j) = base;
            serde_json::to_vec(&(a, b, c, d, e, f, g, h, i, j, rid))
        }
    }
    .expect("a tuple of numbers and strings always serializes")
}

/// A time in milliseconds since the epoch as RFC 3339 in UTC, to the millisecond:
/// `2026-12-04T17:45:10.123Z`.
pub fn time_of(at_ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(at_ms) {
        Ok(t) => t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        Err(_) => String::new(),
    }
}

/// What a person chose, as an audit row's detail says it: the options by their labels,
/// `{"selected":["Allow"]}`, with `custom` (the free text) and `terms` (a grant, an edited
/// command) when there are any. An index the question does not have shows as `#N` (1-based).
pub fn settlement_detail(q: &Question, s: &Settlement) -> String {
    #[derive(Serialize)]
    struct Shown<'a> {
        selected: Vec<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        custom: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        terms: Option<&'a Terms>,
    }
    let selected = s
        .selected
        .iter()
        .map(|&i| {
            q.options
                .get(i)
                .map_or_else(|| format!("#{}", i + 1), |o| o.label.clone())
        })
        .collect();
    serde_json::to_string(&Shown {
        selected,
        custom: s.custom.as_deref(),
        terms: s.terms.as_ref(),
    })
    .unwrap_or_default()
}

/// Who an audit row names, in one format: `KIND:ID`, then ` name=NAME` and ` pid=PID` when
/// known. KIND is `uid` (a local user, at the socket or a terminal), `discord` (a Discord
/// user), `policy` (the expiry policy), `grant` (a grant, named by its approver) or `daemon`.
/// A name with anything but letters, digits and `._-@+` is quoted as a JSON string.
pub fn actor(kind: &str, id: &str, name: Option<&str>, pid: Option<i32>) -> String {
    let mut out = format!("{kind}:{id}");
    if let Some(n) = name.filter(|n| !n.is_empty()) {
        let plain = n
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-@+".contains(c));
        if plain {
            out.push_str(&format!(" name={n}"));
        } else {
            out.push_str(&format!(
                " name={}",
                serde_json::to_string(n).unwrap_or_default()
            ));
        }
    }
    if let Some(p) = pid {
        out.push_str(&format!(" pid={p}"));
    }
    out
}

// How the audit log names the people and processes it records, in [`actor`]'s one format.
// These are the audit log's business, so they live here rather than with the types.

impl Actor {
    /// How the audit log names this actor ([`actor`]): `uid:1000 name=alice`,
    /// `discord:4242 name=alice`, `policy:expiry`, `grant:g-… name="…"` (its approver).
    pub fn audit(&self) -> String {
        match self.via {
            Via::Terminal => {
                let named = self.name != format!("uid {}", self.id);
                actor("uid", &self.id, named.then_some(self.name.as_str()), None)
            }
            Via::Discord => actor("discord", &self.id, Some(&self.name), None),
            Via::Slack => actor("slack", &self.id, Some(&self.name), None),
            Via::Policy => actor("policy", "expiry", None, None),
            Via::Grant => actor("grant", &self.id, Some(&self.name), None),
        }
    }
}

impl Peer {
    /// How the audit log names the process: `uid:1000 pid=4242` ([`actor`]).
    pub fn audit(&self, name: Option<&str>) -> String {
        let uid = self.uid.map_or_else(|| "?".to_owned(), |u| u.to_string());
        actor("uid", &uid, name, self.pid)
    }
}

impl Vote {
    /// How the audit log names the voter ([`actor`]): `discord:111 name=alice`.
    pub fn audit(&self) -> String {
        let kind = if self.via == "terminal" {
            "uid"
        } else {
            self.via.as_str()
        };
        actor(kind, &self.id, Some(&self.name), None)
    }
}

/// The hash of a row: lowercase hex SHA-256 of [`canonical`].
pub fn row_hash(id: i64, row: &RowContent<'_>, prev_hash: &str) -> String {
    hex(&Sha256::digest(canonical(id, row, prev_hash)))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

impl ChainedRow {
    pub fn content(&self) -> RowContent<'_> {
        RowContent {
            at: self.row.at_ms,
            request_key: self.row.request_key,
            request_id: self.request_id.as_deref(),
            question_idx: self.row.question_idx,
            source: &self.row.source,
            actor: self.row.actor.as_deref(),
            action: &self.row.action,
            detail: self.row.detail.as_deref(),
            accepted: self.row.accepted,
        }
    }

    /// The hash this row's content and `prev_hash` give.
    pub fn computed_hash(&self) -> String {
        row_hash(self.row.id, &self.content(), &self.prev_hash)
    }
}

/// Where an export's chain starts: after row `after` (0: before the first row), whose hash
/// was `hash`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainStart {
    pub after: i64,
    pub hash: String,
    pub reason: StartReason,
}

/// Why a chain starts where it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartReason {
    /// The first row ever written follows it ([`GENESIS`]).
    Genesis,
    /// The rows up to `after` were written before the chain existed (an upgrade); the chain
    /// starts from [`GENESIS`] after them.
    Upgrade,
    /// The rows up to `after` were deleted by retention; `hash` is the last one's.
    Pruned,
    /// The export starts at a time (`--since`); `hash` is the row before it's.
    Since,
}

impl StartReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StartReason::Genesis => "genesis",
            StartReason::Upgrade => "upgrade",
            StartReason::Pruned => "pruned",
            StartReason::Since => "since",
        }
    }
}

impl std::str::FromStr for StartReason {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "genesis" => StartReason::Genesis,
            "upgrade" => StartReason::Upgrade,
            "pruned" => StartReason::Pruned,
            "since" => StartReason::Since,
            other => return Err(format!("unknown checkpoint reason {other:?}")),
        })
    }
}

impl fmt::Display for ChainStart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            StartReason::Genesis => write!(f, "genesis"),
            StartReason::Upgrade => write!(
                f,
                "the start of the chain after row {} (rows before it predate the chain)",
                self.after
            ),
            StartReason::Pruned => write!(
                f,
                "the checkpoint after row {} (pruned, hash {})",
                self.after, self.hash
            ),
            StartReason::Since => write!(f, "row {} (hash {})", self.after, self.hash),
        }
    }
}

/// A page of the chain as a store reads it: the rows, and the head they lead to, read in one
/// snapshot (so that the last page's last row is the head unless rows were cut from the end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditPage {
    pub rows: Vec<ChainedRow>,
    pub head: ChainHead,
}

/// The last line of an export: how many rows it holds and the chain's head when it was read,
/// with a check over both and the start, so that a file cut short (no end line), a trailer cut
/// or edited, and a chain whose last rows were deleted (its head is past its last row) are
/// all noticed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainEnd {
    pub rows: u64,
    /// The daemon's `audit_head` as the export read it.
    pub head: ChainHead,
    /// [`ChainEnd::check_of`], lowercase hex.
    pub check: String,
}

impl ChainEnd {
    /// The end line of an export that starts at `start`, holds `rows` rows whose last hash is
    /// `last` (the start's when there are none), read when the head was `head`.
    pub fn new(start: &ChainStart, rows: u64, last: &str, head: ChainHead) -> ChainEnd {
        let check = Self::check_of(start, rows, last, &head);
        ChainEnd { rows, head, check }
    }

    /// SHA-256 over the compact JSON array
    /// `["askrelay-audit-end", start.after, start.hash, rows, last, head.id, head.hash]`.
    pub fn check_of(start: &ChainStart, rows: u64, last: &str, head: &ChainHead) -> String {
        let bytes = serde_json::to_vec(&(
            "askrelay-audit-end",
            start.after,
            &start.hash,
            rows,
            last,
            head.id,
            &head.hash,
        ))
        .expect("a tuple of numbers and strings always serializes");
        hex(&Sha256::digest(bytes))
    }
}

/// One line of an export (`askrelay audit export`): the first is a start, then the rows, then
/// the end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExportLine {
    Start(ChainStart),
    Row(ChainedRow),
    End(ChainEnd),
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every row follows the one before it and matches its content, and the end line says the
    /// same rows and the same head.
    Intact {
        rows: u64,
        start: ChainStart,
        /// The hash of the last row (the start's when there is none): the chain's head.
        last: String,
    },
    /// The first broken link: a row whose `prev_hash` is not the hash of the line before it.
    BrokenLink {
        id: i64,
        line: u64,
        /// The row (or the start's `after`) it should have followed.
        prev_id: i64,
    },
    /// A row whose hash does not match its content.
    BadHash { id: i64, line: u64 },
    /// The export ends before its end line: the file was cut short.
    Truncated { rows: u64, last_id: i64 },
    /// The end line does not match the rows before it (their count, or its check).
    BadEnd { line: u64, why: String },
    /// The chain's head is past its last row: rows were deleted from the end of the log.
    CutTail { last_id: i64, head_id: i64 },
    /// Not an export: no start line, or a line that is not a row.
    NotAnExport { line: u64, why: String },
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Intact { rows, start, last } => {
                write!(
                    f,
                    "ok: {rows} rows, chain intact from {start} to {last} (its head)"
                )
            }
            Verdict::BrokenLink { id, line, prev_id } => write!(
                f,
                "broken at row {id} (line {line}): its prev_hash does not match the hash of row \
                 {prev_id}"
            ),
            Verdict::BadHash { id, line } => write!(
                f,
                "broken at row {id} (line {line}): row {id}'s hash does not match its content"
            ),
            Verdict::Truncated { rows, last_id } => write!(
                f,
                "cut short: the export ends after {rows} rows (row {last_id}) without its end \
                 line"
            ),
            Verdict::BadEnd { line, why } => write!(f, "broken end (line {line}): {why}"),
            Verdict::CutTail { last_id, head_id } => write!(
                f,
                "cut at the end: the chain's last row is {last_id} but its head is row {head_id}: \
                 {} rows were deleted from the end of the log",
                head_id - last_id
            ),
            Verdict::NotAnExport { line, why } => {
                write!(f, "not an audit export: line {line}: {why}")
            }
        }
    }
}

/// Checks the lines of an export in order and names the first fault. Blank lines are skipped
/// (a trailing newline).
pub fn verify<'a>(lines: impl IntoIterator<Item = &'a str>) -> Verdict {
    let mut start: Option<ChainStart> = None;
    let mut prev_id = 0;
    let mut prev_hash = String::new();
    let mut rows = 0;
    let mut ended: Option<u64> = None;
    for (i, text) in lines.into_iter().enumerate() {
        let line = i as u64 + 1;
        if text.trim().is_empty() {
            continue;
        }
        if let Some(end_line) = ended {
            return Verdict::BadEnd {
                line,
                why: format!("a line after the end line (line {end_line})"),
            };
        }
        let parsed: ExportLine = match serde_json::from_str(text) {
            Ok(l) => l,
            Err(e) => {
                return Verdict::NotAnExport {
                    line,
                    why: format!("not an audit export line ({e})"),
                }
            }
        };
        let Some(s) = &start else {
            match parsed {
                ExportLine::Start(s) => {
                    prev_id = s.after;
                    prev_hash = s.hash.clone();
                    start = Some(s);
                    continue;
                }
                _ => {
                    return Verdict::NotAnExport {
                        line,
                        why: "the first line must be the chain's start (\"kind\":\"start\")".into(),
                    }
                }
            }
        };
        match parsed {
            ExportLine::Start(_) => {
                return Verdict::NotAnExport {
                    line,
                    why: "a second start line".into(),
                }
            }
            ExportLine::Row(row) => {
                if row.prev_hash != prev_hash {
                    return Verdict::BrokenLink {
                        id: row.row.id,
                        line,
                        prev_id,
                    };
                }
                if row.computed_hash() != row.hash {
                    return Verdict::BadHash {
                        id: row.row.id,
                        line,
                    };
                }
                if !row.time.is_empty() && row.time != time_of(row.row.at_ms) {
                    return Verdict::NotAnExport {
                        line,
                        why: format!(
                            "row {}'s time {:?} is not its at ({})",
                            row.row.id,
                            row.time,
                            time_of(row.row.at_ms)
                        ),
                    };
                }
                prev_id = row.row.id;
                prev_hash = row.hash;
                rows += 1;
            }
            ExportLine::End(end) => {
                if end.rows != rows {
                    return Verdict::BadEnd {
                        line,
                        why: format!("it counts {} rows; the export holds {rows}", end.rows),
                    };
                }
                if end.check != ChainEnd::check_of(s, rows, &prev_hash, &end.head) {
                    return Verdict::BadEnd {
                        line,
                        why: "its check does not match the start, the rows and the head".into(),
                    };
                }
                if end.head.id != prev_id || end.head.hash != prev_hash {
                    if end.head.id > prev_id {
                        return Verdict::CutTail {
                            last_id: prev_id,
                            head_id: end.head.id,
                        };
                    }
                    return Verdict::BadEnd {
                        line,
                        why: format!(
                            "the chain's head (row {}) is not its last row (row {prev_id})",
                            end.head.id
                        ),
                    };
                }
                ended = Some(line);
            }
        }
    }
    match (start, ended) {
        (Some(start), Some(_)) => Verdict::Intact {
            rows,
            start,
            last: prev_hash,
        },
        (Some(_), None) => Verdict::Truncated {
            rows,
            last_id: prev_id,
        },
        (None, _) => Verdict::NotAnExport {
            line: 1,
            why: "the file is empty".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content() -> RowContent<'static> {
        RowContent {
            at: 1_764_000_000_000,
            request_key: Some(7),
            request_id: None,
            question_idx: None,
            source: "socket",
            actor: Some("uid 1000 (pid 42)"),
            action: "ask",
            detail: Some("a \"quoted\"\nline é"),
            accepted: true,
        }
    }

    #[test]
    fn the_canonical_encoding_and_its_hash_are_fixed() {
        let bytes = canonical(1, &content(), GENESIS);
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            format!(
                "[1,1764000000000,7,null,\"socket\",\"uid 1000 (pid 42)\",\"ask\",\
                 \"a \\\"quoted\\\"\\nline é\",true,\"{GENESIS}\"]"
            )
        );
        // Computed apart from this code (Python's hashlib over the line above).
        assert_eq!(
            row_hash(1, &content(), GENESIS),
            "deb8dac98fc862823f4d668a74ac71c001b65ea8b342c29f759ba72a31872665"
        );
        // A row with its request id hashes it after prev_hash.
        let with_id = RowContent {
            actor: Some("uid:1000 pid=42"),
            request_id: Some("deploy-42"),
            ..content()
        };
        assert_eq!(
            String::from_utf8(canonical(1, &with_id, GENESIS)).unwrap(),
            format!(
                "[1,1764000000000,7,null,\"socket\",\"uid:1000 pid=42\",\"ask\",\
                 \"a \\\"quoted\\\"\\nline é\",true,\"{GENESIS}\",\"deploy-42\"]"
            )
        );
        // Computed apart from this code (Python's hashlib over the line above).
        assert_eq!(
            row_hash(1, &with_id, GENESIS),
            "7df16be85e31dae7ead67dd4322b86b7d65150088db5a398634d216215b4a8a2"
        );
    }

    #[test]
    fn times_and_actors_read_without_the_database() {
        assert_eq!(time_of(1_764_000_000_123), "2025-11-24T16:00:00.123Z");
        assert_eq!(time_of(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            actor("uid", "1000", Some("alice"), Some(42)),
            "uid:1000 name=alice pid=42"
        );
        assert_eq!(
            actor("discord", "4242", Some("bob.b"), None),
            "discord:4242 name=bob.b"
        );
        assert_eq!(actor("uid", "1235", None, None), "uid:1235");
        assert_eq!(
            actor("discord", "1", Some("x (discord 2), y"), None),
            "discord:1 name=\"x (discord 2), y\""
        );
        assert_eq!(actor("policy", "expiry", None, None), "policy:expiry");
    }

    fn export(n: i64) -> Vec<String> {
        let mut head = ChainHead {
            id: 0,
            hash: GENESIS.into(),
        };
        let mut lines = vec![serde_json::to_string(&ExportLine::Start(ChainStart {
            after: 0,
            hash: GENESIS.into(),
            reason: StartReason::Genesis,
        }))
        .unwrap()];
        for i in 0..n {
            let mut c = content();
            c.request_key = Some(i);
            let row = head.next(&c);
            head = ChainHead {
                id: row.row.id,
                hash: row.hash.clone(),
            };
            lines.push(serde_json::to_string(&ExportLine::Row(row)).unwrap());
        }
        lines.push(end_line(n as u64, &head, head.clone()));
        lines
    }

    fn end_line(rows: u64, last: &ChainHead, head: ChainHead) -> String {
        let start = ChainStart {
            after: 0,
            hash: GENESIS.into(),
            reason: StartReason::Genesis,
        };
        serde_json::to_string(&ExportLine::End(ChainEnd::new(
            &start, rows, &last.hash, head,
        )))
        .unwrap()
    }

    #[test]
    fn an_intact_export_verifies_and_a_tampered_one_names_its_row() {
        let lines = export(5);
        let v = verify(lines.iter().map(String::as_str));
        assert!(matches!(v, Verdict::Intact { rows: 5, .. }), "{v}");
        assert!(v
            .to_string()
            .starts_with("ok: 5 rows, chain intact from genesis to "));

        let mut changed = lines.clone();
        changed[3] = changed[3].replace("\"ask\"", "\"answer\"");
        assert_eq!(
            verify(changed.iter().map(String::as_str)),
            Verdict::BadHash { id: 3, line: 4 }
        );

        let mut gone = lines.clone();
        gone.remove(3);
        assert_eq!(
            verify(gone.iter().map(String::as_str)),
            Verdict::BrokenLink {
                id: 4,
                line: 4,
                prev_id: 2
            }
        );

        assert!(matches!(
            verify(["{\"hello\":1}"]),
            Verdict::NotAnExport { line: 1, .. }
        ));
        assert!(matches!(
            verify(lines[1..].iter().map(String::as_str)),
            Verdict::NotAnExport { line: 1, .. }
        ));
    }

    #[test]
    fn a_cut_file_a_cut_tail_and_extra_keys_are_caught() {
        let lines = export(5);
        // The file cut short, at a row or in the middle of its end line.
        let cut = &lines[..4];
        assert_eq!(
            verify(cut.iter().map(String::as_str)),
            Verdict::Truncated {
                rows: 3,
                last_id: 3
            }
        );
        let mut half = lines.clone();
        let end = half.pop().unwrap();
        half.push(end[..end.len() / 2].to_owned());
        assert!(matches!(
            verify(half.iter().map(String::as_str)),
            Verdict::NotAnExport { line: 7, .. }
        ));
        // Rows cut from the end, with an end line made for what is left: the head says so.
        let mut tail_cut = lines[..4].to_vec();
        let row3: ChainedRow = match serde_json::from_str(&lines[3]).unwrap() {
            ExportLine::Row(r) => r,
            other => panic!("{other:?}"),
        };
        let row5: ChainedRow = match serde_json::from_str(&lines[5]).unwrap() {
            ExportLine::Row(r) => r,
            other => panic!("{other:?}"),
        };
        let last = ChainHead {
            id: 3,
            hash: row3.hash,
        };
        tail_cut.push(end_line(
            3,
            &last,
            ChainHead {
                id: 5,
                hash: row5.hash,
            },
        ));
        let v = verify(tail_cut.iter().map(String::as_str));
        assert_eq!(
            v,
            Verdict::CutTail {
                last_id: 3,
                head_id: 5
            }
        );
        assert!(
            v.to_string().contains("2 rows were deleted from the end"),
            "{v}"
        );
        // An end line that lies about the rows, or was edited.
        let mut lying = lines[..4].to_vec();
        lying.push(lines[6].clone());
        assert!(matches!(
            verify(lying.iter().map(String::as_str)),
            Verdict::BadEnd { .. }
        ));
        // A key the chain does not cover is refused, on any line.
        let mut extra = lines.clone();
        extra[2] = extra[2].replacen('{', "{\"note\":\"approved by the CEO\",", 1);
        assert!(
            matches!(
                verify(extra.iter().map(String::as_str)),
                Verdict::NotAnExport { line: 3, .. }
            ),
            "{:?}",
            verify(extra.iter().map(String::as_str))
        );
        let mut extra_start = lines.clone();
        extra_start[0] = extra_start[0].replacen('{', "{\"x\":1,", 1);
        assert!(matches!(
            verify(extra_start.iter().map(String::as_str)),
            Verdict::NotAnExport { line: 1, .. }
        ));
        // Nothing may follow the end.
        let mut after = lines.clone();
        after.push(lines[1].clone());
        assert!(matches!(
            verify(after.iter().map(String::as_str)),
            Verdict::BadEnd { line: 8, .. }
        ));
    }
}
