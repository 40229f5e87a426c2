//! The approval vocabulary: the option labels the approval front doors (`askrelay hook`,
//! `askrelay approve`) ask with, and which of them allow or deny; the verdicts a person gives
//! many approvals at once (a batch); and which requests are pending approvals. The rules that
//! must know whether an answer lets something run (decisive votes, expiry on approval routes,
//! batches) read them here.

use super::model::Question;
use super::request::{Request, Status};

/// The option that allows a tool call (`askrelay hook`, PreToolUse and Codex).
pub const ALLOW: &str = "Allow";
/// The option that allows a permission request once (Claude Code's PermissionRequest).
pub const ALLOW_ONCE: &str = "Allow once";
/// The option that runs the command (`askrelay approve`).
pub const RUN: &str = "Run";
/// How the options that keep a permission begin: Claude Code's suggestions.
pub const KEEP_PREFIXES: [&str; 2] = ["Always allow", "Allow for this session"];

/// The option that denies (free text denies too, with a reason).
pub const DENY: &str = "Deny";
/// Denies and stops the agent's turn (Claude Code's PermissionRequest).
pub const DENY_AND_STOP: &str = "Deny and stop";
/// Does not run the command (`askrelay approve`).
pub const DO_NOT_RUN: &str = "Do not run";

/// The labels of the approval front doors' deny options: decisive on every quorum route. They
/// are known by name rather than marked in the request, which the agent's side writes: a mark
/// there could make "Allow" decisive.
pub const FRONT_DOOR_DENY: [&str; 3] = [DENY, DENY_AND_STOP, DO_NOT_RUN];

/// Whether `label` is one of the front doors' options that let the step run.
pub fn is_front_door_allow(label: &str) -> bool {
    [ALLOW, ALLOW_ONCE, RUN].contains(&label) || KEEP_PREFIXES.iter().any(|p| label.starts_with(p))
}

/// The labels of an approval's allow option, in order of preference.
pub const ALLOW_LABELS: [&str; 2] = [ALLOW, ALLOW_ONCE];

/// The answer a batch gives each selected approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny,
}

impl Verdict {
    /// The option of `q` this verdict picks: "Allow" (else "Allow once"), or "Deny".
    pub fn option(self, q: &Question) -> Option<usize> {
        let find = |label: &str| q.options.iter().position(|o| o.label == label);
        match self {
            Verdict::Allow => ALLOW_LABELS.iter().find_map(|l| find(l)),
            Verdict::Deny => find(DENY),
        }
    }

    /// The label an approval needs for this verdict ("Allow", "Deny").
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Allow => ALLOW_LABELS[0],
            Verdict::Deny => DENY,
        }
    }

    /// What was done, in a word: "allowed", "denied".
    pub fn done(self) -> &'static str {
        match self {
            Verdict::Allow => "allowed",
            Verdict::Deny => "denied",
        }
    }
}

/// Whether `req` is a pending approval: one question, open, single-select, with a deny option
/// ("Deny") and an allow option ("Allow", else "Allow once").
pub fn is_approval(req: &Request) -> bool {
    let [q] = &req.questions[..] else {
        return false;
    };
    req.status == Status::Pending
        && req.answers.first().is_some_and(Option::is_none)
        && !q.multi_select
        && Verdict::Allow.option(q).is_some()
        && Verdict::Deny.option(q).is_some()
}

/// Approvals for tests: a question with these option labels, and a pending request of
/// `answerer` (agent `agent-7`, uid 1000, route `default`) that asks them.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::domain::model::{Caller, Question, QuestionOption};
    use crate::domain::request::{NewRequest, Peer, Request};
    use std::sync::Arc;

    pub(crate) fn question(labels: &[&str]) -> Question {
        Question {
            id: "permission".into(),
            question: "Run `rm -rf build`?".into(),
            header: Some("Approve".into()),
            options: labels
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multi_select: false,
        }
    }

    pub(crate) fn request(
        answerer: &str,
        id: &str,
        token: &str,
        questions: Vec<Question>,
    ) -> Request {
        let new = NewRequest {
            request_id: id.into(),
            token: token.into(),
            questions: Arc::from(questions),
            context: None,
            caller: Caller {
                agent_id: Some("agent-7".into()),
                owner_agent_id: None,
            },
            scope: Default::default(),
            peer: Peer {
                uid: Some(1000),
                pid: None,
            },
            answerer: answerer.into(),
            answerers: vec![answerer.into()],
            route: Some("default".into()),
            created_at_ms: 1_000,
            expiry: None,
            node: None,
        };
        Request::created(1, &new)
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::question;
    use super::*;
    use std::sync::Arc;

    fn request(id: &str, token: &str, questions: Vec<Question>) -> Request {
        super::fixtures::request("discord", id, token, questions)
    }

    #[test]
    fn the_front_doors_allow_labels() {
        for l in [
            "Allow",
            "Allow once",
            "Run",
            "Always allow: Bash(npm test:*)",
        ] {
            assert!(is_front_door_allow(l), "{l}");
        }
        assert!(is_front_door_allow("Allow for this session: Edit"));
        for l in ["Deny", "Deny and stop", "Do not run", "allow", "Hold"] {
            assert!(!is_front_door_allow(l), "{l}");
        }
    }

    #[test]
    fn an_approval_has_deny_and_allow_or_allow_once() {
        let t = "0123456789abcdef0123";
        let hook = request("r", t, vec![question(&["Allow", "Deny"])]);
        let claude = request(
            "r",
            t,
            vec![question(&["Allow once", "Deny", "Deny and stop"])],
        );
        assert!(is_approval(&hook) && is_approval(&claude));
        assert_eq!(Verdict::Allow.option(&claude.questions[0]), Some(0));
        assert_eq!(Verdict::Deny.option(&claude.questions[0]), Some(1));
        let both = question(&["Allow once", "Allow", "Deny"]);
        assert_eq!(Verdict::Allow.option(&both), Some(1), "Allow first");
        for not in [
            request("r", t, vec![question(&["Yes", "No"])]),
            request("r", t, vec![question(&["Allow", "Refuse"])]),
            request("r", t, vec![question(&["Allow", "Deny"]); 2]),
            request("r", t, vec![question(&["allow", "deny"])]),
        ] {
            assert!(!is_approval(&not), "{:?}", not.questions);
        }
        let mut multi = request("r", t, vec![question(&["Allow", "Deny"])]);
        Arc::make_mut(&mut multi.questions)[0].multi_select = true;
        assert!(!is_approval(&multi));
    }
}
