//! Admission: the checks every press and form goes through before anything changes (see the
//! parent module's comment), and the refusal, audited, when one fails.

use super::{Admitted, Handler, Origin, Refusal, Reply, UNKNOWN};
use crate::answerer::chat::admit::{self as chat_admit, Refused};
use crate::answerer::discord::custom_id::{CustomId, Kind};
use crate::answerer::slack::platform::{self, Slack};
use crate::answerer::slack::{render, route, NAME};
use crate::domain::request::{AuditAction, AuditEntry, Post, Source, Status};
use crate::domain::text::Escaped;

/// How the audit log names a Slack user: `slack:U… name=…`.
pub(super) fn describe(user: &str, name: &str) -> String {
    crate::domain::audit::actor("slack", user, Some(name), None)
}

impl Refusal {
    /// The chat layer's refusal of a press on question `q`, as Slack says it.
    fn of(r: chat_admit::Refusal, q: &crate::domain::Question) -> Refusal {
        let text = match r.why {
            Refused::Bot => "Bot accounts cannot answer askrelay questions.".to_owned(),
            Refused::NoSuchOption => "This control does not match any option.".to_owned(),
            Refused::NotAllowed => "You are not allowed to answer this question. Ask an admin to \
                                    add you (or one of your user groups) to the route's \
                                    slack_allowed_user_ids or slack_allowed_usergroup_ids."
                .to_owned(),
            Refused::Answered(a) => render::already(q, &a),
            Refused::Ended {
                withdrawn: Some(reason),
                ..
            } => chat_admit::withdrawn_text(reason).to_owned(),
            Refused::Ended { status, error, .. } => match (status, error) {
                (Status::Answered, _) => "This request has already been answered.".to_owned(),
                (status, Some(e)) => format!(
                    "This request has ended ({}): {}",
                    status.as_str(),
                    render::escape(&e)
                ),
                (status, None) => format!("This request has ended ({}).", status.as_str()),
            },
        };
        Refusal::new(r.action, text)
    }
}

impl Handler {
    /// Audits the refusal and says it to the person.
    pub(super) async fn refuse(&self, o: &Origin, r: Refusal) -> Reply {
        self.ctx
            .refuse(AuditEntry {
                request_key: r.about.as_ref().map(|a| a.0),
                request_id: r.about.as_ref().map(|a| a.1.clone()),
                question_idx: r.about.as_ref().map(|a| a.2),
                source: Source::Slack,
                actor: Some(describe(&o.user, &o.name)),
                action: r.action,
                detail: Some(format!(
                    "control {:?} in channel {} message {}",
                    Escaped(&o.control),
                    Escaped(o.channel.as_deref().unwrap_or("none")),
                    Escaped(o.ts.as_deref().unwrap_or("none"))
                )),
                accepted: false,
            })
            .await;
        Reply::Tell(r.text)
    }

    /// The checks every press goes through (see the module comment).
    pub(super) async fn admit<K: Kind>(&self, o: &Origin) -> Result<Admitted<K>, Refusal> {
        let id = CustomId::<K>::parse(&o.control).ok_or_else(|| {
            Refusal::new(
                AuditAction::Forged,
                "This control is not one askrelay knows; nothing was recorded.",
            )
        })?;
        let (req, posts) = match self.ctx.by_token(&id.token).await {
            Ok(Some(found)) => found,
            Ok(None) => return Err(Refusal::new(AuditAction::Stale, UNKNOWN)),
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "cannot read a request for a Slack interaction");
                return Err(Refusal::new(
                    AuditAction::StoreError,
                    "askrelay could not read this question, try again.",
                ));
            }
        };
        let idx = id.question;
        if idx >= req.questions.len() {
            return Err(Refusal::new(AuditAction::Forged, UNKNOWN));
        }
        // The question's own message in its channel, or a copy of it with controls (an
        // escalation step's DM): the one recorded, or (posted a moment ago, its ts not
        // recorded yet) the row of that channel, which the token already ties to this request.
        let matches = |p: &&Post| {
            p.idx == idx
                && p.answerer == NAME
                && !p.is_note()
                && Some(&p.channel) == o.channel.as_ref()
                && match (&p.message, &o.ts) {
                    (Some(m), Some(ts)) => m == ts,
                    (None, Some(_)) => true,
                    (_, None) => false,
                }
        };
        let Some(post) = posts.iter().find(matches).cloned() else {
            return Err(Refusal::new(
                AuditAction::Stale,
                "This control is not on the message askrelay posted for this question; nothing \
                 was recorded.",
            )
            .about(&req, idx));
        };
        let route = route::of_request(&self.config, &req);
        let now = crate::domain::clock::now_ms();
        // Slack sends no groups: read the members of the groups that may answer (the route's
        // and its begun escalation steps'), unless the person's user id is enough.
        let groups = if route.allows_at(&o.user, &[], req.created_at_ms, now) {
            Vec::new()
        } else {
            self.groups
                .of(&self.web, &o.user, &route.groups_at(req.created_at_ms, now))
                .await
        };
        let person = platform::person(&self.config, &o.user, &o.name, groups);
        chat_admit::press(
            &Slack(&self.config),
            &req,
            idx,
            id.action.option(),
            &person,
            now,
        )
        .map_err(|r| Refusal::of(r, &req.questions[idx]).about(&req, idx))?;
        Ok(Admitted {
            id,
            req,
            post,
            posts,
            route,
            person,
        })
    }
}
