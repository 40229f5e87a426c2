//! The Discord answerer: questions become messages with components; clicks, selections and
//! modal submissions become settlements through the hub.
//!
//! It owns two serenity parts: an `Http` client for REST (posting and editing) and a gateway
//! client whose raw event handler receives interactions. Every interaction goes through one
//! global handler ([`interactions`]) that reads its state from the store, so buttons keep
//! working after a restart.

pub mod custom_id;
mod interactions;
pub mod render;
pub mod route;

use crate::config::{Config, DEFAULT_API_BASE};
use crate::core::{Answerer, Hub, Offer};
use crate::store::{AnsweredBy, Outcome, StoredRequest};
use anyhow::{Context, Result};
use async_trait::async_trait;
use render::{AnsweredView, RenderContext};
use route::ResolvedRoute;
use serde_json::{json, Map};
use serenity::all::{ChannelId, GatewayIntents, HttpBuilder, MessageId};
use serenity::http::{Http, HttpError};
use std::collections::HashMap;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The answerer name stored with requests and posts.
pub const NAME: &str = "discord";

pub struct DiscordAnswerer {
    config: Arc<Config>,
    http: Arc<Http>,
    hub: OnceLock<Hub>,
    /// The guild of each channel, for message links; learned by the channel check.
    guilds: Mutex<HashMap<u64, Option<u64>>>,
    tasks: TaskTracker,
    shutdown: CancellationToken,
    /// The REST client the gateway client is built with too (`None`: serenity's own).
    rest_client: Option<reqwest::Client>,
    /// One queue per channel: channel checks and message creates in a channel go one at a
    /// time. serenity's rate limiter lets every request through while it knows nothing of a
    /// bucket (and again right after a reset), so concurrent creates in one channel would run
    /// into 429s; one at a time, each response tells it the bucket before the next request.
    /// It also keeps questions in the order they were asked.
    lanes: Mutex<HashMap<u64, Arc<tokio::sync::Mutex<()>>>>,
    /// `Some` when serenity's rate limiter is on (no REST proxy), see [`GlobalPace`].
    pace: Option<GlobalPace>,
}

/// Discord allows a bot 50 REST requests a second over all routes, and serenity only reacts to
/// a global 429, it never paces. The answerer's own calls (channel checks, posts, edits) take a
/// slot here first, so that a burst over many channels stays under the global limit.
/// Interaction responses, which Discord exempts, do not.
struct GlobalPace {
    sent: tokio::sync::Mutex<VecDeque<tokio::time::Instant>>,
}

const GLOBAL_REQUESTS: usize = 50;
/// A little over Discord's second, for the skew between our clock and when Discord counts.
const GLOBAL_WINDOW: Duration = Duration::from_millis(1050);

/// A Discord failure, sorted by what to do about it.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Worth retrying: 429, 5xx, a network error.
    Transient(String),
    /// Retrying will not help: an unknown channel, a missing permission, a rejected body.
    Permanent(String),
}

impl Failure {
    fn message(&self) -> &str {
        match self {
            Failure::Transient(m) | Failure::Permanent(m) => m,
        }
    }
}

/// Sorts a serenity error. Messages name the status and Discord's code, never the token.
pub(crate) fn classify(e: &serenity::Error) -> Failure {
    match e {
        serenity::Error::Http(HttpError::UnsuccessfulRequest(r)) => {
            let status = r.status_code.as_u16();
            let what = format!(
                "Discord answered {} {} (code {}: {})",
                status,
                r.status_code.canonical_reason().unwrap_or(""),
                r.error.code,
                r.error.message
            );
            if status == 429 || status >= 500 {
                Failure::Transient(what)
            } else {
                Failure::Permanent(what)
            }
        }
        serenity::Error::Http(HttpError::Request(re)) => Failure::Transient(format!(
            "cannot reach Discord ({})",
            if re.is_timeout() {
                "timed out"
            } else if re.is_connect() {
                "connection failed"
            } else {
                "the request failed"
            }
        )),
        other => Failure::Permanent(format!("Discord request failed: {other}")),
    }
}

/// Builds the REST client. With a non-default `api_base` REST goes through that base with
/// serenity's rate limiter off (a REST proxy, or the test stand-in, handles rate limits).
pub fn build_http(config: &Config) -> Result<Http> {
    build_http_with(config, None)
}

/// [`build_http`] with REST going through `client` when given (see
/// [`crate::daemon::DaemonHooks`]).
pub fn build_http_with(config: &Config, client: Option<reqwest::Client>) -> Result<Http> {
    let token = config
        .discord
        .token
        .as_ref()
        .context("discord.token is not set")?;
    let mut builder = HttpBuilder::new(token.expose());
    if let Some(client) = client {
        builder = builder.client(client);
    }
    let base = config.discord.api_base.trim_end_matches('/');
    if base != DEFAULT_API_BASE {
        builder = builder.proxy(base).ratelimiter_disabled(true);
    }
    Ok(builder.build())
}

impl DiscordAnswerer {
    pub fn new(
        config: Arc<Config>,
        http: Arc<Http>,
        rest_client: Option<reqwest::Client>,
        tasks: TaskTracker,
        shutdown: CancellationToken,
    ) -> Arc<DiscordAnswerer> {
        let paced = config.discord.api_base.trim_end_matches('/') == DEFAULT_API_BASE;
        Arc::new(DiscordAnswerer {
            config,
            http,
            hub: OnceLock::new(),
            guilds: Mutex::new(HashMap::new()),
            tasks,
            shutdown,
            rest_client,
            lanes: Mutex::new(HashMap::new()),
            pace: paced.then(|| GlobalPace {
                sent: tokio::sync::Mutex::new(VecDeque::new()),
            }),
        })
    }

    /// The queue of `channel` (see `lanes`).
    fn lane(&self, channel: u64) -> Arc<tokio::sync::Mutex<()>> {
        self.lanes
            .lock()
            .unwrap()
            .entry(channel)
            .or_default()
            .clone()
    }

    /// Waits until serenity's bucket for creating messages in `channel` has room, so that the
    /// global slot taken next is used at once (serenity would otherwise wait inside the call,
    /// after the slot was counted, and send later than [`GlobalPace`] thinks).
    async fn wait_for_channel_bucket(&self, channel: u64) {
        let Some(limiter) = &self.http.ratelimiter else {
            return;
        };
        let key = serenity::http::Route::ChannelMessages {
            channel_id: ChannelId::new(channel),
        }
        .ratelimiting_bucket();
        let bucket = limiter.routes().read().await.get(&key).cloned();
        let Some(bucket) = bucket else { return };
        let wait = {
            let b = bucket.lock().await;
            match b.reset() {
                Some(reset) if b.remaining() == 0 => {
                    reset.duration_since(std::time::SystemTime::now()).ok()
                }
                _ => None,
            }
        };
        if let Some(d) = wait {
            self.pause(d).await;
        }
    }

    /// Waits for a slot under Discord's global limit (see [`GlobalPace`]); at once behind a
    /// REST proxy.
    async fn global_slot(&self) {
        let Some(pace) = &self.pace else { return };
        let mut sent = pace.sent.lock().await;
        loop {
            let now = tokio::time::Instant::now();
            while sent
                .front()
                .is_some_and(|t| now.duration_since(*t) >= GLOBAL_WINDOW)
            {
                sent.pop_front();
            }
            match sent.front() {
                Some(&oldest) if sent.len() >= GLOBAL_REQUESTS => {
                    tokio::time::sleep_until(oldest + GLOBAL_WINDOW).await;
                }
                _ => {
                    sent.push_back(now);
                    return;
                }
            }
        }
    }

    fn hub(&self) -> Option<&Hub> {
        self.hub.get()
    }

    /// Wires the answerer to the hub it settles through; before this it declines everything.
    pub fn attach(&self, hub: Hub) {
        let _ = self.hub.set(hub);
    }

    /// Connects to the gateway; returns once the client runs in the background. Shutdown
    /// closes the shards.
    pub async fn start_gateway(self: &Arc<Self>) -> Result<()> {
        self.repair_ended().await;
        let http = build_http_with(&self.config, self.rest_client.clone())?;
        let handler = interactions::Handler {
            answerer: self.clone(),
        };
        let mut client = serenity::all::ClientBuilder::new_with_http(http, GatewayIntents::empty())
            .raw_event_handler(handler)
            .await
            .context("cannot build the Discord client")?;
        let shards = client.shard_manager.clone();
        let shutdown = self.shutdown.clone();
        self.tasks.spawn(async move {
            shutdown.cancelled().await;
            shards.shutdown_all().await;
        });
        self.tasks.spawn(async move {
            tracing::info!("connecting to the Discord gateway");
            if let Err(e) = client.start().await {
                tracing::error!(error = %e, "the Discord gateway client stopped");
            }
        });
        Ok(())
    }

    fn route_of(&self, req: &StoredRequest) -> Option<ResolvedRoute> {
        let name = req
            .accepted
            .as_ref()
            .and_then(|a| a.get("route"))
            .and_then(|r| r.as_str());
        match name {
            Some(n) => route::by_name(&self.config, n),
            None => route::resolve(&self.config, &req.scope),
        }
    }

    fn ctx<'a>(
        &self,
        req: &'a StoredRequest,
        route: &'a ResolvedRoute,
        index: usize,
    ) -> RenderContext<'a> {
        RenderContext {
            request_key: req.key,
            request_id: &req.request_id,
            question_index: index,
            question_count: req.questions.len(),
            agent: req
                .caller
                .agent_id
                .as_deref()
                .or_else(|| req.scope.get("agent").map(String::as_str)),
            scope: &req.scope,
            mention_user_ids: &route.mention_user_ids,
            mention_role_ids: &route.mention_role_ids,
        }
    }

    /// The wait before retry number `attempt` (1-based): exponential from 250 ms up to
    /// `discord.retry_max_delay_ms`, plus up to 50% jitter so that retries do not march in step.
    fn backoff(&self, attempt: u32) -> Duration {
        let max = self.config.discord.retry_max_delay_ms.max(1);
        let base = 250u64
            .saturating_mul(1 << attempt.saturating_sub(1).min(16))
            .min(max);
        Duration::from_millis(base + rand_ms(base / 2 + 1))
    }

    /// Sleeps unless the daemon shuts down first; false on shutdown.
    async fn pause(&self, d: Duration) -> bool {
        tokio::select! {
            _ = self.shutdown.cancelled() => false,
            _ = tokio::time::sleep(d) => true,
        }
    }

    /// Runs `op` until it succeeds, fails for good, or has failed `attempts` times, with
    /// backoff in between.
    async fn retry<T, F, Fut>(&self, what: &str, attempts: u32, mut op: F) -> Result<T, Failure>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = serenity::Result<T>>,
    {
        let mut attempt = 1;
        loop {
            match op().await {
                Ok(v) => return Ok(v),
                Err(e) => match classify(&e) {
                    Failure::Transient(m) if attempt < attempts => {
                        let wait = self.backoff(attempt);
                        tracing::warn!(attempt, error = %m, retry_in_ms = wait.as_millis() as u64, "{what} failed; retrying");
                        if !self.pause(wait).await {
                            return Err(Failure::Transient(m));
                        }
                        attempt += 1;
                    }
                    f => return Err(f),
                },
            }
        }
    }

    /// Checks that the channel exists and the bot can see it, and learns its guild.
    async fn check_channel(&self, channel_id: u64) -> Result<Option<u64>, Failure> {
        if let Some(g) = self.guilds.lock().unwrap().get(&channel_id) {
            return Ok(*g);
        }
        // One check per channel at a time; the others wait for its answer.
        let lane = self.lane(channel_id);
        let _turn = lane.lock().await;
        if let Some(g) = self.guilds.lock().unwrap().get(&channel_id) {
            return Ok(*g);
        }
        let channel = self
            .retry("checking the channel", OFFER_ATTEMPTS, || async move {
                self.global_slot().await;
                self.http.get_channel(ChannelId::new(channel_id)).await
            })
            .await?;
        let guild = channel.guild().map(|g| g.guild_id.get());
        self.guilds.lock().unwrap().insert(channel_id, guild);
        Ok(guild)
    }

    fn link(&self, channel: u64, message: u64) -> String {
        let guild = self.guilds.lock().unwrap().get(&channel).copied().flatten();
        let g = guild.map_or("@me".to_owned(), |g| g.to_string());
        format!("https://discord.com/channels/{g}/{channel}/{message}")
    }

    /// Posts every question of the request that is not posted yet, in order, from the outbox.
    /// Each create carries the question's nonce with `enforce_nonce`, so a create repeated
    /// after a crash returns the message Discord already has instead of a second one.
    /// `attempts` bounds the tries per question (`None`: until it works, the request ends or
    /// the daemon stops). Returns the message links.
    async fn post_outbox(
        &self,
        req: &StoredRequest,
        route: &ResolvedRoute,
        attempts: Option<u32>,
    ) -> Result<Vec<String>, Failure> {
        let Some(hub) = self.hub() else {
            return Err(Failure::Transient(
                "the Discord client is not started yet".into(),
            ));
        };
        let posts = hub.store().posts(req.key, NAME).await.map_err(internal)?;
        let mut links = Vec::new();
        for post in posts {
            let channel: u64 = post.channel.parse().map_err(|_| {
                Failure::Permanent(format!("bad channel id {:?} in the outbox", post.channel))
            })?;
            if let Some(m) = post.message.as_deref().and_then(|m| m.parse().ok()) {
                links.push(self.link(channel, m));
                continue;
            }
            let Some(q) = req.questions.get(post.idx) else {
                continue;
            };
            let message = render::question_message(q, &self.ctx(req, route, post.idx))
                .nonce(serenity::all::Nonce::String(post.nonce.clone()))
                .enforce_nonce(true);
            let mut attempt = 1u32;
            loop {
                // A request cancelled while Discord was down is not posted afterwards.
                if !hub.is_pending(&req.request_id) {
                    return Err(Failure::Permanent("the request has ended".into()));
                }
                let sent = {
                    let lane = self.lane(channel);
                    let _turn = lane.lock().await;
                    self.wait_for_channel_bucket(channel).await;
                    self.global_slot().await;
                    ChannelId::new(channel)
                        .send_message(&self.http, message.clone())
                        .await
                };
                match sent {
                    Ok(m) => {
                        crate::crash::point("posted");
                        if let Err(e) = hub
                            .store()
                            .record_post(req.key, post.idx, NAME, &m.id.to_string())
                            .await
                        {
                            tracing::error!(error = %format!("{e:#}"), "cannot record a posted message");
                        }
                        links.push(self.link(channel, m.id.get()));
                        break;
                    }
                    Err(e) => {
                        let f = classify(&e);
                        let _ = hub
                            .store()
                            .record_post_failure(req.key, post.idx, NAME, f.message())
                            .await;
                        match f {
                            Failure::Transient(m) if attempts.is_none_or(|n| attempt < n) => {
                                let wait = self.backoff(attempt);
                                tracing::warn!(request_id = req.request_id, question = post.idx, attempt, error = %m, retry_in_ms = wait.as_millis() as u64, "posting a question failed; retrying");
                                if !self.pause(wait).await {
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

    /// Keeps posting in the background until every question is up; a permanent failure ends
    /// the request with `NO_ANSWERER` and the cause.
    fn spawn_poster(self: &Arc<Self>, req: StoredRequest, route: ResolvedRoute) {
        let me = self.clone();
        self.tasks.spawn(async move {
            match me.post_outbox(&req, &route, None).await {
                Ok(_) => tracing::info!(request_id = req.request_id, "every question is posted"),
                Err(Failure::Permanent(m)) => {
                    if let Some(hub) = me.hub() {
                        let err = crate::core::AskError::new(
                            crate::core::ErrorCode::NoAnswerer,
                            format!(
                                "posting to channel {} (route {:?}) failed: {m}",
                                route.channel_id, route.name
                            ),
                        );
                        hub.fail(req.key, err).await;
                    }
                }
                Err(Failure::Transient(_)) => {} // shutting down; resumed at the next start
            }
        });
    }

    /// Ends the request as `EXPIRED` when its route's `expire_after_secs` runs out, counted from
    /// when it was asked (so the deadline survives restarts).
    fn schedule_expiry(self: &Arc<Self>, req: &StoredRequest, route: &ResolvedRoute) {
        let Some(after) = route.expire_after else {
            return;
        };
        let deadline_ms = req.created_at_ms + after.as_millis() as i64;
        let wait = Duration::from_millis((deadline_ms - crate::store::now_ms()).max(0) as u64);
        let me = self.clone();
        let key = req.key;
        let message = format!(
            "nobody answered within {} s (route {:?}, expire_after_secs)",
            after.as_secs(),
            route.name
        );
        self.tasks.spawn(async move {
            if me.pause(wait).await {
                if let Some(hub) = me.hub() {
                    if hub.expire(key, message).await {
                        tracing::info!(request_key = key, "request expired");
                    }
                }
            }
        });
    }

    /// Edits the message of question `index` in the background (never delays an ack), and
    /// records the edit once Discord confirmed it.
    fn spawn_edit(
        self: &Arc<Self>,
        req: &StoredRequest,
        index: usize,
        edit: serenity::builder::EditMessage,
        kind: &'static str,
    ) {
        let me = self.clone();
        let key = req.key;
        let request_id = req.request_id.clone();
        self.tasks.spawn(async move {
            let Some(hub) = me.hub() else { return };
            let posts = match hub.store().posts(key, NAME).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(error = %format!("{e:#}"), "cannot read posts");
                    return;
                }
            };
            let Some(post) = posts.into_iter().find(|p| p.idx == index) else {
                return;
            };
            let (Ok(channel), Some(Ok(message))) = (
                post.channel.parse::<u64>(),
                post.message.as_deref().map(str::parse::<u64>),
            ) else {
                return;
            };
            let (me, edit) = (&me, &edit);
            let result = me
                .retry(
                    "editing the question message",
                    EDIT_ATTEMPTS,
                    || async move {
                        me.global_slot().await;
                        ChannelId::new(channel)
                            .edit_message(&me.http, MessageId::new(message), edit.clone())
                            .await
                    },
                )
                .await;
            match result {
                Ok(_) => {
                    if let Err(e) = hub.store().record_edit(key, index, NAME, kind).await {
                        tracing::error!(error = %format!("{e:#}"), "cannot record an edit");
                    }
                }
                Err(f) => tracing::warn!(
                    request_id,
                    question = index,
                    error = f.message(),
                    "cannot edit the question message; it is retried at the next start"
                ),
            }
        });
    }

    /// Edits every message of the request to its current state: settled questions show their
    /// answer; if the request ended otherwise, open questions show why.
    fn sync_edits(self: &Arc<Self>, req: &StoredRequest, posts: &[crate::store::Post]) {
        let Some(route) = self.route_of(req) else {
            return;
        };
        for post in posts.iter().filter(|p| p.message.is_some()) {
            let Some(q) = req.questions.get(post.idx) else {
                continue;
            };
            let ctx = self.ctx(req, &route, post.idx);
            match (req.answers.get(post.idx), &req.outcome) {
                (Some(Some(by)), _) if post.edited.is_none() => {
                    self.spawn_edit(
                        req,
                        post.idx,
                        render::settled_edit(q, &ctx, &answered_view(q, by)),
                        "settled",
                    );
                }
                (Some(None), Some(Outcome::Error(err)))
                    if post.edited.as_deref() != Some("ended") =>
                {
                    self.spawn_edit(
                        req,
                        post.idx,
                        render::ended_edit(q, &ctx, ended_status(err), &err.message),
                        "ended",
                    );
                }
                _ => {}
            }
        }
    }

    /// At start-up: finish the edits that a crash cut short on requests that have ended.
    async fn repair_ended(self: &Arc<Self>) {
        let Some(hub) = self.hub() else { return };
        let keys = match hub.store().ended_with_stale_posts(NAME).await {
            Ok(k) => k,
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "cannot look for unfinished edits");
                return;
            }
        };
        for key in keys {
            if let (Ok(Some(req)), Ok(posts)) = (
                hub.store().request_by_key(key).await,
                hub.store().posts(key, NAME).await,
            ) {
                self.sync_edits(&req, &posts);
            }
        }
    }
}

/// How many tries a question gets while the agent waits for `accepted`; after that, posting
/// goes on in the background and the request stays pending until it is posted.
const OFFER_ATTEMPTS: u32 = 3;
/// Edits are retried this often, then again at the next start.
const EDIT_ATTEMPTS: u32 = 8;

fn internal(e: anyhow::Error) -> Failure {
    Failure::Transient(format!("{e:#}"))
}

fn ended_status(err: &crate::core::AskError) -> &'static str {
    if err.code == crate::core::ErrorCode::Expired {
        "Expired"
    } else {
        "Cancelled"
    }
}

fn answered_view(q: &crate::core::Question, by: &AnsweredBy) -> AnsweredView {
    let answer = crate::core::QuestionAnswer::build(q, &by.settlement);
    AnsweredView {
        by: if by.via == NAME {
            by.by.clone()
        } else {
            format!("{} via {}", by.by, by.via)
        },
        labels: answer.selected,
        custom: answer.custom,
        at_unix: by.at_ms / 1000,
    }
}

/// A small random number below `max`, for jitter; no need for a crypto RNG here.
fn rand_ms(max: u64) -> u64 {
    if max == 0 {
        return 0;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    nanos % max
}

#[async_trait]
impl Answerer for Arc<DiscordAnswerer> {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn offer(&self, req: &StoredRequest) -> Offer {
        let Some(route) = route::resolve(&self.config, &req.scope) else {
            return Offer::Decline(
                "no route matches the request's scope and discord.channel_id is not set".into(),
            );
        };
        let Some(hub) = self.hub() else {
            return Offer::Decline("the Discord client is not started yet".into());
        };
        let mut verified = true;
        match self.check_channel(route.channel_id).await {
            Ok(_) => {}
            Err(Failure::Permanent(m)) => {
                return Offer::Decline(format!(
                    "channel {} (route {:?}) cannot be used: {m}",
                    route.channel_id, route.name
                ))
            }
            // Discord is having trouble: take the request and post when it is back.
            Err(Failure::Transient(m)) => {
                tracing::warn!(channel = route.channel_id, error = %m, "cannot check the channel now; accepting and posting when Discord is back");
                verified = false;
            }
        }
        for index in 0..req.questions.len() {
            let nonce = format!("ar{}q{}", req.key, index);
            if let Err(e) = hub
                .store()
                .plan_post(req.key, index, NAME, &route.channel_id.to_string(), &nonce)
                .await
            {
                return Offer::Decline(format!("cannot store the outbox: {e:#}"));
            }
        }
        let mut detail = Map::new();
        detail.insert("route".into(), json!(route.name));
        detail.insert("channel_id".into(), json!(route.channel_id.to_string()));
        let attempts = if verified {
            Some(OFFER_ATTEMPTS)
        } else {
            Some(1)
        };
        match self.post_outbox(req, &route, attempts).await {
            Ok(links) => {
                detail.insert("message_links".into(), json!(links));
            }
            Err(Failure::Permanent(m)) => {
                // Take down what was already posted for this request, then decline.
                if let Ok(posts) = hub.store().posts(req.key, NAME).await {
                    for p in posts.iter().filter(|p| p.message.is_some()) {
                        let ctx = self.ctx(req, &route, p.idx);
                        let edit = render::ended_edit(
                            &req.questions[p.idx],
                            &ctx,
                            "Cancelled",
                            "askrelay could not post every question of this request",
                        );
                        self.spawn_edit(req, p.idx, edit, "ended");
                    }
                }
                return Offer::Decline(format!(
                    "posting to channel {} (route {:?}) failed: {m}",
                    route.channel_id, route.name
                ));
            }
            Err(Failure::Transient(m)) => {
                detail.insert("posting".into(), json!(format!("Discord is unavailable ({m}); the questions are posted as soon as it is back")));
                self.spawn_poster(req.clone(), route.clone());
            }
        }
        if let Some(after) = route.expire_after {
            detail.insert("expires_in_secs".into(), json!(after.as_secs()));
        }
        self.schedule_expiry(req, &route);
        Offer::Accept(detail)
    }

    async fn resume(&self, req: &StoredRequest) {
        let Some(hub) = self.hub() else { return };
        let Some(route) = self.route_of(req) else {
            return;
        };
        let posts = hub.store().posts(req.key, NAME).await.unwrap_or_default();
        if posts.len() < req.questions.len() {
            // A crash between accepting and planning: plan the rest now.
            for index in posts.len()..req.questions.len() {
                let nonce = format!("ar{}q{}", req.key, index);
                let _ = hub
                    .store()
                    .plan_post(req.key, index, NAME, &route.channel_id.to_string(), &nonce)
                    .await;
            }
        }
        if posts.len() < req.questions.len() || posts.iter().any(|p| p.message.is_none()) {
            tracing::info!(
                request_id = req.request_id,
                "resuming the posting of a request"
            );
            self.spawn_poster(req.clone(), route.clone());
        }
        self.sync_edits(req, &posts);
        self.schedule_expiry(req, &route);
    }

    async fn question_settled(&self, req: &StoredRequest, index: usize, by: &AnsweredBy) {
        let Some(route) = self.route_of(req) else {
            return;
        };
        let Some(q) = req.questions.get(index) else {
            return;
        };
        let ctx = self.ctx(req, &route, index);
        self.spawn_edit(
            req,
            index,
            render::settled_edit(q, &ctx, &answered_view(q, by)),
            "settled",
        );
    }

    async fn request_ended(&self, req: &StoredRequest, outcome: &Outcome) {
        let Outcome::Error(err) = outcome else { return };
        let Some(route) = self.route_of(req) else {
            return;
        };
        for (index, q) in req.questions.iter().enumerate() {
            if req.answers.get(index).is_some_and(Option::is_some) {
                continue;
            }
            let ctx = self.ctx(req, &route, index);
            self.spawn_edit(
                req,
                index,
                render::ended_edit(q, &ctx, ended_status(err), &err.message),
                "ended",
            );
        }
    }
}

/// `askrelay check-config`: verifies the token and every configured channel; one line per
/// problem. Returns the problems found.
pub async fn check(config: &Config) -> Vec<String> {
    let mut problems = Vec::new();
    let http = match build_http(config) {
        Ok(h) => h,
        Err(e) => return vec![format!("{e:#}")],
    };
    match http.get_current_user().await {
        Ok(u) => println!("token ok: the bot is {} ({})", u.name, u.id),
        Err(e) => {
            problems.push(format!(
                "the token was rejected: {}",
                classify(&e).message()
            ));
            return problems;
        }
    }
    let mut channels: Vec<(String, u64)> = config
        .routes
        .iter()
        .map(|r| (format!("route {:?}", r.name), r.channel_id.0))
        .collect();
    if let Some(c) = config.discord.channel_id {
        channels.insert(0, ("discord.channel_id".into(), c.0));
    }
    if channels.is_empty() {
        problems.push("no channel is configured: set discord.channel_id or add [[routes]]".into());
    }
    for (what, id) in channels {
        match http.get_channel(ChannelId::new(id)).await {
            Ok(_) => println!("channel ok: {what} = {id}"),
            Err(e) => problems.push(format!(
                "{what} = {id} cannot be used: {}",
                classify(&e).message()
            )),
        }
    }
    problems
}
