//! A request as the daemon knows it: its lifecycle, who settled each question, how it ended, the
//! outbox rows of the answerer that shows it, and the audit rows it leaves behind.
//!
//! These are plain values. A store backend persists and loads them (see [`super::store`]); the
//! hub decides how they change.

use super::answer::Settlement;
use super::error::{AskError, ErrorCode};
use super::expiry::Expiry;
use super::model::{Caller, Context, Question, Scope};
use super::vote::{Tally, Vote};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// The length of a request token (80 random bits as hex digits, `Hub`'s `new_token`).
pub const TOKEN_CHARS: usize = 20;

/// Whether `s` has the form of a request token, before the store is asked for it.
pub fn is_token(s: &str) -> bool {
    s.len() == TOKEN_CHARS && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The lifecycle of a request. Only `Pending` may change, and only once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pending,
    Answered,
    Cancelled,
    Expired,
    /// Ended with an error before anyone could answer (e.g. `NO_ANSWERER`).
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Answered => "answered",
            Status::Cancelled => "cancelled",
            Status::Expired => "expired",
            Status::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Some(match s {
            "pending" => Status::Pending,
            "answered" => Status::Answered,
            "cancelled" => Status::Cancelled,
            "expired" => Status::Expired,
            "failed" => Status::Failed,
            _ => return None,
        })
    }
}

/// Why a request was withdrawn: its agent went on without askrelay's answer (docs/approvals.md,
/// "Withdrawn when answered elsewhere"). Stored with the ended request, so that every copy of
/// its question and a late click can say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WithdrawReason {
    /// The agent's own dialog was answered at its terminal (PostToolUse, PostToolUseFailure).
    AnsweredInTerminal,
    /// The agent went on (UserPromptSubmit, Stop, SessionEnd).
    AgentMovedOn,
    /// The hook waiting for the answer was stopped, killed, or lost its agent.
    HookKilled,
}

impl WithdrawReason {
    /// The name on the wire and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            WithdrawReason::AnsweredInTerminal => "answered_in_terminal",
            WithdrawReason::AgentMovedOn => "agent_moved_on",
            WithdrawReason::HookKilled => "hook_killed",
        }
    }

    pub fn parse(s: &str) -> Option<WithdrawReason> {
        match s {
            "answered_in_terminal" => Some(WithdrawReason::AnsweredInTerminal),
            "agent_moved_on" => Some(WithdrawReason::AgentMovedOn),
            "hook_killed" => Some(WithdrawReason::HookKilled),
            _ => None,
        }
    }

    /// What the request ended as, in a sentence: "answered in the terminal".
    pub fn headline(self) -> &'static str {
        match self {
            WithdrawReason::AnsweredInTerminal => "answered in the terminal",
            WithdrawReason::AgentMovedOn => "the agent moved on",
            WithdrawReason::HookKilled => "the agent moved on: its waiting hook was stopped",
        }
    }

    /// The status every copy of the question shows: "Answered in the terminal".
    pub fn status(self) -> &'static str {
        match self {
            WithdrawReason::AnsweredInTerminal => "Answered in the terminal",
            WithdrawReason::AgentMovedOn | WithdrawReason::HookKilled => "The agent moved on",
        }
    }
}

/// How a request ended: the exact final line's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The result JSON (docs/contract.md, "Result JSON"), stored once so that every re-attach gets the same bytes.
    Answered(String),
    Error(AskError),
}

/// The surface a settlement came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Discord,
    Slack,
    Terminal,
    /// An expiry policy chose the answer (no person did).
    Policy,
    /// A live grant answered it (docs/approvals.md, "Grants"): `id` is the grant's, `name` its
    /// approver.
    Grant,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Discord => "discord",
            Via::Slack => "slack",
            Via::Terminal => "terminal",
            Via::Policy => "policy",
            Via::Grant => "grant",
        }
    }

    pub fn parse(s: &str) -> Option<Via> {
        Some(match s {
            "discord" => Via::Discord,
            "slack" => Via::Slack,
            "terminal" => Via::Terminal,
            "policy" => Via::Policy,
            "grant" => Via::Grant,
            _ => return None,
        })
    }
}

/// Who settled a question. `id` and `name` come from the platform (a Discord user, or the
/// peer credentials of a socket connection), never from text a client typed: that goes in
/// `note`, which is shown quoted and has no authority.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub via: Via,
    /// A Discord user id, or a local uid.
    pub id: String,
    /// A Discord user name, or the local user name from the passwd database.
    pub name: String,
    /// Free text the person added (`askrelay answer --as`).
    pub note: Option<String>,
}

impl Actor {
    /// A local user answering over the socket.
    pub fn local(uid: Option<u32>, name: Option<String>, note: Option<String>) -> Actor {
        let id = uid.map_or_else(|| "?".to_owned(), |u| u.to_string());
        Actor {
            via: Via::Terminal,
            name: name.unwrap_or_else(|| format!("uid {id}")),
            id,
            note,
        }
    }

    /// The expiry policy, after nobody answered for `waited`; its name says so, as the
    /// answered message shows it ("No answer within 2h").
    pub fn policy(waited: std::time::Duration) -> Actor {
        Actor {
            via: Via::Policy,
            id: "policy".into(),
            name: format!("No answer within {}", super::expiry::human(waited)),
            note: None,
        }
    }

    /// A one-line description for logs and `CONFLICT` messages, e.g.
    /// `alice (uid 1000) via terminal`. The note is left out: it is not who answered.
    pub fn describe(&self) -> String {
        match self.via {
            Via::Terminal => format!("{} via terminal", local_user(&self.name, &self.id)),
            Via::Discord => format!("{} (Discord user {})", self.name, self.id),
            Via::Slack => format!("{} (Slack user {})", self.name, self.id),
            Via::Policy => "the expiry policy".to_owned(),
            Via::Grant => format!("grant {} (approved by {})", self.id, self.name),
        }
    }
}

/// A local user as people read it: `alice (uid 1000)`, or `uid 1235` once for a user the
/// passwd database does not name (not `uid 1235 (uid 1235)`).
pub fn local_user(name: &str, uid: &str) -> String {
    if name == format!("uid {uid}") || name.is_empty() {
        format!("uid {uid}")
    } else {
        format!("{name} (uid {uid})")
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// A settled question: who, when, what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    pub actor: Actor,
    pub at_ms: i64,
    pub settlement: Settlement,
}

/// The local process that asked (SO_PEERCRED). Its uid owns the request id.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Peer {
    pub uid: Option<u32>,
    pub pid: Option<i32>,
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.uid {
            Some(u) => write!(f, "uid={u}")?,
            None => f.write_str("uid=?")?,
        }
        match self.pid {
            Some(p) => write!(f, " pid={p}"),
            None => f.write_str(" pid=?"),
        }
    }
}

/// A request to store, with the answerer that took it.
#[derive(Debug, Clone)]
pub struct NewRequest {
    pub request_id: String,
    /// The unguessable per-request token every platform control carries.
    pub token: String,
    pub questions: Arc<[Question]>,
    /// What is being approved, shown with the questions (`None`: nothing).
    pub context: Option<Arc<Context>>,
    pub caller: Caller,
    pub scope: Scope,
    pub peer: Peer,
    /// The answerer that owns it: the first, in the daemon's order, of those that took it.
    pub answerer: String,
    /// Every answerer that took it and shows its copy, the owner first (see
    /// [`Request::answerers`]).
    pub answerers: Vec<String>,
    /// The owner's route, if it has routes.
    pub route: Option<String>,
    pub created_at_ms: i64,
    /// When and how it expires, if it does.
    pub expiry: Option<Expiry>,
    /// The cluster node that stored it and serves its client (`None`: no cluster).
    pub node: Option<String>,
}

/// A request as stored, with the state of each question.
#[derive(Debug, Clone)]
pub struct Request {
    pub key: i64,
    pub request_id: String,
    pub token: String,
    pub questions: Arc<[Question]>,
    /// Loaded with a single request and with the pending ones (what answerers show); left out
    /// of `pending` and `history` pages, where it would only weigh.
    pub context: Option<Arc<Context>>,
    pub caller: Caller,
    pub scope: Scope,
    pub status: Status,
    /// The answerer that owns it (the first that took it, in the daemon's order).
    pub answerer: Option<String>,
    /// Every answerer that shows a copy of it, the owner first: each hears how it ends and may
    /// take an answer. A request stored before copies existed has its owner alone.
    pub answerers: Vec<String>,
    pub route: Option<String>,
    pub peer: Peer,
    pub created_at_ms: i64,
    pub ended_at_ms: Option<i64>,
    pub outcome: Option<Outcome>,
    /// One entry per question, in order; `None` while unanswered.
    pub answers: Vec<Option<Answered>>,
    /// One entry per question, in order: the votes so far on a quorum route (else empty).
    pub votes: Vec<Vec<Vote>>,
    /// When and how it expires, if it does.
    pub expiry: Option<Expiry>,
    /// The cluster node that owns it (`None`: no cluster).
    pub node: Option<String>,
    /// Why it was withdrawn, when it was (it ended `cancelled`).
    pub withdrawn: Option<WithdrawReason>,
}

impl Request {
    /// Whether a grant answered it (its messages are an announcement, not a question).
    pub fn granted(&self) -> bool {
        self.status == Status::Answered
            && self
                .answers
                .iter()
                .all(|a| a.as_ref().is_some_and(|a| a.actor.via == Via::Grant))
    }

    /// The request as it is right after `new` was stored.
    pub fn created(key: i64, new: &NewRequest) -> Request {
        Request {
            key,
            request_id: new.request_id.clone(),
            token: new.token.clone(),
            questions: new.questions.clone(),
            context: new.context.clone(),
            caller: new.caller.clone(),
            scope: new.scope.clone(),
            status: Status::Pending,
            answerer: Some(new.answerer.clone()),
            answerers: new.answerers.clone(),
            route: new.route.clone(),
            peer: new.peer,
            created_at_ms: new.created_at_ms,
            ended_at_ms: None,
            outcome: None,
            answers: vec![None; new.questions.len()],
            votes: vec![Vec::new(); new.questions.len()],
            expiry: new.expiry.clone(),
            node: new.node.clone(),
            withdrawn: None,
        }
    }

    /// Whether the answerer `name` shows a copy of this request (it took it when it was
    /// asked): its listings and batches may offer it, and it hears how it ends.
    pub fn shown_by(&self, name: &str) -> bool {
        self.answerers.iter().any(|a| a == name)
    }

    /// The uid that owns the request id.
    pub fn owner_uid(&self) -> Option<u32> {
        self.peer.uid
    }

    /// The agent's name as shown to people: `caller.agent_id`, else `scope.agent`.
    pub fn agent(&self) -> Option<&str> {
        self.caller
            .agent_id
            .as_deref()
            .or_else(|| self.scope.get("agent").map(String::as_str))
    }

    /// The error a request that ended without an answer carries.
    pub fn error(&self) -> Option<&AskError> {
        match &self.outcome {
            Some(Outcome::Error(e)) => Some(e),
            _ => None,
        }
    }
}

/// The result of storing a request under its id.
#[derive(Debug)]
pub enum Created {
    New(Request),
    /// The id was taken; this is the request stored under it.
    Existing(Request),
}

/// The result of one attempt to settle a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettleOutcome {
    /// This settlement counted. `result` is set when it completed the request.
    Won { result: Option<String> },
    /// Someone else settled the question first.
    AlreadyAnswered(Answered),
    /// A vote on a quorum route counted; the question is still open.
    Voted(Tally),
    /// This person already voted for this answer.
    AlreadyVoted(Tally),
    /// The request is no longer pending.
    Ended(Status),
    /// No such request or question.
    Unknown,
}

/// The result of a settlement attempt: what happened, and the request as it is now (with the
/// answer when it counted), so that nobody needs to read it again.
#[derive(Debug, Clone)]
pub struct Settled {
    pub outcome: SettleOutcome,
    pub request: Request,
}

/// Where an answerer shows one question: a row of its outbox, written before the platform call
/// so that a crash at any step resumes without posting twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Post {
    pub idx: usize,
    pub answerer: String,
    /// Which of the question's places (see [`Slot`]).
    pub slot: Slot,
    /// The platform's place (a Discord channel id).
    pub channel: String,
    /// The channel's guild, once known (`None` for a DM); interactions must come from it.
    pub guild: Option<String>,
    /// Sent with every create; the platform de-duplicates on it.
    pub nonce: String,
    /// Set once the platform confirmed the message.
    pub message: Option<String>,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub edited: EditState,
}

/// Outbox work that is due: a question to post, or a message to edit to its final state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuePost {
    pub request_key: i64,
    pub idx: usize,
    pub answerer: String,
    /// Whether the message still has to be posted (else edited).
    pub unposted: bool,
    /// Since when: the request's creation for a post, the answer or the end for an edit.
    pub due_since_ms: i64,
}

/// An outbox row stored with a new request: the answerer whose copy it belongs to, and the row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPost {
    pub answerer: String,
    pub post: PlannedPost,
}

/// A post to write in the same transaction as its request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedPost {
    pub idx: usize,
    /// See [`Post::slot`].
    pub slot: Slot,
    pub channel: String,
    pub guild: Option<String>,
    pub nonce: String,
}

impl Post {
    /// A note is a reply that carries no components, so it is never edited to a final state.
    pub fn is_note(&self) -> bool {
        self.slot.is_note()
    }

    pub fn is_main(&self) -> bool {
        self.slot.is_main()
    }

    /// The row of a post just planned.
    pub fn planned(p: PlannedPost, answerer: &str) -> Post {
        Post {
            idx: p.idx,
            answerer: answerer.to_owned(),
            slot: p.slot,
            channel: p.channel,
            guild: p.guild,
            nonce: p.nonce,
            message: None,
            attempts: 0,
            last_error: None,
            edited: EditState::None,
        }
    }
}

/// Which of a question's places an outbox row is. The store keeps it as text (`posts.slot`),
/// converted only there with [`FromStr`] and [`Display`]: `""`, `dm:USER`, `eSTEP`,
/// `eSTEP:dm:USER`, `note:rN` and `note:eSTEP`. Escalation steps count from 1. A USER is a
/// number (Discord's ids) or, for a platform whose user ids are not numbers, letters and
/// digits in upper case (Slack's `U…`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Slot {
    /// The question's own message in its route's channel (`""`).
    Main,
    /// A copy in a user's DM, for the route (`dm:USER`).
    Dm(u64),
    /// A copy in an escalation step's channel (`eSTEP`).
    Step(u32),
    /// A copy in a user's DM, for an escalation step (`eSTEP:dm:USER`).
    StepDm(u32, u64),
    /// The same for a user whose id is not a number (Slack's `U…`): `eSTEP:dm:USER`.
    StepDmNamed(u32, String),
    /// A copy in the DM of a user whose id is not a number (Slack's `U…`), for the route:
    /// `dm:USER`.
    DmNamed(String),
    /// The n-th reminder: a reply without components (`note:rN`).
    Reminder(u32),
    /// An escalation step's mentions: a reply without components (`note:eSTEP`).
    StepNote(u32),
    /// The request's context files, shared in the thread of its first question's message
    /// where the platform cannot attach them to it (Slack's uploads): `note:files`.
    Files,
    /// Text this version does not read (another version wrote it), kept as it is so that the
    /// row is still loaded and written back unchanged.
    Other(String),
}

impl Slot {
    pub fn is_main(&self) -> bool {
        *self == Slot::Main
    }

    /// A reply that carries no components (a reminder, an escalation step's mentions).
    pub fn is_note(&self) -> bool {
        match self {
            Slot::Reminder(_) | Slot::StepNote(_) | Slot::Files => true,
            Slot::Other(s) => s.starts_with("note:"),
            _ => false,
        }
    }

    /// The user whose DM a copy goes to.
    pub fn dm_user(&self) -> Option<u64> {
        match self {
            Slot::Dm(user) | Slot::StepDm(_, user) => Some(*user),
            _ => None,
        }
    }

    /// The escalation step (1-based) the row belongs to: a copy or a note of that step.
    pub fn step(&self) -> Option<usize> {
        match self {
            Slot::Step(k) | Slot::StepDm(k, _) | Slot::StepDmNamed(k, _) | Slot::StepNote(k) => {
                Some(*k as usize)
            }
            _ => None,
        }
    }

    /// The slot the text names, if it is in the canonical form [`Display`] writes.
    fn read(s: &str) -> Option<Slot> {
        let step = |s: &str| s.strip_prefix('e')?.parse().ok();
        let slot = if s.is_empty() {
            Slot::Main
        } else if let Some(user) = s.strip_prefix("dm:") {
            match user.parse() {
                Ok(id) => Slot::Dm(id),
                Err(_) if named_user(user) => Slot::DmNamed(user.to_owned()),
                Err(_) => return None,
            }
        } else if s == "note:files" {
            Slot::Files
        } else if let Some(n) = s.strip_prefix("note:r") {
            Slot::Reminder(n.parse().ok()?)
        } else if let Some(k) = s.strip_prefix("note:") {
            Slot::StepNote(step(k)?)
        } else if let Some((k, user)) = s.split_once(":dm:") {
            match user.parse() {
                Ok(id) => Slot::StepDm(step(k)?, id),
                Err(_) if named_user(user) => Slot::StepDmNamed(step(k)?, user.to_owned()),
                Err(_) => return None,
            }
        } else {
            Slot::Step(step(s)?)
        };
        // "e02" or "dm:+5" would read as another slot's text: kept as it is instead.
        (slot.to_string() == s).then_some(slot)
    }
}

/// A user id that is not a number, as a slot holds it (Slack's `U…`): capitals and digits,
/// starting with a capital.
fn named_user(user: &str) -> bool {
    user.starts_with(|c: char| c.is_ascii_uppercase())
        && user
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

impl FromStr for Slot {
    type Err = std::convert::Infallible;

    /// Never fails: text that is not a slot of this version is [`Slot::Other`].
    fn from_str(s: &str) -> Result<Slot, Self::Err> {
        Ok(Slot::read(s).unwrap_or_else(|| Slot::Other(s.to_owned())))
    }
}

impl From<&str> for Slot {
    fn from(s: &str) -> Slot {
        let Ok(slot) = s.parse();
        slot
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Slot::Main => Ok(()),
            Slot::Dm(user) => write!(f, "dm:{user}"),
            Slot::Step(k) => write!(f, "e{k}"),
            Slot::StepDm(k, user) => write!(f, "e{k}:dm:{user}"),
            Slot::StepDmNamed(k, user) => write!(f, "e{k}:dm:{user}"),
            Slot::DmNamed(user) => write!(f, "dm:{user}"),
            Slot::Reminder(n) => write!(f, "note:r{n}"),
            Slot::StepNote(k) => write!(f, "note:e{k}"),
            Slot::Files => f.write_str("note:files"),
            Slot::Other(s) => f.write_str(s),
        }
    }
}

/// Where an agent session's thread is kept: the answerer, the channel it is in, the agent and
/// its session (docs/approvals.md, "One thread per agent session").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionPlace<'a> {
    pub answerer: &'a str,
    /// Where the thread is: the route's channel.
    pub channel: &'a str,
    /// The asking agent (`claude-code`, `codex`), and its session id.
    pub agent: &'a str,
    pub session: &'a str,
}

/// Which outbox row a write is about: the request, the question, the answerer and the slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostKey<'a> {
    pub key: i64,
    pub idx: usize,
    pub answerer: &'a str,
    pub slot: &'a Slot,
}

/// A person's saved multi-select selection on one question, before "Submit".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    /// The options chosen (indices), in the order given.
    pub selected: Vec<usize>,
    /// When it was saved (ms since the epoch, the cluster's clock).
    pub saved_at_ms: i64,
}

/// One of an answerer's timers for a request (reminders, escalation steps): how many times it
/// fired, and when it is due next (`None`: done).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timer {
    pub request_key: i64,
    pub name: String,
    pub fired: u32,
    pub due_at_ms: Option<i64>,
}

/// The last edit of a posted message the platform confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EditState {
    /// As posted.
    #[default]
    None,
    /// Shows the question's answer.
    Settled,
    /// Shows why the request ended unanswered.
    Ended,
}

impl EditState {
    pub fn as_str(self) -> Option<&'static str> {
        match self {
            EditState::None => None,
            EditState::Settled => Some("settled"),
            EditState::Ended => Some("ended"),
        }
    }

    pub fn parse(s: Option<&str>) -> EditState {
        match s {
            Some("settled") => EditState::Settled,
            Some("ended") => EditState::Ended,
            _ => EditState::None,
        }
    }
}

/// Where an audited event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Source {
    #[default]
    Socket,
    Terminal,
    Discord,
    Slack,
    Daemon,
    Policy,
    Grant,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Socket => "socket",
            Source::Terminal => "terminal",
            Source::Discord => "discord",
            Source::Slack => "slack",
            Source::Daemon => "daemon",
            Source::Policy => "policy",
            Source::Grant => "grant",
        }
    }
}

impl From<Via> for Source {
    fn from(v: Via) -> Source {
        match v {
            Via::Discord => Source::Discord,
            Via::Slack => Source::Slack,
            Via::Terminal => Source::Terminal,
            Via::Policy => Source::Policy,
            Via::Grant => Source::Grant,
        }
    }
}

/// What an audit row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuditAction {
    #[default]
    Ask,
    Reattach,
    Answer,
    Cancelled,
    Expired,
    Failed,
    Connect,
    /// An operation refused for who asked it (a foreign request id, an answer on a request its
    /// owner answerer keeps to itself).
    Forbidden,
    /// A multi-select draft.
    Draft,
    OpenModal,
    /// A control askrelay did not make, or one that does not fit its question.
    Forged,
    /// A control whose token, message, channel or guild is not the one recorded.
    Stale,
    /// A person not on the allowlists.
    Denied,
    /// A bot account.
    Bot,
    /// On a question already settled or a request that ended.
    Late,
    EmptyModal,
    /// The answer could not be stored.
    StoreError,
    /// The daemon is starting and cannot take it yet.
    NotReady,
    /// A platform command (Discord's `/askrelay`): what was asked, and whether it was allowed.
    Command,
    /// A vote on a quorum route (the settlement, once the quorum is reached, is an `Answer`).
    Vote,
    /// A grant ended early by a person.
    Revoke,
    /// A one-use grant minted from a request allowed once (Claude Code's auto mode).
    OnceGrant,
    /// A one-use grant used by the retried call.
    OnceGrantUsed,
    /// A request ended because its agent went on without the answer (`withdraw`).
    Withdrawn,
}

impl AuditAction {
    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::Ask => "ask",
            AuditAction::Reattach => "reattach",
            AuditAction::Answer => "answer",
            AuditAction::Cancelled => "cancelled",
            AuditAction::Expired => "expired",
            AuditAction::Failed => "failed",
            AuditAction::Connect => "connect",
            AuditAction::Forbidden => "forbidden",
            AuditAction::Draft => "draft",
            AuditAction::OpenModal => "open_modal",
            AuditAction::Forged => "forged",
            AuditAction::Stale => "stale",
            AuditAction::Denied => "denied",
            AuditAction::Bot => "bot",
            AuditAction::Late => "late",
            AuditAction::EmptyModal => "empty_modal",
            AuditAction::StoreError => "store_error",
            AuditAction::NotReady => "not_ready",
            AuditAction::Command => "command",
            AuditAction::Vote => "vote",
            AuditAction::Revoke => "revoke",
            AuditAction::OnceGrant => "once_grant",
            AuditAction::OnceGrantUsed => "once_grant_used",
            AuditAction::Withdrawn => "withdrawn",
        }
    }

    /// The action that records a request ending with `status`.
    pub fn ended(status: Status) -> AuditAction {
        match status {
            Status::Expired => AuditAction::Expired,
            Status::Failed => AuditAction::Failed,
            _ => AuditAction::Cancelled,
        }
    }
}

/// One row to append to the audit log.
#[derive(Debug, Clone, Default)]
pub struct AuditEntry {
    pub request_key: Option<i64>,
    /// The request's id, with its key ([`AuditEntry::about`]): the export names the request
    /// without the database.
    pub request_id: Option<String>,
    pub question_idx: Option<usize>,
    pub source: Source,
    pub actor: Option<String>,
    pub action: AuditAction,
    pub detail: Option<String>,
    pub accepted: bool,
}

impl AuditEntry {
    /// A row about `req` (its key and id); the caller sets the rest.
    pub fn about(req: &Request) -> AuditEntry {
        AuditEntry {
            request_key: Some(req.key),
            request_id: Some(req.request_id.clone()),
            ..Default::default()
        }
    }
}

/// A stored audit row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    pub id: i64,
    pub at_ms: i64,
    pub request_key: Option<i64>,
    pub question_idx: Option<i64>,
    pub source: String,
    pub actor: Option<String>,
    pub action: String,
    pub detail: Option<String>,
    pub accepted: bool,
}

/// The error of a request that ended with `status`.
pub fn ended_error(status: Status, message: String) -> AskError {
    let code = match status {
        Status::Expired => ErrorCode::Expired,
        Status::Failed => ErrorCode::NoAnswerer,
        _ => ErrorCode::Aborted,
    };
    AskError::new(code, message)
}

#[cfg(test)]
mod tests {
    use super::Slot;

    /// History and logs name a user without a passwd entry once.
    #[test]
    fn a_local_user_without_a_name_is_named_once() {
        let nameless = super::Actor::local(Some(1235), None, None);
        assert_eq!(nameless.describe(), "uid 1235 via terminal");
        assert_eq!(super::local_user("uid 1235", "1235"), "uid 1235");
        let alice = super::Actor::local(Some(1000), Some("alice".into()), None);
        assert_eq!(alice.describe(), "alice (uid 1000) via terminal");
    }

    #[test]
    fn slots_round_trip_through_their_text() {
        let slots = [
            ("", Slot::Main),
            ("dm:55", Slot::Dm(55)),
            ("e2", Slot::Step(2)),
            ("e2:dm:55", Slot::StepDm(2, 55)),
            ("e2:dm:U0LEAD01", Slot::StepDmNamed(2, "U0LEAD01".into())),
            ("dm:U0LEAD01", Slot::DmNamed("U0LEAD01".into())),
            ("note:r1", Slot::Reminder(1)),
            ("note:e3", Slot::StepNote(3)),
            ("note:files", Slot::Files),
        ];
        for (text, slot) in slots {
            assert_eq!(text.parse::<Slot>().unwrap(), slot, "{text:?}");
            assert_eq!(slot.to_string(), text);
        }
        // Text this version does not read is kept as it is, whatever it looks like.
        for text in [
            "dm",
            "late",
            "note:remind",
            "e02",
            "dm:+5",
            "e1:dm:x",
            "note:x",
        ] {
            let slot: Slot = text.parse().unwrap();
            assert_eq!(slot, Slot::Other(text.to_owned()));
            assert_eq!(slot.to_string(), text);
        }
    }

    #[test]
    fn slots_say_what_they_are() {
        assert!(Slot::Main.is_main());
        assert!(
            Slot::Reminder(1).is_note() && Slot::StepNote(2).is_note() && Slot::Files.is_note()
        );
        assert!(
            Slot::from("note:remind").is_note(),
            "a note of another version"
        );
        assert!(!Slot::Dm(5).is_note() && !Slot::Step(1).is_note());
        assert_eq!(Slot::StepDm(2, 55).dm_user(), Some(55));
        assert_eq!(Slot::Dm(55).dm_user(), Some(55));
        assert_eq!(Slot::Step(2).dm_user(), None);
        assert_eq!(Slot::StepNote(3).step(), Some(3));
        assert_eq!(Slot::Reminder(1).step(), None);
    }
}
