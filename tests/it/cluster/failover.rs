//! Failover inside Discord's patience (issue 42 item 2), at the default settings: a leader
//! frozen (SIGSTOP) or cut off from the database (its TCP proxy paused) is replaced, and a
//! question asked at that moment on another node is posted, within about 5 s; and a 1.5 s
//! hiccup (the leader frozen, its database link or the whole database stalled) causes no
//! failover. Every node reaches the database through a proxy of its own. `pooler.rs` runs the
//! same faults on three nodes behind PgBouncer ([`Three::behind`]).

use super::*;
use askrelay_testkit::pgbouncer::PgBouncer;
use askrelay_testkit::proxy::Proxy;

/// The bound: what a click can wait before Discord says it failed, about.
pub(super) const PATIENCE: Duration = Duration::from_secs(5);

/// What a debug build on a shared 2-core machine may add to it (the release figures are in
/// docs/cluster.md).
pub(super) const SLACK: Duration = Duration::from_millis(1500);

/// The hiccup that must not cause a failover.
const HICCUP: Duration = Duration::from_millis(1500);

/// The nodes' names; `NAMES[0]` leads first.
pub(super) const NAMES: [&str; 3] = ["a", "b", "c"];

/// Three nodes at the default settings, each behind its own proxy (two behind PgBouncer);
/// `NAMES[0]` leads.
pub(super) struct Three {
    pub(super) cluster: Cluster,
    pub(super) bins: Vec<Bin>,
    pub(super) served: Vec<Served>,
    /// Each node's link to the database (`database_url`): all of its connections; behind
    /// PgBouncer, its migrations at start-up and, while it leads, its notice listener.
    pub(super) proxies: Vec<Proxy>,
    /// Behind PgBouncer, each node's link to it (`postgres.pooler_url`): its pool, and with it
    /// its beats; empty otherwise.
    pub(super) pooled: Vec<Proxy>,
    /// The PgBouncer the nodes' pools go through, if any: stopped after the nodes.
    bouncer: Option<PgBouncer>,
}

impl Three {
    async fn start() -> Three {
        Three::start_with(None).await
    }

    /// As [`Three::start`], with each node's pool going through `bouncer` (in transaction
    /// mode), over a proxy of the node's own in front of it.
    pub(super) async fn behind(bouncer: PgBouncer) -> Three {
        Three::start_with(Some(bouncer)).await
    }

    async fn start_with(bouncer: Option<PgBouncer>) -> Three {
        let cluster = Cluster::new().await;
        let (mut bins, mut served, mut proxies, mut pooled) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (i, name) in NAMES.into_iter().enumerate() {
            let (proxy, url) = Proxy::for_postgres(&cluster.db.url).await.unwrap();
            let mut bin = cluster.node(name).env("ASKRELAY_DATABASE_URL", url);
            if let Some(bouncer) = &bouncer {
                let (proxy, url) = Proxy::for_postgres(&bouncer.url(&cluster.db))
                    .await
                    .unwrap();
                bin = bin.env("ASKRELAY_POSTGRES__POOLER_URL", url);
                pooled.push(proxy);
            }
            // To measure other settings (docs/cluster.md, "Choosing failover_secs").
            if let Ok(v) = std::env::var("ASKRELAY_TEST_FAILOVER_SECS") {
                bin = bin.env("ASKRELAY_CLUSTER__FAILOVER_SECS", v);
            }
            served.push(if i == 0 {
                cluster.lead(&bin).await
            } else {
                follower(&bin).await
            });
            bins.push(bin);
            proxies.push(proxy);
        }
        Three {
            cluster,
            bins,
            served,
            proxies,
            pooled,
            bouncer,
        }
    }

    /// The index of the node that holds the lease now.
    pub(super) async fn leader(&self) -> usize {
        let (holder, _) = lease_row(&self.cluster.db.url).await;
        NAMES.iter().position(|n| *n == holder).unwrap()
    }

    /// Every link of node `i`: to the database, and to PgBouncer if it goes through one.
    pub(super) fn links(&self, i: usize) -> impl Iterator<Item = &Proxy> {
        std::iter::once(&self.proxies[i]).chain(self.pooled.get(i))
    }

    pub(super) async fn stop(self) {
        for s in self.served {
            s.terminate().await;
        }
        for p in self.proxies.iter().chain(&self.pooled) {
            p.resume();
            p.cut();
        }
        drop(self.proxies);
        drop(self.pooled);
        // PgBouncer's server connections go before the database does.
        drop(self.bouncer);
        self.cluster.db.drop_now().await.unwrap();
    }
}

/// The database's clock now, in ms.
async fn db_now(url: &str) -> i64 {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let now: i64 = sqlx::query_scalar("SELECT askrelay_now_ms()")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let _ = conn.close().await;
    now
}

/// Waits until the lease was renewed after `since` (the database's ms): the hiccup is over
/// for the lead. The holder and epoch then. Polled every 50 ms: the lease is a row.
async fn renewed_after(url: &str, since: i64) -> (String, i64) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let row = within("a renewal of the lease after the hiccup", async {
        loop {
            let (holder, epoch, renewed): (String, i64, i64) =
                sqlx::query_as("SELECT holder, epoch, renewed_at FROM lease WHERE one = 1")
                    .fetch_one(&mut conn)
                    .await
                    .unwrap();
            if renewed > since {
                return (holder, epoch);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let _ = conn.close().await;
    row
}

#[tokio::test]
async fn a_hiccup_of_a_second_and_a_half_causes_no_failover() {
    let three = Three::start().await;
    let url = three.cluster.db.url.clone();
    let (holder, epoch) = lease_row(&url).await;
    assert_eq!(holder, "a");
    let sessions = three.cluster.standin.identify_count();
    for kind in [
        "the leader frozen",
        "the leader's database link",
        "the database",
    ] {
        match kind {
            "the leader frozen" => {
                three.served[0].signal("-STOP").await;
                tokio::time::sleep(HICCUP).await;
                three.served[0].signal("-CONT").await;
            }
            "the leader's database link" => {
                three.proxies[0].pause();
                tokio::time::sleep(HICCUP).await;
                three.proxies[0].resume();
            }
            _ => {
                three.proxies.iter().for_each(Proxy::pause);
                tokio::time::sleep(HICCUP).await;
                three.proxies.iter().for_each(Proxy::resume);
            }
        }
        let after = renewed_after(&url, db_now(&url).await).await;
        eprintln!("after a {HICCUP:?} hiccup of {kind}: the lease is {after:?}");
        assert_eq!(
            after,
            (holder.clone(), epoch),
            "a {HICCUP:?} hiccup of {kind} moved the lead"
        );
        assert_eq!(
            three.cluster.standin.identify_count(),
            sessions,
            "a new gateway session after a hiccup of {kind}"
        );
    }
    three.stop().await;
}

/// Asks on node `on` right away and waits for its question to be posted (the `n`th message);
/// how long that took from `from`.
pub(super) async fn posted_after(
    three: &Three,
    on: usize,
    id: &str,
    n: usize,
    from: Instant,
) -> Duration {
    let mut asker = three.bins[on].ask(&["--request-id", id], QUESTION).await;
    three.cluster.posted(n).await;
    let took = from.elapsed();
    asker.wait_stderr("waiting for an answer").await;
    drop(asker);
    took
}

#[tokio::test]
async fn a_frozen_or_cut_off_leader_is_replaced_and_a_question_posted_within_five_seconds() {
    let mut three = Three::start().await;
    let url = three.cluster.db.url.clone();

    // The leader freezes; a question asked on a follower at that moment is posted by the
    // next leader.
    let sessions = three.cluster.standin.identify_count();
    three.served[0].signal("-STOP").await;
    let frozen = Instant::now();
    let took = posted_after(&three, 1, "during-freeze", 1, frozen).await;
    within(
        "the new leader's session",
        three.cluster.standin.wait_identify_count(sessions + 1),
    )
    .await;
    eprintln!("freeze: a question asked at the freeze was posted after {took:?}");
    let freeze = took;
    three.served[0].signal("-CONT").await;
    three.served[0].wait_log("stepping down").await;

    // The new leader is cut off from the database: the same again.
    let cut = three.leader().await;
    assert_ne!(cut, 0);
    let other = if cut == 1 { 2 } else { 1 };
    three.proxies[cut].pause();
    let paused = Instant::now();
    let took = posted_after(&three, other, "during-partition", 2, paused).await;
    eprintln!("partition: a question asked at the cut was posted after {took:?}");
    let partition = took;
    three.served[cut]
        .wait_log("could not renew its lead in time")
        .await;
    three.proxies[cut].resume();
    let (holder, _) = lease_row(&url).await;
    assert_ne!(holder, NAMES[cut]);
    three.stop().await;
    for (fault, took) in [("freeze", freeze), ("partition", partition)] {
        assert!(
            took < PATIENCE + SLACK,
            "{fault}: posted {took:?} after it began"
        );
    }
}
