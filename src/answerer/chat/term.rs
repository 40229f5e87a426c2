//! A chat adapter's terms of work, the same on every platform: what an adapter does with its
//! own connection, outbox and timers (its *lead*) lasts a term, and in a cluster a term follows
//! the cluster's lead.
//!
//! Alone, a daemon's one term is its run. In a cluster, [`follow_lead`] starts the adapter's
//! work when this node takes the lead (taking over every node's pending requests) and ends it
//! when the node loses it, so that the next term starts from the store. The adapter reaches
//! the term's work only through its [`Gate`]: a node without a lead describes and stores, and
//! never posts.

use crate::domain::cluster::Role;
use crate::domain::request::Slot;
use crate::domain::AnswererContext;
use std::collections::HashSet;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The one gate in front of an adapter's work: the current term's lead (`L`), while this
/// daemon has one.
pub struct Gate<L>(Mutex<Option<Arc<L>>>);

impl<L> Default for Gate<L> {
    fn default() -> Self {
        Gate(Mutex::new(None))
    }
}

impl<L> Gate<L> {
    /// The current term's work; `None` on a follower.
    pub fn lead(&self) -> Option<Arc<L>> {
        self.0.lock().unwrap().clone()
    }

    /// Begins a term with its work.
    pub fn open(&self, lead: Arc<L>) {
        *self.0.lock().unwrap() = Some(lead);
    }

    /// Ends the term: what it showed and scheduled is forgotten (its tasks stop with its
    /// cancellation token).
    pub fn close(&self) {
        self.0.lock().unwrap().take();
    }
}

/// Follows the cluster's lead until `ctx`'s shutdown, in a task of its own: when this node
/// leads, `lead` starts the adapter's work with a context of the term's own (its token a child
/// of the daemon's); when the role changes, `step_down` ends that work (it closes the gate)
/// and the term's token is cancelled. A term whose `lead` failed is tried again at the next
/// change of role. `platform` ("Discord") and its `session` ("Discord gateway session") name
/// them in the logs.
pub fn follow_lead<F, Fut>(
    ctx: &AnswererContext,
    platform: &'static str,
    session: &'static str,
    lead: F,
    step_down: impl Fn() + Send + 'static,
) where
    F: Fn(AnswererContext) -> Fut + Send + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send,
{
    let mut roles = ctx.roles();
    let daemon_ctx = ctx.clone();
    ctx.spawn(async move {
        let ctx = daemon_ctx;
        // The role of the term running now (a leader's epoch), and its token.
        let mut term: Option<(Role, CancellationToken)> = None;
        loop {
            let role = roles.borrow_and_update().clone();
            // A new epoch is a new term: the old one's work stops before the new one's
            // starts (its fenced writes would be refused anyway).
            if let Some((running, t)) = &term {
                if *running != role {
                    tracing::info!("stepping down: closing the {session}");
                    step_down();
                    t.cancel();
                    term = None;
                }
            }
            if role.leads() && term.is_none() {
                let t = ctx.shutdown().child_token();
                if let Err(e) = lead(ctx.for_term(t.clone())).await {
                    tracing::error!(error = %format!("{e:#}"), "cannot start {platform} as the cluster's leader; trying again at the next change of role");
                    t.cancel();
                }
                term = Some((role, t));
            }
            tokio::select! {
                _ = ctx.shutdown().cancelled() => return,
                r = roles.changed() => if r.is_err() { return },
            }
        }
    });
}

/// What an adapter's outbox is at work on, so that a repair pass does not start a second
/// poster for a request or a second edit of a message. It outlives a term: a poster of the
/// last term may still be at work when the next begins.
#[derive(Default)]
pub struct Busy {
    /// Requests whose questions are being posted.
    pub posting: Claims<i64>,
    /// Messages (request key, question, slot) being edited.
    pub editing: Claims<(i64, usize, Slot)>,
}

/// A set of things someone is working on; each is held by a [`Claim`].
pub struct Claims<K>(Arc<Mutex<HashSet<K>>>);

impl<K> Default for Claims<K> {
    fn default() -> Self {
        Claims(Default::default())
    }
}

impl<K: Hash + Eq + Clone> Claims<K> {
    /// Claims `k`; `None` when someone holds it already.
    pub fn claim(&self, k: K) -> Option<Claim<K>> {
        self.0.lock().unwrap().insert(k.clone()).then(|| Claim {
            set: self.0.clone(),
            k,
        })
    }
}

/// The claim on one thing, from the first try through whichever task takes over (the first
/// post at ask time hands it to the background poster); released when dropped, also when that
/// task panics.
pub struct Claim<K: Hash + Eq> {
    set: Arc<Mutex<HashSet<K>>>,
    k: K,
}

impl<K: Hash + Eq> Drop for Claim<K> {
    fn drop(&mut self) {
        self.set.lock().unwrap().remove(&self.k);
    }
}
