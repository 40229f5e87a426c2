//! Reminders and escalation: what a route does while nobody answers.
//!
//! Each is a timer stored with the request (how many times it fired, when it is due next). A
//! step advances the timer and writes the outbox rows it posts in one transaction, conditional
//! on the count it read, so a restart or a second run can never take a step twice; the outbox
//! then posts the rows exactly once, like any question. The timers of pending requests are
//! loaded at start-up into one queue (the chat layer's [`Timers`]), which [`Schedule`] owns; a
//! step it takes goes to the [`Outbox`] like any question.
//!
//! - A reminder is a reply to the first open question's message that gives the age and
//!   mentions the route's mentions again; never a new question.
//! - An escalation step mentions its people (a reply in the route's channel), or posts a
//!   linked copy of every open question, with the same controls, in its channel and its
//!   people's DMs; from then on its allowlists may answer too.

use super::custom_id;
use super::outbox::Outbox;
use super::rest::Rest;
use super::route::{self, ResolvedRoute};
use super::shown::NAME;
use crate::answerer::chat::timers::{first_due, secs, Due, Timers, REMIND};
use crate::config::Config;
use crate::domain::clock::now_ms;
use crate::domain::request::{PlannedPost, Post, Request, Slot};
use crate::domain::text::Escaped;
use crate::domain::{AnswererContext, Status};
use std::sync::Arc;

/// A DM copy of question `idx` to `user`, for the route or for escalation step `step`: its
/// channel is opened when it is posted.
pub(super) fn dm_copy(token: &str, idx: usize, user: u64, step: Option<u32>) -> PlannedPost {
    let slot = match step {
        None => Slot::Dm(user),
        Some(n) => Slot::StepDm(n, user),
    };
    PlannedPost {
        idx,
        nonce: custom_id::dm_nonce(token, idx, &slot),
        slot,
        channel: dm_channel_placeholder(user),
        guild: None,
    }
}

/// The channel of a DM not opened yet, as the outbox row holds it until the post records the
/// real one (the store's format; the slot says whose DM it is).
pub(super) fn dm_channel_placeholder(user: u64) -> String {
    format!("@{user}")
}

/// The reminders and escalation steps of the requests this daemon shows.
pub(super) struct Schedule {
    config: Arc<Config>,
    rest: Arc<Rest>,
    /// Where the steps' posts go.
    outbox: Arc<Outbox>,
    /// The term's index of the stored timers (the chat layer's).
    timers: Timers,
}

impl Schedule {
    pub fn new(config: Arc<Config>, rest: Arc<Rest>, outbox: Arc<Outbox>) -> Schedule {
        Schedule {
            config,
            rest,
            outbox,
            timers: Timers::default(),
        }
    }

    /// Loads the timers of pending requests and runs them until shutdown.
    pub(super) async fn load(self: &Arc<Self>, ctx: &AnswererContext) -> anyhow::Result<()> {
        let me = self.clone();
        self.timers
            .load(ctx, move |ctx, due| {
                let me = me.clone();
                async move { me.fire(&ctx, due).await }
            })
            .await
    }

    /// Starts the route's timers for a request just shown (or, at start-up, one whose timers
    /// were never stored): one stored row per timer, then the queue.
    pub(super) async fn arm(&self, ctx: &AnswererContext, req: &Request, route: &ResolvedRoute) {
        if self.timers.is_armed(req.key) {
            return;
        }
        let first = first_due(
            route.remind,
            route.escalate.first().map(|s| s.after_secs),
            req.created_at_ms,
        );
        // A timer stored already is either in the queue (loaded at start-up) or done.
        self.timers
            .store_first(ctx, req, first, |e| {
                tracing::error!(error = %format!("{e:#}"), "cannot store a reminder or escalation timer; it starts at the next start");
            })
            .await;
    }

    /// Takes the step that came due: plans its posts and the timer's next step in one
    /// transaction, then posts them.
    async fn fire(self: &Arc<Self>, ctx: &AnswererContext, due: Due) {
        let Ok(Some((req, posts))) = ctx.with_posts(due.key).await else {
            return;
        };
        if req.status != Status::Pending {
            return;
        }
        let route = route::of_request(&self.config, &req);
        let Some((planned, next)) = self.step(&req, &route, &posts, &due) else {
            return;
        };
        let (timer, step) = (due.name.clone(), due.fired + 1);
        match self.timers.advance(ctx, &req, due, &planned, next).await {
            Ok(true) => {}
            Ok(false) => return, // another run took this step, or the request ended
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), timer = %timer, "cannot take a reminder or escalation step; retrying in 30 s");
                return;
            }
        }
        tracing::info!(request_id = %Escaped(&req.request_id), timer = %timer, step, posts = planned.len(), "nobody answered yet; {}", if timer == REMIND { "reminding" } else { "escalating" });
        // Clicks on the new copies must find them: read the request again at the next click.
        let outbox = &self.outbox;
        outbox.shown.forget(&req.token);
        let mut all: Vec<Post> = posts.into_iter().filter(|p| p.answerer == NAME).collect();
        all.extend(planned.into_iter().map(|p| Post::planned(p, NAME)));
        match outbox.busy.posting.claim(req.key) {
            Some(claim) => outbox.spawn_poster(ctx, claim, req, route, all, 0),
            // A poster is at work on this request; the repair loop picks the new rows up.
            None => outbox.repair_now.notify_one(),
        }
    }

    /// The rows step `due` posts, and when the timer is due next; `None` when it has nothing
    /// left to do.
    fn step(
        &self,
        req: &Request,
        route: &ResolvedRoute,
        posts: &[Post],
        due: &Due,
    ) -> Option<(Vec<PlannedPost>, Option<i64>)> {
        let open: Vec<usize> = (0..req.questions.len())
            .filter(|&i| req.answers.get(i).is_some_and(Option::is_none))
            .collect();
        let first_open = *open.first()?;
        let main = posts
            .iter()
            .find(|p| p.idx == first_open && p.is_main() && p.answerer == NAME)?;
        let note = |slot: Slot| PlannedPost {
            idx: first_open,
            slot,
            channel: main.channel.clone(),
            guild: main.guild.clone(),
            nonce: custom_id::extra_nonce(&req.token),
        };
        let n = due.fired + 1;
        if due.name == REMIND {
            let r = route.remind?;
            if n > r.max {
                return None;
            }
            let next = (n < r.max).then(|| now_ms() + secs(r.every_secs));
            return Some((vec![note(Slot::Reminder(n))], next));
        }
        let step = route.escalate.get(due.fired as usize)?;
        let mut planned = Vec::new();
        if let Some(channel) = step.channel_id {
            planned.extend(open.iter().map(|&idx| {
                PlannedPost {
                    idx,
                    slot: Slot::Step(n),
                    channel: channel.to_string(),
                    guild: self
                        .rest
                        .known_guild(channel)
                        .flatten()
                        .map(|g| g.to_string()),
                    nonce: custom_id::extra_nonce(&req.token),
                }
            }));
        } else if !step.mention_role_ids.is_empty() || !step.mention_user_ids.is_empty() {
            planned.push(note(Slot::StepNote(n)));
        }
        for &user in &step.dm_user_ids {
            planned.extend(
                open.iter()
                    .map(|&idx| dm_copy(&req.token, idx, user, Some(n))),
            );
        }
        let next = route
            .escalate
            .get(n as usize)
            .map(|s| req.created_at_ms + secs(s.after_secs));
        Some((planned, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_name_their_step() {
        let step_of = |s: &str| Slot::from(s).step();
        assert_eq!(step_of("e2"), Some(2));
        assert_eq!(step_of("e2:dm:55"), Some(2));
        assert_eq!(step_of("note:e3"), Some(3));
        assert_eq!(step_of("note:r1"), None);
        assert_eq!(step_of("dm:55"), None);
        assert_eq!(step_of(""), None);
        assert_eq!(super::super::route::dm_user("@42"), Some(42));
        assert_eq!(super::super::route::dm_user("42"), None);
    }
}
