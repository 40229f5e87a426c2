//! What only a shared database has: node leases, per-node visibility, races between daemons,
//! the lead, notices, the schema check and the password. The contract every backend keeps is
//! checked in `store/tests.rs`.
//!
//! Nothing here sleeps: a test waits for the event it expects, within a bounded time, and kills
//! a connection with `pg_terminate_backend(pid, timeout)`, which returns once the backend is
//! gone.

use super::PgStore;
use crate::config::PostgresConfig;
use crate::domain::answer::Settlement;
use crate::domain::cluster::{Beat, ClusterHandle, Fenced, LeaseTiming, Notice};
use crate::domain::error::AskError;
use crate::domain::request::{AuditEntry, PostKey, SettleOutcome, Slot, Status};
use crate::domain::store::{NewAnswer, Page, Store, Visibility};
use crate::store::tests::{ask, create, finish, holder, new_request, person, two_questions};
use askrelay_testkit::scratch::ScratchDb;
use sqlx::{Connection, PgConnection};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The longest a test waits for an event it expects.
const WAIT: Duration = Duration::from_secs(10);

async fn open(db: &ScratchDb) -> PgStore {
    PgStore::open(&db.url, &PostgresConfig::default())
        .await
        .unwrap()
}

/// A daemon's store on `db`, leased as `node`.
async fn node(db: &ScratchDb, node: &str) -> Arc<PgStore> {
    let store = open(db).await;
    store.acquire_lease(&holder(node, 100)).await.unwrap();
    Arc::new(store)
}

fn cluster(store: &PgStore) -> ClusterHandle {
    store
        .cluster()
        .expect("a leased PostgreSQL store has a cluster")
}

/// Terminates the backend of the connection named `application_name`, and waits until it is
/// gone (with it, whatever its session held).
async fn terminate(db: &ScratchDb, application_name: &str) {
    let mut conn = PgConnection::connect(&db.url).await.unwrap();
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity \
         WHERE application_name = $1 AND datname = current_database()",
    )
    .bind(application_name)
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        killed,
        [true],
        "one {application_name} connection, terminated"
    );
    conn.close().await.unwrap();
}

async fn next(rx: &mut mpsc::Receiver<Notice>) -> Notice {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("a notice in time")
        .expect("the notice stream is open")
}

#[tokio::test]
async fn a_second_daemon_with_the_same_node_id_is_refused() {
    let db = ScratchDb::create().await.unwrap();
    let first = open(&db).await;
    first.acquire_lease(&holder("a", 11)).await.unwrap();
    let second = open(&db).await;
    let err = second.acquire_lease(&holder("a", 22)).await.unwrap_err();
    let err = format!("{err:#}");
    assert!(
        err.contains("pid 11 on host host-a") && !err.contains('\n'),
        "one line naming the holder: {err}"
    );
    assert!(second.cluster().is_none(), "no cluster without a lease");
    let other = open(&db).await;
    other.acquire_lease(&holder("b", 33)).await.unwrap();
    let nodes = cluster(&other).nodes().await.unwrap();
    let names: Vec<(&str, u32)> = nodes.iter().map(|n| (n.node.as_str(), n.pid)).collect();
    assert_eq!(
        names,
        [("a", 11), ("b", 33)],
        "the refused daemon wrote nothing"
    );
    assert_eq!(nodes[0].version, env!("CARGO_PKG_VERSION"));
    // Once the holder is gone, the node id is free.
    first.close().await;
    second.acquire_lease(&holder("a", 22)).await.unwrap();
    assert_eq!(cluster(&second).node(), "a");
    second.close().await;
    other.close().await;
    db.drop_now().await.unwrap();
}

#[tokio::test]
async fn each_node_sees_its_own_requests_and_the_cluster_sees_all() {
    let db = ScratchDb::create().await.unwrap();
    let a = node(&db, "a").await;
    let b = node(&db, "b").await;
    let mine = create(&*a, &new_request("mine")).await;
    assert_eq!(mine.node.as_deref(), Some("a"), "stamped with its node");
    let theirs = create(&*b, &new_request("theirs")).await;
    assert_eq!(
        a.by_key(theirs.key).await.unwrap().unwrap().node.as_deref(),
        Some("b")
    );
    let keys = |reqs: Vec<crate::domain::request::Request>| -> Vec<i64> {
        reqs.into_iter().map(|r| r.key).collect()
    };
    let page = Page {
        limit: 10,
        after: None,
    };
    let pending: Vec<i64> = a
        .all_pending()
        .await
        .unwrap()
        .into_iter()
        .map(|(r, _)| r.key)
        .collect();
    assert_eq!(pending, [mine.key]);
    // The same uid on another node is someone else.
    assert_eq!(
        keys(a.pending(Visibility::Owner(1000), page).await.unwrap()),
        [mine.key]
    );
    assert_eq!(
        keys(a.history(Visibility::Owner(1000), page).await.unwrap()),
        [mine.key]
    );
    assert_eq!(
        keys(a.pending(Visibility::All, page).await.unwrap()),
        [mine.key, theirs.key]
    );
    let everywhere: Vec<i64> = cluster(&a)
        .all_pending_everywhere()
        .await
        .unwrap()
        .into_iter()
        .map(|(r, _)| r.key)
        .collect();
    assert_eq!(everywhere, [mine.key, theirs.key]);

    // Orphans: another node's pending requests, once that node is silent (or unknown).
    let ca = cluster(&a);
    let hour = Duration::from_secs(3600);
    assert!(
        ca.orphans(hour).await.unwrap().is_empty(),
        "b beat just now"
    );
    assert_eq!(
        keys(ca.orphans(Duration::ZERO).await.unwrap()),
        [theirs.key]
    );
    let ghost = create(&*b, &new_request("ghost")).await;
    sqlx::query("UPDATE requests SET node = 'ghost' WHERE key = $1")
        .bind(ghost.key)
        .execute(a.raw_pool())
        .await
        .unwrap();
    assert_eq!(keys(ca.orphans(hour).await.unwrap()), [ghost.key]);

    // Ended among: only those that ended.
    let err = AskError::aborted("gone");
    assert!(b
        .end(theirs.key, Status::Cancelled, &err, None, &ask())
        .await
        .unwrap());
    let ended = ca.ended_among(&[mine.key, theirs.key]).await.unwrap();
    assert_eq!(keys(ended.clone()), [theirs.key]);
    assert_eq!(ended[0].status, Status::Cancelled);
    assert!(ca.ended_among(&[]).await.unwrap().is_empty());
    a.close().await;
    b.close().await;
    db.drop_now().await.unwrap();
}

#[tokio::test]
async fn racing_daemons_settle_a_question_once() {
    let db = ScratchDb::create().await.unwrap();
    let stores = [node(&db, "a").await, node(&db, "b").await];
    for round in 0..8 {
        let req = create(&*stores[0], &new_request(&format!("race{round}"))).await;
        let mut racers = Vec::new();
        for i in 0..16usize {
            let store = stores[i % 2].clone();
            racers.push(tokio::spawn(async move {
                let name = format!("p{i}");
                let outcome = store
                    .settle(NewAnswer {
                        key: req.key,
                        idx: 0,
                        settlement: &Settlement::choice(i % 2),
                        actor: &person(&name),
                        at_ms: 10,
                        audit: &AuditEntry::default(),
                        result_if_last: None,
                        finish: &finish,
                        grant: None,
                    })
                    .await
                    .unwrap();
                (name, outcome)
            }));
        }
        let mut winners = Vec::new();
        let mut seen = Vec::new();
        for racer in racers {
            let (name, outcome) = racer.await.unwrap();
            match outcome {
                SettleOutcome::Won { result } => {
                    assert!(result.is_some(), "the only question completes it");
                    winners.push(name);
                }
                SettleOutcome::AlreadyAnswered(a) => seen.push(a.actor.name),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(winners.len(), 1, "exactly one winner: {winners:?}");
        assert!(
            seen.iter().all(|n| *n == winners[0]),
            "losers see the winner"
        );
        let stored = stores[1].by_key(req.key).await.unwrap().unwrap();
        assert_eq!(stored.status, Status::Answered);
        assert_eq!(stored.answers[0].as_ref().unwrap().actor.name, winners[0]);
    }
    // The last two open questions of one request, answered at once by two daemons: one of
    // them completes the request.
    for round in 0..8 {
        let req = create(&*stores[0], &two_questions(&format!("pair{round}"))).await;
        let racers: Vec<_> = (0..2usize)
            .map(|idx| {
                let store = stores[idx].clone();
                tokio::spawn(async move {
                    store
                        .settle(NewAnswer {
                            key: req.key,
                            idx,
                            settlement: &Settlement::choice(idx),
                            actor: &person("p"),
                            at_ms: 10,
                            audit: &AuditEntry::default(),
                            result_if_last: None,
                            finish: &finish,
                            grant: None,
                        })
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut completed = 0;
        for racer in racers {
            match racer.await.unwrap() {
                SettleOutcome::Won { result: Some(r) } => {
                    assert_eq!(r, finish(&[Settlement::choice(0), Settlement::choice(1)]));
                    completed += 1;
                }
                SettleOutcome::Won { result: None } => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(completed, 1);
        let stored = stores[0].by_key(req.key).await.unwrap().unwrap();
        assert_eq!(stored.status, Status::Answered);
    }
    for s in &stores {
        s.close().await;
    }
    db.drop_now().await.unwrap();
}

/// Two nodes asking and auditing at once write one audit chain: every row follows the one
/// before it, whichever node wrote it, and the export verifies.
#[tokio::test]
async fn two_nodes_append_to_one_audit_chain() {
    use crate::domain::audit::{verify, ChainEnd, ExportLine, Verdict};
    let db = ScratchDb::create().await.unwrap();
    let stores = [node(&db, "a").await, node(&db, "b").await];
    let mut writers = Vec::new();
    for i in 0..24usize {
        let store = stores[i % 2].clone();
        writers.push(tokio::spawn(async move {
            if i % 3 == 0 {
                create(&*store, &new_request(&format!("chain{i}"))).await;
            } else {
                store.audit(&ask()).await.unwrap();
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    let start = stores[1].audit_start(None).await.unwrap();
    let page = stores[1].audit_chain(start.after, 200).await.unwrap();
    let rows = page.rows;
    assert_eq!(rows.len(), 24);
    assert!(rows.windows(2).all(|w| w[1].row.id == w[0].row.id + 1));
    let last = rows.last().unwrap().hash.clone();
    let end = ExportLine::End(ChainEnd::new(&start, 24, &last, page.head));
    let lines: Vec<String> = std::iter::once(ExportLine::Start(start))
        .chain(rows.into_iter().map(ExportLine::Row))
        .chain(std::iter::once(end))
        .map(|l| serde_json::to_string(&l).unwrap())
        .collect();
    match verify(lines.iter().map(String::as_str)) {
        Verdict::Intact { rows: 24, .. } => {}
        v => panic!("{v}"),
    }
}

/// Beats `c` every beat until it leads; returns its term's epoch.
async fn beat_until_leading(c: &ClusterHandle, timing: &LeaseTiming) -> Beat {
    loop {
        let beat = c.beat(timing).await.unwrap();
        if beat.term.is_some() {
            return beat;
        }
        tokio::time::sleep(timing.beat).await;
    }
}

#[tokio::test]
async fn the_lead_is_a_lease_that_expires_unless_renewed_and_fences_the_writes_for_discord() {
    let db = ScratchDb::create().await.unwrap();
    let a = node(&db, "a").await;
    let b = node(&db, "b").await;
    let (ca, cb) = (cluster(&a), cluster(&b));
    let timing = LeaseTiming::new(Duration::from_secs(2));
    let req = create(&*a, &new_request("fenced")).await;
    let (key, slot) = (req.key, Slot::Main);
    let post = PostKey {
        key,
        idx: 0,
        answerer: "discord",
        slot: &slot,
    };
    // Before any beat, nobody leads: a write for Discord is refused before it writes.
    assert!(a
        .plan_posts(key, "discord", &[])
        .await
        .unwrap_err()
        .is::<Fenced>());

    let first = ca.beat(&timing).await.unwrap();
    let epoch = first
        .term
        .expect("the first node to beat takes the lead")
        .epoch;
    let seen = cb.beat(&timing).await.unwrap();
    assert_eq!(seen.term, None);
    assert_eq!((seen.leader.as_deref(), seen.epoch), (Some("a"), epoch));
    let renewed = ca.beat(&timing).await.unwrap();
    assert_eq!(
        renewed.term.map(|t| t.epoch),
        Some(epoch),
        "a renewal keeps the epoch"
    );
    let nodes = cb.nodes().await.unwrap();
    assert_eq!((nodes[0].node.as_str(), nodes[0].leader), ("a", true));
    assert!(!nodes[1].leader);

    // Only the leader's writes for Discord pass their fence.
    a.claim_post(&post).await.unwrap();
    let refused = b.claim_post(&post).await.unwrap_err();
    assert!(refused.is::<Fenced>(), "{refused:#}");

    // A dead lease connection is not a lost lead: the next beat reconnects and renews.
    terminate(&db, "askrelay-lease a").await;
    let renewed = loop {
        if let Ok(beat) = ca.beat(&timing).await {
            break beat;
        }
    };
    assert_eq!(renewed.term.map(|t| t.epoch), Some(epoch));

    // a stops beating (frozen, cut off): b takes the lease once it expired on the database's
    // clock, and not before.
    let stopped = std::time::Instant::now();
    let took = beat_until_leading(&cb, &timing).await;
    let taken = took.term.unwrap().epoch;
    assert_eq!(taken, epoch + 1, "a new holder is a new epoch");
    // The failover, as the new leader saw it: from a, which stopped renewing, at least a
    // lease's length after a's last renewal.
    let takeover = took.takeover.expect("a takeover");
    assert_eq!((takeover.from.as_str(), takeover.released), ("a", false));
    assert!(takeover.gap >= timing.ttl, "{takeover:?}");
    assert!(
        stopped.elapsed() >= timing.ttl - timing.beat,
        "{:?}",
        stopped.elapsed()
    );
    // a's term ran out on its own clock; its next beat follows b.
    let a_now = ca.beat(&timing).await.unwrap();
    assert_eq!((a_now.term, a_now.leader.as_deref()), (None, Some("b")));
    assert!(a.claim_post(&post).await.unwrap_err().is::<Fenced>());

    // A write checks the database too, not only the local term: a lease moved under a leader
    // that still thinks it leads refuses its write, and the leader hears it was deposed.
    sqlx::query("UPDATE lease SET holder = 'a', epoch = epoch + 1")
        .execute(a.raw_pool())
        .await
        .unwrap();
    b.claim_post(&post).await.unwrap_err();
    tokio::time::timeout(Duration::from_secs(5), cb.deposed())
        .await
        .expect("b hears it was deposed");

    // Giving the lead back lets the next node take it at once.
    sqlx::query("UPDATE lease SET holder = 'b', expires_at = askrelay_now_ms()")
        .execute(a.raw_pool())
        .await
        .unwrap();
    let b_epoch = cb
        .beat(&timing)
        .await
        .unwrap()
        .term
        .expect("b takes it again")
        .epoch;
    cb.release_lead().await;
    assert_eq!(
        ca.beat(&timing).await.unwrap().term.map(|t| t.epoch),
        Some(b_epoch + 1)
    );

    // A lease that names a node in an epoch it does not know (its take committed after it gave
    // up waiting for the reply) is that node's to take again at its next beat, in a new epoch:
    // it does not sit on it, unknowing, until it expires.
    let c = node(&db, "c").await;
    let cc = cluster(&c);
    sqlx::query(
        "UPDATE lease SET holder = 'c', epoch = epoch + 1, \
         expires_at = askrelay_now_ms() + 60000",
    )
    .execute(a.raw_pool())
    .await
    .unwrap();
    let again = cc.beat(&timing).await.unwrap();
    assert_eq!(again.term.map(|t| t.epoch), Some(b_epoch + 3), "{again:?}");
    assert!(ca.beat(&timing).await.unwrap().term.is_none());
    c.close().await;
    a.close().await;
    b.close().await;
    db.drop_now().await.unwrap();
}

#[tokio::test]
async fn notices_reach_other_nodes_and_resume_after_a_cut() {
    let db = ScratchDb::create().await.unwrap();
    let a = node(&db, "a").await;
    let b = node(&db, "b").await;
    let mut rx = cluster(&b).notices().await.unwrap();

    let req = create(&*a, &two_questions("n1")).await;
    assert_eq!(next(&mut rx).await, Notice::Outbox);
    let won = a
        .settle(NewAnswer {
            key: req.key,
            idx: 0,
            settlement: &Settlement::choice(0),
            actor: &person("p"),
            at_ms: 10,
            audit: &AuditEntry::default(),
            result_if_last: None,
            finish: &finish,
            grant: None,
        })
        .await
        .unwrap();
    assert_eq!(won, SettleOutcome::Won { result: None });
    assert_eq!(next(&mut rx).await, Notice::Outbox);
    let ended = Notice::Ended {
        key: req.key,
        node: "a".into(),
    };
    assert_eq!(next(&mut rx).await, ended);
    let err = AskError::aborted("gone");
    assert!(b
        .end(req.key, Status::Cancelled, &err, None, &ask())
        .await
        .unwrap());
    // B wrote it: B's own outbox notice is not relayed back to B, the ended one is.
    assert_eq!(
        next(&mut rx).await,
        ended,
        "the request's node, not the writer's"
    );
    // A write that changes nothing tells nobody.
    assert!(!b
        .end(req.key, Status::Cancelled, &err, None, &ask())
        .await
        .unwrap());

    terminate(&db, "askrelay-listen b").await;
    assert_eq!(next(&mut rx).await, Notice::Resumed);
    create(&*a, &new_request("n2")).await;
    assert_eq!(
        next(&mut rx).await,
        Notice::Outbox,
        "heard again after the cut"
    );
    assert!(rx.try_recv().is_err(), "nothing else");
    a.close().await;
    b.close().await;
    db.drop_now().await.unwrap();
}

#[tokio::test]
async fn a_database_newer_than_this_binary_is_refused_before_migrating() {
    let db = ScratchDb::create().await.unwrap();
    open(&db).await.close().await;
    let mut conn = PgConnection::connect(&db.url).await.unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
         execution_time) VALUES (987654321, 'from the future', true, '\\x00', 0)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    let err = match PgStore::open(&db.url, &PostgresConfig::default()).await {
        Ok(_) => panic!("a newer schema was accepted"),
        Err(e) => format!("{e:#}"),
    };
    let known = super::connect::MIGRATOR
        .iter()
        .map(|m| m.version)
        .max()
        .unwrap();
    assert!(
        err.contains("version 987654321")
            && err.contains(&format!("({known})"))
            && err.contains("upgrade askrelay"),
        "{err}"
    );
    db.drop_now().await.unwrap();
}

#[tokio::test]
async fn the_password_never_shows_in_an_error() {
    let config = PostgresConfig {
        connect_timeout_secs: 5,
        ..PostgresConfig::default()
    };
    for url in [
        "postgres://askrelay:Sup3r-s3cret@127.0.0.1:1/askrelay",
        "postgresql://askrelay@127.0.0.1:1/askrelay?password=Sup3r-s3cret",
    ] {
        let err = match PgStore::open(url, &config).await {
            Ok(_) => panic!("nothing listens on port 1"),
            Err(e) => e,
        };
        for shown in [format!("{err:#}"), format!("{err:?}")] {
            assert!(!shown.contains("Sup3r-s3cret"), "{shown}");
            assert!(shown.contains("***"), "the URL is shown, redacted: {shown}");
        }
    }
    // A bad password, refused by the server: neither does its error.
    let db = ScratchDb::create().await.unwrap();
    let mut url = url::Url::parse(&db.url).unwrap();
    url.set_username("askrelay_nobody").unwrap();
    url.set_password(Some("Sup3r-s3cret")).unwrap();
    if let Err(e) = PgStore::open(url.as_str(), &config).await {
        assert!(!format!("{e:#} {e:?}").contains("Sup3r-s3cret"), "{e:#}");
    }
    db.drop_now().await.unwrap();
}

#[tokio::test]
async fn sslmode_require_connects_over_tls() {
    let db = ScratchDb::create().await.unwrap();
    let mut conn = PgConnection::connect(&db.url).await.unwrap();
    let ssl: String = sqlx::query_scalar("SHOW ssl")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    if ssl != "on" {
        eprintln!("skipped: the test server does not offer TLS");
        db.drop_now().await.unwrap();
        return;
    }
    let config = PostgresConfig {
        sslmode: Some("require".into()),
        ..PostgresConfig::default()
    };
    let store = PgStore::open(&db.url, &config).await.unwrap();
    let tls: bool = sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .fetch_one(store.raw_pool())
        .await
        .unwrap();
    assert!(tls);
    store.close().await;
    db.drop_now().await.unwrap();
}

/// Behind a pooler the beat is a transaction, whose renewal holds the lease's row until its
/// `COMMIT`. A node frozen or cut off between the two leaves it uncommitted: its session gives up
/// after a beat idle, as a fenced write's does, not after the pool's deadline (5 s), which would
/// hold every takeover off for that long (a failover past Discord's patience).
#[tokio::test]
async fn a_pooled_beat_whose_commit_does_not_come_holds_the_lease_for_a_beat_at_most() {
    use sqlx::Row;
    let db = ScratchDb::create().await.unwrap();
    let store = open(&db).await;
    let timing = LeaseTiming::new(Duration::from_secs(3));
    let mut a = PgConnection::connect(&db.url).await.unwrap();
    sqlx::query(
        "INSERT INTO nodes (node, host, pid, version, heartbeat_at, leader, claim, claim_until) \
         VALUES ('a', 'host-a', 11, 'v', askrelay_now_ms(), false, 'token', \
         askrelay_now_ms() + 60000)",
    )
    .execute(&mut a)
    .await
    .unwrap();
    // a's lease, which it renews (in a new term: it has just expired).
    sqlx::query(
        "INSERT INTO lease (one, holder, epoch, renewed_at, expires_at) \
         VALUES (1, 'a', 1, askrelay_now_ms() - 3000, askrelay_now_ms())",
    )
    .execute(&mut a)
    .await
    .unwrap();
    // Node a's beat as `PgCluster::beat` sends it through the pooler, after the prelude's
    // setting (the deadline); and then no COMMIT.
    let mut tx = a.begin().await.unwrap();
    sqlx::query("SET LOCAL idle_in_transaction_session_timeout = 5000")
        .execute(&mut *tx)
        .await
        .unwrap();
    let row = sqlx::query(super::cluster::BEAT_CLAIMED)
        .bind("a")
        .bind(-1i64)
        .bind(timing.ttl.as_millis() as i64)
        .bind("host-a")
        .bind(11i64)
        .bind("v")
        .bind("token")
        .bind(timing.beat.as_millis().to_string())
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(row.get::<Option<i64>, _>(0), Some(2), "a renewed the lease");
    // Another node's write on the lease's row (a takeover's) waits for a's transaction.
    let mut b = PgConnection::connect(&db.url).await.unwrap();
    let started = std::time::Instant::now();
    sqlx::query("UPDATE lease SET expires_at = askrelay_now_ms() WHERE one = 1")
        .execute(&mut b)
        .await
        .unwrap();
    let waited = started.elapsed();
    assert!(
        waited < timing.beat * 2,
        "an uncommitted beat held the lease's row for {waited:?}"
    );
    drop(tx);
    let _ = b.close().await;
    store.close().await;
    db.drop_now().await.unwrap();
}

/// The connections of their own (not the pool's) that the nodes on `db` hold, by name.
async fn own_connections(db: &ScratchDb) -> Vec<String> {
    let mut conn = PgConnection::connect(&db.url).await.unwrap();
    let names = sqlx::query_scalar(
        "SELECT application_name FROM pg_stat_activity \
         WHERE datname = current_database() AND application_name LIKE 'askrelay-%' ORDER BY 1",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    names
}

#[tokio::test]
async fn behind_a_pooler_the_nodes_row_guards_the_id_and_only_the_leader_listens() {
    const TEST: &str = "store::postgres::tests::behind_a_pooler_the_nodes_row_guards_the_id_and_only_the_leader_listens";
    let Some(bouncer) = crate::store::tests::pgbouncer(TEST).await else {
        return;
    };
    let db = ScratchDb::create().await.unwrap();
    let config = PostgresConfig {
        pooler_url: Some(crate::config::Secret::new(bouncer.url(&db))),
        ..PostgresConfig::default()
    };
    let open_pooled = || async { Arc::new(PgStore::open(&db.url, &config).await.unwrap()) };
    let timing = LeaseTiming::new(Duration::from_secs(2));
    let first = open_pooled().await;
    first.acquire_lease(&holder("a", 11)).await.unwrap();
    assert!(cluster(&first).beat(&timing).await.unwrap().term.is_some());
    assert_eq!(
        own_connections(&db).await,
        Vec::<String>::new(),
        "no lease session"
    );
    // The leader listens, on its one connection of its own, and catches up first.
    let mut heard = cluster(&first).notices().await.unwrap();
    assert_eq!(next(&mut heard).await, Notice::Resumed);
    assert_eq!(own_connections(&db).await, ["askrelay-listen a"]);
    // It beats, as its driver would.
    let beating = tokio::spawn({
        let first = first.clone();
        async move {
            let mut beats = tokio::time::interval(timing.beat);
            loop {
                beats.tick().await;
                cluster(&first).beat(&timing).await.unwrap();
            }
        }
    });
    // A second daemon with its id waits for the claim to lapse, sees it renewed, and is refused.
    let second = open_pooled().await;
    let err = format!(
        "{:#}",
        second.acquire_lease(&holder("a", 22)).await.unwrap_err()
    );
    assert!(
        err.contains("in use by another askrelay daemon (pid 11 on host host-a)"),
        "{err}"
    );
    // A follower holds no connection of its own, and its writes' notices reach the leader
    // through the pooler.
    let other = open_pooled().await;
    other.acquire_lease(&holder("b", 33)).await.unwrap();
    assert!(cluster(&other).beat(&timing).await.unwrap().term.is_none());
    let _followed = cluster(&other).notices().await.unwrap();
    create(&*other, &new_request("from-b")).await;
    assert_eq!(next(&mut heard).await, Notice::Outbox);
    assert_eq!(own_connections(&db).await, ["askrelay-listen a"]);
    // The holder dies (it beats no more and releases nothing): its claim lapses, and the id
    // is the second daemon's, whose beat fences the dead one's term off.
    beating.abort();
    let _ = beating.await;
    second.acquire_lease(&holder("a", 22)).await.unwrap();
    assert!(cluster(&second).beat(&timing).await.unwrap().term.is_some());
    let err = format!("{:#}", cluster(&first).beat(&timing).await.unwrap_err());
    assert!(err.contains("claimed by another daemon"), "{err}");
    // A clean shutdown frees the id at once.
    second.close().await;
    let third = open_pooled().await;
    tokio::time::timeout(
        Duration::from_secs(1),
        third.acquire_lease(&holder("a", 44)),
    )
    .await
    .expect("no wait for a released claim")
    .unwrap();
    for s in [first, third, other] {
        s.close().await;
    }
    drop(bouncer);
    db.drop_now().await.unwrap();
}
