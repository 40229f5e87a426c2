//! One-use grants (docs/approvals.md, "Auto mode"): Claude Code's auto mode denied a tool
//! call, a person allowed it once, and the agent may make that exact call again, once. The
//! grant is bound to the agent session and to the call's key (`call`: a hash of the session,
//! the tool's name and its input, the same `call` scope label the asking hook gave the
//! request), belongs to the uid that asked, and lives [`LIFE_MS`] from the person's answer.
//! It is minted only from an answered request whose answer was "Allow once", at most once per
//! request, and used at most once.

use serde::{Deserialize, Serialize};

/// How long a one-use grant lives, from the answer that allowed it: the agent retries at once
/// (Claude Code tells the model to make the call again now), so minutes are plenty.
pub const LIFE_MS: i64 = 10 * 60 * 1000;

/// A stored one-use grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnceGrant {
    /// `og-` and 12 hex digits.
    pub id: String,
    /// The agent session (the request's `session` scope label).
    pub session: String,
    /// The call's key (the request's `call` scope label).
    pub call: String,
    /// The tool, as the request's `tool` scope label named it (for people; the key binds it).
    pub tool: String,
    /// The uid that asked, the only one that may use it.
    pub uid: u32,
    /// Who allowed it ([`super::request::Actor::describe`]).
    pub approver: String,
    /// The request it was minted from: its store key and its id.
    pub request_key: i64,
    pub request_id: String,
    pub created_at_ms: i64,
    pub ends_at_ms: i64,
    /// When the retried call used it; `None` while unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_at_ms: Option<i64>,
}

/// A new one-use grant id.
pub fn new_id() -> String {
    let mut bytes = [0u8; 6];
    if getrandom::fill(&mut bytes).is_err() {
        bytes.copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[..6]);
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("og-{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_og_and_twelve_hex_digits() {
        let id = new_id();
        assert_eq!(id.len(), 15, "{id}");
        assert!(id.starts_with("og-"));
        assert!(id[3..].bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        assert_ne!(new_id(), id);
    }
}
