//! The Slack outbox: posting questions (`chat.postMessage`), editing them to their outcome
//! (`chat.update`), and repairing what a crash or an outage cut short.
//!
//! Every message has an outbox row, planned with its request in the same transaction, whose
//! nonce is the message's `client_msg_id`: a UUID derived from the request's token and the
//! question, the same for every try. A row whose `ts` is stored is never posted again; one
//! without (a crash between the post and the record) is posted again with the same
//! `client_msg_id`, which Slack's clients use to tell a message sent twice (docs/slack.md says
//! what Slack itself promises about it). Edits are recorded once Slack confirmed them, so the
//! edits still due are found and finished by the repair loop, also after a restart.
//!
//! The rows a reminder or an escalation step plans (`schedule.rs`) are posted the same way: a
//! note as a reply in its question's thread (`thread_ts`), a DM copy in the DM
//! `conversations.open` opens, each with a `client_msg_id` of its own.

use super::render::{self, Message, View};
use super::route::{self, SlackRoute};
use super::web::{Failure, Web};
use super::NAME;
pub(super) use crate::answerer::chat::term::Busy;
use crate::answerer::chat::term::Claim;
use crate::config::Config;
use crate::domain::model::Context;
use crate::domain::request::{EditState, PlannedPost, Post, Request, Slot};
use crate::domain::text::Escaped;
use crate::domain::{AnswererContext, AskError, ErrorCode, Outcome};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// How many tries a question gets while the agent waits for `accepted`; after that, posting
/// goes on in the background and the request stays pending until it is posted.
pub(super) const DELIVER_ATTEMPTS: u32 = 3;
/// Edits are tried this often, then again by the repair loop.
const EDIT_ATTEMPTS: u32 = 6;
/// The longest wait between two tries while the agent waits for `accepted`; a longer one (a
/// 429's `Retry-After`) is waited in the background, where posting goes on.
const DELIVER_WAIT_MAX: std::time::Duration = std::time::Duration::from_secs(5);
/// The longest an agent waits for its `accepted` on Slack's first tries (a partition holds
/// each call until its deadline); they go on in the background after it.
pub(super) const DELIVER_BUDGET: std::time::Duration = std::time::Duration::from_secs(5);

/// The `client_msg_id` of question `idx` of the request with `token`: a UUID (Slack's clients
/// send UUIDs there) made from both, so that every plan of the row gives the same one.
pub fn client_msg_id(token: &str, idx: usize) -> String {
    let d = Sha256::digest(format!("askrelay {token} {idx}"));
    let h: String = d[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// The `client_msg_id` of the outbox row of question `idx` in `slot` (a reminder, a DM
/// copy): as [`client_msg_id`] for the question's own message, else made from the slot too.
pub fn client_msg_id_of(token: &str, idx: usize, slot: &Slot) -> String {
    match slot {
        Slot::Main => client_msg_id(token, idx),
        _ => client_msg_id(&format!("{token} {slot}"), idx),
    }
}

/// The channel of a DM copy to `user` until `conversations.open` names it (the row holds
/// this, then the DM's id once opened).
pub(super) fn dm_placeholder(user: &str) -> String {
    format!("@{user}")
}

/// Whether `p` is still to be posted: a question's message, a reminder or copy, or the
/// context's files.
pub(super) fn unposted(p: &Post) -> bool {
    p.message.is_none()
}

/// The outbox rows of a request on `route`: each question's message in its channel, and the
/// files of a `context` its message cannot show whole, shared in that message's thread.
pub(super) fn plan(
    token: &str,
    count: usize,
    route: &SlackRoute,
    context: Option<&Context>,
) -> Vec<PlannedPost> {
    let mut rows: Vec<PlannedPost> = (0..count)
        .map(|idx| PlannedPost {
            idx,
            slot: Slot::Main,
            channel: route.channel.clone(),
            guild: None,
            nonce: client_msg_id(token, idx),
        })
        .collect();
    // A copy of each question in the DM of each of the route's dm_user_ids, from the start.
    for user in &route.dm_user_ids {
        rows.extend((0..count).map(|idx| {
            let slot = Slot::DmNamed(user.clone());
            PlannedPost {
                idx,
                nonce: client_msg_id_of(token, idx, &slot),
                slot,
                channel: dm_placeholder(user),
                guild: None,
            }
        }));
    }
    if count > 0 && context.is_some_and(|c| !render::uploads(c).is_empty()) {
        rows.push(PlannedPost {
            idx: 0,
            slot: Slot::Files,
            channel: route.channel.clone(),
            guild: None,
            nonce: client_msg_id(&format!("{token} files"), 0),
        });
    }
    rows
}

/// Posts, edits and repairs the messages of the requests Slack shows.
pub(super) struct Outbox {
    config: Arc<Config>,
    web: Arc<Web>,
    pub busy: Arc<Busy>,
    /// Wakes the repair loop (the Socket Mode connection is back, new rows came from
    /// elsewhere).
    pub repair_now: tokio::sync::Notify,
    /// When this outbox began (a lead's term): a message of a request made before may have
    /// been posted by a run or a leader that did not live to record it.
    began_ms: i64,
    /// Messages (request key, question, slot) whose last post in this term may have landed
    /// though it failed (its answer was lost).
    unsure: Mutex<HashSet<(i64, usize, Slot)>>,
}

impl Outbox {
    pub fn new(config: Arc<Config>, web: Arc<Web>, busy: Arc<Busy>) -> Outbox {
        Outbox {
            config,
            web,
            busy,
            repair_now: Default::default(),
            began_ms: crate::domain::clock::now_ms(),
            unsure: Default::default(),
        }
    }

    /// Whether `post` may be in Slack already though no `ts` is recorded for it: its request
    /// was made before this outbox began (a crash, or another leader, between a post and its
    /// record), or its last post in this term failed without knowing (see
    /// [`Failure::unsure_whether_done`]). A DM copy whose DM was never opened was never posted.
    fn may_have_posted(&self, req: &Request, post: &Post) -> bool {
        if post.channel.starts_with('@') {
            return false;
        }
        // In a cluster the request's time is another node's, on the database's clock as every
        // node reads it: a request a dead leader posted was made before its lease ran out, at
        // least a beat before this term began, far more than the nodes' clocks differ by.
        req.created_at_ms < self.began_ms
            || self
                .unsure
                .lock()
                .unwrap()
                .contains(&(req.key, post.idx, post.slot.clone()))
    }

    /// Posts `message` for `post` in its channel (opening its DM first if need be), once: when
    /// it [may be there already](Self::may_have_posted), Slack's history is searched for it
    /// first, and what is found is returned instead of a second post. Returns the message's
    /// `ts`, and whether it was found (it has been up for a while: a press may have settled it
    /// before its record, and its edit is then the repair loop's).
    async fn post_once(
        &self,
        ctx: &AnswererContext,
        req: &Request,
        post: &mut Post,
        message: &Message,
        thread_ts: Option<&str>,
    ) -> Result<(String, bool), Failure> {
        let searched = self.may_have_posted(req, post);
        let channel = self.channel_of(ctx, req, post).await?;
        if searched {
            match self
                .web
                .find_posted(&channel, thread_ts, &post.nonce, req.created_at_ms)
                .await
            {
                Ok(Some(ts)) => {
                    tracing::info!(request_id = %Escaped(&req.request_id), question = post.idx, slot = %post.slot, "found the message in Slack, posted before its record; not posting it again");
                    return Ok((ts, true));
                }
                Ok(None) => {}
                Err(Failure::Permanent(m)) => {
                    tracing::warn!(request_id = %Escaped(&req.request_id), error = %m, "cannot search the channel's history for an earlier post (the app's *:history scopes); posting again, which may show the message twice");
                }
                Err(f) => return Err(f),
            }
        }
        let key = (req.key, post.idx, post.slot.clone());
        let sent = self
            .web
            .post(&channel, message.content(), &post.nonce, thread_ts)
            .await;
        match &sent {
            Err(f) if f.unsure_whether_done() => self.unsure.lock().unwrap().insert(key),
            _ => self.unsure.lock().unwrap().remove(&key),
        };
        sent.map(|ts| (ts, false))
    }

    /// The message of question `idx` as first posted; the request's context goes with its
    /// first question only. A request a grant answered as it was asked is posted as answered
    /// (who allowed it, by which grant): grants are never silent.
    pub fn render(req: &Request, route: &SlackRoute, idx: usize) -> Option<Message> {
        let q = req.questions.get(idx)?;
        if let Some(Some(a)) = req.answers.get(idx).filter(|_| req.granted()) {
            return Some(render::settled(q, &View::of(req, &route.policy, idx), a));
        }
        let context = req.context.as_deref().filter(|_| idx == 0);
        Some(render::question(
            q,
            &View::of(req, &route.policy, idx),
            context,
        ))
    }

    /// The message of a row that is not the question's own (a reminder or an escalation
    /// step's note, a DM copy), and the thread it replies in; `None` when it has none (a row
    /// of another version, or a note whose question's message is not posted).
    fn render_extra(
        req: &Request,
        route: &SlackRoute,
        post: &Post,
        main: Option<&Post>,
    ) -> Option<(Message, Option<String>)> {
        let q = req.questions.get(post.idx)?;
        let main_ts = main.and_then(|m| m.message.clone());
        let link = main
            .zip(main_ts.as_deref())
            .map(|(m, ts)| super::link(&m.channel, ts));
        let waited = std::time::Duration::from_secs(
            ((crate::domain::clock::now_ms() - req.created_at_ms).max(0) / 1000) as u64,
        );
        let view = View::of(req, &route.policy, post.idx);
        match &post.slot {
            Slot::Reminder(_) => {
                let missing = (view.approvals > 1).then(|| {
                    (view.approvals as usize)
                        .saturating_sub(crate::domain::quorum::leading(view.votes))
                });
                let lead = render::reminder_lead(waited, missing);
                let mentions =
                    render::mentions(&route.mention_user_ids, &route.mention_usergroup_ids);
                Some((render::note(&lead, mentions.as_deref()), Some(main_ts?)))
            }
            Slot::StepNote(k) => {
                let step = route.escalate.get((*k as usize).checked_sub(1)?);
                let mentions = step
                    .and_then(|s| render::mentions(&s.mention_user_ids, &s.mention_usergroup_ids));
                let lead = render::escalation_lead(waited, None);
                Some((render::note(&lead, mentions.as_deref()), Some(main_ts?)))
            }
            Slot::DmNamed(_) => {
                let lead = render::dm_lead(link.as_deref());
                let context = req.context.as_deref().filter(|_| post.idx == 0);
                Some((render::copy(q, &view, &lead, context), None))
            }
            Slot::StepDmNamed(..) | Slot::Step(_) => {
                let lead = render::escalation_lead(waited, link.as_deref());
                let context = req.context.as_deref().filter(|_| post.idx == 0);
                Some((render::copy(q, &view, &lead, context), None))
            }
            _ => None,
        }
    }

    /// The channel `post` goes to: its own, or for a DM copy the DM that `conversations.open`
    /// opens, recorded on the row before the post so that a press that comes before the post
    /// is recorded finds it.
    async fn channel_of(
        &self,
        ctx: &AnswererContext,
        req: &Request,
        post: &mut Post,
    ) -> Result<String, Failure> {
        let Some(user) = post.channel.strip_prefix('@') else {
            return Ok(post.channel.clone());
        };
        let dm = self.web.open_dm(user).await?;
        ctx.place_post(req.key, post, &dm)
            .await
            .map_err(|e| Failure::transient(format!("{e:#}")))?;
        post.channel = dm.clone();
        Ok(dm)
    }

    /// Posts every row of `req` not posted yet, the questions' own messages first (in order),
    /// then the rows a reminder or an escalation step planned, making at most `tries` tries
    /// for each (`None`: until it works, the request ends or the daemon stops), after `failed`
    /// tries that failed already. Returns the posts as they are now.
    pub async fn post_all(
        &self,
        ctx: &AnswererContext,
        req: &Request,
        route: &SlackRoute,
        mut posts: Vec<Post>,
        tries: Option<u32>,
        failed: u32,
    ) -> Result<Vec<Post>, Failure> {
        posts.sort_by_key(|p| (!p.is_main(), p.idx));
        for i in 0..posts.len() {
            if posts[i].message.is_some() || posts[i].answerer != NAME {
                continue;
            }
            // A grant's announcement is the one message of a request a grant answered.
            if req.granted() && !posts[i].is_main() {
                continue;
            }
            let rendered = if posts[i].is_main() {
                Self::render(req, route, posts[i].idx).map(|m| (m, None))
            } else {
                let main = posts
                    .iter()
                    .find(|p| p.idx == posts[i].idx && p.is_main() && p.answerer == NAME);
                Self::render_extra(req, route, &posts[i], main)
            };
            let Some((message, thread_ts)) = rendered else {
                continue;
            };
            let post = &mut posts[i];
            let mut attempt = failed;
            loop {
                // A request cancelled while Slack was down is not posted afterwards (a grant's
                // announcement is: its request was answered as it was asked).
                if !req.granted() && !ctx.is_pending(req).await {
                    self.unsure.lock().unwrap().retain(|k| k.0 != req.key);
                    return Err(Failure::Permanent("the request has ended".into()));
                }
                if let Err(e) = ctx.claim_post(req.key, post).await {
                    return Err(Failure::transient(format!("{e:#}")));
                }
                let sent = match ctx.holds_term() {
                    true => {
                        self.post_once(ctx, req, post, &message, thread_ts.as_deref())
                            .await
                    }
                    false => Err(Failure::transient("this node's lead ended")),
                };
                match sent {
                    Ok((ts, found)) => {
                        crate::crash::point(if post.is_main() {
                            "posted"
                        } else {
                            "posted_extra"
                        });
                        match ctx.record_post(req, post, &ts, None, None).await {
                            // Its outcome, if it has one by now, is edited in by the repair
                            // pass this wakes.
                            Ok(()) if found || !ctx.is_pending(req).await => {
                                self.repair_now.notify_one()
                            }
                            Ok(()) => {}
                            Err(e) => {
                                tracing::error!(error = %format!("{e:#}"), "cannot record a posted Slack message")
                            }
                        }
                        post.message = Some(ts);
                        break;
                    }
                    Err(f) => {
                        let _ = ctx.record_post_failure(req, post, f.message()).await;
                        attempt += 1;
                        match &f {
                            Failure::Transient { message, .. }
                                if tries.is_none_or(|n| attempt < n)
                                    && ctx.holds_term()
                                    && (tries.is_none()
                                        || Web::wait_after(attempt, &f) <= DELIVER_WAIT_MAX) =>
                            {
                                let wait = Web::wait_after(attempt, &f);
                                tracing::warn!(request_id = %Escaped(&req.request_id), question = post.idx, attempt, error = %message, retry_in_ms = wait.as_millis() as u64, "posting a question to Slack failed; retrying");
                                if !self.web.pause(wait).await {
                                    return Err(f);
                                }
                            }
                            _ => return Err(f),
                        }
                    }
                }
            }
        }
        if tries.is_none() {
            self.share_files(ctx, req, &mut posts).await;
        }
        Ok(posts)
    }

    /// Shares the request's context files in the thread of its first question's message, once
    /// that is posted (its `note:files` row; recorded once Slack shared them). Tried until it
    /// works, the request ends or this node's lead does; a file Slack refuses (a missing
    /// `files:write` scope, say) is logged and not tried again: the question stands without it.
    async fn share_files(&self, ctx: &AnswererContext, req: &Request, posts: &mut [Post]) {
        let Some(thread) = posts
            .iter()
            .find(|p| p.is_main() && p.idx == 0)
            .and_then(|p| p.message.clone())
        else {
            return;
        };
        let Some(post) = posts
            .iter_mut()
            .find(|p| p.slot == Slot::Files && p.message.is_none())
        else {
            return;
        };
        let files = req
            .context
            .as_deref()
            .map(render::uploads)
            .unwrap_or_default();
        let mut attempt = 0;
        loop {
            if !ctx.is_pending(req).await || !ctx.holds_term() {
                return;
            }
            if ctx.claim_post(req.key, post).await.is_err() {
                return;
            }
            let shared = self.web.share_files(&post.channel, &thread, &files).await;
            let given_up = match &shared {
                Ok(()) => None,
                Err(Failure::Permanent(m)) => Some(m.clone()),
                Err(f) => {
                    let _ = ctx.record_post_failure(req, post, f.message()).await;
                    attempt += 1;
                    let wait = Web::wait_after(attempt, f);
                    tracing::warn!(request_id = %Escaped(&req.request_id), attempt, error = %f.message(), retry_in_ms = wait.as_millis() as u64, "sharing the context's files in Slack failed; retrying");
                    if !self.web.pause(wait).await {
                        return;
                    }
                    continue;
                }
            };
            crate::crash::point("files shared");
            if let Some(m) = given_up {
                tracing::error!(request_id = %Escaped(&req.request_id), error = %m, "Slack refused the context's files; the question stands without them");
            }
            match ctx.record_post(req, post, &thread, None, None).await {
                Ok(()) => post.message = Some(thread),
                Err(e) => {
                    tracing::error!(error = %format!("{e:#}"), "cannot record the context's files as shared in Slack")
                }
            }
            return;
        }
    }

    /// Keeps posting in the background until every question is up, after `failed` tries, under
    /// `claim`; a permanent failure ends the request with `NO_ANSWERER` and the cause.
    pub fn spawn_poster(
        self: &Arc<Self>,
        ctx: &AnswererContext,
        claim: Claim<i64>,
        req: Request,
        route: SlackRoute,
        failed: u32,
    ) {
        let me = self.clone();
        let task_ctx = ctx.clone();
        ctx.spawn(async move {
            let ctx = task_ctx;
            // Read again under the claim: a poster that held it before recorded its posts
            // before letting go, and posting from an older read would post twice.
            let posts = match ctx.outbox(&req).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(error = %format!("{e:#}"), "cannot read the outbox");
                    return;
                }
            };
            let posted = me.post_all(&ctx, &req, &route, posts, None, failed).await;
            drop(claim);
            match posted {
                Ok(_) => tracing::info!(request_id = %Escaped(&req.request_id), "every question is posted in Slack"),
                Err(Failure::Permanent(m)) if ctx.is_pending(&req).await => {
                    let err = AskError::new(
                        ErrorCode::NoAnswerer,
                        format!(
                            "posting to Slack channel {} (route {:?}) failed: {m}",
                            route.channel, route.name
                        ),
                    );
                    ctx.fail(&req, err).await;
                }
                // Ended meanwhile, or shutting down: resumed at the next start.
                Err(_) => {}
            }
        });
    }

    /// The outcome a posted message of `req` should show, and the state it records: its
    /// answer, or why the request ended; `None` while its question is open.
    pub fn outcome_of(&self, req: &Request, post: &Post) -> Option<(Message, EditState)> {
        if post.is_note() {
            // A reminder of a withdrawn request would still call people to a question nobody
            // needs answered; any other note stays as sent.
            return req
                .withdrawn
                .map(|reason| (render::note_withdrawn(reason), EditState::Ended));
        }
        let q = req.questions.get(post.idx)?;
        let route = route::of_request(&self.config, req);
        let view = View::of(req, &route.policy, post.idx);
        match (req.answers.get(post.idx), &req.outcome) {
            (Some(Some(a)), _) => Some((render::settled(q, &view, a), EditState::Settled)),
            (Some(None), Some(Outcome::Error(err))) => Some((
                render::ended(q, &view, err, req.withdrawn),
                EditState::Ended,
            )),
            _ => None,
        }
    }

    /// Edits `post` to `message` in the background (never delays an ack), and records `state`
    /// once Slack confirmed it (`None`: a vote count, not recorded).
    pub fn spawn_edit(
        self: &Arc<Self>,
        ctx: &AnswererContext,
        req: &Request,
        post: &Post,
        message: Message,
        state: Option<EditState>,
    ) {
        let Some(ts) = post.message.clone() else {
            return;
        };
        let Some(claim) = self
            .busy
            .editing
            .claim((req.key, post.idx, post.slot.clone()))
        else {
            return;
        };
        let me = self.clone();
        let task_ctx = ctx.clone();
        let key = req.key;
        let post = post.clone();
        let req = req.clone();
        let request_id = req.request_id.clone();
        ctx.spawn(async move {
            let ctx = task_ctx;
            if let Err(e) = ctx.claim_post(key, &post).await {
                tracing::warn!(request_id = %Escaped(&request_id), error = %format!("{e:#}"), "not editing the Slack message");
                return;
            }
            // Planned from a read of the row that may be older than an edit to the same state
            // recorded since (two repair passes at start-up read it before the first edit was
            // recorded): that one is not made again. The claim is held until the record, so
            // this read sees it.
            if let Some(state) = state {
                let done = ctx.outbox(&req).await.is_ok_and(|rows| {
                    rows.iter()
                        .any(|p| p.idx == post.idx && p.slot == post.slot && p.edited == state)
                });
                if done {
                    return;
                }
            }
            let mut attempt = 0;
            let edited = loop {
                if !ctx.holds_term() {
                    break Err(Failure::Permanent("this node's lead ended".into()));
                }
                match me.web.update(&post.channel, &ts, message.content()).await {
                    Ok(()) => break Ok(()),
                    Err(f @ Failure::Transient { .. }) if attempt + 1 < EDIT_ATTEMPTS => {
                        attempt += 1;
                        if !me.web.pause(Web::wait_after(attempt, &f)).await {
                            break Err(f);
                        }
                    }
                    Err(f) => break Err(f),
                }
            };
            match edited {
                Ok(()) => {
                    if let Some(state) = state {
                        if let Err(e) = ctx.record_edit(key, &post, state).await {
                            tracing::error!(error = %format!("{e:#}"), "cannot record a Slack edit");
                        }
                    }
                }
                Err(f) => tracing::warn!(
                    request_id = %Escaped(&request_id),
                    question = post.idx,
                    error = f.message(),
                    "cannot edit the Slack message; the repair loop tries again"
                ),
            }
            drop(claim);
        });
    }

    /// Edits every posted message of `req` (question `only`, or all) whose last confirmed edit
    /// is behind its state.
    pub fn sync_edits(
        self: &Arc<Self>,
        ctx: &AnswererContext,
        req: &Request,
        posts: &[Post],
        only: Option<usize>,
    ) {
        for post in posts
            .iter()
            .filter(|p| p.answerer == NAME && p.message.is_some())
            .filter(|p| only.is_none_or(|i| i == p.idx))
        {
            if let Some((message, state)) = self.outcome_of(req, post) {
                if post.edited != state {
                    self.spawn_edit(ctx, req, post, message, Some(state));
                }
            }
        }
    }

    /// [`Self::sync_edits`] after a settlement or an end: a message of it whose `ts` is not
    /// recorded yet (posted a moment ago, or found in Slack's history while this was settled)
    /// is left to a repair pass woken now. Its record wakes one too, so whichever of the two
    /// commits last wakes a pass that reads both.
    pub fn sync_edits_after(
        self: &Arc<Self>,
        ctx: &AnswererContext,
        req: &Request,
        posts: &[Post],
        only: Option<usize>,
    ) {
        self.sync_edits(ctx, req, posts, only);
        let unrecorded = posts.iter().any(|p| {
            p.answerer == NAME
                && p.message.is_none()
                && !p.is_note()
                && p.slot != Slot::Files
                && only.is_none_or(|i| i == p.idx)
        });
        if unrecorded {
            self.repair_now.notify_one();
        }
    }

    /// Shows the new vote count of question `idx` (still open) on its messages.
    pub fn show_votes(
        self: &Arc<Self>,
        ctx: &AnswererContext,
        req: &Request,
        idx: usize,
        posts: &[Post],
    ) {
        let (Some(q), Some(None)) = (req.questions.get(idx), req.answers.get(idx)) else {
            return;
        };
        let route = route::of_request(&self.config, req);
        let message = render::open(q, &View::of(req, &route.policy, idx));
        for post in posts
            .iter()
            .filter(|p| p.answerer == NAME && p.idx == idx && p.message.is_some())
            .filter(|p| !p.is_note())
        {
            self.spawn_edit(ctx, req, post, message.clone(), None);
        }
    }

    /// One repair pass: a poster for each pending request with a row not posted (unless one
    /// is at work on it, or its delivery is), and the edits messages are behind on. Returns
    /// the pending requests it found rows to post of (their timers may not be running here:
    /// another node stored them, or this one before a restart).
    pub async fn repair(self: &Arc<Self>, ctx: &AnswererContext) -> Vec<Request> {
        let mut unposted_requests = Vec::new();
        let due = match ctx.outbox_due().await {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "cannot read the outbox");
                return unposted_requests;
            }
        };
        let keys: std::collections::BTreeSet<i64> = due.iter().map(|d| d.request_key).collect();
        if !keys.is_empty() {
            tracing::info!(requests = keys.len(), "repairing the Slack outbox");
        }
        for key in keys {
            let Ok(Some((req, posts))) = ctx.with_posts(key).await else {
                continue;
            };
            let mine: Vec<Post> = posts.into_iter().filter(|p| p.answerer == NAME).collect();
            let unposted = req.status == crate::domain::Status::Pending
                && mine.iter().any(unposted)
                && !ctx.is_being_delivered(&req.request_id);
            if unposted {
                if let Some(claim) = self.busy.posting.claim(req.key) {
                    let route = route::of_request(&self.config, &req);
                    self.spawn_poster(ctx, claim, req.clone(), route, 0);
                }
            }
            self.sync_edits(ctx, &req, &mine, None);
            if unposted {
                unposted_requests.push(req);
            }
        }
        unposted_requests
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rows_client_msg_id_is_a_uuid_fixed_by_its_token_and_question() {
        let a = client_msg_id("0123456789abcdef0123", 0);
        assert_eq!(a, client_msg_id("0123456789abcdef0123", 0));
        assert_ne!(a, client_msg_id("0123456789abcdef0123", 1));
        assert_ne!(a, client_msg_id("0123456789abcdef0124", 0));
        let parts: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{a}");
        assert!(a.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
    }
}
