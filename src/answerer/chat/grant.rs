//! Grants: the route's "Allow for …" settlements, and a grant the person writes ("Allow
//! matching…"): where it is offered, its pattern checked against the command asked and its
//! length against the route's, the [`Preview`] of what it would allow, kept for the term
//! while the person sees that preview (with the confirm word, when it was typed beside the
//! pattern), and saved with "Save grant".

use crate::domain::answer::{GrantTerms, Terms};
use crate::domain::model::Approval;
use crate::domain::quorum::Policy;
use crate::domain::request::Request;
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

/// A grant length as a form shows and takes it: `30m`, `8h`, `2d`, `1h30m`.
pub fn short_length(secs: u64) -> String {
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3600, secs % 3600 / 60);
    let mut out = String::new();
    for (n, unit) in [(d, "d"), (h, "h"), (m, "m")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    if out.is_empty() {
        out.push_str("0m");
    }
    out
}

/// The button that opens the form for a grant with a pattern, on every platform.
pub const PATTERN_LABEL: &str = "Allow matching…";

/// Whether an approval offers "Allow matching…": the route gives grants (`grant_secs`, empty
/// unless the approval is asked alone) and the command splits into shell words (a pattern
/// matches words, so a command that does not split takes none). When the allow label needs the
/// confirm word, only a platform whose pattern form has room for the word beside the pattern
/// (`word_fits`) offers it: Discord saves from a preview message, which has none.
pub fn offers_pattern(
    grant_secs: &[u64],
    approval: Option<&Approval>,
    allow_needs_word: bool,
    word_fits: bool,
) -> bool {
    !grant_secs.is_empty()
        && approval.is_some_and(|a| crate::domain::shell::split(&a.command).is_ok())
        && (word_fits || !allow_needs_word)
}

/// Who a grant would allow: the asking uid, on its node (cluster mode), in its agent session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requester {
    pub uid: Option<u32>,
    pub node: Option<String>,
    pub session: Option<String>,
}

impl Requester {
    /// The requester of `req`.
    pub fn of(req: &Request) -> Requester {
        Requester {
            uid: req.peer.uid,
            node: req.node.clone(),
            session: req
                .context
                .as_deref()
                .and_then(|c| c.approval.as_ref())
                .and_then(|a| a.session.clone()),
        }
    }

    /// "uid 1000 on node-a in session s1": the node and session (agent text) through the
    /// platform's `inert`.
    pub fn describe(&self, inert: impl Fn(&str) -> String) -> String {
        let mut out = match self.uid {
            Some(uid) => format!("uid {uid}"),
            None => "the asking process".to_owned(),
        };
        if let Some(node) = &self.node {
            out.push_str(&format!(" on {}", inert(node)));
        }
        if let Some(s) = &self.session {
            out.push_str(&format!(" in session {}", inert(s)));
        }
        out
    }
}

/// What a grant the person wrote would allow, shown before it is saved: the facts each
/// platform words in its own markup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    /// The pattern, trimmed.
    pub pattern: String,
    /// The route's grant it is, and its length.
    pub g: usize,
    pub secs: u64,
    /// "exact command", "prefix" or "pattern" ([`crate::domain::grant::pattern_kind`]).
    pub kind: &'static str,
    /// The approval's tool.
    pub tool: String,
    pub requester: Requester,
    /// The program the pattern names when it runs other programs from its options or
    /// arguments, and how: the grant allows whatever those run too.
    pub runs_other: Option<(String, &'static str)>,
}

/// The preview of `pattern` for `req`, lasting `length` (as written), which must be one of
/// `grant_secs` (the route's, empty unless the approval is asked alone); refused as
/// [`check`] refuses it.
pub fn preview(
    req: &Request,
    grant_secs: &[u64],
    length: &str,
    pattern: &str,
) -> Result<Preview, PatternRefused> {
    let pattern = pattern.trim();
    let approval = req.context.as_deref().and_then(|c| c.approval.as_ref());
    let g = check(
        approval.map(|a| a.command.as_str()),
        grant_secs,
        length,
        pattern,
    )?;
    Ok(Preview {
        pattern: pattern.to_owned(),
        g,
        secs: grant_secs[g],
        kind: crate::domain::grant::pattern_kind(pattern),
        tool: approval.map_or_else(|| "the tool".to_owned(), |a| a.tool.clone()),
        requester: Requester::of(req),
        runs_other: crate::domain::grant::runs_other_programs(pattern),
    })
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

/// A preview waiting for "Save grant": the pattern, the route's grant, and the confirm word
/// typed beside the pattern (when the allow label needs it; the core checks it again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub pattern: String,
    pub g: usize,
    pub typed: Option<String>,
}

/// Grant patterns waiting for "Save grant", per person (their platform id): their newest
/// previews (request token, what waits), oldest first. Each person's are bounded on their own,
/// so one person's previews never push out anyone else's. Kept for the term only (a restart
/// forgets them: the person is told to write the pattern again).
#[derive(Debug, Default)]
pub struct WaitingPatterns(pub(super) HashMap<String, VecDeque<(String, Waiting)>>);

/// The most grant patterns one person may have waiting for "Save grant" at once (their oldest
/// is forgotten past it).
pub const MAX_WAITING_PATTERNS_PER_PERSON: usize = 16;

impl WaitingPatterns {
    /// Keeps `person`'s preview (`waiting`) for the request with `token`, replacing their
    /// earlier one for that request.
    pub fn insert(&mut self, token: &str, person: &str, waiting: Waiting) {
        let mine = self.0.entry(person.to_owned()).or_default();
        mine.retain(|(t, _)| t != token);
        if mine.len() >= MAX_WAITING_PATTERNS_PER_PERSON {
            mine.pop_front();
        }
        mine.push_back((token.to_owned(), waiting));
    }

    /// Takes `person`'s preview for the request with `token`.
    pub fn take(&mut self, token: &str, person: &str) -> Option<Waiting> {
        let mine = self.0.get_mut(person)?;
        let at = mine.iter().position(|(t, _)| t == token)?;
        let (_, waiting) = mine.remove(at)?;
        if mine.is_empty() {
            self.0.remove(person);
        }
        Some(waiting)
    }
}
