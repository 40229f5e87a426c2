//! A person at a terminal answers (the socket `answer` operation): who may, on which
//! requests, and the labels they give matched to the question's options; then it settles as
//! any answer does.

use super::Hub;
use crate::domain::access::LocalUser;
use crate::domain::answer::Settlement;
use crate::domain::clock::rfc3339;
use crate::domain::error::{AskError, ErrorCode};
use crate::domain::request::{
    Actor, Answered, AuditAction, AuditEntry, Request, Settled, Source, Status,
};
use crate::domain::text::Escaped;

/// What a socket `answer` (a person at a terminal) asks for.
#[derive(Debug, Clone)]
pub struct TerminalAnswer {
    pub request_id: String,
    pub question: String,
    pub labels: Vec<String>,
    pub custom: Option<String>,
    /// Free text about who is answering; shown quoted, trusted for nothing.
    pub note: Option<String>,
    /// The word typed to confirm a label of the route's `confirm_labels`.
    pub confirm: Option<String>,
}

impl Hub {
    /// A person at a terminal answers: only the request's owner or an operator, and only on a
    /// request an answerer that shows it lets terminals answer (the terminal answerer, which a
    /// route's `answerers` may name beside the chat platforms, or a route with
    /// `terminal_answers = true`). Who answered comes from the connection, not from the line.
    pub async fn answer_from_terminal(
        &self,
        answer: TerminalAnswer,
        who: &LocalUser,
    ) -> Result<Settled, AskError> {
        let req = self.request_for(&answer.request_id, who).await?;
        if req.status != Status::Pending {
            // Said before the question and the options are checked: they no longer matter.
            let err = too_late(&req);
            self.audit(AuditEntry {
                source: Source::Terminal,
                actor: Some(who.audit()),
                action: AuditAction::Answer,
                detail: Some(format!("terminal answer refused: {}", err.message)),
                accepted: false,
                ..AuditEntry::about(&req)
            })
            .await;
            return Err(err);
        }
        let shown_by = self.answerers_for(&req);
        if !shown_by.iter().any(|a| a.terminal_may_answer(&req)) {
            let names = match shown_by.as_slice() {
                [] => req.answerer.clone().unwrap_or_else(|| "none".into()),
                all => all
                    .iter()
                    .map(|a| a.name())
                    .collect::<Vec<_>>()
                    .join(" and "),
            };
            self.audit(AuditEntry {
                source: Source::Terminal,
                actor: Some(who.audit()),
                action: AuditAction::Forbidden,
                detail: Some(format!(
                    "terminal answer refused: the request belongs to the {names} answerer"
                )),
                accepted: false,
                ..AuditEntry::about(&req)
            })
            .await;
            return Err(AskError::new(
                ErrorCode::Forbidden,
                format!(
                    "request {:?} is answered through {names}, not from a terminal; answer it \
                     there (or set terminal_answers = true on its route, or name \"terminal\" \
                     in its answerers)",
                    Escaped(&answer.request_id)
                ),
            ));
        }
        let (index, q) = req
            .questions
            .iter()
            .enumerate()
            .find(|(_, q)| q.id == answer.question)
            .ok_or_else(|| {
                let ids: Vec<String> = req
                    .questions
                    .iter()
                    .map(|q| format!("{:?}", Escaped(&q.id)))
                    .collect();
                AskError::invalid(format!(
                    "request {:?} has no question {:?}; its questions are: {}",
                    Escaped(&answer.request_id),
                    Escaped(&answer.question),
                    ids.join(", ")
                ))
            })?;
        let selected = q.resolve(&answer.labels, false)?;
        let actor = Actor::local(who.peer.uid, who.name.clone(), answer.note);
        let settlement = Settlement {
            selected,
            custom: answer.custom,
            terms: None,
        };
        let policy = self.policy_of(&req);
        self.settle_confirmed(
            &req,
            index,
            settlement,
            actor,
            &policy,
            answer.confirm.as_deref(),
        )
        .await
    }
}

/// Why an answer to a request that has ended did not count: who answered and when, or how it
/// ended (the code, `CONFLICT`, and the CLI say that it did not count).
fn too_late(req: &Request) -> AskError {
    let at = rfc3339;
    let answered: Vec<&Answered> = req.answers.iter().flatten().collect();
    let message = match (req.status, answered.last()) {
        (Status::Answered, Some(last)) => {
            let mut by: Vec<String> = answered.iter().map(|a| a.actor.describe()).collect();
            by.dedup();
            format!(
                "request {:?} was already answered by {} at {}",
                Escaped(&req.request_id),
                by.join(", "),
                at(last.at_ms)
            )
        }
        (status, _) => format!(
            "request {:?} has ended ({}{})",
            Escaped(&req.request_id),
            status.as_str(),
            req.ended_at_ms
                .map(|ms| format!(" at {}", at(ms)))
                .unwrap_or_default()
        ),
    };
    AskError::new(ErrorCode::Conflict, message)
}
