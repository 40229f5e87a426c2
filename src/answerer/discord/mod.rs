//! The Discord answerer: questions become messages with components; clicks, selections and
//! modal submissions become settlements through the core.
//!
//! It owns two serenity parts: an `Http` client for REST ([`rest`]) and a gateway client whose
//! raw event handler receives interactions ([`interactions`]). Every interaction goes through
//! one global handler that reads its state from the store by the request token in the
//! control's custom_id, so buttons keep working after a restart and never answer anything else.
//!
//! Each part owns its state: [`Outbox`] posts, edits and repairs messages (and knows what is
//! shown), [`Schedule`] runs reminders and escalation, [`Gateway`] says whether the session is
//! up, [`Commands`] serves `/askrelay` and [`Digest`] posts the digest. Discord's work follows
//! the cluster's lead through one gate: the outbox and the timers exist only inside a [`Lead`],
//! built when this daemon starts leading (alone: at start) and dropped when it steps down;
//! the answerer's entry points get it from the [`Gate`], or only describe the request (the
//! gate and the following of the lead are the chat layer's, [`crate::answerer::chat::term`]).
//!
//! The approval rules a click, a form or `/askrelay` is judged by (who may press, votes, the
//! confirm word, grants, edits, drafts, batches, listings) are the chat layer's
//! ([`crate::answerer::chat`]); `platform.rs` answers its questions from Discord's config, and
//! this answerer keeps only Discord's own parts: the gateway, REST, the custom_id codec,
//! rendering, the outbox and the schedule.

mod batch;
mod check;
mod commands;
mod connect;
pub mod custom_id;
mod digest;
mod gateway;
mod interactions;
/// The tests' model of Discord's markdown parser, shared with the integration tests.
#[cfg(test)]
pub(crate) use askrelay_testkit::discord_markdown as markdown_model;
mod outbox;
mod platform;
pub mod render;
mod rest;
pub mod route;
mod schedule;
mod shown;
mod threads;

use crate::answerer::chat::term::{self, Gate};
use crate::config::{Config, DEFAULT_API_BASE};
use crate::domain::cluster::Role;
use crate::domain::metrics::RestRecorder;
use crate::domain::request::{PlannedPost, Post, Request, Slot};
use crate::domain::text::Escaped;
use crate::domain::{Accepted, Answerer, AnswererContext, Claim, Delivery, Prepared, Proposal};
use anyhow::{Context, Result};
use async_trait::async_trait;
use commands::Commands;
use digest::Digest;
use gateway::Gateway;
use outbox::Outbox;
use rest::{Failure, Rest};
use route::ResolvedRoute;
use schedule::Schedule;
use serenity::all::GatewayIntents;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub use check::{check, token_shape};
pub use connect::{build_http, build_http_with};
pub use gateway::Causes as GatewayCauses;
pub use rest::classify;
use shown::placed;
pub use shown::NAME;

/// Discord's work for one term: built when this daemon starts doing it (alone: at start; in a
/// cluster: when it takes the lead) and dropped when it stops, with all that it holds in memory,
/// so that the next term starts from the store. The answerer reaches the outbox and the
/// timers only through the [`Gate`]: a daemon without a `Lead` describes and stores, and the
/// leader posts what it stored.
pub(crate) struct Lead {
    outbox: Arc<Outbox>,
    schedule: Arc<Schedule>,
}

impl Lead {
    /// One pass of the repair loop (and the start-up repair): the questions whose stored votes
    /// reached their quorum are settled; every request with outbox work
    /// due gets a poster or its edits again; one another cluster node stored and nobody posted
    /// gets its timers here, on the leader (a no-op for one already armed).
    async fn repair(&self, ctx: &AnswererContext) {
        ctx.sweep_reached_quorums().await;
        for key in self.outbox.due_keys(ctx).await {
            let Some(due) = self.outbox.due(ctx, key).await else {
                continue;
            };
            if due.unposted {
                self.schedule.arm(ctx, &due.req, &due.route).await;
            }
            self.outbox.repair(ctx, due);
        }
    }

    /// Runs [`Lead::repair`] every `discord.repair_interval_secs`, and at once when the outbox
    /// is woken (the gateway is back after a drop), until the term's shutdown.
    fn spawn_repair_loop(self: &Arc<Self>, ctx: &AnswererContext) {
        let me = self.clone();
        let task_ctx = ctx.clone();
        let every = std::time::Duration::from_secs(me.outbox.repair_interval_secs());
        ctx.spawn(async move {
            let ctx = task_ctx;
            loop {
                tokio::select! {
                    _ = ctx.shutdown().cancelled() => return,
                    _ = tokio::time::sleep(every) => {}
                    _ = me.outbox.repair_wanted() => {}
                }
                me.repair(&ctx).await;
            }
        });
    }
}

/// The Discord answerer: what lasts the daemon's run (the config, the REST client, the gateway's
/// state, the command) and the gate to the term's work.
#[derive(Clone)]
pub struct DiscordAnswerer {
    config: Arc<Config>,
    rest: Arc<Rest>,
    gateway: Arc<Gateway>,
    commands: Arc<Commands>,
    /// What posters and edits are at work on, across terms (see [`Outbox::busy`]).
    busy: Arc<outbox::Busy>,
    gate: Arc<Gate<Lead>>,
    /// The REST client the gateway client is built with too (`None`: serenity's own).
    rest_client: Option<reqwest::Client>,
}

impl DiscordAnswerer {
    pub fn new(
        config: Arc<Config>,
        rest_client: Option<reqwest::Client>,
        shutdown: CancellationToken,
        metrics: Arc<dyn RestRecorder>,
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
        let rest = Arc::new(rest);
        Ok(DiscordAnswerer {
            commands: Arc::new(Commands::new(config.clone(), rest.clone())),
            config,
            rest,
            gateway: Default::default(),
            busy: Default::default(),
            gate: Default::default(),
            rest_client,
        })
    }

    /// The route a request was posted through (see [`route::of_request`]).
    fn route_of(&self, req: &Request) -> ResolvedRoute {
        route::of_request(&self.config, req)
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
                slot: Slot::Main,
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
                    .map(|&u| schedule::dm_copy(token, idx, u, None)),
            );
        }
        planned
    }

    /// Takes a request left pending (by an earlier run, or by another node when this one took
    /// the lead) back into the outbox: posts what is not posted, edits what is behind, and
    /// starts its timers.
    async fn resume_request(
        &self,
        lead: &Lead,
        ctx: &AnswererContext,
        req: &Request,
        posts: &[Post],
    ) -> Accepted {
        let outbox = &lead.outbox;
        let route = self.route_of(req);
        let mut posts: Vec<Post> = posts
            .iter()
            .filter(|p| p.answerer == NAME)
            .cloned()
            .collect();
        if posts.iter().filter(|p| p.is_main()).count() < req.questions.len() {
            // A crash between storing and planning (an older version): plan the rest now.
            let missing: Vec<PlannedPost> = self
                .plan(&req.token, req.questions.len(), &route)
                .into_iter()
                .filter(|p| p.slot.is_main() && !posts.iter().any(|q| q.idx == p.idx))
                .collect();
            let _ = ctx.plan_posts(req, &missing).await;
            posts.extend(planned_posts(missing));
            // In the store's order: by question, then by the slot's text.
            posts.sort_by_cached_key(|p| (p.idx, p.slot.to_string()));
        }
        outbox.shown.insert(req.clone(), posts.clone());
        // A request being delivered (a takeover's scan that read one just stored on this
        // node) is its delivery's to post: its first tries do not read the outbox again.
        if posts.iter().any(|p| p.message.is_none()) && !ctx.is_being_delivered(&req.request_id) {
            tracing::info!(
                request_id = %Escaped(&req.request_id),
                "resuming the posting of a request"
            );
            if let Some(claim) = outbox.busy.posting.claim(req.key) {
                outbox.spawn_poster(ctx, claim, req.clone(), route.clone(), posts.clone(), 0);
            }
        }
        outbox.sync_edits(ctx, req, &posts);
        // Votes stored before a crash (or on a leader that went away) are not an edit state
        // the outbox records: show each open question's count again.
        for idx in crate::answerer::chat::vote::open_with_votes(req) {
            outbox.show_votes(ctx, req, idx, &posts);
        }
        lead.schedule.arm(ctx, req, &route).await;
        let links: Vec<String> = posts
            .iter()
            .filter(|p| p.is_main())
            .filter_map(placed)
            .map(|(c, m)| self.rest.link(c, m))
            .collect();
        self.detail(&route, links)
    }

    /// The `accepted` detail of a request a follower stored: the leader posts it.
    fn follower_detail(&self, route: &ResolvedRoute) -> Accepted {
        Accepted {
            posting: Some("the cluster's leader posts the questions".into()),
            ..self.detail(route, Vec::new())
        }
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

/// The scope `tool` of an agent's end of turn, as `askrelay hook` asks it.
pub const STOP_TOOL: &str = "Stop";

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
        // A route that lists its answerers without Discord is not Discord's, channel or not.
        if let Some(r) = crate::answerer::routing::matching(&self.config, proposal.scope)
            .filter(|r| r.answerers.is_some() && !r.answered_by(NAME))
        {
            return Claim::Decline(format!(
                "route {:?} does not name \"discord\" in its answerers",
                r.name
            ));
        }
        let Some(route) = route::resolve(&self.config, proposal.scope) else {
            return Claim::Decline(
                match crate::answerer::routing::matching(&self.config, proposal.scope) {
                    Some(r) => format!(
                        "route {:?} has no channel (the terminal answers it)",
                        r.name
                    ),
                    None => {
                        "no route matches the request's scope and discord.channel_id is not set"
                            .into()
                    }
                },
            );
        };
        // An agent's end of turn (`askrelay hook … ` on Stop) is posted only on a route that
        // opted in with stop_replies, and waits stop_wait_secs for a reply.
        let mut expiry = route.expiry.clone();
        match crate::answerer::routing::turn_end(&self.config, proposal.scope, &route.name) {
            Some(Ok(wait)) => expiry = Some(wait),
            Some(Err(why)) => return Claim::Decline(why),
            None => {}
        }
        // Bounded: a partition holds each call until its deadline, and the agent waits.
        let checked = tokio::time::timeout(
            outbox::DELIVER_BUDGET,
            self.rest
                .check_channel(route.channel_id, outbox::DELIVER_ATTEMPTS),
        )
        .await
        .unwrap_or_else(|_| {
            Err(Failure::Transient(format!(
                "Discord did not answer within {} s",
                outbox::DELIVER_BUDGET.as_secs()
            )))
        });
        match checked {
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
            posts: self.plan(proposal.token, proposal.questions.len(), &route),
            expiry,
            route: Some(route.name),
        }
    }

    async fn start(&self, ctx: AnswererContext) -> Result<()> {
        if *ctx.roles().borrow() == Role::Solo {
            return self.lead(&ctx, false).await;
        }
        // In a cluster, Discord's work follows the lead: it starts when this node takes the lead
        // (taking over every node's pending requests) and stops when it loses it.
        let (me, leader) = (self.clone(), self.clone());
        term::follow_lead(
            &ctx,
            "Discord",
            "Discord gateway session",
            move |ctx| {
                let me = me.clone();
                async move { me.lead(&ctx, true).await }
            },
            move || leader.gate.close(),
        );
        Ok(())
    }

    fn prepare(&self, req: &Request) -> Option<Prepared> {
        // Only a node that leads posts; a follower's delivery only describes.
        self.gate.lead()?;
        Some(Prepared::new(Outbox::render_ahead(
            req,
            &self.route_of(req),
        )))
    }

    async fn deliver(
        &self,
        ctx: &AnswererContext,
        req: &Request,
        prepared: Option<Prepared>,
    ) -> Delivery {
        let route = self.route_of(req);
        let Some(lead) = self.gate.lead() else {
            return Delivery::Shown(self.follower_detail(&route));
        };
        let outbox = &lead.outbox;
        let mut posts = planned_posts(self.plan(&req.token, req.questions.len(), &route));
        if req.granted() {
            // One line in the route's channel; no copies, reminders or escalation. A repair
            // pass posts it when Discord cannot take it now.
            posts.retain(Post::is_main);
            let Some(_claim) = outbox.busy.posting.claim(req.key) else {
                return Delivery::Shown(self.detail(&route, Vec::new()));
            };
            return match outbox
                .post_outbox(
                    ctx,
                    req,
                    &route,
                    &posts,
                    outbox::Tries::at_most(outbox::DELIVER_ATTEMPTS),
                    Vec::new(),
                )
                .await
            {
                Ok(links) => Delivery::Shown(self.detail(&route, links)),
                Err(f) => {
                    tracing::warn!(request_id = %crate::domain::text::Escaped(&req.request_id), error = %f.message(), "cannot announce a request answered by a grant");
                    Delivery::Shown(self.detail(&route, Vec::new()))
                }
            };
        }
        outbox.shown.insert(req.clone(), posts.clone());
        // Held from the first try through the background poster, so that a repair pass that
        // finds the request meanwhile does not post it a second time.
        let Some(claim) = outbox.busy.posting.claim(req.key) else {
            let detail = Accepted {
                posting: Some("the questions are being posted in the background".into()),
                ..self.detail(&route, Vec::new())
            };
            lead.schedule.arm(ctx, req, &route).await;
            return Delivery::Shown(detail);
        };
        // One try while Discord's state is unknown (the channel check failed), a few otherwise.
        let attempts = match self.rest.known_guild(route.channel_id) {
            Some(_) => outbox::DELIVER_ATTEMPTS,
            None => 1,
        };
        // The first tries run in a task of their own, which goes on into the background poster
        // when they fail; the agent waits for them at most DELIVER_BUDGET (a partition holds
        // each call until its deadline, and serenity's rate limiter holds a create until its
        // bucket resets). Past the budget the agent is told the questions are posted in the
        // background, and the tries already under way go on: they are not cut short and begun
        // again after a backoff.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let ahead = prepared
            .and_then(Prepared::take::<outbox::RenderedAhead>)
            .unwrap_or_default();
        let (task_outbox, task_ctx, task_req, task_route) =
            (outbox.clone(), ctx.clone(), req.clone(), route.clone());
        ctx.spawn(async move {
            let (outbox, ctx, req, route) = (task_outbox, task_ctx, task_req, task_route);
            let first = outbox
                .post_outbox(
                    &ctx,
                    &req,
                    &route,
                    &posts,
                    outbox::Tries::at_most(attempts),
                    ahead,
                )
                .await;
            let transient = matches!(first, Err(Failure::Transient(_)));
            let permanent = match &first {
                Err(Failure::Permanent(m)) => Some(m.clone()),
                _ => None,
            };
            let told = tx.send(first).is_ok();
            if transient {
                // The poster reads the outbox again itself, under the claim.
                outbox.spawn_poster(&ctx, claim, req, route, posts, attempts);
            } else if let Some(m) = permanent.filter(|_| !told) {
                // Refused for good after the agent was told it was accepted: the request ends.
                drop(claim);
                if ctx.is_pending(&req).await {
                    ctx.fail(&req, outbox::posting_failed(&route, &m)).await;
                }
            }
        });
        let detail = match tokio::time::timeout(outbox::DELIVER_BUDGET, rx).await {
            Ok(Ok(Ok(links))) => self.detail(&route, links),
            Ok(Ok(Err(Failure::Permanent(m)))) => {
                return Delivery::Failed(outbox::posting_failed(&route, &m));
            }
            Ok(Ok(Err(Failure::Transient(m)))) => Accepted {
                posting: Some(format!(
                    "Discord is unavailable ({m}); the questions are posted as soon as it is back"
                )),
                ..self.detail(&route, Vec::new())
            },
            // Still trying (or the daemon is stopping): the agent is not kept waiting.
            Ok(Err(_)) | Err(_) => Accepted {
                posting: Some(format!(
                    "Discord is unavailable (it has not answered within {} s); the questions \
                     are posted as soon as it is back",
                    outbox::DELIVER_BUDGET.as_secs()
                )),
                ..self.detail(&route, Vec::new())
            },
        };
        lead.schedule.arm(ctx, req, &route).await;
        Delivery::Shown(detail)
    }

    async fn resume(&self, ctx: &AnswererContext, req: &Request, posts: &[Post]) -> Accepted {
        let Some(lead) = self.gate.lead() else {
            return self.follower_detail(&self.route_of(req));
        };
        self.resume_request(&lead, ctx, req, posts).await
    }

    async fn settled(&self, ctx: &AnswererContext, req: &Request, idx: usize) {
        // A follower's change reaches the leader through the store (it is outbox work there).
        if let Some(lead) = self.gate.lead() {
            lead.outbox.shown.forget(&req.token);
            if req.answers.get(idx).is_some_and(Option::is_none) {
                // A vote from another surface: its messages show the new count.
                match ctx.outbox(req).await {
                    Ok(posts) => lead.outbox.show_votes(ctx, req, idx, &posts),
                    Err(e) => tracing::error!(error = %format!("{e:#}"), "cannot read the outbox"),
                }
                return;
            }
            lead.outbox.edit_to_state(ctx, req, Some(idx)).await;
        }
    }

    async fn ended(&self, ctx: &AnswererContext, req: &Request) {
        if let Some(lead) = self.gate.lead() {
            lead.outbox.shown.forget(&req.token);
            lead.outbox.edit_to_state(ctx, req, None).await;
        }
    }

    fn wake(&self) {
        if let Some(lead) = self.gate.lead() {
            lead.outbox.repair_now.notify_one();
        }
    }

    fn terminal_may_answer(&self, req: &Request) -> bool {
        self.route_of(req).terminal_answers
    }

    fn policy(&self, req: &Request) -> crate::domain::quorum::Policy {
        self.route_of(req).policy
    }

    fn connection(&self) -> Option<tokio::sync::watch::Receiver<bool>> {
        Some(self.gateway.subscribe())
    }

    fn routes(&self) -> Option<Vec<String>> {
        Some(route::names(&self.config))
    }
}

impl DiscordAnswerer {
    /// Starts Discord's work under `ctx` (whose shutdown ends it): opens the gate to a new
    /// [`Lead`], then starts the outbox repair, the timers, the digest and the gateway session.
    /// A new leader (`takeover`) first takes over the pending requests of every node.
    async fn lead(&self, ctx: &AnswererContext, takeover: bool) -> Result<()> {
        let outbox = Arc::new(Outbox::new(
            self.config.clone(),
            self.rest.clone(),
            self.busy.clone(),
        ));
        let schedule = Arc::new(Schedule::new(
            self.config.clone(),
            self.rest.clone(),
            outbox.clone(),
        ));
        let lead = Arc::new(Lead { outbox, schedule });
        self.gate.open(lead.clone());
        lead.schedule.load(ctx).await?;
        // The gateway first: a new leader takes clicks while it takes over (a click needs only
        // the store), so the time without a leader is not the takeover's too.
        let http = build_http_with(&self.config, self.rest_client.clone())?;
        let handler = interactions::Handler {
            config: self.config.clone(),
            rest: self.rest.clone(),
            outbox: lead.outbox.clone(),
            gateway: self.gateway.clone(),
            commands: self.commands.clone(),
            ctx: ctx.clone(),
            // Drafts saved before this term are not submitted (chat/drafts.rs): a save that
            // failed on the leader before, or before a restart, is not known here.
            kept: Arc::new(crate::answerer::chat::press::Kept::for_term(
                crate::domain::clock::now_ms(),
            )),
        };
        // Building the client asks Discord for the gateway's URL: one request under the
        // global limit like ours.
        self.rest.global_slot().await;
        let mut client = serenity::all::ClientBuilder::new_with_http(http, GatewayIntents::empty())
            .raw_event_handler(handler)
            .await
            .context("cannot build the Discord client")?;
        let shards = client.shard_manager.clone();
        let shutdown = ctx.shutdown().clone();
        ctx.spawn(gateway::watch(
            shards.runners.clone(),
            self.gateway.clone(),
            shutdown.clone(),
        ));
        let gateway = self.gateway.clone();
        ctx.spawn(async move {
            tracing::info!("connecting to the Discord gateway");
            tokio::select! {
                stopped = client.start() => {
                    if let Err(e) = stopped {
                        tracing::error!(error = %e, "the Discord gateway client stopped");
                    }
                }
                // A live session is closed (serenity waits for each shard's close); with none
                // (Discord unreachable, a try pending) there is nothing to wait for: serenity's
                // `start` would not return until the next try, so it is dropped.
                _ = shutdown.cancelled() => shards.shutdown_all().await,
            }
            gateway.closed();
        });
        if takeover {
            let pending = ctx.pending_everywhere().await?;
            tracing::info!(
                pending = pending.len(),
                "leading the cluster: taking over the outbox and the Discord gateway"
            );
            // Only the requests Discord shows: a request of a route that does not name it
            // (the terminal's, Slack's) is none of its business.
            for (req, posts) in pending.iter().filter(|(req, _)| req.shown_by(NAME)) {
                self.resume_request(&lead, ctx, req, posts).await;
                // A vote that reached its quorum on the leader that died before settling it.
                ctx.settle_reached_quorums(req).await;
            }
        }
        lead.repair(ctx).await;
        lead.spawn_repair_loop(ctx);
        if let Some(digest) = Digest::new(self.config.clone(), self.rest.clone()) {
            Arc::new(digest).spawn(ctx);
        }
        Ok(())
    }
}
