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
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The answerer name stored with requests and posts.
pub const NAME: &str = "discord";

/// How often a transient Discord failure (429, 5xx, a timeout) is retried before giving up.
const MAX_ATTEMPTS: u32 = 8;

pub struct DiscordAnswerer {
    config: Arc<Config>,
    http: Arc<Http>,
    hub: OnceLock<Hub>,
    /// The guild of each channel, for message links; learned by the channel check.
    guilds: Mutex<HashMap<u64, Option<u64>>>,
    tasks: TaskTracker,
    shutdown: CancellationToken,
}

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
    let token = config
        .discord
        .token
        .as_ref()
        .context("discord.token is not set")?;
    let mut builder = HttpBuilder::new(token.expose());
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
        tasks: TaskTracker,
        shutdown: CancellationToken,
    ) -> Arc<DiscordAnswerer> {
        Arc::new(DiscordAnswerer {
            config,
            http,
            hub: OnceLock::new(),
            guilds: Mutex::new(HashMap::new()),
            tasks,
            shutdown,
        })
    }

    fn hub(&self) -> Option<&Hub> {
        self.hub.get()
    }

    /// Connects to the gateway with the hub to settle through; returns once the client runs
    /// in the background. Shutdown closes the shards.
    pub async fn start_gateway(self: &Arc<Self>, hub: Hub) -> Result<()> {
        let _ = self.hub.set(hub);
        let http = build_http(&self.config)?;
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

    /// Runs `op` until it succeeds, fails for good, or has failed `MAX_ATTEMPTS` times;
    /// waits with exponential backoff and jitter in between.
    async fn retry<T, F, Fut>(&self, what: &str, mut op: F) -> Result<T, Failure>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = serenity::Result<T>>,
    {
        let mut delay = Duration::from_millis(250);
        let mut attempt = 1;
        loop {
            match op().await {
                Ok(v) => return Ok(v),
                Err(e) => match classify(&e) {
                    Failure::Transient(m) if attempt < MAX_ATTEMPTS => {
                        let jitter = Duration::from_millis(rand_ms(delay.as_millis() as u64 / 2));
                        tracing::warn!(attempt, error = %m, retry_in_ms = (delay + jitter).as_millis() as u64, "{what} failed; retrying");
                        tokio::select! {
                            _ = self.shutdown.cancelled() => return Err(Failure::Transient(m)),
                            _ = tokio::time::sleep(delay + jitter) => {}
                        }
                        delay = (delay * 2).min(Duration::from_secs(8));
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
        let channel = self
            .retry("checking the channel", || {
                self.http.get_channel(ChannelId::new(channel_id))
            })
            .await?;
        let guild = channel.guild().map(|g| g.guild_id.get());
        self.guilds.lock().unwrap().insert(channel_id, guild);
        Ok(guild)
    }

    fn link(guild: Option<u64>, channel: u64, message: u64) -> String {
        let g = guild.map_or("@me".to_owned(), |g| g.to_string());
        format!("https://discord.com/channels/{g}/{channel}/{message}")
    }

    /// Edits the message of question `index` in the background (never delays an ack).
    fn spawn_edit(
        self: &Arc<Self>,
        req: &StoredRequest,
        index: usize,
        edit: serenity::builder::EditMessage,
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
            let result = me
                .retry("editing the question message", || {
                    ChannelId::new(channel).edit_message(
                        &me.http,
                        MessageId::new(message),
                        edit.clone(),
                    )
                })
                .await;
            if let Err(f) = result {
                tracing::warn!(
                    request_id,
                    question = index,
                    error = f.message(),
                    "cannot edit the question message"
                );
            }
        });
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
        let guild = match self.check_channel(route.channel_id).await {
            Ok(g) => g,
            Err(f) => {
                return Offer::Decline(format!(
                    "channel {} (route {:?}) cannot be used: {}",
                    route.channel_id,
                    route.name,
                    f.message()
                ))
            }
        };
        let Some(hub) = self.hub() else {
            return Offer::Decline("the Discord client is not started yet".into());
        };
        let mut links = Vec::new();
        for (index, q) in req.questions.iter().enumerate() {
            let ctx = self.ctx(req, &route, index);
            let message = render::question_message(q, &ctx)
                .nonce(serenity::all::Nonce::String(format!(
                    "ar{}q{}",
                    req.key, index
                )))
                .enforce_nonce(true);
            let channel = ChannelId::new(route.channel_id);
            let posted = self
                .retry("posting a question", || {
                    channel.send_message(&self.http, message.clone())
                })
                .await;
            match posted {
                Ok(m) => {
                    if let Err(e) = hub
                        .store()
                        .record_post(
                            req.key,
                            index,
                            NAME,
                            &route.channel_id.to_string(),
                            &m.id.to_string(),
                        )
                        .await
                    {
                        tracing::error!(error = %format!("{e:#}"), "cannot record a posted message");
                    }
                    links.push(DiscordAnswerer::link(guild, route.channel_id, m.id.get()));
                }
                Err(f) => {
                    // Take down what was already posted for this request, then decline.
                    for i in 0..index {
                        let ctx = self.ctx(req, &route, i);
                        let edit = render::ended_edit(
                            &req.questions[i],
                            &ctx,
                            "Cancelled",
                            "askrelay could not post every question of this request",
                        );
                        self.spawn_edit(req, i, edit);
                    }
                    return Offer::Decline(format!(
                        "posting to channel {} (route {:?}) failed: {}",
                        route.channel_id,
                        route.name,
                        f.message()
                    ));
                }
            }
        }
        let mut detail = Map::new();
        detail.insert("route".into(), json!(route.name));
        detail.insert("channel_id".into(), json!(route.channel_id.to_string()));
        detail.insert("message_links".into(), json!(links));
        Offer::Accept(detail)
    }

    async fn question_settled(&self, req: &StoredRequest, index: usize, by: &AnsweredBy) {
        let Some(route) = self.route_of(req) else {
            return;
        };
        let Some(q) = req.questions.get(index) else {
            return;
        };
        let answer = crate::core::QuestionAnswer::build(q, &by.settlement);
        let who = if by.via == NAME {
            by.by.clone()
        } else {
            format!("{} via {}", by.by, by.via)
        };
        let view = AnsweredView {
            by: who,
            labels: answer.selected,
            custom: answer.custom,
            at_unix: by.at_ms / 1000,
        };
        let ctx = self.ctx(req, &route, index);
        self.spawn_edit(req, index, render::settled_edit(q, &ctx, &view));
    }

    async fn request_ended(&self, req: &StoredRequest, outcome: &Outcome) {
        let Outcome::Error(err) = outcome else { return };
        let Some(route) = self.route_of(req) else {
            return;
        };
        let status = if err.code == crate::core::ErrorCode::Expired {
            "Expired"
        } else {
            "Cancelled"
        };
        for (index, q) in req.questions.iter().enumerate() {
            if req.answers.get(index).is_some_and(Option::is_some) {
                continue;
            }
            let ctx = self.ctx(req, &route, index);
            self.spawn_edit(
                req,
                index,
                render::ended_edit(q, &ctx, status, &err.message),
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
