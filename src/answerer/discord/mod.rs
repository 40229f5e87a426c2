//! The Discord answerer: questions become messages with components; clicks, selections and
//! modal submissions become settlements through the core.
//!
//! It owns two serenity parts: an `Http` client for REST ([`rest`]) and a gateway client whose
//! raw event handler receives interactions ([`interactions`]). Every interaction goes through
//! one global handler that reads its state from the store by the request token in the
//! control's custom_id, so buttons keep working after a restart and never answer anything else.
//! [`outbox`] posts, edits and repairs messages.

mod commands;
pub mod custom_id;
mod digest;
mod gateway;
mod interactions;
/// The tests' model of Discord's markdown parser, shared with the integration tests.
#[cfg(test)]
pub(crate) use askrelay_testkit::discord_markdown as markdown_model;
mod outbox;
pub mod render;
mod rest;
pub mod route;
mod schedule;

use crate::config::{Config, DEFAULT_API_BASE};
use crate::core::cluster::Role;
use crate::core::expiry::Deadlines;
use crate::core::request::{PlannedPost, Post, Request};
use crate::core::{
    Accepted, Answerer, AnswererContext, AskError, Claim, Delivery, ErrorCode, Proposal,
};
use anyhow::{Context, Result};
use async_trait::async_trait;
use render::RenderContext;
use rest::{Failure, Rest};
use route::ResolvedRoute;
use serenity::all::{ChannelId, GatewayIntents, HttpBuilder};
use serenity::http::Http;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub use rest::classify;

/// The answerer name stored with requests and posts.
pub const NAME: &str = "discord";

/// What the answerer's parts share: the config, the REST client, and what it shows.
pub(crate) struct Shared {
    config: Arc<Config>,
    rest: Rest,
    shown: Shown,
    busy: outbox::Busy,
    /// Wakes the repair loop (the gateway is back after a drop).
    repair_now: tokio::sync::Notify,
    /// When each pending request's next reminder or escalation step is due (stored in its
    /// timers; this is the index).
    schedule: Deadlines<schedule::Due>,
    /// The requests whose timers were loaded at start-up.
    armed: std::sync::Mutex<std::collections::HashSet<i64>>,
    /// Whether the gateway session is connected now (see [`gateway`]).
    gateway: Arc<gateway::Gateway>,
    /// Whether a first Ready was seen: it is logged and registers `/askrelay`; later ones are
    /// reconnects, summarised instead.
    connected_once: std::sync::atomic::AtomicBool,
    /// Whether this daemon does Discord's work now: always alone, and while it leads its
    /// cluster. A follower stores and shows nothing itself; the leader posts what it stored.
    leading: std::sync::atomic::AtomicBool,
}

/// The pending requests this answerer shows, with their outbox rows as they stand: what a
/// click needs, without reading the store. An entry is added when a request is shown (or
/// resumed, or read after a miss), follows its messages as they are recorded, and leaves as
/// soon as anything about the request's answers or status changes; the next click then reads
/// it again. The store stays the judge: first-wins is its conditional write, so an entry that
/// is behind can only let a late click reach that write and lose there.
#[derive(Default)]
pub(crate) struct Shown(std::sync::Mutex<std::collections::HashMap<String, ShownRequest>>);

/// A request as shown, with its outbox rows.
type ShownRequest = Arc<(Request, Vec<Post>)>;

impl Shown {
    pub fn get(&self, token: &str) -> Option<ShownRequest> {
        self.0.lock().unwrap().get(token).cloned()
    }

    pub fn insert(&self, req: Request, posts: Vec<Post>) {
        let token = req.token.clone();
        self.0.lock().unwrap().insert(token, Arc::new((req, posts)));
    }

    /// Records a message Discord confirmed.
    pub fn posted(
        &self,
        token: &str,
        post: &Post,
        message: &str,
        channel: &str,
        guild: Option<&str>,
    ) {
        let mut map = self.0.lock().unwrap();
        if let Some(entry) = map.get_mut(token) {
            let (req, posts) = &**entry;
            let mut posts = posts.clone();
            for p in posts
                .iter_mut()
                .filter(|p| p.idx == post.idx && p.slot == post.slot)
            {
                p.message = Some(message.to_owned());
                p.channel = channel.to_owned();
                if guild.is_some() {
                    p.guild = guild.map(str::to_owned);
                }
            }
            *entry = Arc::new((req.clone(), posts));
        }
    }

    pub fn forget(&self, token: &str) {
        let mut map = self.0.lock().unwrap();
        map.remove(token);
        if map.is_empty() && map.capacity() > 1024 {
            *map = Default::default();
        }
    }
}

pub struct DiscordAnswerer {
    shared: Arc<Shared>,
    /// The REST client the gateway client is built with too (`None`: serenity's own).
    rest_client: Option<reqwest::Client>,
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
        rest_client: Option<reqwest::Client>,
        shutdown: CancellationToken,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> Result<DiscordAnswerer> {
        let http = Arc::new(build_http_with(&config, rest_client.clone())?);
        let paced = config.discord.api_base.trim_end_matches('/') == DEFAULT_API_BASE;
        // The client serenity was given, or one like serenity's own (rustls).
        let client = match &rest_client {
            Some(c) => c.clone(),
            None => reqwest::Client::builder()
                .use_rustls_tls()
                .build()
                .context("cannot build the Discord REST client")?,
        };
        let rest = Rest::new(
            http,
            client,
            paced,
            config.discord.retry_max_delay_ms,
            std::time::Duration::from_millis(config.discord.request_timeout_ms),
            shutdown,
            metrics,
        );
        Ok(DiscordAnswerer {
            shared: Arc::new(Shared {
                config,
                rest,
                shown: Shown::default(),
                busy: Default::default(),
                repair_now: Default::default(),
                schedule: Default::default(),
                armed: Default::default(),
                gateway: Default::default(),
                connected_once: Default::default(),
                leading: Default::default(),
            }),
            rest_client,
        })
    }
}

impl Shared {
    /// The route a request was posted through (by the name stored with it), else the one its
    /// scope matches now.
    fn route_of(&self, req: &Request) -> ResolvedRoute {
        req.route
            .as_deref()
            .and_then(|n| route::by_name(&self.config, n))
            .or_else(|| route::resolve(&self.config, &req.scope))
            .unwrap_or_else(|| route::closed(&self.config))
    }

    fn render_ctx<'a>(
        &self,
        req: &'a Request,
        route: &'a ResolvedRoute,
        index: usize,
    ) -> RenderContext<'a> {
        RenderContext {
            token: &req.token,
            request_id: &req.request_id,
            question_index: index,
            question_count: req.questions.len(),
            agent: req.agent(),
            scope: &req.scope,
            mention_user_ids: &route.mention_user_ids,
            mention_role_ids: &route.mention_role_ids,
        }
    }

    /// The outbox rows of a request on `route`, as planned when it is stored: each question's
    /// message, and its DM copies.
    fn plan(&self, token: &str, count: usize, route: &ResolvedRoute) -> Vec<PlannedPost> {
        let guild = self
            .rest
            .known_guild(route.channel_id)
            .flatten()
            .map(|g| g.to_string());
        let mut planned: Vec<PlannedPost> = (0..count)
            .map(|idx| PlannedPost {
                idx,
                slot: Post::MAIN.to_owned(),
                channel: route.channel_id.to_string(),
                guild: guild.clone(),
                nonce: custom_id::nonce(token, idx),
            })
            .collect();
        for idx in 0..count {
            planned.extend(
                route
                    .dm_user_ids
                    .iter()
                    .map(|&u| schedule::dm_copy(token, idx, format!("dm:{u}"), u)),
            );
        }
        planned
    }

    /// Takes a request left pending (by an earlier run, or by another node when this one took
    /// the lead) back into the outbox: posts what is not posted, edits what is behind, and
    /// starts its timers.
    async fn resume_request(
        self: &Arc<Self>,
        ctx: &AnswererContext,
        req: &Request,
        posts: &[Post],
    ) -> Accepted {
        let shared = self;
        let route = shared.route_of(req);
        let mut posts: Vec<Post> = posts
            .iter()
            .filter(|p| p.answerer == NAME)
            .cloned()
            .collect();
        if posts.iter().filter(|p| p.is_main()).count() < req.questions.len() {
            // A crash between storing and planning (an older version): plan the rest now.
            let missing: Vec<PlannedPost> = shared
                .plan(&req.token, req.questions.len(), &route)
                .into_iter()
                .filter(|p| p.slot.is_empty() && !posts.iter().any(|q| q.idx == p.idx))
                .collect();
            let _ = ctx.plan_posts(req, &missing).await;
            posts.extend(planned_posts(missing));
            posts.sort_by(|a, b| (a.idx, &a.slot).cmp(&(b.idx, &b.slot)));
        }
        shared.shown.insert(req.clone(), posts.clone());
        if posts.iter().any(|p| p.message.is_none()) {
            tracing::info!(
                request_id = %crate::core::text::Escaped(&req.request_id),
                "resuming the posting of a request"
            );
            if let Some(claim) = shared.busy.posting.claim(req.key) {
                shared.spawn_poster(ctx, claim, req.clone(), route.clone(), posts.clone(), 0);
            }
        }
        shared.sync_edits(ctx, req, &posts);
        shared.arm(ctx, req, &route).await;
        let links: Vec<String> = posts
            .iter()
            .filter(|p| p.is_main())
            .filter_map(placed)
            .map(|(c, m)| shared.rest.link(c, m))
            .collect();
        shared.detail(&route, links)
    }

    /// The `accepted` detail of a request a follower stored: the leader posts it.
    fn follower_detail(&self, route: &ResolvedRoute) -> Accepted {
        Accepted {
            posting: Some("the cluster's leader posts the questions".into()),
            ..self.detail(route, Vec::new())
        }
    }

    /// Forgets what this daemon showed and scheduled (it stopped leading): the next leader
    /// works from the store.
    fn forget_all(&self) {
        self.shown.0.lock().unwrap().clear();
        self.armed.lock().unwrap().clear();
        self.schedule.clear();
    }

    /// The `accepted` detail of a request on `route` whose messages are `links`.
    fn detail(&self, route: &ResolvedRoute, links: Vec<String>) -> Accepted {
        Accepted {
            route: Some(route.name.clone()),
            channel_id: Some(route.channel_id.to_string()),
            message_links: Some(links),
            ..Accepted::default()
        }
    }
}

/// Where an outbox row's message is (channel, message), once it is posted.
fn placed(p: &Post) -> Option<(u64, u64)> {
    Some((p.channel.parse().ok()?, p.message.as_deref()?.parse().ok()?))
}

/// The outbox of a request just stored, without reading it back.
fn planned_posts(planned: Vec<PlannedPost>) -> Vec<Post> {
    planned
        .into_iter()
        .map(|p| Post::planned(p, NAME))
        .collect()
}

#[async_trait]
impl Answerer for DiscordAnswerer {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn claim(&self, proposal: &Proposal<'_>) -> Claim {
        let shared = &self.shared;
        let Some(route) = route::resolve(&shared.config, proposal.scope) else {
            return Claim::Decline(
                "no route matches the request's scope and discord.channel_id is not set".into(),
            );
        };
        match shared
            .rest
            .check_channel(route.channel_id, outbox::DELIVER_ATTEMPTS)
            .await
        {
            Ok(_) => {}
            Err(Failure::Permanent(m)) => {
                return Claim::Decline(format!(
                    "channel {} (route {:?}) cannot be used: {m}",
                    route.channel_id, route.name
                ))
            }
            // Discord is having trouble: take the request and post when it is back.
            Err(Failure::Transient(m)) => {
                tracing::warn!(channel = route.channel_id, error = %m, "cannot check the channel now; accepting and posting when Discord is back");
            }
        }
        Claim::Take {
            posts: shared.plan(proposal.token, proposal.questions.len(), &route),
            expiry: route.expiry,
            route: Some(route.name),
        }
    }

    async fn start(&self, ctx: AnswererContext) -> Result<()> {
        let mut roles = ctx.roles();
        if *roles.borrow() == Role::Solo {
            return self.lead(&ctx, false).await;
        }
        // In a cluster, Discord's work follows the lead: it starts when this node takes the
        // lead (taking over every node's pending requests) and stops when it loses it.
        let me = DiscordAnswerer {
            shared: self.shared.clone(),
            rest_client: self.rest_client.clone(),
        };
        let daemon_ctx = ctx.clone();
        ctx.spawn(async move {
            let ctx = daemon_ctx;
            let mut term: Option<CancellationToken> = None;
            loop {
                let leads = roles.borrow_and_update().leads();
                match (leads, &term) {
                    (true, None) => {
                        let t = ctx.shutdown().child_token();
                        if let Err(e) = me.lead(&ctx.for_term(t.clone()), true).await {
                            tracing::error!(error = %format!("{e:#}"), "cannot start Discord as the cluster's leader; trying again at the next change of role");
                            t.cancel();
                        }
                        term = Some(t);
                    }
                    (false, Some(t)) => {
                        tracing::info!("stepping down: closing the Discord gateway session");
                        me.shared.leading.store(false, Ordering::SeqCst);
                        t.cancel();
                        me.shared.forget_all();
                        term = None;
                    }
                    _ => {}
                }
                tokio::select! {
                    _ = ctx.shutdown().cancelled() => return,
                    r = roles.changed() => if r.is_err() { return },
                }
            }
        });
        Ok(())
    }

    async fn deliver(&self, ctx: &AnswererContext, req: &Request) -> Delivery {
        let shared = &self.shared;
        let route = shared.route_of(req);
        if !shared.leading.load(Ordering::SeqCst) {
            return Delivery::Shown(shared.follower_detail(&route));
        }
        let posts = planned_posts(shared.plan(&req.token, req.questions.len(), &route));
        shared.shown.insert(req.clone(), posts.clone());
        // Held from the first try through the background poster, so that a repair pass that
        // finds the request meanwhile does not post it a second time.
        let Some(claim) = shared.busy.posting.claim(req.key) else {
            let detail = Accepted {
                posting: Some("the questions are being posted in the background".into()),
                ..shared.detail(&route, Vec::new())
            };
            shared.arm(ctx, req, &route).await;
            return Delivery::Shown(detail);
        };
        // One try while Discord's state is unknown (the channel check failed), a few otherwise.
        let attempts = match shared.rest.known_guild(route.channel_id) {
            Some(_) => outbox::DELIVER_ATTEMPTS,
            None => 1,
        };
        let detail;
        match shared
            .post_outbox(ctx, req, &route, &posts, outbox::Tries::at_most(attempts))
            .await
        {
            Ok(links) => detail = shared.detail(&route, links),
            Err(Failure::Permanent(m)) => {
                return Delivery::Failed(AskError::new(
                    ErrorCode::NoAnswerer,
                    format!(
                        "posting to channel {} (route {:?}) failed: {m}",
                        route.channel_id, route.name
                    ),
                ));
            }
            Err(Failure::Transient(m)) => {
                detail = Accepted {
                    posting: Some(format!("Discord is unavailable ({m}); the questions are posted as soon as it is back")),
                    ..shared.detail(&route, Vec::new())
                };
                let posts = ctx.outbox(req).await.unwrap_or(posts);
                shared.spawn_poster(ctx, claim, req.clone(), route.clone(), posts, attempts);
            }
        }
        shared.arm(ctx, req, &route).await;
        Delivery::Shown(detail)
    }

    async fn resume(&self, ctx: &AnswererContext, req: &Request, posts: &[Post]) -> Accepted {
        if !self.shared.leading.load(Ordering::SeqCst) {
            return self.shared.follower_detail(&self.shared.route_of(req));
        }
        self.shared.resume_request(ctx, req, posts).await
    }

    async fn settled(&self, ctx: &AnswererContext, req: &Request, idx: usize) {
        self.shared.shown.forget(&req.token);
        // A follower's change reaches the leader through the store (it is outbox work there).
        if self.shared.leading.load(Ordering::SeqCst) {
            self.edit_to_state(ctx, req, Some(idx)).await;
        }
    }

    async fn ended(&self, ctx: &AnswererContext, req: &Request) {
        self.shared.shown.forget(&req.token);
        if self.shared.leading.load(Ordering::SeqCst) {
            self.edit_to_state(ctx, req, None).await;
        }
    }

    fn wake(&self) {
        if self.shared.leading.load(Ordering::SeqCst) {
            self.shared.repair_now.notify_one();
        }
    }

    fn terminal_may_answer(&self, req: &Request) -> bool {
        self.shared.route_of(req).terminal_answers
    }

    fn connection(&self) -> Option<tokio::sync::watch::Receiver<bool>> {
        Some(self.shared.gateway.subscribe())
    }
}

impl DiscordAnswerer {
    /// Starts Discord's work under `ctx` (whose shutdown ends it): the outbox repair, the
    /// timers, the digest and the gateway session. A new leader (`takeover`) first takes over
    /// the pending requests of every node.
    async fn lead(&self, ctx: &AnswererContext, takeover: bool) -> Result<()> {
        self.shared.leading.store(true, Ordering::SeqCst);
        self.shared.load_schedule(ctx).await?;
        if takeover {
            let pending = ctx.pending_everywhere().await?;
            tracing::info!(
                pending = pending.len(),
                "leading the cluster: taking over the outbox and the Discord gateway"
            );
            for (req, posts) in &pending {
                self.shared.resume_request(ctx, req, posts).await;
            }
        }
        self.shared.repair(ctx).await;
        self.shared.spawn_repair_loop(ctx);
        self.shared.spawn_digest(ctx);
        let http = build_http_with(&self.shared.config, self.rest_client.clone())?;
        let handler = interactions::Handler {
            shared: self.shared.clone(),
            ctx: ctx.clone(),
        };
        let mut client = serenity::all::ClientBuilder::new_with_http(http, GatewayIntents::empty())
            .raw_event_handler(handler)
            .await
            .context("cannot build the Discord client")?;
        let shards = client.shard_manager.clone();
        let shutdown = ctx.shutdown().clone();
        ctx.spawn(gateway::watch(
            shards.runners.clone(),
            self.shared.gateway.clone(),
            shutdown.clone(),
        ));
        let gateway = self.shared.gateway.clone();
        ctx.spawn(async move {
            shutdown.cancelled().await;
            shards.shutdown_all().await;
            gateway.closed();
        });
        ctx.spawn(async move {
            tracing::info!("connecting to the Discord gateway");
            if let Err(e) = client.start().await {
                tracing::error!(error = %e, "the Discord gateway client stopped");
            }
        });
        Ok(())
    }

    /// Edits the messages of `req` (question `only`, or all of them) to their final state.
    async fn edit_to_state(&self, ctx: &AnswererContext, req: &Request, only: Option<usize>) {
        let shared = &self.shared;
        let posts = match ctx.outbox(req).await {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "cannot read the outbox");
                return;
            }
        };
        let route = shared.route_of(req);
        for post in posts.iter().filter(|p| p.message.is_some() && !p.is_note()) {
            if only.is_some_and(|i| i != post.idx) {
                continue;
            }
            if let Some((outcome, state)) = shared.outcome_of(req, &route, post.idx) {
                if post.edited != state {
                    shared.spawn_edit(ctx, req, post, outcome, state);
                }
            }
        }
    }
}

/// `askrelay check-config`: checks the token's shape and that a channel is configured, then
/// verifies the token and every configured channel with Discord; one line per problem. Returns
/// the problems found. The token is never printed.
pub async fn check(config: &Config) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(token) = &config.discord.token {
        if let Err(why) = token_shape(token.expose()) {
            problems.push(format!(
                "discord.token does not look like a bot token: {why}"
            ));
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
    if config.discord.channel_id.is_none() {
        problems.push(if channels.is_empty() {
            "discord.channel_id is not set: no channel is configured (set discord.channel_id or add [[routes]])".to_owned()
        } else {
            "discord.channel_id is not set: requests that match no route get NO_ANSWERER".to_owned()
        });
    }
    let http = match build_http(config) {
        Ok(h) => h,
        Err(e) => {
            problems.push(format!("{e:#}"));
            return problems;
        }
    };
    let base = config.discord.api_base.trim_end_matches('/');
    match http.get_current_user().await {
        Ok(u) => println!("token ok: the bot is {} ({})", u.name, u.id),
        Err(e) => {
            problems.push(reach_problem(&e, base, "the token was rejected"));
            return problems;
        }
    }
    for (what, id) in channels {
        match http.get_channel(ChannelId::new(id)).await {
            Ok(_) => println!("channel ok: {what} = {id}"),
            Err(e) => problems.push(reach_problem(
                &e,
                base,
                &format!("{what} = {id} cannot be used"),
            )),
        }
    }
    problems
}

/// What a failed check says: Discord's refusal after `what`, or that Discord could not be
/// reached at all (a network error is not a rejected token).
fn reach_problem(e: &serenity::Error, base: &str, what: &str) -> String {
    use serenity::http::HttpError;
    match e {
        serenity::Error::Http(HttpError::UnsuccessfulRequest(_)) => {
            format!("{what}: {}", classify(e).message())
        }
        _ => {
            let m = classify(e).message().to_owned();
            match m.strip_prefix("cannot reach Discord ") {
                Some(detail) => format!("cannot reach Discord at {base} {detail}"),
                None => format!("cannot reach Discord at {base}: {m}"),
            }
        }
    }
}

/// A bot token is three dot-separated parts of URL-safe base64 (as the Bot page shows it,
/// without a "Bot " prefix); says what is wrong without showing the token.
fn token_shape(token: &str) -> Result<(), &'static str> {
    if token.starts_with("Bot ") || token.starts_with("Bearer ") {
        return Err("give the token alone, without \"Bot \"");
    }
    if token.trim() != token || token.chars().any(char::is_whitespace) {
        return Err("it contains spaces or line breaks");
    }
    if token.starts_with('"') || token.starts_with('\'') {
        return Err("it is quoted");
    }
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return Err("it should have three parts separated by dots");
    }
    let b64 = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '=')
    };
    if !parts.iter().all(|p| b64(p)) || parts[0].len() < 16 {
        return Err("its parts should be letters, digits, '-' and '_'");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::token_shape;

    #[test]
    fn token_shapes_say_what_is_wrong() {
        assert!(token_shape("MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.super-secret_part").is_ok());
        assert!(token_shape("Bot MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.x")
            .unwrap_err()
            .contains("without"));
        assert!(token_shape("MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.x\n")
            .unwrap_err()
            .contains("spaces"));
        assert!(token_shape("\"MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.x\"")
            .unwrap_err()
            .contains("quoted"));
        assert!(token_shape("test-bot-token")
            .unwrap_err()
            .contains("three parts"));
        assert!(token_shape("MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.a/b")
            .unwrap_err()
            .contains("letters"));
    }
}
