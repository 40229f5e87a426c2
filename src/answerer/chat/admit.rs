//! Who may press: the checks a press on a question goes through, in order, once the platform
//! has found the request and the message it belongs to. The platform renders the refusal.

use super::{Person, Platform};
use crate::domain::request::{Answered, AuditAction, Request, Status, WithdrawReason};

/// Why a press changes nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// A bot account pressed.
    Bot,
    /// The option pressed is not one the question has (a forged control).
    NoSuchOption,
    /// The person is not on the route's allowlists (nor reached by its DMs or escalation).
    NotAllowed,
    /// The question was answered already: by whom, when, and what.
    Answered(Box<Answered>),
    /// The request is no longer pending: its status, its error's message if it has one, and
    /// why it was withdrawn if it was (answered in the agent's terminal, the agent moved on).
    Ended {
        status: Status,
        error: Option<String>,
        withdrawn: Option<WithdrawReason>,
    },
}

/// The reply to a press on a question its agent went on without: the answer is not used. The
/// same words on every platform (a note that the question is no longer needed says them too).
pub fn withdrawn_text(reason: WithdrawReason) -> &'static str {
    match reason {
        WithdrawReason::AnsweredInTerminal => {
            "Already answered in the terminal: the agent's own prompt settled this, so your \
             answer was not used."
        }
        WithdrawReason::AgentMovedOn | WithdrawReason::HookKilled => {
            "The agent moved on without this answer, so yours was not used."
        }
    }
}

/// A refusal with the audit action it is recorded as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub action: AuditAction,
    pub why: Refused,
}

impl Refused {
    /// The audit action of this refusal.
    pub fn action(&self) -> AuditAction {
        match self {
            Refused::Bot => AuditAction::Bot,
            Refused::NoSuchOption => AuditAction::Forged,
            Refused::NotAllowed => AuditAction::Denied,
            Refused::Answered(_) | Refused::Ended { .. } => AuditAction::Late,
        }
    }
}

impl From<Refused> for Refusal {
    fn from(why: Refused) -> Refusal {
        Refusal {
            action: why.action(),
            why,
        }
    }
}

/// A person, not a bot, pressed: checked before anything is read.
pub fn person(p: &Person) -> Result<(), Refusal> {
    if p.bot {
        return Err(Refused::Bot.into());
    }
    Ok(())
}

/// The checks of a press on question `idx` of `req` (its `option`, when the control names
/// one), in order: an option the question has; a person the route allows at `now_ms`; a
/// question still open (who answered it tells a late presser more than "ended"); a request
/// still pending.
pub fn press(
    platform: &dyn Platform,
    req: &Request,
    idx: usize,
    option: Option<usize>,
    person: &Person,
    now_ms: i64,
) -> Result<(), Refusal> {
    let q = &req.questions[idx];
    if option.is_some_and(|i| i >= q.options.len()) {
        return Err(Refused::NoSuchOption.into());
    }
    if !platform.may_answer(req, person, now_ms) {
        return Err(Refused::NotAllowed.into());
    }
    open(req, idx)
}

/// Question `idx` still open and its request still pending.
pub fn open(req: &Request, idx: usize) -> Result<(), Refusal> {
    if let Some(Some(a)) = req.answers.get(idx) {
        return Err(Refused::Answered(Box::new(a.clone())).into());
    }
    if req.status != Status::Pending {
        return Err(Refused::Ended {
            status: req.status,
            error: req.error().map(|e| e.message.clone()),
            withdrawn: req.withdrawn,
        }
        .into());
    }
    Ok(())
}
