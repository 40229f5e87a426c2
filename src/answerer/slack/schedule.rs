//! Reminders and escalation in Slack (docs/slack.md, "Reminders and escalation"): what a
//! route does while nobody answers, as Discord's schedule does it (`discord/schedule.rs`).
//!
//! Each is a timer stored with the request under the answerer `slack` (how many times it
//! fired, when it is due next). A step advances the timer and plans the outbox rows it posts in
//! one transaction, conditional on the count it read, so a restart or a new cluster leader can
//! never take a step twice; the [`Outbox`] then posts the rows once, each with its own
//! `client_msg_id`, like any question. The timers of pending requests are loaded into one
//! queue (the chat layer's [`Timers`]) when this daemon starts leading.
//!
//! - A reminder is a reply in the thread of the first open question's message that gives the
//!   age and mentions the route's Slack mentions; never a new question.
//! - An escalation step mentions its people in that thread, and posts a copy of every open
//!   question, with the same controls, in the DM of each of its `slack_dm_user_ids`; from then
//!   on those people, and its allowlists, may answer.

use super::outbox::{client_msg_id_of, dm_placeholder, Outbox};
use super::route::{self, SlackRoute};
use super::NAME;
use crate::answerer::chat::timers::{first_due, secs, Due, Timers, REMIND};
use crate::config::Config;
use crate::domain::clock::now_ms;
use crate::domain::request::{PlannedPost, Post, Request, Slot};
use crate::domain::text::Escaped;
use crate::domain::{AnswererContext, Status};
use std::sync::Arc;

/// The rows step `due` of `req` on `route` posts (whose rows are `posts`), and when its timer
/// is due next; `None` when it has nothing left to do. `now` is the clock's reading.
fn step(
    req: &Request,
    route: &SlackRoute,
    posts: &[Post],
    due: &Due,
    now: i64,
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
        nonce: client_msg_id_of(&req.token, first_open, &slot),
        slot,
        channel: main.channel.clone(),
        guild: None,
    };
    let n = due.fired + 1;
    if due.name == REMIND {
        let r = route.remind?;
        if n > r.max {
            return None;
        }
        let next = (n < r.max).then(|| now + secs(r.every_secs));
        return Some((vec![note(Slot::Reminder(n))], next));
    }
    let step = route.escalate.get(due.fired as usize)?;
    let mut planned = Vec::new();
    if step.mentions() {
        planned.push(note(Slot::StepNote(n)));
    }
    if let Some(channel) = &step.channel_id {
        planned.extend(open.iter().map(|&idx| {
            let slot = Slot::Step(n);
            PlannedPost {
                idx,
                nonce: client_msg_id_of(&req.token, idx, &slot),
                slot,
                channel: channel.clone(),
                guild: None,
            }
        }));
    }
    for user in &step.dm_user_ids {
        planned.extend(open.iter().map(|&idx| {
            let slot = Slot::StepDmNamed(n, user.clone());
            PlannedPost {
                idx,
                nonce: client_msg_id_of(&req.token, idx, &slot),
                slot,
                channel: dm_placeholder(user),
                guild: None,
            }
        }));
    }
    let next = route
        .escalate
        .get(n as usize)
        .map(|s| req.created_at_ms + secs(s.after_secs));
    Some((planned, next))
}

/// The reminders and escalation steps of the requests Slack shows, for one term.
pub(super) struct Schedule {
    config: Arc<Config>,
    /// Where the steps' rows are posted.
    outbox: Arc<Outbox>,
    /// The term's index of the stored timers (the chat layer's).
    timers: Timers,
}

impl Schedule {
    pub fn new(config: Arc<Config>, outbox: Arc<Outbox>) -> Schedule {
        Schedule {
            config,
            outbox,
            timers: Timers::default(),
        }
    }

    /// Loads the timers of pending requests and runs them until `ctx`'s shutdown.
    pub async fn load(self: &Arc<Self>, ctx: &AnswererContext) -> anyhow::Result<()> {
        let me = self.clone();
        self.timers
            .load(ctx, move |ctx, due| {
                let me = me.clone();
                async move { me.fire(&ctx, due).await }
            })
            .await
    }

    /// Starts the route's timers for a request shown in Slack (or, found unposted by a repair
    /// pass, one whose timers may never have been stored): one stored row per timer, then the
    /// queue. A timer stored already is left as it is.
    pub async fn arm(&self, ctx: &AnswererContext, req: &Request) {
        if req.status != Status::Pending || self.timers.is_armed(req.key) {
            return;
        }
        let route = route::of_request(&self.config, req);
        let first = first_due(
            route.remind,
            route.escalate.first().map(|s| s.after_secs),
            req.created_at_ms,
        );
        let stored = self
            .timers
            .store_first(ctx, req, first, |e| {
                tracing::error!(error = %format!("{e:#}"), "cannot store a Slack reminder or escalation timer; trying again at the next repair pass");
            })
            .await;
        if stored {
            self.timers.set_armed(req.key);
        }
    }

    /// Takes the step that came due: plans its rows and the timer's next step in one
    /// transaction, then posts them.
    async fn fire(self: &Arc<Self>, ctx: &AnswererContext, due: Due) {
        let Ok(Some((req, posts))) = ctx.with_posts(due.key).await else {
            return;
        };
        if req.status != Status::Pending {
            return;
        }
        let route = route::of_request(&self.config, &req);
        let Some((planned, next)) = step(&req, &route, &posts, &due, now_ms()) else {
            return;
        };
        let (timer, step) = (due.name.clone(), due.fired + 1);
        match self.timers.advance(ctx, &req, due, &planned, next).await {
            Ok(true) => {}
            Ok(false) => return, // another run took this step, or the request ended
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), timer = %timer, "cannot take a Slack reminder or escalation step; retrying in 30 s");
                return;
            }
        }
        tracing::info!(request_id = %Escaped(&req.request_id), timer = %timer, step, posts = planned.len(), "nobody answered in Slack yet; {}", if timer == REMIND { "reminding" } else { "escalating" });
        match self.outbox.busy.posting.claim(req.key) {
            // The poster reads the rows again under its claim, the new ones with them.
            Some(claim) => self.outbox.spawn_poster(ctx, claim, req, route, 0),
            // A poster is at work on this request; the repair loop picks the new rows up.
            None => self.outbox.repair_now.notify_one(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answerer::chat::timers::ESCALATE;
    use crate::answerer::routing::Remind;
    use crate::answerer::slack::route::SlackStep;
    use crate::domain::approval::fixtures::{question, request};
    use crate::domain::request::EditState;

    fn main_post(idx: usize) -> Post {
        Post {
            idx,
            answerer: NAME.into(),
            slot: Slot::Main,
            channel: "C0QUESTION".into(),
            guild: None,
            nonce: "n".into(),
            message: Some("1700000000.000100".into()),
            attempts: 0,
            last_error: None,
            edited: EditState::None,
        }
    }

    fn route() -> SlackRoute {
        let mut r = route::of_request(&Config::default(), &request("slack", "r", "t", vec![]));
        r.remind = Remind::new(Some(60), Some(30), Some(2));
        r.escalate = vec![
            SlackStep {
                after_secs: 120,
                mention_user_ids: vec!["U0ONCALL1".into()],
                mention_usergroup_ids: vec![],
                dm_user_ids: vec![],
                channel_id: None,
                allowed_user_ids: vec![],
                allowed_usergroup_ids: vec![],
            },
            SlackStep {
                after_secs: 600,
                mention_user_ids: vec![],
                mention_usergroup_ids: vec![],
                dm_user_ids: vec!["U0LEAD001".into()],
                channel_id: Some("C0ESCALATE".into()),
                allowed_user_ids: vec![],
                allowed_usergroup_ids: vec![],
            },
        ];
        r
    }

    fn due(name: &str, fired: u32) -> Due {
        Due {
            key: 1,
            name: name.into(),
            fired,
        }
    }

    #[test]
    fn reminders_reply_in_the_first_open_questions_thread_and_stop_at_the_max() {
        let mut req = request(
            "slack",
            "r",
            "0123456789abcdef0123",
            vec![question(&["A", "B"]), question(&["C", "D"])],
        );
        req.created_at_ms = 1_000;
        let posts = [main_post(0), main_post(1)];
        let (rows, next) = step(&req, &route(), &posts, &due(REMIND, 0), 61_000).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].idx, &rows[0].slot), (0, &Slot::Reminder(1)));
        assert_eq!(rows[0].channel, "C0QUESTION");
        assert_eq!(next, Some(91_000));
        // The last one is due no more, and none comes past the max.
        let (_, next) = step(&req, &route(), &posts, &due(REMIND, 1), 91_000).unwrap();
        assert_eq!(next, None);
        assert!(step(&req, &route(), &posts, &due(REMIND, 2), 121_000).is_none());
        // Each row has a client_msg_id of its own, fixed by the request, question and slot.
        let (again, _) = step(&req, &route(), &posts, &due(REMIND, 0), 70_000).unwrap();
        assert_eq!(again[0].nonce, rows[0].nonce);
        assert_ne!(
            rows[0].nonce,
            crate::answerer::slack::client_msg_id(&req.token, 0)
        );
    }

    #[test]
    fn escalation_mentions_in_the_thread_then_copies_every_open_question_to_a_channel_and_dms() {
        let mut req = request(
            "slack",
            "r",
            "0123456789abcdef0123",
            vec![question(&["A", "B"]), question(&["C", "D"])],
        );
        req.created_at_ms = 1_000;
        let posts = [main_post(0), main_post(1)];
        let (rows, next) = step(&req, &route(), &posts, &due(ESCALATE, 0), 121_000).unwrap();
        let slots: Vec<String> = rows.iter().map(|r| r.slot.to_string()).collect();
        assert_eq!(slots, ["note:e1"]);
        assert_eq!(next, Some(601_000));
        let (rows, next) = step(&req, &route(), &posts, &due(ESCALATE, 1), 601_000).unwrap();
        let rows: Vec<(usize, String, String)> = rows
            .iter()
            .map(|r| (r.idx, r.slot.to_string(), r.channel.clone()))
            .collect();
        assert_eq!(
            rows,
            [
                (0, "e2".into(), "C0ESCALATE".into()),
                (1, "e2".into(), "C0ESCALATE".into()),
                (0, "e2:dm:U0LEAD001".into(), "@U0LEAD001".into()),
                (1, "e2:dm:U0LEAD001".into(), "@U0LEAD001".into()),
            ]
        );
        assert_eq!(next, None);
        assert!(step(&req, &route(), &posts, &due(ESCALATE, 2), 700_000).is_none());
    }
}
