//! Faults: 5xx and 429 bursts on posts, edits, channel checks and interaction callbacks, stalls,
//! and gateway drops, at random times.

use super::shared::Shared;
use super::Rng;
use crate::standin::{Failure, Stall, StandIn};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{sleep, timeout, timeout_at, Instant};

/// The daemon's REST deadline in this harness; a stall fault holds a call longer than this.
pub(super) const STALL_DEADLINE: Duration = Duration::from_millis(500);
/// How long a stall fault holds a call: past every deadline.
pub(super) const STALL: Duration = Duration::from_millis(900);

/// The kinds of REST call the faults hit.
#[derive(Clone, Copy, Debug)]
pub(super) enum FaultOn {
    /// `POST /channels/{id}/messages`: posting a question.
    Post,
    /// `PATCH /channels/{id}/messages/{id}`: editing a settled or ended question.
    Edit,
    /// `GET /channels/{id}`: the channel check of the first offer after a start.
    Channel,
    /// `POST /interactions/{id}/{token}/callback`: answering a click.
    Callback,
}

impl FaultOn {
    /// The `fail_next` arguments.
    fn rule(self) -> (&'static str, &'static str) {
        match self {
            FaultOn::Post => ("POST", "/messages"),
            FaultOn::Edit => ("PATCH", "/messages/"),
            FaultOn::Channel => ("GET", "/channels/"),
            FaultOn::Callback => ("POST", "/callback"),
        }
    }

    /// Which kind a recorded request is.
    fn of(method: &str, path: &str) -> Option<FaultOn> {
        match method {
            "POST" if path.ends_with("/callback") => Some(FaultOn::Callback),
            "POST" if path.contains("/channels/") && path.ends_with("/messages") => {
                Some(FaultOn::Post)
            }
            "PATCH" if path.contains("/messages/") => Some(FaultOn::Edit),
            "GET" if path.contains("/channels/") && !path.contains("/messages") => {
                Some(FaultOn::Channel)
            }
            _ => None,
        }
    }
}

/// Injected failures, paced so that every outage ends: a failure waits in the stand-in until a
/// matching request takes it, and the next burst for a kind is queued only once the last one was
/// all served and a request of that kind succeeded after it. Otherwise a lone retrying post
/// could meet injected failures forever.
pub(super) struct FaultQueue {
    injected: [usize; 4],
    served: [usize; 4],
    /// A request of the kind succeeded since its last burst was served.
    recovered: [bool; 4],
    /// When the last stall of the kind began holding a request.
    stall_taken: [Option<std::time::Instant>; 4],
    /// A request of the kind succeeded after its last stall was taken.
    stall_recovered: [bool; 4],
    cursor: usize,
    held_cursor: usize,
}

impl FaultQueue {
    pub(super) fn new() -> FaultQueue {
        FaultQueue {
            injected: [0; 4],
            served: [0; 4],
            recovered: [true; 4],
            stall_taken: [None; 4],
            stall_recovered: [true; 4],
            cursor: 0,
            held_cursor: 0,
        }
    }

    /// Follows what the stand-in answered since the last look.
    fn refresh(&mut self, standin: &StandIn) {
        let held = standin.held_from(self.held_cursor);
        self.held_cursor += held.len();
        for h in held {
            if let Some(t) = FaultOn::of(&h.method, &h.path) {
                self.stall_taken[t as usize] = Some(h.at);
            }
        }
        let new = standin.requests_from(self.cursor);
        self.cursor += new.len();
        for r in new {
            let Some(t) = FaultOn::of(&r.method, &r.path) else {
                continue;
            };
            let t = t as usize;
            if r.status == 429 || r.status >= 500 {
                self.served[t] += 1;
            } else if r.status < 300 {
                if self.served[t] >= self.injected[t] {
                    self.recovered[t] = true;
                }
                if self.stall_taken[t].is_some_and(|taken| r.at > taken) {
                    self.stall_recovered[t] = true;
                }
            }
        }
    }

    /// Queues `times` failures for `target`, unless its last burst is not over yet.
    fn inject(&mut self, standin: &StandIn, target: FaultOn, failure: Failure, times: usize) {
        self.refresh(standin);
        let t = target as usize;
        if !self.recovered[t] || self.served[t] < self.injected[t] {
            return;
        }
        let (method, path) = target.rule();
        standin.fail_next(method, path, failure, times);
        self.injected[t] += times;
        self.recovered[t] = false;
    }

    /// Holds the next request of `target` past the daemon's deadlines, unless a stall is still
    /// waiting or the last one of the kind was not followed by a success yet (a lone click
    /// retried every few seconds would otherwise meet a stall every time). Returns whether it
    /// was queued.
    fn stall(&mut self, standin: &StandIn, target: FaultOn) -> bool {
        self.refresh(standin);
        let t = target as usize;
        if standin.stalls_waiting() > 0 || !self.stall_recovered[t] {
            return false;
        }
        let (method, path) = target.rule();
        standin.stall_next(method, path, Stall::For(STALL), 1);
        self.stall_recovered[t] = false;
        true
    }
}

/// Queued before the first ask, so that every run (however short) meets each kind of failure.
pub(super) fn first_faults(standin: &StandIn, queue: &mut FaultQueue) {
    let limited = Failure::RateLimited {
        retry_after_secs: 0.05,
        global: false,
    };
    queue.inject(standin, FaultOn::Channel, Failure::Status(500), 1);
    queue.inject(standin, FaultOn::Post, Failure::Status(503), 2);
    queue.inject(standin, FaultOn::Edit, limited, 2);
    queue.inject(standin, FaultOn::Callback, Failure::Status(500), 1);
}

pub(super) async fn faults(
    standin: StandIn,
    shared: Arc<Shared>,
    mut rng: Rng,
    every: Duration,
    mut queue: FaultQueue,
) {
    let mut done = shared.all_done.subscribe();
    let every = every.as_millis().max(4) as u64;
    let mut first = true;
    loop {
        let wait = rng.millis(every / 4, every * 7 / 4);
        tokio::select! {
            _ = sleep(wait) => {}
            _ = done.wait_for(|&d| d) => return,
        }
        let status = Failure::Status([500, 502, 503][rng.below(3) as usize]);
        let limited = Failure::RateLimited {
            retry_after_secs: rng.between(20, 500) as f64 / 1000.0,
            global: rng.chance(1, 4),
        };
        // The first faults are a gateway drop and a hung post, so that every run has them.
        let pick = if std::mem::take(&mut first) {
            14
        } else if shared.stalls.load(Ordering::SeqCst) == 0 {
            11
        } else {
            rng.below(15)
        };
        let times = rng.between(1, 4) as usize;
        match pick {
            0..=3 => queue.inject(&standin, FaultOn::Post, status, times),
            4..=5 => queue.inject(&standin, FaultOn::Post, limited, times.min(3)),
            6 => queue.inject(&standin, FaultOn::Edit, status, times.min(3)),
            7 => queue.inject(&standin, FaultOn::Edit, limited, 1),
            8 => queue.inject(&standin, FaultOn::Channel, status, 1),
            9 => queue.inject(&standin, FaultOn::Callback, status, 1),
            10 => queue.inject(&standin, FaultOn::Callback, limited, 1),
            11..=13 => {
                let on = [FaultOn::Post, FaultOn::Edit, FaultOn::Callback][pick as usize - 11];
                if queue.stall(&standin, on) {
                    let n = shared.stalls.fetch_add(1, Ordering::SeqCst) + 1;
                    shared.log(format!("stall {n} ({on:?})"));
                }
            }
            _ => {
                let drop = timeout(Duration::from_secs(20), standin.drop_gateway());
                tokio::select! {
                    r = drop => {
                        if r.is_ok() {
                            let n = shared.gateway_drops.fetch_add(1, Ordering::SeqCst) + 1;
                            shared.log(format!("gateway drop {n}"));
                        }
                    }
                    _ = done.wait_for(|&d| d) => return,
                }
            }
        }
    }
}

/// The ids of the created messages that still show components, once none is left or after
/// `limit`.
pub(super) async fn showing_buttons(standin: &StandIn, limit: Duration) -> Vec<u64> {
    let deadline = Instant::now() + limit;
    let mut changes = standin.subscribe();
    loop {
        let left: Vec<u64> = standin
            .created_messages_from(0)
            .iter()
            .filter_map(|m| m["id"].as_str()?.parse::<u64>().ok())
            .filter(|&id| {
                standin
                    .message(id)
                    .is_some_and(|m| m["components"].as_array().is_some_and(|c| !c.is_empty()))
            })
            .collect();
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        let _ = timeout_at(deadline, changes.changed()).await;
        sleep(Duration::from_millis(20)).await;
    }
}
