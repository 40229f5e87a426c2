//! Start-up and running expiry: the requests pending at start-up go live again with their
//! restart grace and deadlines; a deadline that comes due answers with its policy or ends the
//! request as `EXPIRED`.

use super::{add_expiry, Backlog, Detail, Hub, Phase};
use crate::domain::answerer::Accepted;
use crate::domain::clock::now_ms;
use crate::domain::error::{AskError, ErrorCode};
use crate::domain::expiry::OnExpire;
use crate::domain::request::{Actor, Post, SettleOutcome, Source, Status};
use crate::domain::text::Escaped;
use std::time::Duration;

impl Hub {
    /// Hands the requests left pending by an earlier run back to every answerer that shows
    /// them (each with its own outbox rows), and starts the expiry timer (a deadline that
    /// passed while the daemon was down comes due at once). One none of whose answerers is
    /// configured any more ends with `NO_ANSWERER`.
    pub async fn resume(&self, backlog: Backlog) {
        let hub = self.clone();
        self.inner.tasks.spawn(async move {
            let inner = hub.inner.clone();
            inner
                .deadlines
                .run(&inner.shutdown, now_ms, |key| hub.expire_now(key))
                .await;
        });
        for (req, posts) in backlog.0 {
            let answerers = self.answerers_for(&req);
            if answerers.is_empty() {
                let err = AskError::new(
                    ErrorCode::NoAnswerer,
                    match req.answerers.as_slice() {
                        [_, _, ..] => format!(
                            "the answerers that took this request ({}) are no longer configured",
                            req.answerers.join(", ")
                        ),
                        _ => format!(
                            "the answerer that took this request ({}) is no longer configured",
                            req.answerer.as_deref().unwrap_or("none")
                        ),
                    },
                );
                self.end_by(&req, Status::Failed, err, Source::Daemon).await;
                continue;
            }
            let mut detail: Option<Accepted> = None;
            for a in &answerers {
                let own: Vec<Post> = posts
                    .iter()
                    .filter(|p| p.answerer == a.name())
                    .cloned()
                    .collect();
                let shown = a.resume(&self.context(a.name()), &req, &own).await;
                detail = Some(match detail {
                    Some(d) => d.merge(shown),
                    None => shown,
                });
            }
            let mut detail = detail.unwrap_or_default();
            add_expiry(&mut detail, &req);
            if !detail.is_empty() {
                let owner = req.answerer.clone();
                self.set_phase(
                    &req.request_id,
                    Phase::Accepted {
                        answerer: owner.unwrap_or_else(|| answerers[0].name().to_owned()),
                        detail: Detail::new(&detail),
                    },
                );
            }
            // A vote that reached its quorum just before a crash.
            self.settle_reached_quorums(&req).await;
        }
    }

    /// A request's expiry came due: its policy answers every open question, or it ends as
    /// `EXPIRED` (the policy `fail`, or a question the policy has no answer for).
    pub(super) async fn expire_now(&self, key: i64) {
        let req = match self.inner.store.by_key(key).await {
            Ok(Some(r)) if r.status == Status::Pending => r,
            Ok(_) => return,
            Err(e) => {
                // Retried in a while: the deadline is stored, the queue only forgot it.
                tracing::error!(key, error = %format!("{e:#}"), "cannot read a request whose expiry came due; retrying in 10 s");
                self.inner.deadlines.insert(now_ms() + 10_000, key);
                return;
            }
        };
        let Some(expiry) = req.expiry.clone() else {
            return;
        };
        let waited = Duration::from_millis((expiry.at_ms - req.created_at_ms).max(0) as u64);
        let open = req
            .answers
            .iter()
            .enumerate()
            .filter(|(_, a)| a.is_none())
            .map(|(i, _)| i);
        match expiry.on_expire.answers(&req.questions, open) {
            Some(answers) => {
                tracing::info!(request_id = %Escaped(&req.request_id), policy = %expiry.on_expire.describe(), "nobody answered in time; the expiry policy answers");
                let mut cur = req;
                for (idx, settlement) in answers {
                    match self
                        .settle(&cur, idx, settlement, Actor::policy(waited))
                        .await
                    {
                        Ok(s) if s.request.status != Status::Pending => return,
                        Ok(s) if matches!(s.outcome, SettleOutcome::Won { .. }) => cur = s.request,
                        Ok(s) if matches!(s.outcome, SettleOutcome::AlreadyAnswered(_)) => {}
                        Ok(_) => return,
                        Err(e) => {
                            tracing::error!(request_id = %Escaped(&cur.request_id), error = %e, "the expiry policy's answer could not be stored");
                            return;
                        }
                    }
                }
            }
            None => {
                let why = match expiry.on_expire {
                    OnExpire::Fail => String::new(),
                    ref p => format!(
                        "; the expiry policy ({}) has no answer for every open question",
                        p.describe()
                    ),
                };
                let err = AskError::new(
                    ErrorCode::Expired,
                    format!(
                        "nobody answered within {}{why}",
                        crate::domain::expiry::human(waited)
                    ),
                );
                if self
                    .end_by(&req, Status::Expired, err, Source::Policy)
                    .await
                {
                    tracing::info!(request_id = %Escaped(&req.request_id), "request expired");
                }
            }
        }
    }
}
