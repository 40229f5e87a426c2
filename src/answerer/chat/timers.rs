//! Reminder and escalation timers, kept the same way by every chat adapter: what a route does
//! while nobody answers.
//!
//! Each timer is stored with the request under the adapter's answerer name (how many times it
//! fired, when it is due next); the store is the truth, and [`Timers`] is the term's index of
//! it: a queue of the steps to come ([`Deadlines`]) and the requests whose timers are stored
//! and queued. [`Timers::load`] fills it from the store when a term begins and runs it,
//! handing each step that comes due to the adapter's `fire`; the adapter plans that step's
//! posts (which differ by platform) and [`Timers::advance`] stores them with the timer's next
//! step in one transaction, conditional on the count it read, so that a restart or a new
//! leader never takes a step twice.

use crate::answerer::routing::Remind;
use crate::domain::clock::now_ms;
use crate::domain::expiry::Deadlines;
use crate::domain::request::{PlannedPost, Request, Timer};
use crate::domain::AnswererContext;
use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};

/// The timers' names (stored per answerer, so each platform's of the same request are apart).
pub const REMIND: &str = "remind";
pub const ESCALATE: &str = "escalate";

/// How long a step that could not be stored waits before it is tried again.
const RETRY_MS: i64 = 30_000;

/// A timer step that comes due: the request, which timer, and how many times it has fired.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Due {
    /// The request's key.
    pub key: i64,
    /// [`REMIND`] or [`ESCALATE`].
    pub name: String,
    /// How many steps of this timer were taken.
    pub fired: u32,
}

/// Seconds of the config as milliseconds, saturating.
pub fn secs(s: u64) -> i64 {
    (s as i64).saturating_mul(1000)
}

/// When a route's timers first come due for a request asked at `asked_ms`: its reminders
/// (`remind`), and its first escalation step, `first_step_secs` after the question.
pub fn first_due(
    remind: Option<Remind>,
    first_step_secs: Option<u64>,
    asked_ms: i64,
) -> Vec<(&'static str, i64)> {
    let mut due = Vec::new();
    if let Some(r) = remind {
        due.push((REMIND, asked_ms + secs(r.after_secs)));
    }
    if let Some(after) = first_step_secs {
        due.push((ESCALATE, asked_ms + secs(after)));
    }
    due
}

/// One term's index of the stored timers: when each pending request's next step is due, and
/// which requests' timers are stored and queued. Dropped with the term.
#[derive(Default)]
pub struct Timers {
    /// When each pending request's next step is due; shared with the task that runs it.
    queue: Arc<Deadlines<Due>>,
    /// The requests whose timers are stored and in the queue (loaded, or armed).
    armed: Mutex<HashSet<i64>>,
}

impl Timers {
    /// Loads the timers of pending requests, then runs them until `ctx`'s shutdown: each step
    /// that comes due is handed to `fire`, one at a time.
    pub async fn load<F, Fut>(&self, ctx: &AnswererContext, fire: F) -> anyhow::Result<()>
    where
        F: Fn(AnswererContext, Due) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send,
    {
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
        let queue = self.queue.clone();
        let task_ctx = ctx.clone();
        ctx.spawn(async move {
            let ctx = task_ctx;
            let shutdown = ctx.shutdown().clone();
            queue
                .run(&shutdown, now_ms, |due| fire(ctx.clone(), due))
                .await;
        });
        Ok(())
    }

    /// Whether the timers of the request `key` are stored and queued already.
    pub fn is_armed(&self, key: i64) -> bool {
        self.armed.lock().unwrap().contains(&key)
    }

    /// Notes that the timers of the request `key` are stored and queued.
    pub fn set_armed(&self, key: i64) {
        self.armed.lock().unwrap().insert(key);
    }

    /// Stores `req`'s first timers (`first`: each one's name and when it first comes due, see
    /// [`first_due`]), one row each, and queues those newly stored; a timer stored already is
    /// left as it is (queued when the term began, or done). Whether every one is stored; each
    /// failure is handed to `failed` to log.
    pub async fn store_first(
        &self,
        ctx: &AnswererContext,
        req: &Request,
        first: Vec<(&'static str, i64)>,
        failed: impl Fn(&anyhow::Error),
    ) -> bool {
        let mut stored = true;
        for (name, at) in first {
            let timer = Timer {
                request_key: req.key,
                name: name.to_owned(),
                fired: 0,
                due_at_ms: Some(at),
            };
            match ctx.advance_timer(req, None, &timer, &[]).await {
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
                    stored = false;
                    failed(&e);
                }
            }
        }
        stored
    }

    /// Takes step `due` of `req`: stores the timer's next step (due at `next`, or done) with
    /// the `planned` rows in one transaction, conditional on the count `due` read, and queues
    /// the next step. `Ok(false)` when another run took this step or the request ended; on an
    /// error (for the caller to log) the step is queued again in 30 s.
    pub async fn advance(
        &self,
        ctx: &AnswererContext,
        req: &Request,
        due: Due,
        planned: &[PlannedPost],
        next: Option<i64>,
    ) -> anyhow::Result<bool> {
        let to = Timer {
            request_key: req.key,
            name: due.name.clone(),
            fired: due.fired + 1,
            due_at_ms: next,
        };
        match ctx.advance_timer(req, Some(due.fired), &to, planned).await {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => {
                self.queue.insert(now_ms() + RETRY_MS, due);
                return Err(e);
            }
        }
        if let Some(at) = next {
            self.queue.insert(
                at,
                Due {
                    key: req.key,
                    name: due.name,
                    fired: to.fired,
                },
            );
        }
        Ok(true)
    }
}
