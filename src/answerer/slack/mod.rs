//! The Slack answerer (docs/slack.md): questions become Block Kit messages in a route's Slack
//! channel; presses and forms become settlements through the core, under the chat layer's
//! rules, and the first allowed answer on any surface settles the question.
//!
//! It stands on slack-morphism: the Web API over hyper and rustls (`connect.rs`, the calls
//! and their failures in `web.rs`), Socket Mode for interactions (`socket.rs`), or the HTTP
//! Events API with signed requests (`http.rs`). Each part owns
//! its state: [`Outbox`] posts, edits and repairs messages; [`socket::Connection`] says whether
//! the Socket Mode connection is up; the interaction handler (`interactions/`) reads what it
//! needs from the store by the request token in each control's action_id, so controls keep
//! working after a restart and never answer anything else. Rendering is `render/`, the routes
//! as Slack sees them `route.rs`, and what only Slack knows for the chat layer (allowlists by
//! user and user group, operators) `platform.rs`.
//!
//! Like Discord's, Slack's work follows the cluster's lead through one gate (the chat layer's
//! [`crate::answerer::chat::term`]): the outbox and the Socket Mode connection exist only
//! inside a [`Lead`], built when this daemon starts leading (alone: at start) and dropped when
//! it steps down. So does [`Schedule`], which runs the routes' reminders and escalation steps
//! (`schedule.rs`).

mod batch;
mod connect;
mod digest;
mod history;
mod http;
mod interactions;
mod outbox;
mod platform;
pub mod render;
pub mod route;
mod schedule;
mod socket;
mod web;

pub use outbox::{client_msg_id, client_msg_id_of};
pub use web::Failure;

use crate::answerer::chat::term::{self, Gate};
use crate::config::{Config, SlackMode};
use crate::domain::cluster::Role;
use crate::domain::request::{Post, Request};
use crate::domain::text::Escaped;
use crate::domain::{
    Accepted, Answerer, AnswererContext, AskError, Claim, Delivery, ErrorCode, Prepared, Proposal,
};
use anyhow::{Context as _, Result};
use async_trait::async_trait;
use outbox::{Busy, Outbox, DELIVER_ATTEMPTS};
use route::SlackRoute;
use schedule::Schedule;
use slack_morphism::socket_mode::clients_manager::SlackSocketModeClientsManager;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use web::Web;

/// The answerer's name, in `accepted.answerer`, the store and the audit log.
pub const NAME: &str = "slack";

/// Slack's work for one term (alone: the daemon's run; in a cluster: a lead).
struct Lead {
    outbox: Arc<Outbox>,
    schedule: Arc<Schedule>,
}

impl Lead {
    /// One pass of the repair loop (and the start-up repair, and a new leader's): the
    /// questions whose stored votes reached their quorum are settled (a vote committed after
    /// its caller gave up on the database, or on a leader that went away before settling it);
    /// then the outbox's, then the timers of the requests it found rows to post of (one
    /// another node stored, or this one before a restart; a no-op for one armed already).
    async fn repair(&self, ctx: &AnswererContext) {
        ctx.sweep_reached_quorums().await;
        for req in self.outbox.repair(ctx).await {
            self.schedule.arm(ctx, &req).await;
        }
    }

    /// Runs [`Lead::repair`] every `slack.repair_interval_secs`, and at once when the outbox
    /// is woken, until the term's shutdown.
    fn spawn_repair_loop(self: &Arc<Self>, ctx: &AnswererContext, every: std::time::Duration) {
        let me = self.clone();
        let task_ctx = ctx.clone();
        ctx.spawn(async move {
            let ctx = task_ctx;
            loop {
                tokio::select! {
                    _ = ctx.shutdown().cancelled() => return,
                    _ = tokio::time::sleep(every) => {}
                    _ = me.outbox.repair_now.notified() => {}
                }
                me.repair(&ctx).await;
            }
        });
    }
}

/// The Slack answerer: what lasts the daemon's run (the config, the Web API client, the
/// connection's state, user groups' members) and the gate to the term's work.
#[derive(Clone)]
pub struct SlackAnswerer {
    config: Arc<Config>,
    web: Arc<Web>,
    connection: Arc<socket::Connection>,
    groups: Arc<platform::Groups>,
    busy: Arc<Busy>,
    gate: Arc<Gate<Lead>>,
}

impl SlackAnswerer {
    /// The answerer for `config` (`slack.bot_token` set); no request is made yet.
    pub fn new(config: Arc<Config>, shutdown: CancellationToken) -> Result<SlackAnswerer> {
        let bot = config
            .slack
            .bot_token
            .as_ref()
            .context("slack.bot_token is not set")?;
        let client = connect::client(&config.slack)?;
        Ok(SlackAnswerer {
            web: Arc::new(Web::new(client, bot, shutdown)),
            config,
            connection: Default::default(),
            groups: Default::default(),
            busy: Default::default(),
            gate: Default::default(),
        })
    }

    fn route_of(&self, req: &Request) -> SlackRoute {
        route::of_request(&self.config, req)
    }

    /// The `accepted` detail of a request on `route` whose posts are `posts`: the route, its
    /// channel and a link to each question's message posted so far.
    fn detail(&self, route: &SlackRoute, posts: &[Post]) -> Accepted {
        let links = posts
            .iter()
            .filter(|p| p.answerer == NAME && p.is_main())
            .filter_map(|p| Some(link(&p.channel, p.message.as_deref()?)))
            .collect();
        Accepted {
            route: Some(route.name.clone()),
            channel_id: Some(route.channel.clone()),
            message_links: Some(links),
            ..Accepted::default()
        }
    }

    /// Takes a request left pending (by an earlier run, or another node) back into the
    /// outbox: posts what is not posted, edits what is behind, and runs its timers.
    async fn resume_request(
        &self,
        lead: &Lead,
        ctx: &AnswererContext,
        req: &Request,
        posts: &[Post],
    ) -> Accepted {
        let route = self.route_of(req);
        let mine: Vec<Post> = posts
            .iter()
            .filter(|p| p.answerer == NAME)
            .cloned()
            .collect();
        // A request being delivered (a takeover's scan that read one just stored on this
        // node) is its delivery's to post: its first tries do not read the outbox again.
        if mine.iter().any(outbox::unposted) && !ctx.is_being_delivered(&req.request_id) {
            tracing::info!(request_id = %Escaped(&req.request_id), "resuming the posting of a request in Slack");
            if let Some(claim) = lead.outbox.busy.posting.claim(req.key) {
                lead.outbox
                    .spawn_poster(ctx, claim, req.clone(), route.clone(), 0);
            }
        }
        lead.outbox.sync_edits(ctx, req, &mine, None);
        // Votes stored before a crash (or on a leader that went away) are not an edit state
        // the outbox records: show each open question's count again.
        for idx in crate::answerer::chat::vote::open_with_votes(req) {
            lead.outbox.show_votes(ctx, req, idx, &mine);
        }
        lead.schedule.arm(ctx, req).await;
        self.detail(&route, &mine)
    }

    /// Starts Slack's work under `ctx` (whose shutdown ends it): the outbox and its repair
    /// loop, and the Socket Mode connection. A new cluster leader (`takeover`) first takes
    /// over the pending requests of every node.
    async fn lead(&self, ctx: &AnswererContext, takeover: bool) -> Result<()> {
        let outbox = Arc::new(Outbox::new(
            self.config.clone(),
            self.web.clone(),
            self.busy.clone(),
        ));
        let schedule = Arc::new(Schedule::new(self.config.clone(), outbox.clone()));
        let lead = Arc::new(Lead {
            outbox: outbox.clone(),
            schedule,
        });
        self.gate.open(lead.clone());
        lead.schedule.load(ctx).await?;
        match self.web.identify().await {
            Ok((team, user)) => {
                tracing::info!(team = %team, bot_user = %user, "the Slack bot token is valid")
            }
            Err(Failure::Permanent(m)) => {
                tracing::error!(error = %m, "Slack refused slack.bot_token; questions cannot be posted until it is fixed")
            }
            Err(f) => tracing::warn!(
                error = f.message(),
                "cannot reach Slack now; posting when it is back"
            ),
        }
        let handler = Arc::new(interactions::Handler {
            config: self.config.clone(),
            web: self.web.clone(),
            outbox: outbox.clone(),
            groups: self.groups.clone(),
            ctx: ctx.clone(),
            // Drafts saved before this term are not submitted (chat/drafts.rs), as on Discord:
            // a save that failed before a restart or on another leader is not known here.
            kept: Arc::new(crate::answerer::chat::press::Kept::for_term(
                crate::domain::clock::now_ms(),
            )),
        });
        let s = &self.config.slack;
        match (s.mode, &s.app_token, &s.signing_secret) {
            (SlackMode::Socket, Some(app), _) => {
                let manager = socket::listen(
                    self.web.client().clone(),
                    app,
                    handler,
                    self.connection.clone(),
                )
                .await?;
                spawn_closer(ctx, manager, self.connection.clone());
            }
            (SlackMode::Http, _, Some(secret)) => {
                http::serve(s, secret, handler, ctx, ctx.shutdown().clone()).await?;
            }
            // The config refuses both (each mode names its secret).
            (SlackMode::Socket, None, _) => anyhow::bail!("slack.app_token is not set"),
            (SlackMode::Http, _, None) => anyhow::bail!("slack.signing_secret is not set"),
        }
        if takeover {
            let pending = ctx.pending_everywhere().await?;
            tracing::info!(
                pending = pending.len(),
                "leading the cluster: taking over the Slack outbox"
            );
            // Every request with a copy in Slack, whoever owns it.
            for (req, posts) in &pending {
                if posts.iter().any(|p| p.answerer == NAME) {
                    self.resume_request(&lead, ctx, req, posts).await;
                }
            }
        }
        lead.repair(ctx).await;
        lead.spawn_repair_loop(
            ctx,
            std::time::Duration::from_secs(self.config.slack.repair_interval_secs),
        );
        if let Some(digest) = digest::Digest::new(self.config.clone(), self.web.clone()) {
            Arc::new(digest).spawn(ctx);
        }
        Ok(())
    }
}

/// Closes the Socket Mode connection when `ctx` shuts down (the daemon's end, or the term's).
fn spawn_closer(
    ctx: &AnswererContext,
    manager: Arc<dyn SlackSocketModeClientsManager + Send + Sync>,
    connection: Arc<socket::Connection>,
) {
    let shutdown = ctx.shutdown().clone();
    ctx.spawn(async move {
        shutdown.cancelled().await;
        manager.shutdown().await;
        connection.closed();
    });
}

/// `askrelay check-config` for Slack: the bot token and every configured Slack channel
/// verified with Slack (`auth.test`, `conversations.info`); one line per problem, never a
/// token.
pub async fn check(config: &Config) -> Vec<String> {
    let Some(bot) = &config.slack.bot_token else {
        return Vec::new();
    };
    let web = match connect::client(&config.slack) {
        Ok(c) => Web::new(c, bot, CancellationToken::new()),
        Err(e) => return vec![format!("{e:#}")],
    };
    let base = config.slack.api_base.trim_end_matches('/');
    match web.identify().await {
        Ok((team, user)) => crate::outln!("slack: token ok: the bot is {user} in workspace {team}"),
        Err(f) => return vec![format!("slack.bot_token at {base}: {}", f.message())],
    }
    let mut problems = Vec::new();
    for r in route::all(config) {
        match web.channel(&r.channel).await {
            Ok(()) => crate::outln!("slack: channel ok: route {:?} = {}", r.name, r.channel),
            Err(f) => problems.push(format!(
                "slack: route {:?} channel {} cannot be used: {}",
                r.name,
                r.channel,
                f.message()
            )),
        }
    }
    problems
}

/// A link to the message `ts` in `channel` (Slack opens it in the workspace the reader is in).
pub(crate) fn link(channel: &str, ts: &str) -> String {
    format!(
        "https://slack.com/archives/{channel}/p{}",
        ts.replace('.', "")
    )
}

#[async_trait]
impl Answerer for SlackAnswerer {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn claim(&self, proposal: &Proposal<'_>) -> Claim {
        let route = match route::resolve(&self.config, proposal.scope) {
            Ok(r) => r,
            Err(why) => return Claim::Decline(why),
        };
        // An agent's end of turn is taken only on a route that opted in with stop_replies, and
        // waits stop_wait_secs for a reply (as on Discord).
        let mut expiry = route.expiry.clone();
        match crate::answerer::routing::turn_end(&self.config, proposal.scope, &route.name) {
            Some(Ok(wait)) => expiry = Some(wait),
            Some(Err(why)) => return Claim::Decline(why),
            None => {}
        }
        Claim::Take {
            posts: outbox::plan(
                proposal.token,
                proposal.questions.len(),
                &route,
                proposal.context,
            ),
            expiry,
            route: Some(route.name),
        }
    }

    async fn start(&self, ctx: AnswererContext) -> Result<()> {
        if *ctx.roles().borrow() == Role::Solo {
            return self.lead(&ctx, false).await;
        }
        // In a cluster, Slack's work follows the lead, as Discord's does.
        let (me, leader) = (self.clone(), self.clone());
        term::follow_lead(
            &ctx,
            "Slack",
            "Slack Socket Mode connection",
            move |ctx| {
                let me = me.clone();
                async move { me.lead(&ctx, true).await }
            },
            move || leader.gate.close(),
        );
        Ok(())
    }

    fn prepare(&self, _req: &Request) -> Option<Prepared> {
        None
    }

    async fn deliver(
        &self,
        ctx: &AnswererContext,
        req: &Request,
        _prepared: Option<Prepared>,
    ) -> Delivery {
        let route = self.route_of(req);
        let Some(lead) = self.gate.lead() else {
            return Delivery::Shown(Accepted {
                posting: Some("the cluster's leader posts the questions".into()),
                ..self.detail(&route, &[])
            });
        };
        // Answered by a grant as it was asked: posted all the same, as the grant's
        // announcement (grants are never silent; see Outbox::render).
        let posts: Vec<Post> = outbox::plan(
            &req.token,
            req.questions.len(),
            &route,
            req.context.as_deref(),
        )
        .into_iter()
        .map(|p| Post::planned(p, NAME))
        .collect();
        // Held from the first try through the background poster, so that a repair pass that
        // finds the request meanwhile does not post it a second time.
        let Some(claim) = lead.outbox.busy.posting.claim(req.key) else {
            lead.schedule.arm(ctx, req).await;
            return Delivery::Shown(Accepted {
                posting: Some("the questions are being posted in the background".into()),
                ..self.detail(&route, &[])
            });
        };
        // The first tries run in a task of their own, which goes on into the background poster
        // when they fail; the agent waits for them at most DELIVER_BUDGET (a partition holds
        // each call until its deadline).
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (outbox, task_ctx, task_req, task_route) =
            (lead.outbox.clone(), ctx.clone(), req.clone(), route.clone());
        ctx.spawn(async move {
            let (ctx, req, route) = (task_ctx, task_req, task_route);
            let first = outbox
                .post_all(&ctx, &req, &route, posts, Some(DELIVER_ATTEMPTS), 0)
                .await;
            let failed = match &first {
                Ok(posted) if posted.iter().any(outbox::unposted) => Some(0),
                Err(Failure::Transient { .. }) => Some(DELIVER_ATTEMPTS),
                _ => None,
            };
            let permanent = match &first {
                Err(Failure::Permanent(m)) => Some(m.clone()),
                _ => None,
            };
            let told = tx.send(first).is_ok();
            match (failed, permanent) {
                // The context's files, or the questions once Slack is back, in the background.
                (Some(failed), _) => outbox.spawn_poster(&ctx, claim, req, route, failed),
                // Refused for good after the agent was told it was accepted: the request ends.
                (None, Some(m)) if !told && ctx.is_pending(&req).await => {
                    let err = AskError::new(
                        ErrorCode::NoAnswerer,
                        format!(
                            "posting to Slack channel {} (route {:?}) failed: {m}",
                            route.channel, route.name
                        ),
                    );
                    ctx.fail(&req, err).await;
                }
                _ => {}
            }
        });
        let delivery = match tokio::time::timeout(outbox::DELIVER_BUDGET, rx).await {
            Ok(Ok(Ok(posted))) => Delivery::Shown(self.detail(&route, &posted)),
            Ok(Ok(Err(Failure::Permanent(m)))) if ctx.is_pending(req).await => {
                Delivery::Failed(AskError::new(
                    ErrorCode::NoAnswerer,
                    format!(
                        "posting to Slack channel {} (route {:?}) failed: {m}",
                        route.channel, route.name
                    ),
                ))
            }
            Ok(Ok(Err(Failure::Permanent(_)))) => Delivery::Shown(self.detail(&route, &[])),
            Ok(Ok(Err(f))) => Delivery::Shown(Accepted {
                posting: Some(format!(
                    "Slack is unavailable ({}); the questions are posted as soon as it is back",
                    f.message()
                )),
                ..self.detail(&route, &[])
            }),
            // Still trying (or the daemon is stopping): the agent is not kept waiting.
            Ok(Err(_)) | Err(_) => Delivery::Shown(Accepted {
                posting: Some(format!(
                    "Slack is unavailable (it has not answered within {} s); the questions are \
                     posted as soon as it is back",
                    outbox::DELIVER_BUDGET.as_secs()
                )),
                ..self.detail(&route, &[])
            }),
        };
        // The timers start once the first post is done or handed to the background (after
        // it, so that they never delay it); a request that failed has none.
        if !matches!(delivery, Delivery::Failed(_)) {
            lead.schedule.arm(ctx, req).await;
        }
        delivery
    }

    async fn resume(&self, ctx: &AnswererContext, req: &Request, posts: &[Post]) -> Accepted {
        match self.gate.lead() {
            Some(lead) => self.resume_request(&lead, ctx, req, posts).await,
            None => Accepted {
                posting: Some("the cluster's leader posts the questions".into()),
                ..self.detail(&self.route_of(req), &[])
            },
        }
    }

    async fn settled(&self, ctx: &AnswererContext, req: &Request, idx: usize) {
        let Some(lead) = self.gate.lead() else { return };
        let posts = match ctx.outbox(req).await {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "cannot read the Slack outbox");
                return;
            }
        };
        if req.answers.get(idx).is_some_and(Option::is_none) {
            // A vote from another surface: the message shows the new count.
            lead.outbox.show_votes(ctx, req, idx, &posts);
        } else {
            lead.outbox.sync_edits_after(ctx, req, &posts, Some(idx));
        }
    }

    async fn ended(&self, ctx: &AnswererContext, req: &Request) {
        let Some(lead) = self.gate.lead() else { return };
        match ctx.outbox(req).await {
            Ok(posts) => lead.outbox.sync_edits_after(ctx, req, &posts, None),
            Err(e) => tracing::error!(error = %format!("{e:#}"), "cannot read the Slack outbox"),
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

    /// The Socket Mode connection's state; the HTTP mode keeps no connection.
    fn connection(&self) -> Option<tokio::sync::watch::Receiver<bool>> {
        (self.config.slack.mode == SlackMode::Socket).then(|| self.connection.subscribe())
    }

    fn routes(&self) -> Option<Vec<String>> {
        Some(route::names(&self.config))
    }
}
