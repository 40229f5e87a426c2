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

use super::request::AuditEntry;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// The `prev_hash` of the first row of a chain that starts from nothing.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// An audit row as stored, with its place in the chain: the line of an export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainedRow {
    pub id: i64,
    /// Milliseconds since the epoch.
    pub at: i64,
    pub request_key: Option<i64>,
    pub question_idx: Option<i64>,
    pub source: String,
    pub actor: Option<String>,
    pub action: String,
    pub detail: Option<String>,
    pub accepted: bool,
    pub prev_hash: String,
    pub hash: String,
}

/// The row a store appends next: its content, before the chain gives it an id and hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowContent<'a> {
    pub at: i64,
    pub request_key: Option<i64>,
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
            id,
            at: row.at,
            request_key: row.request_key,
            question_idx: row.question_idx,
            source: row.source.to_owned(),
            actor: row.actor.map(str::to_owned),
            action: row.action.to_owned(),
            detail: row.detail.map(str::to_owned),
            accepted: row.accepted,
            prev_hash: self.hash.clone(),
            hash,
        }
    }
}

/// The bytes a row's hash is taken over: the JSON array
/// `[id, at, request_key, question_idx, source, actor, action, detail, accepted, prev_hash]`,
/// compact (no spaces), with `null` for a missing value, `true`/`false` for `accepted`, strings
/// escaped as serde_json does (`"`, `\` and control characters only; other characters as UTF-8).
pub fn canonical(id: i64, row: &RowContent<'_>, prev_hash: &str) -> Vec<u8> {
    serde_json::to_vec(&(
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
    ))
    .expect("a tuple of numbers and strings always serializes")
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
            at: self.at,
            request_key: self.request_key,
            question_idx: self.question_idx,
            source: &self.source,
            actor: self.actor.as_deref(),
            action: &self.action,
            detail: self.detail.as_deref(),
            accepted: self.accepted,
        }
    }

    /// The hash this row's content and `prev_hash` give.
    pub fn computed_hash(&self) -> String {
        row_hash(self.id, &self.content(), &self.prev_hash)
    }
}

/// Where an export's chain starts: after row `after` (0: before the first row), whose hash
/// was `hash`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// One line of an export (`askrelay audit export`): the first is a start, the others rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExportLine {
    Start(ChainStart),
    Row(ChainedRow),
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every row follows the one before it and matches its content.
    Intact {
        rows: u64,
        start: ChainStart,
        /// The hash of the last row (the start's when there is none).
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
    /// Not an export: no start line, or a line that is not a row.
    NotAnExport { line: u64, why: String },
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Intact { rows, start, last } => {
                write!(f, "ok: {rows} rows, chain intact from {start} to {last}")
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
            Verdict::NotAnExport { line, why } => {
                write!(f, "not an audit export: line {line}: {why}")
            }
        }
    }
}

/// Checks the lines of an export in order and names the first broken link. Blank lines are
/// skipped (a trailing newline).
pub fn verify<'a>(lines: impl IntoIterator<Item = &'a str>) -> Verdict {
    let mut start: Option<ChainStart> = None;
    let mut prev_id = 0;
    let mut prev_hash = String::new();
    let mut rows = 0;
    for (i, text) in lines.into_iter().enumerate() {
        let line = i as u64 + 1;
        if text.trim().is_empty() {
            continue;
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
        match (parsed, &start) {
            (ExportLine::Start(s), None) => {
                prev_id = s.after;
                prev_hash = s.hash.clone();
                start = Some(s);
            }
            (ExportLine::Start(_), Some(_)) => {
                return Verdict::NotAnExport {
                    line,
                    why: "a second start line".into(),
                }
            }
            (ExportLine::Row(_), None) => {
                return Verdict::NotAnExport {
                    line,
                    why: "the first line must be the chain's start (\"kind\":\"start\")".into(),
                }
            }
            (ExportLine::Row(row), Some(_)) => {
                if row.prev_hash != prev_hash {
                    return Verdict::BrokenLink {
                        id: row.id,
                        line,
                        prev_id,
                    };
                }
                if row.computed_hash() != row.hash {
                    return Verdict::BadHash { id: row.id, line };
                }
                prev_id = row.id;
                prev_hash = row.hash;
                rows += 1;
            }
        }
    }
    match start {
        Some(start) => Verdict::Intact {
            rows,
            start,
            last: prev_hash,
        },
        None => Verdict::NotAnExport {
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
                id: row.id,
                hash: row.hash.clone(),
            };
            lines.push(serde_json::to_string(&ExportLine::Row(row)).unwrap());
        }
        lines
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
}
