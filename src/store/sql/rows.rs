//! Rows as both SQL backends read them back. The SQLite and PostgreSQL schemas store a request,
//! an answer and an outbox row in the same columns (see `migrations/` and
//! `migrations/postgres/`), so turning those columns into the core's values is written once,
//! here: a backend only chooses how to select them.

use crate::domain::answer::Settlement;
use crate::domain::error::{AskError, ErrorCode};
use crate::domain::expiry::{Expiry, OnExpire};
use crate::domain::grant::Grant;
use crate::domain::once_grant::OnceGrant;
use crate::domain::request::{
    Actor, Answered, EditState, Outcome, Peer, Post, Request, Slot, Status, Via, WithdrawReason,
};
use crate::domain::vote::Vote;
use anyhow::{Context, Result};
use std::sync::Arc;

/// The state of one question as stored: its answer (`None` while open) and its votes.
#[derive(Debug, Default)]
pub(in crate::store) struct QuestionState {
    answer: Option<Answered>,
    votes: Vec<Vote>,
}

impl QuestionState {
    fn read(answer: Option<Answered>, votes_json: Option<&str>) -> Result<QuestionState> {
        let votes = match votes_json {
            Some(j) => serde_json::from_str(j).context("bad votes in the database")?,
            None => Vec::new(),
        };
        Ok(QuestionState { answer, votes })
    }
}

/// How `requests.answerers` holds every answerer that shows a request: their names,
/// comma-separated, the owner first (the names are the answerers' own, which have no commas).
pub(in crate::store) fn answerers_text(names: &[String]) -> Option<String> {
    (!names.is_empty()).then(|| names.join(","))
}

/// The columns of `requests` that make a [`Request`]. `context_json` is only in the reads that
/// select it (what answerers show), and `node` only in the PostgreSQL schema; a read without
/// them leaves them `None`.
#[derive(sqlx::FromRow)]
pub(in crate::store) struct RequestRow {
    key: i64,
    request_id: String,
    token: Option<String>,
    questions_json: String,
    caller_json: String,
    scope_json: String,
    status: String,
    answerer: Option<String>,
    /// Every answerer that shows it, comma-separated (NULL: the owner alone).
    answerers: Option<String>,
    route: Option<String>,
    peer_uid: Option<i64>,
    peer_pid: Option<i32>,
    created_at: i64,
    ended_at: Option<i64>,
    result_json: Option<String>,
    error_code: Option<String>,
    error_message: Option<String>,
    expire_at: Option<i64>,
    on_expire: Option<String>,
    withdrawn: Option<String>,
    #[sqlx(default)]
    context_json: Option<String>,
    #[sqlx(default)]
    node: Option<String>,
}

impl RequestRow {
    pub(in crate::store) fn key(&self) -> i64 {
        self.key
    }

    /// The request, with the answer state of its questions (in question order).
    pub(in crate::store) fn into_request(self, states: Vec<QuestionState>) -> Result<Request> {
        let (answers, votes) = states.into_iter().map(|s| (s.answer, s.votes)).unzip();
        let status = Status::parse(&self.status)
            .with_context(|| format!("unknown request status {:?} in the database", self.status))?;
        let outcome = match status {
            Status::Pending => None,
            Status::Answered => Some(Outcome::Answered(self.result_json.unwrap_or_default())),
            _ => {
                let code = self
                    .error_code
                    .as_deref()
                    .and_then(ErrorCode::parse)
                    .unwrap_or(ErrorCode::Internal);
                Some(Outcome::Error(AskError::new(
                    code,
                    self.error_message.unwrap_or_default(),
                )))
            }
        };
        let questions: Vec<crate::domain::Question> = serde_json::from_str(&self.questions_json)?;
        let context = match &self.context_json {
            Some(json) => Some(Arc::new(serde_json::from_str(json)?)),
            None => None,
        };
        let expiry = match self.expire_at {
            None => None,
            Some(at_ms) => {
                let on_expire = match &self.on_expire {
                    Some(j) => {
                        serde_json::from_str(j).context("a bad on_expire in the database")?
                    }
                    None => OnExpire::Fail,
                };
                Some(Expiry { at_ms, on_expire })
            }
        };
        Ok(Request {
            key: self.key,
            request_id: self.request_id,
            token: self.token.unwrap_or_default(),
            questions: questions.into(),
            context,
            caller: serde_json::from_str(&self.caller_json)?,
            scope: serde_json::from_str(&self.scope_json)?,
            status,
            answerers: match self.answerers {
                Some(names) => names
                    .split(',')
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned)
                    .collect(),
                None => self.answerer.iter().cloned().collect(),
            },
            answerer: self.answerer,
            route: self.route,
            peer: Peer {
                uid: self.peer_uid.and_then(|u| u32::try_from(u).ok()),
                pid: self.peer_pid,
            },
            created_at_ms: self.created_at,
            ended_at_ms: self.ended_at,
            outcome,
            answers,
            votes,
            expiry,
            node: self.node,
            // A reason this version does not know reads as none: the request shows as the
            // cancellation it also is.
            withdrawn: self.withdrawn.as_deref().and_then(WithdrawReason::parse),
        })
    }
}

/// The answer columns of one row of `questions`.
#[derive(sqlx::FromRow)]
pub(in crate::store) struct AnswerRow {
    pub(in crate::store) request_key: i64,
    answered_at: Option<i64>,
    answered_by: Option<String>,
    answered_via: Option<String>,
    answered_id: Option<String>,
    answered_note: Option<String>,
    selected_json: Option<String>,
    custom: Option<String>,
    votes_json: Option<String>,
    terms_json: Option<String>,
}

impl AnswerRow {
    /// The answer (`None` while the question is open) and the votes.
    pub(in crate::store) fn into_state(self) -> Result<QuestionState> {
        let answer = answered(
            self.answered_at,
            self.answered_by,
            self.answered_via,
            self.answered_id,
            self.answered_note,
            self.selected_json,
            self.custom,
            self.terms_json,
        )?;
        QuestionState::read(answer, self.votes_json.as_deref())
    }
}

#[allow(clippy::too_many_arguments)]
fn answered(
    at: Option<i64>,
    by: Option<String>,
    via: Option<String>,
    id: Option<String>,
    note: Option<String>,
    selected: Option<String>,
    custom: Option<String>,
    terms: Option<String>,
) -> Result<Option<Answered>> {
    let Some(at_ms) = at else { return Ok(None) };
    Ok(Some(Answered {
        actor: Actor {
            via: via.as_deref().and_then(Via::parse).unwrap_or(Via::Terminal),
            name: by.unwrap_or_default(),
            id: id.unwrap_or_default(),
            note,
        },
        at_ms,
        settlement: Settlement {
            selected: serde_json::from_str(selected.as_deref().unwrap_or("[]"))?,
            custom,
            terms: terms
                .as_deref()
                .map(serde_json::from_str)
                .transpose()
                .context("bad answer terms in the database")?,
        },
    }))
}

/// One row of `posts`.
#[derive(sqlx::FromRow)]
pub(in crate::store) struct PostRow {
    pub(in crate::store) request_key: i64,
    idx: i64,
    answerer: String,
    slot: String,
    channel: String,
    guild: Option<String>,
    nonce: String,
    message: Option<String>,
    attempts: i64,
    last_error: Option<String>,
    edited: Option<String>,
}

impl PostRow {
    pub(in crate::store) fn into_post(self) -> Post {
        Post {
            idx: self.idx as usize,
            answerer: self.answerer,
            slot: Slot::from(self.slot.as_str()),
            channel: self.channel,
            guild: self.guild,
            nonce: self.nonce,
            message: self.message,
            attempts: self.attempts,
            last_error: self.last_error,
            edited: EditState::parse(self.edited.as_deref()),
        }
    }
}

/// The answers of a request's questions as one JSON array (a backend's `answers_json`):
/// `[idx, answered_at, by, via, id, note, selected_json, custom, votes_json, terms_json]` per
/// question, in
/// any order.
pub(in crate::store) fn answers_from_json(json: &str) -> Result<Vec<QuestionState>> {
    type Row = (
        usize,
        Option<i64>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let mut rows: Vec<Row> = serde_json::from_str(json)?;
    rows.sort_by_key(|r| r.0);
    rows.into_iter()
        .map(
            |(_, at, by, via, id, note, selected, custom, votes, terms)| {
                QuestionState::read(
                    answered(at, by, via, id, note, selected, custom, terms)?,
                    votes.as_deref(),
                )
            },
        )
        .collect()
}

/// A request's outbox rows as one JSON array (a backend's `posts_json`), in question order
/// (and slot order, byte-wise, within a question).
pub(in crate::store) fn posts_from_json(json: &str) -> Result<Vec<Post>> {
    type Row = (
        i64,
        usize,
        String,
        String,
        Option<String>,
        String,
        Option<String>,
        i64,
        Option<String>,
        Option<String>,
        String,
    );
    let mut rows: Vec<Row> = serde_json::from_str(json)?;
    rows.sort_by(|a, b| (a.1, &a.10).cmp(&(b.1, &b.10)));
    Ok(rows
        .into_iter()
        .map(
            |(
                _,
                idx,
                answerer,
                channel,
                guild,
                nonce,
                message,
                attempts,
                last_error,
                edited,
                slot,
            )| {
                Post {
                    idx,
                    answerer,
                    slot: Slot::from(slot.as_str()),
                    channel,
                    guild,
                    nonce,
                    message,
                    attempts,
                    last_error,
                    edited: EditState::parse(edited.as_deref()),
                }
            },
        )
        .collect())
}

/// The columns of `posts` in the order [`posts_from_json`] reads them, and [`PostRow`] by name.
pub(in crate::store) const POST_COLUMNS: &str =
    "request_key, idx, answerer, channel, guild, nonce, message, attempts, last_error, edited, slot";

/// One row of `grants`.
#[derive(sqlx::FromRow)]
pub(in crate::store) struct GrantRow {
    id: String,
    route: String,
    tool: String,
    pattern: String,
    exact: bool,
    uid: i64,
    host: Option<String>,
    session: Option<String>,
    label: String,
    approver: String,
    approver_via: String,
    approver_id: String,
    request_key: i64,
    created_at: i64,
    ends_at: i64,
    revoked_at: Option<i64>,
    revoked_by: Option<String>,
}

/// The columns of `grants`, in the order of [`GrantRow`] and of the insert's binds.
pub(in crate::store) const GRANT_COLUMNS: &str =
    "id, route, tool, pattern, exact, uid, host, session, \
     label, approver, approver_via, approver_id, request_key, created_at, ends_at, revoked_at, \
     revoked_by";

impl GrantRow {
    pub(in crate::store) fn into_grant(self) -> Grant {
        Grant {
            id: self.id,
            route: self.route,
            tool: self.tool,
            pattern: self.pattern,
            exact: self.exact,
            uid: self.uid as u32,
            host: self.host,
            session: self.session,
            label: self.label,
            approver: self.approver,
            approver_via: self.approver_via,
            approver_id: self.approver_id,
            request_key: self.request_key,
            created_at_ms: self.created_at,
            ends_at_ms: self.ends_at,
            revoked_at_ms: self.revoked_at,
            revoked_by: self.revoked_by,
        }
    }
}

/// One row of `once_grants`.
#[derive(sqlx::FromRow)]
pub(in crate::store) struct OnceGrantRow {
    id: String,
    session: String,
    call: String,
    tool: String,
    uid: i64,
    approver: String,
    request_key: i64,
    request_id: String,
    created_at: i64,
    ends_at: i64,
    used_at: Option<i64>,
}

/// The columns of `once_grants`, in the order of [`OnceGrantRow`] and of the insert's binds.
pub(in crate::store) const ONCE_GRANT_COLUMNS: &str =
    "id, session, call, tool, uid, approver, request_key, request_id, created_at, ends_at, \
     used_at";

impl OnceGrantRow {
    pub(in crate::store) fn into_once_grant(self) -> OnceGrant {
        OnceGrant {
            id: self.id,
            session: self.session,
            call: self.call,
            tool: self.tool,
            uid: self.uid as u32,
            approver: self.approver,
            request_key: self.request_key,
            request_id: self.request_id,
            created_at_ms: self.created_at,
            ends_at_ms: self.ends_at,
            used_at_ms: self.used_at,
        }
    }
}

/// One row of an audit chain read (`Store::audit_chain`): the head, joined to each chained
/// row after the point asked for, or to nothing (the row's columns NULL) when none is.
#[derive(sqlx::FromRow)]
pub(in crate::store) struct ChainRow {
    head_id: i64,
    head_hash: String,
    id: Option<i64>,
    at: Option<i64>,
    request_key: Option<i64>,
    question_idx: Option<i64>,
    source: Option<String>,
    actor: Option<String>,
    action: Option<String>,
    detail: Option<String>,
    accepted: Option<bool>,
    prev_hash: Option<String>,
    hash: Option<String>,
    request_id: Option<String>,
}

/// The page an audit chain read gives: the head, and the chained rows in order.
pub(in crate::store) fn audit_page(rows: Vec<ChainRow>) -> Result<crate::domain::audit::AuditPage> {
    use crate::domain::audit::{AuditPage, ChainHead, ChainedRow};
    use crate::domain::request::AuditRow;
    let first = rows.first().context("the audit chain has no head")?;
    let head = ChainHead {
        id: first.head_id,
        hash: first.head_hash.clone(),
    };
    let mut page = Vec::with_capacity(rows.len());
    for r in rows {
        let Some(id) = r.id else { continue };
        let at = r.at.context("an audit row without at")?;
        page.push(ChainedRow {
            row: AuditRow {
                id,
                at_ms: at,
                request_key: r.request_key,
                question_idx: r.question_idx,
                source: r.source.unwrap_or_default(),
                actor: r.actor,
                action: r.action.unwrap_or_default(),
                detail: r.detail,
                accepted: r.accepted.unwrap_or_default(),
            },
            time: crate::domain::audit::time_of(at),
            request_id: r.request_id,
            prev_hash: r.prev_hash.unwrap_or_default(),
            hash: r.hash.unwrap_or_default(),
        });
    }
    Ok(AuditPage { rows: page, head })
}
