//! Tests: a request several answerers take. Every one shows its copy (its own outbox rows and
//! its own `prepare`), the first in the daemon's order owns it, and every copy hears how it
//! goes (`settled`, `ended`) and is resumed after a restart with its own rows. Two fake
//! answerers stand in for Discord and Slack, on a real SQLite file.

use crate::domain::answer::Settlement;
use crate::domain::answerer::{
    Accepted, Answerer, AnswererContext, Claim, Core, Delivery, Prepared, Proposal,
};
use crate::domain::approval::fixtures::question;
use crate::domain::hub::{Hub, HubSettings, Phase};
use crate::domain::model::{Ask, Question};
use crate::domain::quorum::Policy;
use crate::domain::request::{Actor, Peer, PlannedPost, Post, Request, Slot, Source, Status, Via};
use crate::domain::store::Store;
use async_trait::async_trait;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// What a fake answerer does with a new request.
#[derive(Clone, Copy)]
pub(super) enum Takes {
    /// It shows it, with this many outbox rows.
    Yes(usize),
    /// Only when nobody else does.
    IfNobody,
    No,
}

/// An answerer that records every call the hub makes to it.
pub(super) struct Fake {
    name: &'static str,
    takes: Takes,
    /// Its routes' quorum (1: first wins).
    approvals: u32,
    calls: Mutex<Vec<String>>,
    /// The hub, once started, for what `prepare` (which has no context) asks it.
    pub(super) hub: OnceLock<Hub>,
    /// Whether the request was being delivered (`Core::is_being_delivered`) at each call.
    delivering: Mutex<Vec<(&'static str, bool)>>,
    /// At each `settled`, the question and whether a vote on it was under way
    /// (`Hub::is_being_voted`).
    pub(super) voting: Mutex<Vec<(usize, bool)>>,
}

impl Fake {
    pub(super) fn new(name: &'static str, takes: Takes) -> Arc<Fake> {
        Fake::with_quorum(name, takes, 1)
    }

    /// One whose routes need `approvals` people to choose the same answer.
    pub(super) fn with_quorum(name: &'static str, takes: Takes, approvals: u32) -> Arc<Fake> {
        Arc::new(Fake {
            name,
            takes,
            approvals,
            calls: Mutex::new(Vec::new()),
            hub: OnceLock::new(),
            delivering: Mutex::new(Vec::new()),
            voting: Mutex::new(Vec::new()),
        })
    }

    pub(super) fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn record(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }

    fn shown(&self) -> Accepted {
        Accepted {
            route: Some(format!("{}-route", self.name)),
            message_links: Some(vec![format!("https://{}/1", self.name)]),
            ..Accepted::default()
        }
    }
}

#[async_trait]
impl Answerer for Fake {
    fn name(&self) -> &'static str {
        self.name
    }

    async fn claim(&self, proposal: &Proposal<'_>) -> Claim {
        let posts = |n: usize| {
            (0..n)
                .map(|i| PlannedPost {
                    idx: i % proposal.questions.len(),
                    slot: if i < proposal.questions.len() {
                        Slot::Main
                    } else {
                        format!("dm:{i}").parse().unwrap()
                    },
                    channel: format!("{}-channel", self.name),
                    guild: None,
                    nonce: format!("{}-{i}", self.name),
                })
                .collect()
        };
        match self.takes {
            Takes::Yes(n) => Claim::Take {
                route: Some(format!("{}-route", self.name)),
                posts: posts(n),
                expiry: None,
            },
            Takes::IfNobody => Claim::Fallback {
                route: None,
                posts: Vec::new(),
                expiry: None,
            },
            Takes::No => Claim::Decline("not mine".into()),
        }
    }

    fn prepare(&self, req: &Request) -> Option<Prepared> {
        if let Some(hub) = self.hub.get() {
            let delivering = Core::is_being_delivered(hub, &req.request_id);
            self.delivering
                .lock()
                .unwrap()
                .push(("prepare", delivering));
        }
        Some(Prepared::new(self.name))
    }

    async fn deliver(
        &self,
        ctx: &AnswererContext,
        req: &Request,
        prepared: Option<Prepared>,
    ) -> Delivery {
        let delivering = ctx.is_being_delivered(&req.request_id);
        self.delivering
            .lock()
            .unwrap()
            .push(("deliver", delivering));
        let mine = prepared.and_then(Prepared::take::<&'static str>);
        self.record(format!("deliver {}", mine.unwrap_or("nothing")));
        Delivery::Shown(self.shown())
    }

    async fn resume(&self, _ctx: &AnswererContext, _req: &Request, posts: &[Post]) -> Accepted {
        let owners: Vec<&str> = posts.iter().map(|p| p.answerer.as_str()).collect();
        self.record(format!("resume {}", owners.join(",")));
        self.shown()
    }

    async fn settled(&self, _ctx: &AnswererContext, req: &Request, idx: usize) {
        if let Some(hub) = self.hub.get() {
            let voting = hub.is_being_voted(req.key, idx);
            self.voting.lock().unwrap().push((idx, voting));
        }
        self.record(format!("settled {idx}"));
    }

    fn policy(&self, _req: &Request) -> Policy {
        Policy {
            approvals: self.approvals,
            ..Policy::default()
        }
    }

    async fn ended(&self, _ctx: &AnswererContext, req: &Request) {
        self.record(format!("ended {}", req.status.as_str()));
    }
}

fn settings() -> HubSettings {
    HubSettings {
        cancel_grace: Duration::from_secs(3600),
        restart_grace: Duration::from_secs(3600),
        max_pending_per_uid: 10,
        overdue_after: Duration::from_secs(60),
        expiry: Default::default(),
        host: "here".into(),
        recorder: Arc::new(crate::domain::metrics::Silent),
    }
}

pub(super) async fn store(dir: &tempfile::TempDir) -> Arc<dyn Store> {
    let url = format!("sqlite://{}", dir.path().join("askrelay.db").display());
    Arc::new(
        crate::store::sqlite::SqliteStore::open(&url, None)
            .await
            .unwrap(),
    )
}

/// A hub on `store` with `answerers`, in that order, started.
pub(super) async fn hub(
    store: &Arc<dyn Store>,
    answerers: &[&Arc<Fake>],
) -> (Hub, crate::domain::hub::Backlog, CancellationToken) {
    let list: Vec<Arc<dyn Answerer>> = answerers
        .iter()
        .map(|a| Arc::clone(a) as Arc<dyn Answerer>)
        .collect();
    let shutdown = CancellationToken::new();
    let (hub, backlog) = Hub::start(
        store.clone(),
        list,
        settings(),
        TaskTracker::new(),
        shutdown.clone(),
    )
    .await
    .unwrap();
    (hub, backlog, shutdown)
}

fn two_questions() -> Vec<Question> {
    let mut second = question(&["Yes", "No"]);
    second.id = "second".into();
    vec![question(&["Allow", "Deny"]), second]
}

/// Asks `id` and waits until every copy is shown: the `accepted` detail.
pub(super) async fn ask(hub: &Hub, id: &str) -> (crate::domain::hub::Attachment, Accepted, String) {
    let ask = Ask {
        request_id: Some(id.into()),
        caller: Default::default(),
        scope: Default::default(),
        questions: two_questions(),
        context: None,
        on_disconnect: Default::default(),
    };
    let mut att = hub
        .ask(
            ask,
            Peer {
                uid: Some(1000),
                pid: None,
            },
        )
        .await
        .unwrap();
    let phase = att
        .phase
        .wait_for(|p| matches!(p, Phase::Accepted { .. }))
        .await
        .unwrap()
        .clone();
    let Phase::Accepted { answerer, detail } = phase else {
        unreachable!()
    };
    (att, detail.get(), answerer)
}

pub(super) fn person(via: Via, id: &str) -> Actor {
    Actor {
        via,
        id: id.into(),
        name: id.into(),
        note: None,
    }
}

#[tokio::test]
async fn every_answerer_that_takes_a_request_shows_its_copy_and_hears_each_answer() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let discord = Fake::new("discord", Takes::Yes(3));
    let slack = Fake::new("slack", Takes::Yes(2));
    let other = Fake::new("mail", Takes::No);
    let (hub, _, _stop) = hub(&store, &[&discord, &slack, &other]).await;
    let (att, accepted, owner) = ask(&hub, "r1").await;
    // The first that took it, in the daemon's order, owns it; one accepted line for both.
    assert_eq!(owner, "discord");
    assert_eq!(accepted.route.as_deref(), Some("discord-route"));
    assert_eq!(
        accepted.message_links,
        Some(vec!["https://discord/1".into(), "https://slack/1".into()])
    );
    // Each delivery got what that answerer prepared.
    assert_eq!(discord.calls(), ["deliver discord"]);
    assert_eq!(slack.calls(), ["deliver slack"]);
    assert!(other.calls().is_empty());
    let (req, posts) = store
        .by_token(&store_token(&store, "r1").await)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(req.answerer.as_deref(), Some("discord"));
    assert_eq!(req.answerers, ["discord", "slack"]);
    let count = |name: &str| posts.iter().filter(|p| p.answerer == name).count();
    assert_eq!((count("discord"), count("slack")), (3, 2));
    assert!(posts
        .iter()
        .all(|p| p.channel == format!("{}-channel", p.answerer)));

    // A Discord click: Discord shows its own outcome, Slack is told.
    let first = hub
        .settle(&req, 0, Settlement::choice(1), person(Via::Discord, "42"))
        .await
        .unwrap();
    assert_eq!(slack.calls().last().unwrap(), "settled 0");
    assert_eq!(discord.calls(), ["deliver discord"]);
    // An answer at the terminal, which shows no copy here: both are told.
    hub.settle(
        &first.request,
        1,
        Settlement::choice(0),
        Actor::local(Some(1000), Some("alice".into()), None),
    )
    .await
    .unwrap();
    assert_eq!(discord.calls(), ["deliver discord", "settled 1"]);
    assert_eq!(slack.calls(), ["deliver slack", "settled 0", "settled 1"]);
    assert!(!hub.is_pending("r1"));
    let read = store.by_id("r1").await.unwrap().unwrap();
    assert_eq!(read.status, Status::Answered);
    drop(att);
}

/// The token of request `id`, as stored.
async fn store_token(store: &Arc<dyn Store>, id: &str) -> String {
    store.by_id(id).await.unwrap().unwrap().token
}

#[tokio::test]
async fn every_copy_is_resumed_with_its_own_rows_after_a_restart_and_hears_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let (discord, slack) = (
        Fake::new("discord", Takes::Yes(2)),
        Fake::new("slack", Takes::Yes(1)),
    );
    let (first, _, stop) = hub(&store, &[&discord, &slack]).await;
    let (att, _, _) = ask(&first, "r2").await;
    drop(att);
    stop.cancel();
    drop(first);

    // A new run: the pending request goes back to both, each with only its own rows.
    let (discord, slack) = (
        Fake::new("discord", Takes::Yes(2)),
        Fake::new("slack", Takes::Yes(1)),
    );
    let (hub, backlog, _stop) = hub(&store, &[&discord, &slack]).await;
    assert_eq!(backlog.len(), 1);
    hub.resume(backlog).await;
    assert_eq!(discord.calls(), ["resume discord,discord"]);
    assert_eq!(slack.calls(), ["resume slack"]);
    let phase = hub.observe("r2").unwrap().borrow().clone();
    let Phase::Accepted { answerer, detail } = phase else {
        panic!("{phase:?}")
    };
    assert_eq!(answerer, "discord");
    assert_eq!(
        detail.get().message_links.unwrap().len(),
        2,
        "both copies' links"
    );

    // Cancelled: every copy hears it.
    let req = store.by_id("r2").await.unwrap().unwrap();
    assert!(Core::cancel_as(&hub, &req, "not needed", Source::Daemon, "test".into()).await);
    assert_eq!(discord.calls().last().unwrap(), "ended cancelled");
    assert_eq!(slack.calls().last().unwrap(), "ended cancelled");
}

#[tokio::test]
async fn a_stand_in_shows_a_request_only_when_nobody_else_takes_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let declines = Fake::new("discord", Takes::No);
    let terminal = Fake::new("terminal", Takes::IfNobody);
    let (hub_a, _, _stop_a) = hub(&store, &[&declines, &terminal]).await;
    let (_att, _, owner) = ask(&hub_a, "alone").await;
    assert_eq!(owner, "terminal");
    let req = store.by_id("alone").await.unwrap().unwrap();
    assert_eq!(req.answerers, ["terminal"]);
    // With an answerer that takes it, the stand-in shows nothing and hears nothing.
    let takes = Fake::new("discord", Takes::Yes(2));
    let terminal = Fake::new("terminal", Takes::IfNobody);
    let (hub_b, _, _stop_b) = hub(&store, &[&takes, &terminal]).await;
    let (_att, _, owner) = ask(&hub_b, "taken").await;
    assert_eq!(owner, "discord");
    let req = store.by_id("taken").await.unwrap().unwrap();
    assert_eq!(req.answerers, ["discord"]);
    assert!(Core::cancel_as(&hub_b, &req, "done", Source::Daemon, "test".into()).await);
    assert!(terminal.calls().is_empty(), "{:?}", terminal.calls());
    assert_eq!(takes.calls(), ["deliver discord", "ended cancelled"]);
}

/// A request is its delivery's from before its COMMIT (the answerers prepare while the store
/// commits it) until `deliver` returned. A repair pass, or a new leader's takeover resuming the
/// pending requests, that reads its outbox rows meanwhile leaves them to the delivery, whose
/// first tries post from its own plan, not from the outbox: both would post it.
#[tokio::test]
async fn a_request_is_being_delivered_from_before_its_commit_until_its_delivery_returned() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let slack = Fake::new("slack", Takes::Yes(1));
    let (hub, _, _stop) = hub(&store, &[&slack]).await;
    assert!(slack.hub.set(hub.clone()).is_ok());
    assert!(!Core::is_being_delivered(&hub, "r1"));
    let (_att, _, owner) = ask(&hub, "r1").await;
    assert_eq!(owner, "slack");
    assert_eq!(
        *slack.delivering.lock().unwrap(),
        [("prepare", true), ("deliver", true)]
    );
    // Shown: a repair pass or a takeover posts what is still unposted.
    assert!(!Core::is_being_delivered(&hub, "r1"));
}
