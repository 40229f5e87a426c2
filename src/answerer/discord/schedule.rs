//! Reminders and escalation: what a route does while nobody answers.
//!
//! Each is a timer stored with the request (how many times it fired, when it is due next). A
//! step advances the timer and writes the outbox rows it posts in one transaction, conditional
//! on the count it read, so a restart or a second run can never take a step twice; the outbox
//! then posts the rows exactly once, like any question. The timers of pending requests are
//! loaded at start-up into one queue ([`Deadlines`]), which [`Schedule`] owns; a step it takes
//! goes to the [`Outbox`] like any question.
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
use crate::config::Config;
use crate::domain::clock::now_ms;
use crate::domain::expiry::Deadlines;
use crate::domain::request::{PlannedPost, Post, Request, Slot, Timer};
use crate::domain::text::Escaped;
use crate::domain::{AnswererContext, Status};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

pub(super) const REMIND: &str = "remind";
pub(super) const ESCALATE: &str = "escalate";

/// A timer step that comes due: the request, which timer, and how many times it has fired.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Due {
    key: i64,
    name: String,
    fired: u32,
}

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

/// When a route's timers first come due for a request asked at `asked_ms`.
fn first_due(route: &ResolvedRoute, asked_ms: i64) -> Vec<(&'static str, i64)> {
    let mut due = Vec::new();
    if let Some(r) = route.remind {
        due.push((REMIND, asked_ms + secs(r.after_secs)));
    }
    if let Some(step) = route.escalate.first() {
        due.push((ESCALATE, asked_ms + secs(step.after_secs)));
    }
    due
}

fn secs(s: u64) -> i64 {
    (s as i64).saturating_mul(1000)
}

/// The reminders and escalation steps of the requests this daemon shows.
pub(super) struct Schedule {
    config: Arc<Config>,
    rest: Arc<Rest>,
    /// Where the steps' posts go.
    outbox: Arc<Outbox>,
    /// When each pending request's next reminder or escalation step is due (stored in its
    /// timers; this is the index).
    queue: Deadlines<Due>,
    /// The requests whose timers are stored and in the queue (loaded at start-up, or armed).
    armed: Mutex<HashSet<i64>>,
}

impl Schedule {
    pub fn new(config: Arc<Config>, rest: Arc<Rest>, outbox: Arc<Outbox>) -> Schedule {
        Schedule {
            config,
            rest,
            outbox,
            queue: Default::default(),
            armed: Default::default(),
        }
    }

    /// Loads the timers of pending requests and runs them until shutdown.
    pub(super) async fn load(self: &Arc<Self>, ctx: &AnswererContext) -> anyhow::Result<()> {
        let timers = ctx.timers().await?;
        {
            let mut armed = self.armed.lock().unwrap();
            for t in timers {
                armed.insert(t.request_key);
                if let Some(at) = t.due_at_ms {
                    self.queue.insert(
                        at,
                        Due {
                            key: t.request_key,
                            name: t.name,
                            fired: t.fired,
                        },
                    );
                }
            }
        }
        let me = self.clone();
        let task_ctx = ctx.clone();
        ctx.spawn(async move {
            let ctx = task_ctx;
            let shutdown = ctx.shutdown().clone();
            me.queue
                .run(&shutdown, now_ms, |due| {
                    let me = me.clone();
                    let ctx = ctx.clone();
                    async move { me.fire(&ctx, due).await }
                })
                .await;
        });
        Ok(())
    }

    /// Starts the route's timers for a request just shown (or, at start-up, one whose timers
    /// were never stored): one stored row per timer, then the queue.
    pub(super) async fn arm(&self, ctx: &AnswererContext, req: &Request, route: &ResolvedRoute) {
        if self.armed.lock().unwrap().contains(&req.key) {
            return;
        }
        for (name, at) in first_due(route, req.created_at_ms) {
            let timer = Timer {
                request_key: req.key,
                name: name.to_owned(),
                fired: 0,
                due_at_ms: Some(at),
            };
            match ctx.advance_timer(req, None, &timer, &[]).await {
                // A timer stored already is either in the queue (loaded at start-up) or done.
                Ok(false) => {}
                Ok(true) => self.queue.insert(
                    at,
                    Due {
                        key: req.key,
                        name: name.to_owned(),
                        fired: 0,
                    },
                ),
                Err(e) => {
                    tracing::error!(error = %format!("{e:#}"), "cannot store a reminder or escalation timer; it starts at the next start")
                }
            }
        }
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
        let to = Timer {
            request_key: req.key,
            name: due.name.clone(),
            fired: due.fired + 1,
            due_at_ms: next,
        };
        match ctx
            .advance_timer(&req, Some(due.fired), &to, &planned)
            .await
        {
            Ok(true) => {}
            Ok(false) => return, // another run took this step, or the request ended
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), timer = %due.name, "cannot take a reminder or escalation step; retrying in 30 s");
                self.queue.insert(now_ms() + 30_000, due);
                return;
            }
        }
        tracing::info!(request_id = %Escaped(&req.request_id), timer = %due.name, step = to.fired, posts = planned.len(), "nobody answered yet; {}", if due.name == REMIND { "reminding" } else { "escalating" });
        if let Some(at) = next {
            self.queue.insert(
                at,
                Due {
                    key: req.key,
                    name: due.name.clone(),
                    fired: to.fired,
                },
            );
        }
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
