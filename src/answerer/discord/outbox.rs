//! The Discord outbox: posting questions, editing them to their final state, repairing what a
//! crash or an outage cut short.
//!
//! Every message has an outbox row, written with its request before the first create, and a
//! nonce that Discord de-duplicates on: a create repeated after a crash returns the message
//! Discord already has. Edits are recorded once Discord confirmed them, so the edits still due
//! can be found and finished at the next start.
//!
//! [`Outbox`] owns what the posting needs in memory: what is shown ([`Shown`]), what is being
//! posted or edited ([`Busy`]), and the repair loop's wake-up. One is built per term of Discord
//! work (see [`super::Lead`]).

use super::render::{self, answered_view, ended_status, RenderContext};
use super::rest::{Failure, Rest, LEAD_ENDED};
use super::route::{self, ResolvedRoute};
use super::shown::{placed, Shown, NAME};
use super::threads::SessionThreads;
pub(super) use crate::answerer::chat::term::Busy;
use crate::answerer::chat::term::Claim;
use crate::config::Config;
use crate::domain::clock::now_ms;
use crate::domain::request::{EditState, Post, Request};
use crate::domain::text::Escaped;
use crate::domain::{AnswererContext, AskError, ErrorCode, Outcome};
use std::sync::Arc;
use std::time::Duration;

/// Posts, edits and repairs the messages of the requests this daemon shows.
pub(super) struct Outbox {
    config: Arc<Config>,
    rest: Arc<Rest>,
    /// The pending requests shown, for the clicks on them.
    pub shown: Shown,
    /// What posters and edits are at work on. It outlives the term: a poster of the last term
    /// may still be at work when the next begins.
    pub busy: Arc<Busy>,
    /// Wakes the repair loop (the gateway is back after a drop, new rows came from elsewhere).
    pub repair_now: tokio::sync::Notify,
    /// The agent sessions' threads (routes with `threads = "per_session"`).
    threads: SessionThreads,
}

/// The error of a request whose questions Discord refused for good (`NO_ANSWERER`, naming the
/// channel, the route and Discord's cause).
pub(super) fn posting_failed(route: &ResolvedRoute, cause: &str) -> AskError {
    AskError::new(
        ErrorCode::NoAnswerer,
        format!(
            "posting to channel {} (route {:?}) failed: {cause}",
            route.channel_id, route.name
        ),
    )
}

/// How many tries a question gets while the agent waits for `accepted`; after that, posting
/// goes on in the background and the request stays pending until it is posted.
pub(super) const DELIVER_ATTEMPTS: u32 = 3;
/// The longest an agent waits on Discord's channel check, and then on the first tries, before
/// its `accepted` (a partition holds each call until its deadline); posting goes on in the
/// background after it.
pub(super) const DELIVER_BUDGET: std::time::Duration = std::time::Duration::from_secs(5);
/// Which tries a posting run makes for each question.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tries {
    /// The number of the first try. A run that takes over from one that failed goes on
    /// counting, so that it waits before its first try and its backoff keeps growing, instead
    /// of meeting a 429 again at once.
    pub first: u32,
    /// The last try (`None`: until it works, the request ends or the daemon stops).
    pub last: Option<u32>,
}

impl Tries {
    /// A fresh run of at most `n` tries.
    pub fn at_most(n: u32) -> Tries {
        Tries {
            first: 1,
            last: Some(n),
        }
    }

    /// Until it works: after `failed` tries that failed already (0 for a fresh run).
    pub fn until_posted(failed: u32) -> Tries {
        Tries {
            first: failed + 1,
            last: None,
        }
    }
}

/// Edits are retried this often, then again at the next start.
const EDIT_ATTEMPTS: u32 = 8;

impl Outbox {
    pub fn new(config: Arc<Config>, rest: Arc<Rest>, busy: Arc<Busy>) -> Outbox {
        Outbox {
            config,
            rest,
            shown: Shown::default(),
            busy,
            repair_now: Default::default(),
            threads: SessionThreads::default(),
        }
    }

    /// The message of one outbox row: the question, a copy of it, or a note. `main` is where
    /// the question's own message is, once known.
    /// The request's context goes with its first question (and that question's copies) only;
    /// a repost after a crash renders it again from the stored context, so the same files go
    /// with the same nonce.
    fn render_post(
        &self,
        req: &Request,
        route: &ResolvedRoute,
        q: &crate::domain::Question,
        post: &Post,
        main: Option<(u64, u64)>,
    ) -> render::QuestionPost {
        let mut ctx = RenderContext::of(req, route, post.idx);
        if let Some(Some(a)) = req.answers.get(post.idx).filter(|_| req.granted()) {
            return render::grant_announcement(&ctx, a);
        }
        if post.is_main() {
            return render_main(req, &ctx, q);
        }
        let context = req.context.as_deref().filter(|_| post.idx == 0);
        (ctx.mention_user_ids, ctx.mention_role_ids) = render::copy_mentions(route, post);
        let link = main.map(|(c, m)| self.rest.link(c, m));
        let waited = Duration::from_secs(((now_ms() - req.created_at_ms).max(0) / 1000) as u64);
        let lead = render::copy_lead(post, waited, link, ctx.votes_missing());
        if post.is_note() {
            render::QuestionPost {
                message: render::note(&lead, &ctx, main),
                files: Vec::new(),
            }
        } else {
            render::copy_post(q, &ctx, &lead, context)
        }
    }

    /// The message of every question of a request about to be stored, as its first post
    /// sends it (no votes, no answers yet), by nonce: rendered while the store commits the
    /// request ([`Answerer::prepare`](crate::domain::Answerer::prepare)).
    pub(super) fn render_ahead(req: &Request, route: &ResolvedRoute) -> RenderedAhead {
        req.questions
            .iter()
            .enumerate()
            .map(|(idx, q)| {
                let ctx = RenderContext::of(req, route, idx);
                (
                    super::custom_id::nonce(&req.token, idx),
                    render_main(req, &ctx, q),
                )
            })
            .collect()
    }

    /// Posts every question of the request that is not posted yet, in order, making `tries`
    /// for each, with the messages in `ahead` where they were rendered already (by nonce).
    /// Returns the message links.
    pub(super) async fn post_outbox(
        &self,
        ctx: &AnswererContext,
        req: &Request,
        route: &ResolvedRoute,
        posts: &[Post],
        tries: Tries,
        mut ahead: RenderedAhead,
    ) -> Result<Vec<String>, Failure> {
        // A run that takes over from failed tries waits first, once (not before every question).
        if tries.first > 1
            && posts.iter().any(|p| p.message.is_none())
            && !self.rest.pause(self.rest.backoff(tries.first - 1)).await
        {
            return Err(Failure::Transient("the daemon is shutting down".into()));
        }
        let mut links = Vec::new();
        // The question's own messages go first: copies link to them and notes reply to them.
        let mut posted: Vec<Post> = posts.to_vec();
        let order: Vec<usize> = {
            let mut o: Vec<usize> = (0..posted.len()).collect();
            o.sort_by_key(|&i| (!posted[i].is_main(), posted[i].idx));
            o
        };
        for i in order {
            let post = posted[i].clone();
            // A request a grant answered is announced once, in the route's channel.
            if req.granted() && !post.is_main() {
                continue;
            }
            let dm = super::route::dm_user(&post.channel);
            if let Some(m) = post.message.as_deref().and_then(|m| m.parse().ok()) {
                if post.is_main() {
                    if let Ok(channel) = post.channel.parse() {
                        links.push(self.rest.link(channel, m));
                    }
                }
                continue;
            }
            if dm.is_none() && post.channel.parse::<u64>().is_err() {
                return Err(Failure::Permanent(format!(
                    "bad channel id {:?} in the outbox",
                    post.channel
                )));
            }
            let Some(q) = req.questions.get(post.idx) else {
                continue;
            };
            let main = posted
                .iter()
                .find(|p| p.idx == post.idx && p.is_main())
                .and_then(placed);
            let rendered = match ahead.iter().position(|(n, _)| *n == post.nonce) {
                Some(i) if post.is_main() => ahead.swap_remove(i).1,
                _ => self.render_post(req, route, q, &post, main),
            };
            let message = rendered
                .message
                .nonce(serenity::all::Nonce::String(post.nonce.clone()))
                .enforce_nonce(true);
            let files = rendered.files;
            let mut attempt = tries.first;
            // A session's thread found gone at the create is replaced once.
            let mut thread_replaced = false;
            loop {
                // A request cancelled while Discord was down is not posted afterwards; one a
                // grant answered is announced.
                if !req.granted() && !ctx.is_pending(req).await {
                    return Err(Failure::Permanent("the request has ended".into()));
                }
                // In a cluster the claim is fenced: a node that no longer leads posts nothing.
                if let Err(e) = ctx.claim_post(req.key, &post).await {
                    return Err(Failure::Transient(format!("{e:#}")));
                }
                // A DM is opened first; the guild is recorded with the message: clicks must
                // come from it.
                let channel = match dm {
                    Some(user) => self.rest.open_dm(user).await,
                    None => self.place(ctx, req, route, &post).await,
                };
                let thread = channel
                    .as_ref()
                    .ok()
                    .copied()
                    .filter(|c| dm.is_none() && c.to_string() != post.channel);
                let checked = match channel {
                    Ok(channel) => self
                        .rest
                        .check_channel(channel, 1)
                        .await
                        .map(|g| (channel, g)),
                    Err(f) => Err(f),
                };
                // A node whose lead ended since its claim (frozen, or slow in the channel's
                // turn) must not post: it would be a second copy of the new leader's.
                let live = || ctx.holds_term();
                let sent = match checked {
                    Ok((channel, guild)) if files.is_empty() => self
                        .rest
                        .send(channel, message.clone(), &live)
                        .await
                        .map(|m| (m, channel, guild)),
                    Ok((channel, guild)) => self
                        .rest
                        .send_with_files(channel, &message, &files, &live)
                        .await
                        .map(|m| (m, channel, guild)),
                    Err(f) => Err(f),
                };
                match sent {
                    Ok((m, channel, guild)) => {
                        crate::crash::point("posted");
                        let guild = guild.map(|g| g.to_string());
                        let message = m.id.to_string();
                        // A DM opened for it, or its session's thread.
                        let opened =
                            (channel.to_string() != post.channel).then(|| channel.to_string());
                        match ctx
                            .record_post(req, &post, &message, opened.as_deref(), guild.as_deref())
                            .await
                        {
                            Ok(()) => {
                                self.shown.posted(
                                    &req.token,
                                    &post,
                                    &message,
                                    &channel.to_string(),
                                    guild.as_deref(),
                                );
                                // An announcement is final as posted: no edit is due.
                                if req.granted() {
                                    if let Err(e) =
                                        ctx.record_edit(req.key, &post, EditState::Settled).await
                                    {
                                        tracing::error!(error = %format!("{e:#}"), "cannot record an announcement as final");
                                    }
                                }
                            }
                            Err(e) => {
                                tracing::error!(error = %format!("{e:#}"), "cannot record a posted message")
                            }
                        }
                        posted[i].message = Some(message);
                        posted[i].channel = channel.to_string();
                        if post.is_main() {
                            links.push(self.rest.link(channel, m.id.get()));
                        }
                        break;
                    }
                    Err(f) => {
                        if !ctx.holds_term() {
                            // Neither recorded nor retried: the new leader posts it.
                            return Err(Failure::Transient(LEAD_ENDED.into()));
                        }
                        let _ = ctx.record_post_failure(req, &post, f.message()).await;
                        match f {
                            Failure::Permanent(m) if thread.is_some() && !thread_replaced => {
                                // Deleted, or the bot lost access: the session gets a new one.
                                let t = thread.unwrap_or_default();
                                tracing::warn!(thread = t, error = %m, "cannot post in a session's thread; starting a new one");
                                self.threads.forget(t).await;
                                self.rest.forget_channel(t);
                                thread_replaced = true;
                            }
                            Failure::Transient(m) if tries.last.is_none_or(|n| attempt < n) => {
                                let wait = self.rest.backoff(attempt);
                                tracing::warn!(request_id = %Escaped(&req.request_id), question = post.idx, attempt, error = %m, retry_in_ms = wait.as_millis() as u64, "posting a question failed; retrying");
                                if !self.rest.pause(wait).await {
                                    return Err(Failure::Transient(m));
                                }
                                attempt += 1;
                            }
                            f => return Err(f),
                        }
                    }
                }
            }
        }
        Ok(links)
    }

    /// The channel `post` goes to: its session's thread (moving the post there first, in the
    /// store and in what is shown, so that a click that comes before the post is recorded is
    /// checked against the thread), else the channel it was planned for.
    async fn place(
        &self,
        ctx: &AnswererContext,
        req: &Request,
        route: &ResolvedRoute,
        post: &Post,
    ) -> Result<u64, Failure> {
        let planned = post.channel.parse().unwrap_or_default();
        let Some(thread) = self
            .threads
            .thread_for(ctx, &self.rest, req, route, post)
            .await?
        else {
            return Ok(planned);
        };
        let t = thread.to_string();
        ctx.place_post(req.key, post, &t)
            .await
            .map_err(|e| Failure::Transient(format!("{e:#}")))?;
        self.shown.placed_in(&req.token, post, &t);
        Ok(thread)
    }

    /// Keeps posting in the background until every question is up, after `failed` tries that
    /// failed already, under `claim`; a permanent failure ends the request with `NO_ANSWERER`
    /// and the cause.
    pub(super) fn spawn_poster(
        self: &Arc<Self>,
        ctx: &AnswererContext,
        claim: Claim<i64>,
        req: Request,
        route: ResolvedRoute,
        posts: Vec<Post>,
        failed: u32,
    ) {
        let me = self.clone();
        let task_ctx = ctx.clone();
        ctx.spawn(async move {
            let ctx = task_ctx;
            // Read again under the claim: a poster that held it before (the delivery, another
            // pass) recorded its posts before letting go, and what the caller read may predate
            // them. Posting from the older read would create a second copy.
            let posts = match ctx.outbox(&req).await {
                Ok(fresh) => posts
                    .into_iter()
                    .map(|p| {
                        fresh
                            .iter()
                            .find(|f| f.idx == p.idx && f.slot == p.slot)
                            .cloned()
                            .unwrap_or(p)
                    })
                    .collect(),
                Err(_) => posts,
            };
            let posted = me
                .post_outbox(
                    &ctx,
                    &req,
                    &route,
                    &posts,
                    Tries::until_posted(failed),
                    Vec::new(),
                )
                .await;
            drop(claim);
            match posted {
                Ok(_) => tracing::info!(
                    request_id = %Escaped(&req.request_id),
                    "every question is posted"
                ),
                Err(Failure::Permanent(m)) => {
                    ctx.fail(&req, posting_failed(&route, &m)).await;
                }
                Err(Failure::Transient(_)) => {} // shutting down; resumed at the next start
            }
        });
    }

    /// Edits the message of question `idx` in the background (never delays an ack), and
    /// records the edit once Discord confirmed it.
    pub(super) fn spawn_edit(
        self: &Arc<Self>,
        ctx: &AnswererContext,
        req: &Request,
        post: &Post,
        outcome: render::Outcome,
        state: Option<EditState>,
    ) {
        let (Ok(channel), Some(Ok(message))) = (
            post.channel.parse::<u64>(),
            post.message.as_deref().map(str::parse::<u64>),
        ) else {
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
        let (key, idx) = (req.key, post.idx);
        let edited_post = post.clone();
        let req = req.clone();
        let request_id = req.request_id.clone();
        ctx.spawn(async move {
            if let Err(e) = task_ctx.claim_post(key, &edited_post).await {
                tracing::warn!(request_id = %Escaped(&request_id), question = idx, error = %format!("{e:#}"), "not editing the question message");
                return;
            }
            // Planned from a read of the row that may be older than an edit to the same state
            // recorded since (two repair passes read it before the first edit was recorded):
            // that one is not made again. The claim is held until the record, so this read
            // sees it.
            if let Some(state) = state {
                let done = task_ctx.outbox(&req).await.is_ok_and(|rows| {
                    rows.iter().any(|p| {
                        p.idx == edited_post.idx && p.slot == edited_post.slot && p.edited == state
                    })
                });
                if done {
                    return;
                }
            }
            let live = || task_ctx.holds_term();
            let edited = me
                .rest
                .edit(channel, message, &outcome.edit(), EDIT_ATTEMPTS, &live)
                .await;
            match edited {
                Ok(()) => {
                    let Some(state) = state else { return };
                    if let Err(e) = task_ctx.record_edit(key, &edited_post, state).await {
                        record_edit_failed(&e);
                    }
                }
                Err(f) => tracing::warn!(
                    request_id = %Escaped(&request_id),
                    question = idx,
                    error = f.message(),
                    "cannot edit the question message; the repair loop tries again"
                ),
            }
            drop(claim);
        });
    }

    /// Shows the vote count of question `idx` (still open) on `posts`, its messages: edits in
    /// the background, not recorded (the settlement's edit, which is, follows the last vote).
    pub(super) fn show_votes(
        self: &Arc<Self>,
        ctx: &AnswererContext,
        req: &Request,
        idx: usize,
        posts: &[Post],
    ) {
        let (Some(q), None) = (
            req.questions.get(idx),
            req.answers.get(idx).cloned().flatten(),
        ) else {
            return;
        };
        let route = route::of_request(&self.config, req);
        let shown = render::open(q, &RenderContext::of(req, &route, idx));
        for post in posts
            .iter()
            .filter(|p| p.idx == idx && p.message.is_some() && !p.is_note())
        {
            self.spawn_edit(ctx, req, post, shown.clone(), None);
        }
    }

    /// The final rendering of question `idx` of `req` as it stands, if it has one: its answer,
    /// or why the request ended.
    pub(super) fn outcome_of(
        &self,
        req: &Request,
        route: &ResolvedRoute,
        post: &Post,
    ) -> Option<(render::Outcome, EditState)> {
        let idx = post.idx;
        if post.is_note() {
            // A reminder of a withdrawn request would still call people to a question nobody
            // needs answered; any other note stays as sent.
            return req
                .withdrawn
                .map(|reason| (render::withdrawn_note(reason), EditState::Ended));
        }
        let q = req.questions.get(idx)?;
        let ctx = RenderContext::of(req, route, idx);
        match (req.answers.get(idx), &req.outcome) {
            (Some(Some(a)), _) => Some((
                render::settled(q, &ctx, &answered_view(q, a)),
                EditState::Settled,
            )),
            (Some(None), Some(Outcome::Error(err))) => Some((
                match req.withdrawn {
                    Some(reason) => render::withdrawn(q, &ctx, reason, err),
                    None => render::ended(q, &ctx, ended_status(err), &err.message),
                },
                EditState::Ended,
            )),
            _ => None,
        }
    }

    /// Edits the messages of `req` (question `only`, or all of them) to their final state.
    pub(super) async fn edit_to_state(
        self: &Arc<Self>,
        ctx: &AnswererContext,
        req: &Request,
        only: Option<usize>,
    ) {
        let posts = match ctx.outbox(req).await {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "cannot read the outbox");
                return;
            }
        };
        if req.granted() {
            return;
        }
        let route = route::of_request(&self.config, req);
        for post in posts.iter().filter(|p| p.message.is_some()) {
            if only.is_some_and(|i| i != post.idx) {
                continue;
            }
            if let Some((outcome, state)) = self.outcome_of(req, &route, post) {
                if post.edited != state {
                    self.spawn_edit(ctx, req, post, outcome, Some(state));
                }
            }
        }
    }

    /// Edits every posted message of the request whose last confirmed edit is behind its
    /// state: settled questions show their answer; if the request ended otherwise, open
    /// questions show why.
    pub(super) fn sync_edits(
        self: &Arc<Self>,
        ctx: &AnswererContext,
        req: &Request,
        posts: &[Post],
    ) {
        let route = route::of_request(&self.config, req);
        for post in posts.iter().filter(|p| p.message.is_some()) {
            if let Some((outcome, state)) = self.outcome_of(req, &route, post) {
                if post.edited != state {
                    self.spawn_edit(ctx, req, post, outcome, Some(state));
                }
            }
        }
    }

    /// The requests with outbox work due (a question not posted, a message showing an older
    /// state than its question's), for a repair pass ([`Lead::repair`](super::Lead::repair)).
    pub(super) async fn due_keys(&self, ctx: &AnswererContext) -> std::collections::BTreeSet<i64> {
        let due = match ctx.outbox_due().await {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "cannot read the outbox");
                return Default::default();
            }
        };
        let keys: std::collections::BTreeSet<i64> = due.iter().map(|d| d.request_key).collect();
        if !keys.is_empty() {
            tracing::info!(
                requests = keys.len(),
                rows = due.len(),
                "repairing the outbox"
            );
        }
        keys
    }

    /// One request of a repair pass, as read now.
    pub(super) async fn due(&self, ctx: &AnswererContext, key: i64) -> Option<Due> {
        let Ok(Some((req, posts))) = ctx.with_posts(key).await else {
            return None;
        };
        let mine: Vec<Post> = posts.into_iter().filter(|p| p.answerer == NAME).collect();
        let route = route::of_request(&self.config, &req);
        // A request just stored here is posted by the delivery under way (which reports its
        // links to the agent), not by a repair pass that happened to run first.
        // A grant's announcement is posted even though its request is answered.
        let unposted = (req.status == crate::domain::Status::Pending
            && mine.iter().any(|p| p.message.is_none())
            || req.granted() && mine.iter().any(|p| p.is_main() && p.message.is_none()))
            && !ctx.is_being_delivered(&req.request_id);
        Some(Due {
            req,
            route,
            mine,
            unposted,
        })
    }

    /// How often the repair loop runs without being woken.
    pub(super) fn repair_interval_secs(&self) -> u64 {
        self.config.discord.repair_interval_secs
    }

    /// Until someone wakes the repair loop ([`Outbox::repair_now`]).
    pub(super) async fn repair_wanted(&self) {
        self.repair_now.notified().await
    }

    /// Repairs one request: a poster for what is not posted (unless one is at work on it), and
    /// the edits its messages are behind on.
    pub(super) fn repair(self: &Arc<Self>, ctx: &AnswererContext, due: Due) {
        if due.unposted {
            if let Some(claim) = self.busy.posting.claim(due.req.key) {
                self.spawn_poster(ctx, claim, due.req.clone(), due.route, due.mine.clone(), 0);
            }
        }
        self.sync_edits(ctx, &due.req, &due.mine);
    }
}

/// A request with outbox work due, found by a repair pass.
pub(super) struct Due {
    pub req: Request,
    pub route: ResolvedRoute,
    /// Its rows of this answerer.
    pub mine: Vec<Post>,
    /// Pending, with a question not posted, and not being delivered now.
    pub unposted: bool,
}

/// Says why an edit that went out was not recorded. A node whose lead just ended has its write
/// refused (the new leader's repair pass records the message's state again): a warning, since
/// that is the fencing at work; anything else is an error.
pub(super) fn record_edit_failed(e: &anyhow::Error) {
    if e.is::<crate::domain::cluster::Fenced>() {
        tracing::warn!(
            "an edit was sent but not recorded: this node's lead ended; the new leader checks it again"
        );
    } else {
        tracing::error!(error = %format!("{e:#}"), "cannot record an edit");
    }
}

/// Question messages rendered before their first post, by nonce ([`Outbox::render_ahead`]).
pub(super) type RenderedAhead = Vec<(String, render::QuestionPost)>;

/// The question's own message; the request's context goes with its first question only.
fn render_main(
    req: &Request,
    ctx: &RenderContext,
    q: &crate::domain::Question,
) -> render::QuestionPost {
    let context = req.context.as_deref().filter(|_| ctx.question_index == 0);
    render::question_post(q, ctx, context)
}
