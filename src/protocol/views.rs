//! How requests look in the `pending` and `history` replies (and what `askrelay pending`,
//! `history` and `/askrelay` show): the request, its questions, who asked and who answered.

use super::*;

/// An RFC 3339 timestamp for a millisecond time (the core's, for the replies' fields).
use crate::domain::clock::rfc3339;

/// How a request looks in `pending` and `history` replies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestView {
    pub request_id: String,
    pub status: String,
    pub answerer: Option<String>,
    pub route: Option<String>,
    pub created_at: String,
    pub ended_at: Option<String>,
    pub caller: Caller,
    pub scope: Scope,
    pub peer: PeerView,
    pub questions: Vec<QuestionView>,
    pub result: Option<Value>,
    pub error: Option<ErrorView>,
    /// Why a `cancelled` request was withdrawn (`answered_in_terminal`, `agent_moved_on`,
    /// `hook_killed`), when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withdrawn: Option<String>,
    /// The cluster node that owns the request (cluster mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// What is being approved (the ask's `context`): what Discord shows with the question.
    /// Each text is cut to [`VIEW_CONTEXT_MAX`] bytes in a listing; `truncated` says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextView>,
}

/// How much of each context text and file a listing carries: enough for a command or a diff
/// to review, while a page of 200 requests with 9 files each stays a reply a terminal can read.
pub const VIEW_CONTEXT_MAX: usize = 64 * 1024;

/// A request's context as `pending` and `history` show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextView {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<ContextText>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ContextFileView>,
}

/// A context text, cut to [`VIEW_CONTEXT_MAX`] bytes at a character boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextText {
    pub content: String,
    /// Its whole size in bytes.
    pub bytes: usize,
    /// Whether `content` is only the start of it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextFileView {
    pub name: String,
    #[serde(flatten)]
    pub text: ContextText,
}

impl ContextText {
    fn new(s: &str) -> ContextText {
        let mut end = s.len().min(VIEW_CONTEXT_MAX);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        ContextText {
            content: s[..end].to_owned(),
            bytes: s.len(),
            truncated: end < s.len(),
        }
    }
}

impl ContextView {
    fn new(c: &Context) -> ContextView {
        ContextView {
            text: c.text.as_deref().map(ContextText::new),
            files: c
                .files
                .iter()
                .map(|f| ContextFileView {
                    name: f.name.clone(),
                    text: ContextText::new(&f.content),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerView {
    pub uid: Option<u32>,
    pub pid: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorView {
    pub code: ErrorCode,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionView {
    pub id: String,
    pub header: Option<String>,
    pub question: String,
    #[serde(rename = "multiSelect")]
    pub multi_select: bool,
    pub options: Vec<String>,
    /// Each option's description, in the options' order (null where it has none): what an
    /// option does, such as where an "Always allow" rule is kept.
    #[serde(default)]
    pub descriptions: Vec<Option<String>>,
    pub answered: Option<AnsweredView>,
    pub post: Option<PostView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnsweredView {
    /// Who answered, as the platform identified them: a Discord user name, or a local user
    /// name with its uid.
    pub by: String,
    /// A Discord user id, or a local uid.
    pub id: String,
    pub via: String,
    /// What the person wrote about themselves (`--as`); not an identity.
    pub note: Option<String>,
    pub at: String,
    pub selected: Vec<String>,
    pub custom: Option<String>,
    /// What the approver attached (docs/approvals.md): a grant, an edited command. The asking
    /// front door reads the edited command here; the result JSON never carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<crate::domain::answer::Terms>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostView {
    pub channel: String,
    pub message: Option<String>,
    pub posted: bool,
    pub attempts: i64,
    pub last_error: Option<String>,
}

impl RequestView {
    pub fn new(req: &Request, posts: &[Post]) -> RequestView {
        let questions = req
            .questions
            .iter()
            .zip(&req.answers)
            .enumerate()
            .map(|(i, (q, a))| QuestionView {
                id: q.id.clone(),
                header: q.header.clone(),
                question: q.question.clone(),
                multi_select: q.multi_select,
                options: q.options.iter().map(|o| o.label.clone()).collect(),
                descriptions: q.options.iter().map(|o| o.description.clone()).collect(),
                answered: a.as_ref().map(|a| {
                    let qa = QuestionAnswer::build(q, &a.settlement);
                    AnsweredView {
                        by: a.actor.name.clone(),
                        id: a.actor.id.clone(),
                        via: a.actor.via.as_str().to_owned(),
                        note: a.actor.note.clone(),
                        at: rfc3339(a.at_ms),
                        selected: qa.selected,
                        custom: qa.custom,
                        terms: a.settlement.terms.clone(),
                    }
                }),
                post: posts.iter().find(|p| p.idx == i).map(|p| PostView {
                    channel: p.channel.clone(),
                    message: p.message.clone(),
                    posted: p.message.is_some(),
                    attempts: p.attempts,
                    last_error: p.last_error.clone(),
                }),
            })
            .collect();
        let (result, error) = match &req.outcome {
            Some(Outcome::Answered(r)) => (serde_json::from_str(r).ok(), None),
            Some(Outcome::Error(e)) => (
                None,
                Some(ErrorView {
                    code: e.code,
                    message: e.message.clone(),
                }),
            ),
            None => (None, None),
        };
        RequestView {
            request_id: req.request_id.clone(),
            status: req.status.as_str().to_owned(),
            answerer: req.answerer.clone(),
            route: req.route.clone(),
            created_at: rfc3339(req.created_at_ms),
            ended_at: req.ended_at_ms.map(rfc3339),
            caller: req.caller.clone(),
            scope: req.scope.clone(),
            peer: PeerView {
                uid: req.peer.uid,
                pid: req.peer.pid,
            },
            questions,
            result,
            error,
            withdrawn: req.withdrawn.map(|w| w.as_str().to_owned()),
            node: req.node.clone(),
            context: req
                .context
                .as_deref()
                .filter(|c| !c.is_empty())
                .map(ContextView::new),
        }
    }
}
