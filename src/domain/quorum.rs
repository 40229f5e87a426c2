//! Approval policy: how many distinct people must choose the same answer before a question
//! settles (the quorum), which choices settle with one vote (decisive: one person can always
//! stop a step), and whether the person who asked may answer. The answerer that owns a request
//! says its policy (a route's keys); the hub applies it to every settlement, whatever surface
//! it came through.

use super::answer::Settlement;
use super::error::AskError;
use super::model::{check_line, check_text, Question, MAX_APPROVAL_COMMAND_CHARS};
use super::request::{Actor, Request, Via};
use super::vote::{Tally, Vote};
use std::sync::Arc;

use super::approval::FRONT_DOOR_DENY;

/// A person and their handles on each surface (`[[identities]]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    /// Local uids, on `hosts` (every host when empty: cluster nodes by their node name).
    pub uids: Vec<u32>,
    pub hosts: Vec<String>,
    /// Ids on the chat platforms (Discord and Slack user ids; they never look alike).
    pub platform_ids: Vec<String>,
    /// Globs on the agent session ids the front doors report (`context.approval.session`, or
    /// the `session` scope label): the sessions this person runs, under whatever uid.
    pub sessions: Vec<String>,
}

impl Identity {
    fn has_uid(&self, uid: u32, host: &str) -> bool {
        self.uids.contains(&uid) && (self.hosts.is_empty() || self.hosts.iter().any(|h| h == host))
    }

    /// Whether `actor`, answering on `host`, is this person.
    fn is(&self, actor: &Actor, host: &str) -> bool {
        match actor.via {
            Via::Terminal => actor
                .id
                .parse()
                .is_ok_and(|uid: u32| self.has_uid(uid, host)),
            Via::Discord | Via::Slack => self.platform_ids.contains(&actor.id),
            Via::Policy | Via::Grant => false,
        }
    }
}

/// Whether the person answering is the one who asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requester {
    Yes,
    No,
    /// Nobody can say (the request carries no uid, and no identity's `sessions` names its
    /// session): where the requester is excluded, such an answer is refused, never counted.
    Unknown,
}

/// A request's approval policy. The default (one approval) is first-wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Distinct people who must choose the same answer.
    pub approvals: u32,
    /// Labels that settle with one vote, besides [`FRONT_DOOR_DENY`].
    pub decisive: Vec<String>,
    /// Whether free text settles with one vote (else it is not offered on a quorum route).
    pub custom_decides: bool,
    /// Whether the person who asked is refused.
    pub exclude_requester: bool,
    pub identities: Arc<[Identity]>,
    /// How long the grants approvers may give last (`grant_durations`; none: no grants).
    pub grant_secs: Vec<u64>,
    /// Whether approvers may edit an editable command before approving it (`allow_edits`).
    pub allow_edits: bool,
    /// Labels that need a typed word to confirm them (`confirm_labels`, `confirm_word`).
    pub confirm: super::confirm::Confirm,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            approvals: 1,
            decisive: Vec::new(),
            custom_decides: true,
            exclude_requester: false,
            identities: Arc::from(Vec::new()),
            grant_secs: Vec::new(),
            allow_edits: false,
            confirm: Default::default(),
        }
    }
}

impl Policy {
    pub fn is_quorum(&self) -> bool {
        self.approvals > 1
    }

    /// Whether free text may be offered (Other…): always, but on a quorum route only when it
    /// decides alone.
    pub fn offers_custom(&self) -> bool {
        !self.is_quorum() || self.custom_decides
    }

    /// Whether `label` denies: a front door's deny option, or one of the route's decisive
    /// labels.
    pub fn is_deny(&self, label: &str) -> bool {
        FRONT_DOOR_DENY.contains(&label) || self.decisive.iter().any(|d| d == label)
    }

    /// Whether the terms of `s` (a grant, an edit) are ones this route lets an approver give
    /// on `req`'s question `q`: an allow of a request with an approval subject, a grant of
    /// one of the route's durations, an edit where the route and the front door allow it.
    pub fn check_terms(&self, req: &Request, q: &Question, s: &Settlement) -> Result<(), AskError> {
        let Some(terms) = &s.terms else {
            return Ok(());
        };
        let approval = req
            .context
            .as_deref()
            .and_then(|c| c.approval.as_ref())
            .ok_or_else(|| AskError::invalid("terms: this request is not an approval"))?;
        let label = s
            .selected
            .first()
            .and_then(|&i| q.options.get(i))
            .map(|o| o.label.as_str())
            .unwrap_or_default();
        if self.is_deny(label) {
            return Err(AskError::invalid(format!(
                "terms: {label:?} denies; only an allow takes a grant or an edit"
            )));
        }
        if terms.grant.is_some() && terms.edited.is_some() {
            return Err(AskError::invalid(
                "terms: a grant is for the command as asked; an edited command is approved once",
            ));
        }
        if let Some(g) = &terms.grant {
            if !self.grant_secs.contains(&g.secs) {
                return Err(AskError::invalid(
                    "terms.grant: this route gives no grant of that length (grant_durations)",
                ));
            }
            if req.route.is_none() || req.peer.uid.is_none() {
                return Err(AskError::invalid(
                    "terms.grant: only a request of a local account on a route can be granted",
                ));
            }
            if let Some(p) = &g.pattern {
                check_line(p, "terms.grant.pattern", MAX_APPROVAL_COMMAND_CHARS)?;
                if let Err(why) = super::glob::check_pattern(p, &approval.command) {
                    return Err(AskError::invalid(format!("terms.grant.pattern: {why}")));
                }
            }
        }
        if let Some(e) = &terms.edited {
            if !(self.allow_edits && approval.editable) {
                return Err(AskError::invalid(
                    "terms.edited: this request's command cannot be edited here",
                ));
            }
            check_text(e, "terms.edited", MAX_APPROVAL_COMMAND_CHARS)?;
        }
        Ok(())
    }

    /// Whether this settlement settles the question with one vote.
    pub fn decides(&self, q: &Question, s: &Settlement) -> bool {
        if !self.is_quorum() {
            return true;
        }
        if s.custom.is_some() && s.selected.is_empty() {
            return self.custom_decides;
        }
        s.selected
            .iter()
            .any(|&i| q.options.get(i).is_some_and(|o| self.is_deny(&o.label)))
    }

    /// Who a voter is, to count them once: their identity's name, else the surface and id.
    /// `host` is where they answer (this daemon's host, [`crate::domain::Hub::host`]).
    pub fn person(&self, actor: &Actor, host: &str) -> String {
        match self.identities.iter().find(|i| i.is(actor, host)) {
            Some(i) => format!("identity:{}", i.name),
            None => format!("{}:{}", actor.via.as_str(), actor.id),
        }
    }

    /// Whether `actor` (answering on `host`) is the person who asked `req`: the same local
    /// account on the same host, or the identity the asking uid (on the host it asked on: its
    /// cluster node, else this daemon's host) or its agent session maps to.
    pub fn requester(&self, req: &Request, actor: &Actor, host: &str) -> Requester {
        let asked_on = req.node.as_deref().unwrap_or(host);
        let session = req
            .context
            .as_deref()
            .and_then(|c| c.approval.as_ref())
            .and_then(|a| a.session.as_deref())
            .or_else(|| req.scope.get("session").map(String::as_str));
        let by_session = |i: &&Identity| {
            session.is_some_and(|s| i.sessions.iter().any(|g| super::glob::matches(g, s)))
        };
        let Some(uid) = req.peer.uid else {
            let named: Vec<&Identity> = self.identities.iter().filter(by_session).collect();
            return if named.is_empty() {
                Requester::Unknown
            } else if named.iter().any(|i| i.is(actor, host)) {
                Requester::Yes
            } else {
                Requester::No
            };
        };
        if actor.via == Via::Terminal && actor.id == uid.to_string() && asked_on == host {
            return Requester::Yes;
        }
        let theirs = self
            .identities
            .iter()
            .filter(|i| i.has_uid(uid, asked_on) || by_session(i))
            .any(|i| i.is(actor, host));
        if theirs {
            Requester::Yes
        } else {
            Requester::No
        }
    }

    /// Whether this route refuses `actor`'s answer to `req` as the requester's: they asked it,
    /// or nobody can say whether they did (fail closed).
    pub fn refuses_requester(&self, req: &Request, actor: &Actor, host: &str) -> bool {
        self.exclude_requester && self.requester(req, actor, host) != Requester::No
    }

    /// The votes that chose `s`.
    pub fn tally(&self, votes: &[Vote], s: &Settlement) -> Tally {
        Tally {
            count: count_for(votes, s),
            needed: self.approvals as usize,
        }
    }
}

/// How many of `votes` chose `s`.
fn count_for(votes: &[Vote], s: &Settlement) -> usize {
    votes.iter().filter(|v| v.settlement() == *s).count()
}

/// The most votes any one answer has (0 without votes).
pub fn leading(votes: &[Vote]) -> usize {
    votes
        .iter()
        .map(|v| count_for(votes, &v.settlement()))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::model::QuestionOption;
    use crate::domain::request::Peer;

    fn q() -> Question {
        Question {
            id: "permission".into(),
            question: "Allow?".into(),
            header: None,
            options: ["Allow", "Deny", "Hold"]
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multi_select: false,
        }
    }

    fn actor(via: Via, id: &str) -> Actor {
        Actor {
            via,
            id: id.into(),
            name: id.into(),
            note: None,
        }
    }

    #[test]
    fn deny_and_the_routes_labels_decide_alone_on_a_quorum_route() {
        let mut p = Policy {
            approvals: 2,
            custom_decides: false,
            ..Policy::default()
        };
        assert!(!p.decides(&q(), &Settlement::choice(0)));
        assert!(p.decides(&q(), &Settlement::choice(1)));
        assert!(!p.decides(&q(), &Settlement::choice(2)));
        assert!(!p.decides(&q(), &Settlement::text("x".to_owned())));
        p.decisive = vec!["Hold".into()];
        assert!(p.decides(&q(), &Settlement::choice(2)));
        assert!(Policy::default().decides(&q(), &Settlement::choice(0)));
    }

    #[test]
    fn the_requester_is_their_account_or_their_identity() {
        let alice = Identity {
            name: "alice".into(),
            uids: vec![1000],
            hosts: vec![],
            platform_ids: vec!["111".into()],
            sessions: vec!["alice-*".into()],
        };
        let p = Policy {
            approvals: 2,
            exclude_requester: true,
            identities: Arc::from(vec![alice]),
            ..Policy::default()
        };
        let new = crate::domain::request::NewRequest {
            request_id: "r".into(),
            token: "t".into(),
            questions: Arc::from(vec![q()]),
            context: None,
            caller: Default::default(),
            scope: Default::default(),
            peer: Peer {
                uid: Some(1000),
                pid: None,
            },
            answerer: "discord".into(),
            answerers: vec!["discord".into()],
            route: None,
            created_at_ms: 0,
            expiry: None,
            node: None,
        };
        let mut req = Request::created(1, &new);
        let is = |p: &Policy, req: &Request, a: Actor, host: &str| p.requester(req, &a, host);
        use Requester::{No, Unknown, Yes};
        assert_eq!(is(&p, &req, actor(Via::Terminal, "1000"), "h"), Yes);
        assert_eq!(is(&p, &req, actor(Via::Discord, "111"), "h"), Yes);
        assert_eq!(is(&p, &req, actor(Via::Discord, "222"), "h"), No);
        assert_eq!(is(&p, &req, actor(Via::Terminal, "1001"), "h"), No);
        // With hosts, the same uid on another cluster node is another account.
        let mut on_a = p.clone();
        on_a.identities = Arc::from(vec![Identity {
            hosts: vec!["a".into()],
            ..on_a.identities[0].clone()
        }]);
        req.node = Some("a".into());
        assert_eq!(is(&on_a, &req, actor(Via::Discord, "111"), "b"), Yes);
        assert_eq!(is(&on_a, &req, actor(Via::Terminal, "1000"), "b"), No);
        req.node = Some("b".into());
        assert_eq!(is(&on_a, &req, actor(Via::Discord, "111"), "b"), No);
        // A single daemon's requests carry no node: they were asked on its own host.
        req.node = None;
        assert_eq!(is(&on_a, &req, actor(Via::Discord, "111"), "a"), Yes);
        assert_eq!(is(&on_a, &req, actor(Via::Terminal, "1000"), "a"), Yes);
        assert_eq!(is(&on_a, &req, actor(Via::Discord, "111"), "b"), No);
        assert_eq!(p.person(&actor(Via::Discord, "111"), "h"), "identity:alice");
        // Under a shared account, the agent session says who asked.
        let mut shared = Request::created(2, &new);
        shared.peer.uid = Some(2000);
        assert_eq!(is(&p, &shared, actor(Via::Discord, "111"), "h"), No);
        shared.scope.insert("session".into(), "alice-42".into());
        assert_eq!(is(&p, &shared, actor(Via::Discord, "111"), "h"), Yes);
        assert_eq!(is(&p, &shared, actor(Via::Discord, "222"), "h"), No);
        assert_eq!(p.person(&actor(Via::Discord, "222"), "h"), "discord:222");
        // Without a uid, only a session can say who asked; else nobody can, and the rule
        // refuses rather than count the vote.
        let mut anonymous = Request::created(3, &new);
        anonymous.peer.uid = None;
        assert_eq!(is(&p, &anonymous, actor(Via::Discord, "222"), "h"), Unknown);
        assert!(p.refuses_requester(&anonymous, &actor(Via::Discord, "222"), "h"));
        anonymous.scope.insert("session".into(), "alice-7".into());
        assert_eq!(is(&p, &anonymous, actor(Via::Discord, "222"), "h"), No);
        assert_eq!(is(&p, &anonymous, actor(Via::Discord, "111"), "h"), Yes);
    }
}
