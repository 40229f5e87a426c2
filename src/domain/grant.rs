//! Grants: "allow this for a while". An approver who allows a request with a grant also
//! allows the same requester's later requests on the same route, for the same tool and the
//! same command (or a pattern the approver wrote), until the grant ends or is revoked. Such a
//! request is answered at once, by the grant, and announced (docs/approvals.md, "Grants").

use super::glob::pattern_matches;
use super::model::Approval;
use super::request::Request;
use super::shell;
use super::vote::Vote;
use serde::{Deserialize, Serialize};

/// A stored grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// `g-` and 12 hex digits.
    pub id: String,
    pub route: String,
    pub tool: String,
    /// The exact command, or the approver's pattern (see [`super::glob::pattern_matches`]).
    pub pattern: String,
    pub exact: bool,
    /// Who it allows: the asking uid, on its node (cluster mode), in its agent session.
    pub uid: u32,
    pub host: Option<String>,
    pub session: Option<String>,
    /// The option it answers with (the front door's allow label).
    pub label: String,
    /// Who approved it ([`super::request::Actor::describe`]), and their surface and id; for a
    /// quorum's grant, every voter ([`Vote::describe`], `, ` between them),
    /// the surface [`QUORUM`] and the voters' `via:id`, a space between each
    /// ([`Grant::approved_by`] reads them).
    pub approver: String,
    pub approver_via: String,
    pub approver_id: String,
    /// The request it was granted on.
    pub request_key: i64,
    pub created_at_ms: i64,
    pub ends_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
    pub revoked_by: Option<String>,
}

/// A quorum's grant's `approver_via`.
pub const QUORUM: &str = "quorum";

/// The most grants a listing shows.
pub const GRANTS_LISTED: u32 = 200;

impl Grant {
    /// Makes the quorum of `voters` its approver.
    pub fn set_quorum(&mut self, voters: &[Vote]) {
        let named: Vec<String> = voters.iter().map(Vote::describe).collect();
        let ids: Vec<String> = voters
            .iter()
            .map(|v| format!("{}:{}", v.via, v.id))
            .collect();
        self.approver = named.join(", ");
        self.approver_via = QUORUM.to_owned();
        self.approver_id = ids.join(" ");
    }

    /// Whether the person on surface `via` (`discord`, `terminal`) with id `id` approved it:
    /// its approver, or one of the quorum that gave it. By id, never by a name's text.
    pub fn approved_by(&self, via: &str, id: &str) -> bool {
        if self.approver_via == QUORUM {
            return self
                .approver_id
                .split(' ')
                .any(|v| v.split_once(':') == Some((via, id)));
        }
        self.approver_via == via && self.approver_id == id
    }

    /// Whether it still allows anything at `now_ms`.
    pub fn is_live(&self, now_ms: i64) -> bool {
        self.revoked_at_ms.is_none() && now_ms < self.ends_at_ms
    }

    /// Whether it answers `req` (on `route`), at `now_ms`: the same route, tool, requester and
    /// session, and the command matches; and the request's single question offers its label.
    /// Returns the option to answer with.
    pub fn answers(&self, req: &Request, route: &str, now_ms: i64) -> Option<usize> {
        let a = req.context.as_deref()?.approval.as_ref()?;
        let same = self.is_live(now_ms)
            && self.route == route
            && self.tool == a.tool
            && req.peer.uid == Some(self.uid)
            && req.node == self.host
            && a.session == self.session
            && self.covers(&a.command);
        if !same || req.questions.len() != 1 {
            return None;
        }
        req.questions[0]
            .options
            .iter()
            .position(|o| o.label == self.label)
    }

    /// Whether the grant covers `command`.
    pub fn covers(&self, command: &str) -> bool {
        if self.exact {
            self.pattern == command
        } else {
            pattern_matches(&self.pattern, command)
        }
    }

    /// How the grant's command shows: `cargo test` (exact) or `cargo test *` (pattern).
    pub fn kind(&self) -> &'static str {
        if self.exact {
            "exact command"
        } else {
            pattern_kind(&self.pattern)
        }
    }
}

/// What a pattern is, to show it before it is saved: `exact command` (no wildcards),
/// `prefix` (plain words, then one `*` word: `cargo test *`), or `pattern`. Only for a pattern
/// [`super::glob::check_pattern`] accepts.
pub fn pattern_kind(pattern: &str) -> &'static str {
    match shell::split(pattern) {
        Ok(words) if !words.iter().any(shell::Word::has_wildcard) => "exact command",
        Ok(words) if shell::is_prefix(&words) => "prefix",
        _ => "pattern",
    }
}

/// Programs that run other programs (or code) named in their options or arguments, with an
/// example of how: a grant for them allows more than the program itself.
const RUNNERS: &[(&str, &str)] = &[
    (
        "git",
        "`git -c alias.x='!…'`, `git -c core.pager=…`, `git -c core.sshCommand=…`",
    ),
    (
        "find",
        "`find … -exec …`, `find … -execdir …`, `find … -ok …`",
    ),
    ("xargs", "`xargs CMD …`"),
    ("env", "`env CMD …`"),
    ("sh", "`sh -c '…'`"),
    ("bash", "`bash -c '…'`"),
    ("zsh", "`zsh -c '…'`"),
    ("dash", "`dash -c '…'`"),
    ("ksh", "`ksh -c '…'`"),
    ("fish", "`fish -c '…'`"),
    ("sudo", "`sudo CMD …`"),
    ("doas", "`doas CMD …`"),
    ("su", "`su -c '…'`"),
    ("nohup", "`nohup CMD …`"),
    ("timeout", "`timeout 5 CMD …`"),
    ("nice", "`nice CMD …`"),
    ("time", "`time CMD …`"),
    ("watch", "`watch CMD …`"),
    ("exec", "`exec CMD …`"),
    ("eval", "`eval '…'`"),
    ("command", "`command CMD …`"),
    ("ssh", "`ssh HOST CMD …`, `ssh -o ProxyCommand=…`"),
    ("awk", "`awk 'BEGIN{system(\"…\")}'`"),
    ("perl", "`perl -e '…'`"),
    ("python", "`python -c '…'`"),
    ("python3", "`python3 -c '…'`"),
    ("node", "`node -e '…'`"),
    ("ruby", "`ruby -e '…'`"),
    ("make", "`make -f … `, the Makefile's recipes"),
    ("npx", "`npx PACKAGE`"),
    ("npm", "`npm exec …`, the package's scripts"),
    ("cargo", "`cargo --config …`, build scripts"),
    ("docker", "`docker run …`"),
    ("kubectl", "`kubectl exec …`"),
    ("parallel", "`parallel CMD …`"),
];

/// When a pattern's command can run other programs from its options or arguments: its name and
/// an example of how (the grant preview says so, so that nobody trusts it too much).
pub fn runs_other_programs(pattern: &str) -> Option<(String, &'static str)> {
    let words = shell::split(pattern).ok()?;
    let first = words.first()?.text();
    let name = first.rsplit('/').next().unwrap_or(&first).to_owned();
    RUNNERS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, how)| (name, how))
}

/// A new grant id.
pub fn new_id() -> String {
    let mut bytes = [0u8; 6];
    if getrandom::fill(&mut bytes).is_err() {
        bytes.copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[..6]);
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("g-{hex}")
}

/// Whether `s` has the form of a grant id.
pub fn is_id(s: &str) -> bool {
    s.len() == 14
        && s.starts_with("g-")
        && s[2..]
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The grant that settling `req` with these terms creates.
#[allow(clippy::too_many_arguments)]
pub fn from_terms(
    req: &Request,
    approval: &Approval,
    pattern: Option<&str>,
    label: &str,
    secs: u64,
    approver: &super::request::Actor,
    at_ms: i64,
) -> Option<Grant> {
    Some(Grant {
        id: new_id(),
        route: req.route.clone()?,
        tool: approval.tool.clone(),
        pattern: pattern.unwrap_or(&approval.command).to_owned(),
        exact: pattern.is_none(),
        uid: req.peer.uid?,
        host: req.node.clone(),
        session: approval.session.clone(),
        label: label.to_owned(),
        approver: approver.describe(),
        approver_via: approver.via.as_str().to_owned(),
        approver_id: approver.id.clone(),
        request_key: req.key,
        created_at_ms: at_ms,
        ends_at_ms: at_ms.saturating_add((secs as i64).saturating_mul(1000)),
        revoked_at_ms: None,
        revoked_by: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_that_run_other_programs_are_named() {
        assert_eq!(runs_other_programs("git * --dry-run").unwrap().0, "git");
        assert_eq!(runs_other_programs("/usr/bin/find . *").unwrap().0, "find");
        assert!(runs_other_programs("sh -c *").is_some());
        assert!(runs_other_programs("cargo-nextest *").is_none());
        assert!(runs_other_programs("ls *").is_none());
    }

    #[test]
    fn a_grant_answers_its_requester_s_command_until_it_ends_or_is_revoked() {
        use crate::domain::model::{Approval, Context, Question, QuestionOption};
        use crate::domain::request::{NewRequest, Peer};
        use std::sync::Arc;
        let approval = Approval {
            tool: "Bash".into(),
            command: "cargo test".into(),
            session: Some("s1".into()),
            editable: false,
        };
        let new = NewRequest {
            request_id: "r".into(),
            token: "t".into(),
            questions: Arc::from(vec![Question {
                id: "permission".into(),
                question: "Allow Bash?".into(),
                header: None,
                options: ["Allow", "Deny"]
                    .iter()
                    .map(|l| QuestionOption {
                        label: (*l).into(),
                        description: None,
                    })
                    .collect(),
                multi_select: false,
            }]),
            context: Some(Arc::new(Context {
                approval: Some(approval.clone()),
                ..Context::default()
            })),
            caller: Default::default(),
            scope: Default::default(),
            peer: Peer {
                uid: Some(1000),
                pid: None,
            },
            answerer: "discord".into(),
            answerers: vec!["discord".into()],
            route: Some("dev".into()),
            created_at_ms: 0,
            expiry: None,
            node: None,
        };
        let req = Request::created(1, &new);
        let actor = crate::domain::request::Actor::local(Some(1001), Some("bob".into()), None);
        let g = from_terms(&req, &approval, None, "Allow", 1800, &actor, 1_000).unwrap();
        assert_eq!(g.ends_at_ms, 1_801_000);
        assert_eq!(g.answers(&req, "dev", 1_000), Some(0));
        assert_eq!(g.answers(&req, "dev", 1_800_999), Some(0));
        assert_eq!(g.answers(&req, "dev", 1_801_000), None, "ended");
        assert_eq!(g.answers(&req, "prod", 2_000), None, "another route");
        let mut other_uid = req.clone();
        other_uid.peer.uid = Some(1002);
        assert_eq!(
            g.answers(&other_uid, "dev", 2_000),
            None,
            "another requester"
        );
        let revoked = Grant {
            revoked_at_ms: Some(1_500),
            ..g.clone()
        };
        assert_eq!(revoked.answers(&req, "dev", 2_000), None, "revoked");
        let prefix = Grant {
            pattern: "cargo *".into(),
            exact: false,
            ..g
        };
        assert!(prefix.covers("cargo build"));
        assert!(!prefix.covers("cargo build && rm -rf ~"));
    }

    #[test]
    fn kinds_and_ids() {
        assert_eq!(pattern_kind("cargo test *"), "prefix");
        assert_eq!(pattern_kind("git * --dry-run"), "pattern");
        assert_eq!(pattern_kind("ls"), "exact command");
        assert_eq!(pattern_kind("ls '*'"), "exact command");
        assert_eq!(pattern_kind("ls *.rs"), "pattern");
        let id = new_id();
        assert!(is_id(&id), "{id}");
        assert!(!is_id("g-12"));
        assert!(!is_id("g-ABCDEF123456"));
    }
}
