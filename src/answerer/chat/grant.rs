//! Grants: the route's "Allow for …" settlements, and a grant the person writes ("Allow
//! matching…"): its pattern checked against the command asked and its length against the
//! route's, kept for the term while the person sees the preview, and saved with "Save grant".

use crate::domain::answer::{GrantTerms, Terms};
use crate::domain::quorum::Policy;
use crate::domain::Settlement;
use std::collections::{HashMap, VecDeque};

/// "Allow for …" with the route's grant `g`: the first option (the front door's allow), with
/// the grant's terms. `None`: the route gives no such grant (any more).
pub fn settlement(policy: &Policy, g: usize) -> Option<Settlement> {
    let secs = *policy.grant_secs.get(g)?;
    Some(Settlement {
        selected: vec![0],
        custom: None,
        terms: Some(Terms {
            grant: Some(GrantTerms {
                secs,
                pattern: None,
                id: None,
            }),
            edited: None,
        }),
    })
}

/// "Allow for 30 min": a grant's button, on every platform.
pub fn label(secs: u64) -> String {
    format!("Allow for {}", length(secs))
}

/// "30 min", "8 h", "1 h 30 min", "2 days".
pub fn length(secs: u64) -> String {
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3600, secs % 3600 / 60);
    let mut parts = Vec::new();
    if d > 0 {
        parts.push(format!("{d} day{}", if d == 1 { "" } else { "s" }));
    }
    if h > 0 {
        parts.push(format!("{h} h"));
    }
    if m > 0 || parts.is_empty() {
        parts.push(format!("{m} min"));
    }
    parts.join(" ")
}

/// "Save grant" with the route's grant `g` and the `pattern` the person previewed.
pub fn saved(policy: &Policy, g: usize, pattern: String) -> Option<Settlement> {
    let mut s = settlement(policy, g)?;
    if let Some(t) = s.terms.as_mut().and_then(|t| t.grant.as_mut()) {
        t.pattern = Some(pattern);
    }
    Some(s)
}

/// Why a written grant cannot be previewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternRefused {
    /// The request is not an approval: it takes no grant.
    NotApproval,
    /// The length given is not one of the route's.
    Length,
    /// The pattern is not one line of an allowed length: the check's message.
    Line(String),
    /// The pattern does not match the command asked: why.
    NotAGrant(String),
}

/// A grant the person wrote: `pattern` (trimmed) for the approval of `command` (`None`: not
/// an approval), lasting `length` (as written), which must be one of `grant_secs`. The index
/// of the route's grant it is.
pub fn check(
    command: Option<&str>,
    grant_secs: &[u64],
    length: &str,
    pattern: &str,
) -> Result<usize, PatternRefused> {
    let g = crate::config::grant_secs(length)
        .ok()
        .and_then(|secs| grant_secs.iter().position(|&s| s == secs));
    let (Some(command), Some(g)) = (command, g) else {
        return Err(match command {
            None => PatternRefused::NotApproval,
            Some(_) => PatternRefused::Length,
        });
    };
    if let Err(e) = crate::domain::model::check_line(
        pattern,
        "pattern",
        crate::domain::model::MAX_APPROVAL_COMMAND_CHARS,
    ) {
        return Err(PatternRefused::Line(e.message));
    }
    if let Err(why) = crate::domain::glob::check_pattern(pattern, command) {
        return Err(PatternRefused::NotAGrant(why));
    }
    Ok(g)
}

/// Grant patterns waiting for "Save grant", per person (their platform id): their newest
/// previews (request token, pattern, the route's grant), oldest first. Each person's are
/// bounded on their own, so one person's previews never push out anyone else's. Kept for the
/// term only (a restart forgets them: the person is told to write the pattern again).
#[derive(Debug, Default)]
pub struct WaitingPatterns(pub(super) HashMap<String, VecDeque<(String, String, usize)>>);

/// The most grant patterns one person may have waiting for "Save grant" at once (their oldest
/// is forgotten past it).
pub const MAX_WAITING_PATTERNS_PER_PERSON: usize = 16;

impl WaitingPatterns {
    /// Keeps `person`'s preview of `pattern` for the request with `token`, replacing their
    /// earlier one for that request.
    pub fn insert(&mut self, token: &str, person: &str, pattern: String, g: usize) {
        let mine = self.0.entry(person.to_owned()).or_default();
        mine.retain(|(t, _, _)| t != token);
        if mine.len() >= MAX_WAITING_PATTERNS_PER_PERSON {
            mine.pop_front();
        }
        mine.push_back((token.to_owned(), pattern, g));
    }

    /// Takes `person`'s preview for the request with `token`: the pattern and the grant.
    pub fn take(&mut self, token: &str, person: &str) -> Option<(String, usize)> {
        let mine = self.0.get_mut(person)?;
        let at = mine.iter().position(|(t, _, _)| t == token)?;
        let (_, pattern, g) = mine.remove(at)?;
        if mine.is_empty() {
            self.0.remove(person);
        }
        Some((pattern, g))
    }
}
