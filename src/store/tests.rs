//! The store contract, checked against every backend: each `check_*` takes a fresh store and
//! asserts what [`Store`] promises, and [`both_backends!`] runs it on SQLite (a file in a temp
//! dir) and on PostgreSQL (a scratch database, see `askrelay_testkit::scratch`).

use super::postgres::PgStore;
use super::sqlite::SqliteStore;
use crate::config::PostgresConfig;
use crate::domain::answer::Settlement;
use crate::domain::error::AskError;
use crate::domain::model::{Caller, Question, QuestionOption, Scope};
use crate::domain::request::{
    Actor, AuditAction, AuditEntry, Created, DuePost, EditState, NewPost, NewRequest, Peer,
    PlannedPost, PostKey, SettleOutcome, Slot, Source, Status, Timer,
};
use crate::domain::store::{Holder, NewAnswer, Page, Pruned, Store, Visibility};
use askrelay_testkit::pgbouncer::PgBouncer;
use askrelay_testkit::scratch::ScratchDb;
use std::sync::Arc;

/// A store under test, with a way past it to the raw database.
pub(crate) struct TestStore {
    pub store: Arc<dyn Store>,
    raw: Raw,
    _keep: Keep,
}

enum Raw {
    Sqlite(sqlx::SqlitePool),
    Pg(sqlx::PgPool),
}

/// What must outlive the store: its directory or its database.
enum Keep {
    Dir(#[allow(dead_code, reason = "held for its Drop")] tempfile::TempDir),
    Db(#[allow(dead_code, reason = "held for its Drop")] ScratchDb),
    /// The database and the PgBouncer in front of it; the pooler stops first.
    Bounced(#[allow(dead_code, reason = "held for its Drop")] (PgBouncer, ScratchDb)),
}

impl TestStore {
    /// Runs one statement on the database directly, as another client would.
    async fn exec(&self, sql: &str) -> Result<u64, sqlx::Error> {
        match &self.raw {
            Raw::Sqlite(p) => Ok(sqlx::query(sql).execute(p).await?.rows_affected()),
            Raw::Pg(p) => Ok(sqlx::query(sql).execute(p).await?.rows_affected()),
        }
    }
}

pub(crate) async fn sqlite() -> TestStore {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("a/b.db").display());
    let store = SqliteStore::open(&url, None).await.unwrap();
    TestStore {
        raw: Raw::Sqlite(store.raw_pool().clone()),
        store: Arc::new(store),
        _keep: Keep::Dir(dir),
    }
}

/// A PostgreSQL store on a database of its own, leased as node `test` and leading its cluster
/// (the outbox's writes are fenced), as a daemon runs it.
pub(crate) async fn postgres() -> TestStore {
    let db = ScratchDb::create().await.unwrap();
    let store = PgStore::open(&db.url, &PostgresConfig::default())
        .await
        .unwrap();
    store.acquire_lease(&holder("test", 1)).await.unwrap();
    // A lease long enough for any test.
    let timing = crate::domain::cluster::LeaseTiming::new(std::time::Duration::from_secs(3600));
    let beat = store.cluster().unwrap().beat(&timing).await.unwrap();
    assert!(beat.term.is_some(), "the only node leads");
    TestStore {
        raw: Raw::Pg(store.raw_pool().clone()),
        store: Arc::new(store),
        _keep: Keep::Db(db),
    }
}

/// A PgBouncer in transaction mode, started off the runtime's thread; `None` (and `test`
/// recorded as skipped) where pgbouncer is not installed.
pub(crate) async fn pgbouncer(test: &str) -> Option<PgBouncer> {
    if let Some(why) = PgBouncer::unavailable() {
        askrelay_testkit::skipped::record(test, &why);
        return None;
    }
    Some(
        tokio::task::spawn_blocking(|| PgBouncer::start(4))
            .await
            .unwrap()
            .unwrap(),
    )
}

/// [`postgres`], but with its pool behind a PgBouncer in transaction mode
/// (`postgres.pooler_url`); `None` where pgbouncer is not installed.
pub(crate) async fn postgres_pooled(test: &str) -> Option<TestStore> {
    let bouncer = pgbouncer(test).await?;
    let db = ScratchDb::create().await.unwrap();
    let config = PostgresConfig {
        pooler_url: Some(crate::config::Secret::new(bouncer.url(&db))),
        ..PostgresConfig::default()
    };
    let store = PgStore::open(&db.url, &config).await.unwrap();
    store.acquire_lease(&holder("test", 1)).await.unwrap();
    let timing = crate::domain::cluster::LeaseTiming::new(std::time::Duration::from_secs(3600));
    let beat = store.cluster().unwrap().beat(&timing).await.unwrap();
    assert!(beat.term.is_some(), "the only node leads");
    // The raw way in is direct: a statement outside a transaction cannot cross the pooler.
    let raw = sqlx::PgPool::connect(&db.url).await.unwrap();
    Some(TestStore {
        raw: Raw::Pg(raw),
        store: Arc::new(store),
        _keep: Keep::Bounced((bouncer, db)),
    })
}

pub(crate) fn holder(node: &str, pid: u32) -> Holder {
    Holder {
        pid,
        host: format!("host-{node}"),
        node: node.into(),
    }
}

fn question(id: &str) -> Question {
    Question {
        id: id.into(),
        question: "Go?".into(),
        header: None,
        options: vec![
            QuestionOption {
                label: "Yes".into(),
                description: None,
            },
            QuestionOption {
                label: "No".into(),
                description: None,
            },
        ],
        multi_select: false,
    }
}

pub(crate) fn new_request(id: &str) -> NewRequest {
    NewRequest {
        request_id: id.into(),
        token: format!("tok-{id}"),
        questions: vec![question("q")].into(),
        context: None,
        caller: Caller::default(),
        scope: Scope::new(),
        peer: Peer {
            uid: Some(1000),
            pid: Some(42),
        },
        answerer: "terminal".into(),
        answerers: vec!["terminal".into()],
        route: None,
        created_at_ms: 1,
        expiry: None,
        node: None,
    }
}

/// A request of two questions.
pub(crate) fn two_questions(id: &str) -> NewRequest {
    let mut new = new_request(id);
    new.questions = vec![question("q1"), question("q2")].into();
    new
}

pub(crate) fn finish(all: &[Settlement]) -> String {
    format!("{all:?}")
}

pub(crate) fn person(name: &str) -> Actor {
    Actor::local(Some(1000), Some(name.into()), None)
}

pub(crate) fn ask() -> AuditEntry {
    AuditEntry {
        action: AuditAction::Ask,
        ..Default::default()
    }
}

/// An audit entry about one request.
fn about(key: i64) -> AuditEntry {
    AuditEntry {
        request_key: Some(key),
        ..Default::default()
    }
}

pub(crate) async fn create(store: &dyn Store, new: &NewRequest) -> crate::domain::request::Request {
    match store.create(new, &[], &ask()).await.unwrap() {
        Created::New(req) => req,
        Created::Existing(_) => panic!("expected a new request"),
    }
}

/// The terminal's row of question `idx`'s own message.
fn main_of(key: i64, idx: usize) -> PostKey<'static> {
    PostKey {
        key,
        idx,
        answerer: "terminal",
        slot: &Slot::Main,
    }
}

fn planned(idx: usize, slot: &str) -> PlannedPost {
    PlannedPost {
        idx,
        slot: slot.into(),
        channel: format!("chan-{idx}{slot}"),
        guild: (idx == 0).then(|| "guild".to_owned()),
        nonce: format!("nonce-{idx}{slot}"),
    }
}

async fn check_first_settlement_wins_and_completes_the_request(t: TestStore) {
    let store = &*t.store;
    let req = create(store, &new_request("r1")).await;
    assert_eq!(req.peer.uid, Some(1000));
    let answer = AuditEntry {
        request_key: Some(req.key),
        action: AuditAction::Answer,
        ..Default::default()
    };
    let won = store
        .settle(NewAnswer {
            key: req.key,
            idx: 0,
            settlement: &Settlement::choice(1),
            actor: &person("alice"),
            at_ms: 5,
            audit: &answer,
            result_if_last: None,
            finish: &finish,
            grant: None,
        })
        .await
        .unwrap();
    let expected = finish(&[Settlement::choice(1)]);
    assert_eq!(
        won,
        SettleOutcome::Won {
            result: Some(expected)
        }
    );
    let lost = store
        .settle(NewAnswer {
            key: req.key,
            idx: 0,
            settlement: &Settlement::choice(0),
            actor: &person("bob"),
            at_ms: 6,
            audit: &answer,
            result_if_last: None,
            finish: &finish,
            grant: None,
        })
        .await
        .unwrap();
    assert!(matches!(lost, SettleOutcome::AlreadyAnswered(a) if a.actor.name == "alice"));
    assert!(matches!(
        store.create(&new_request("r1"), &[], &ask()).await.unwrap(),
        Created::Existing(r) if r.status == Status::Answered
    ));
    let rows = store.audit_rows(Some(req.key)).await.unwrap();
    let accepted: Vec<bool> = rows.iter().map(|r| r.accepted).collect();
    assert_eq!(accepted, [false, true, false], "ask, won, lost");
}

/// Twenty people answer one question at once: one wins, the others learn who did, every
/// attempt is audited, and nobody waits on another's transaction for long.
async fn check_concurrent_settlements_have_one_winner(t: TestStore) {
    let store = t.store.clone();
    let req = create(&*store, &new_request("race")).await;
    let mut tasks = Vec::new();
    for i in 0..20u8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let answer = AuditEntry {
                request_key: Some(req.key),
                action: AuditAction::Answer,
                ..Default::default()
            };
            store
                .settle(NewAnswer {
                    key: req.key,
                    idx: 0,
                    settlement: &Settlement::choice(usize::from(i % 2)),
                    actor: &person(&format!("p{i}")),
                    at_ms: 5,
                    audit: &answer,
                    result_if_last: None,
                    finish: &finish,
                    grant: None,
                })
                .await
                .unwrap()
        }));
    }
    let mut won = 0;
    for task in tasks {
        match tokio::time::timeout(std::time::Duration::from_secs(20), task)
            .await
            .expect("a settlement finishes")
            .unwrap()
        {
            SettleOutcome::Won { result } => {
                assert!(result.is_some(), "the one question completes the request");
                won += 1;
            }
            SettleOutcome::AlreadyAnswered(_) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(won, 1);
    let rows = store.audit_rows(Some(req.key)).await.unwrap();
    assert_eq!(rows.len(), 21, "the ask and every attempt");
    assert_eq!(rows.iter().filter(|r| r.accepted).count(), 1);
}

async fn check_the_audit_log_is_append_only(t: TestStore) {
    let store = &*t.store;
    store
        .audit(&AuditEntry {
            source: Source::Socket,
            action: AuditAction::Ask,
            accepted: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let err = t.exec("DELETE FROM audit").await.unwrap_err();
    assert!(err.to_string().contains("append-only"), "{err}");
    assert_eq!(store.audit_rows(None).await.unwrap().len(), 1);
}

async fn check_pruning_deletes_only_what_ended_and_audit_rows_older_than_the_cutoff(t: TestStore) {
    let store = &*t.store;
    let mut keys = Vec::new();
    for id in ["ended", "open"] {
        keys.push(create(store, &new_request(id)).await.key);
    }
    let err = AskError::aborted("gone");
    assert!(store
        .end(keys[0], Status::Cancelled, &err, None, &ask())
        .await
        .unwrap());
    store.save_draft(keys[0], 0, "u", &[1]).await.unwrap();
    let far = i64::MAX;
    let pruned = store.prune(Some(far), None).await.unwrap();
    assert_eq!(
        pruned,
        Pruned {
            requests: 1,
            audit: 0
        }
    );
    assert!(store.by_id("ended").await.unwrap().is_none());
    assert!(
        store.by_id("open").await.unwrap().is_some(),
        "pending stays"
    );
    let before = store.audit_rows(None).await.unwrap();
    assert_eq!(before.len(), 3, "the audit rows outlive their request");
    // Only rows older than the cutoff go, and the window closes with the transaction.
    let cutoff = before[2].at_ms;
    let pruned = store.prune(None, Some(cutoff)).await.unwrap();
    assert_eq!(
        pruned.audit,
        before.iter().filter(|r| r.at_ms < cutoff).count() as u64
    );
    let err = t.exec("DELETE FROM audit").await.unwrap_err();
    assert!(err.to_string().contains("append-only"), "{err}");
    let err = t.exec("UPDATE audit SET detail = 'x'").await.unwrap_err();
    assert!(err.to_string().contains("append-only"), "{err}");
}

/// The audit chain as an export writes it: the start, then the rows page by page, then the
/// end with the head the last page was read with.
async fn export(store: &dyn Store, since_ms: Option<i64>) -> Vec<String> {
    use crate::domain::audit::{ChainEnd, ExportLine};
    let start = store.audit_start(since_ms).await.unwrap();
    let mut after = start.after;
    let (mut count, mut last) = (0, start.hash.clone());
    let mut lines = vec![serde_json::to_string(&ExportLine::Start(start.clone())).unwrap()];
    loop {
        let page = store.audit_chain(after, 2).await.unwrap();
        let Some(last_row) = page.rows.last() else {
            let end = ChainEnd::new(&start, count, &last, page.head);
            lines.push(serde_json::to_string(&ExportLine::End(end)).unwrap());
            return lines;
        };
        after = last_row.row.id;
        for row in page.rows {
            count += 1;
            last = row.hash.clone();
            lines.push(serde_json::to_string(&ExportLine::Row(row)).unwrap());
        }
    }
}

/// Every write that audits (create, settle won and lost, end, a lone audit row, concurrent
/// ones) appends to one chain that verifies; a row that does not follow the head is refused;
/// pruning leaves a checkpoint from which what is left still verifies.
async fn check_the_audit_chain_links_every_write_and_survives_pruning(t: TestStore) {
    use crate::domain::audit::{verify, StartReason, Verdict, GENESIS};
    let store = &*t.store;
    let start = store.audit_start(None).await.unwrap();
    assert_eq!((start.after, start.reason), (0, StartReason::Genesis));
    assert_eq!(start.hash, GENESIS);
    let a = create(store, &new_request("chain-a")).await;
    let b = create(store, &new_request("chain-b")).await;
    let settlement = Settlement::choice(0);
    for _ in 0..2 {
        store
            .settle(NewAnswer {
                key: a.key,
                idx: 0,
                settlement: &settlement,
                actor: &person("ann"),
                at_ms: 5,
                audit: &about(a.key),
                result_if_last: Some("{}".into()),
                finish: &finish,
                grant: None,
            })
            .await
            .unwrap();
    }
    let err = AskError::aborted("gone");
    assert!(store
        .end(b.key, Status::Cancelled, &err, None, &about(b.key))
        .await
        .unwrap());
    let entries: Vec<AuditEntry> = (0..6)
        .map(|i| AuditEntry {
            source: Source::Socket,
            action: AuditAction::Connect,
            detail: Some(format!("concurrent {i}")),
            ..Default::default()
        })
        .collect();
    let writes = entries.iter().map(|e| store.audit(e));
    for r in futures_util::future::join_all(writes).await {
        r.unwrap();
    }
    let rows = store.audit_rows(None).await.unwrap();
    assert_eq!(rows.len(), 11);
    let lines = export(store, None).await;
    assert_eq!(lines.len(), 13, "the start, every row and the end");
    match verify(lines.iter().map(String::as_str)) {
        Verdict::Intact { rows: 11, .. } => {}
        v => panic!("{v}"),
    }
    // From a time: the rows from the first written at or after it, after that row's hash.
    let since = export(store, Some(5)).await;
    assert!(since[0].contains("\"after\":2"), "{}", since[0]);
    assert!(matches!(
        verify(since.iter().map(String::as_str)),
        Verdict::Intact { rows: 9, .. }
    ));

    // A row that does not follow the head is refused.
    let err = t
        .exec(&format!(
            "INSERT INTO audit (id, at, source, action, accepted, prev_hash, hash) \
             VALUES (12, 1, 'socket', 'ask', true, '{GENESIS}', '{GENESIS}')"
        ))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("head of the audit chain"), "{err}");

    // Pruning the first rows leaves a checkpoint with the last one's id and hash.
    let pruned = store.prune(None, Some(5)).await.unwrap();
    assert_eq!(pruned.audit, 2);
    let start = store.audit_start(None).await.unwrap();
    assert_eq!((start.after, start.reason), (2, StartReason::Pruned));
    let after_prune = export(store, None).await;
    // The same rows; the end line counts fewer of them.
    assert_eq!(
        after_prune[1..after_prune.len() - 1],
        lines[3..lines.len() - 1]
    );
    assert!(matches!(
        verify(after_prune.iter().map(String::as_str)),
        Verdict::Intact { rows: 9, .. }
    ));
    // The chain goes on after the checkpoint.
    store.audit(&ask()).await.unwrap();
    assert!(matches!(
        verify(export(store, None).await.iter().map(String::as_str)),
        Verdict::Intact { rows: 10, .. }
    ));
}

/// A request is stored with its questions, outbox rows and audit row, once; the outbox, the
/// timers, the drafts and the schedules then move as the contract says.
async fn check_the_outbox_timers_drafts_and_schedules(t: TestStore) {
    let store = &*t.store;
    let new = two_questions("o1");
    let posts = [planned(0, ""), planned(1, ""), planned(0, "dm")].map(|post| NewPost {
        answerer: "terminal".into(),
        post,
    });
    let Created::New(req) = store.create(&new, &posts, &ask()).await.unwrap() else {
        panic!("expected a new request")
    };
    assert!(matches!(
        store.create(&new, &posts, &ask()).await.unwrap(),
        Created::Existing(r) if r.key == req.key
    ));
    let (read, stored) = store.by_token("tok-o1").await.unwrap().unwrap();
    assert_eq!(read.key, req.key);
    assert_eq!(read.answers, vec![None, None]);
    let slots: Vec<(usize, String)> = stored.iter().map(|p| (p.idx, p.slot.to_string())).collect();
    assert_eq!(
        slots,
        [(0, "".into()), (0, "dm".into()), (1, "".into())],
        "in question and slot order"
    );
    assert_eq!(stored[0].guild.as_deref(), Some("guild"));
    assert_eq!(stored[0].nonce, "nonce-0");
    assert_eq!(store.audit_rows(Some(req.key)).await.unwrap().len(), 1);
    let due = store.outbox_due(Some("terminal")).await.unwrap();
    assert_eq!(due.len(), 3, "{due:?}");
    assert!(due.iter().all(|d| d.unposted && d.due_since_ms == 1));
    assert!(store.outbox_due(Some("discord")).await.unwrap().is_empty());

    store
        .record_post(&main_of(req.key, 0), "m0", None, Some("g2"))
        .await
        .unwrap();
    store
        .record_post_failure(&main_of(req.key, 1), "boom")
        .await
        .unwrap();
    let posts = store.posts(&[req.key, 999]).await.unwrap();
    assert_eq!(posts.len(), 1);
    let main = &posts[&req.key][0];
    assert_eq!(
        (
            main.message.as_deref(),
            main.guild.as_deref(),
            main.attempts
        ),
        (Some("m0"), Some("g2"), 1)
    );
    assert_eq!(posts[&req.key][2].last_error.as_deref(), Some("boom"));

    // A timer step adds its rows once; a stale step does nothing.
    let timer = Timer {
        request_key: req.key,
        name: "remind".into(),
        fired: 1,
        due_at_ms: Some(100),
    };
    let note = [planned(0, "note:remind")];
    assert!(store
        .advance_timer(req.key, "terminal", None, &timer, &note)
        .await
        .unwrap());
    assert!(!store
        .advance_timer(req.key, "terminal", None, &timer, &note)
        .await
        .unwrap());
    assert_eq!(store.timers("terminal").await.unwrap(), vec![timer.clone()]);
    let next = Timer {
        fired: 2,
        due_at_ms: None,
        ..timer.clone()
    };
    assert!(store
        .advance_timer(req.key, "terminal", Some(1), &next, &[])
        .await
        .unwrap());
    assert!(store.timers("terminal").await.unwrap().is_empty(), "done");
    store
        .plan_posts(req.key, "terminal", &[planned(1, "late")])
        .await
        .unwrap();
    let (_, stored) = store.with_posts_by_key(req.key).await.unwrap().unwrap();
    assert_eq!(stored.len(), 5);

    // Drafts are per person and replaced.
    assert_eq!(store.draft(req.key, 1, "u").await.unwrap(), None);
    store.save_draft(req.key, 1, "u", &[0]).await.unwrap();
    let before = crate::domain::clock::now_ms();
    store.save_draft(req.key, 1, "u", &[0, 1]).await.unwrap();
    let draft = store.draft(req.key, 1, "u").await.unwrap().unwrap();
    assert_eq!(draft.selected, [0, 1]);
    // When it was saved: a new leader trusts only drafts saved in its own term.
    assert!(draft.saved_at_ms >= before, "{draft:?}");

    // An answer makes the posted message due for an edit, until the edit is recorded.
    let won = store
        .settle(NewAnswer {
            key: req.key,
            idx: 0,
            settlement: &Settlement::choice(0),
            actor: &person("alice"),
            at_ms: 50,
            audit: &ask(),
            result_if_last: None,
            finish: &finish,
            grant: None,
        })
        .await
        .unwrap();
    assert_eq!(won, SettleOutcome::Won { result: None });
    let edits: Vec<DuePost> = store
        .outbox_due(None)
        .await
        .unwrap()
        .into_iter()
        .filter(|d| !d.unposted)
        .collect();
    assert_eq!(edits.len(), 1, "{edits:?}");
    assert_eq!((edits[0].idx, edits[0].due_since_ms), (0, 50));
    store
        .record_edit(&main_of(req.key, 0), EditState::Settled)
        .await
        .unwrap();
    assert!(store
        .outbox_due(None)
        .await
        .unwrap()
        .iter()
        .all(|d| d.unposted));

    // Ending it: once, with the error, and nothing is due to post any more.
    let err = AskError::aborted("gone");
    assert!(store
        .end(req.key, Status::Cancelled, &err, None, &about(req.key))
        .await
        .unwrap());
    assert!(!store
        .end(req.key, Status::Expired, &err, None, &about(req.key))
        .await
        .unwrap());
    let ended = store.by_key(req.key).await.unwrap().unwrap();
    assert_eq!(ended.status, Status::Cancelled);
    assert_eq!(ended.error().map(|e| e.message.as_str()), Some("gone"));
    assert!(store
        .outbox_due(None)
        .await
        .unwrap()
        .iter()
        .all(|d| !d.unposted));
    assert!(!store
        .advance_timer(req.key, "terminal", Some(2), &next, &[])
        .await
        .unwrap());
    let late = store
        .settle(NewAnswer {
            key: req.key,
            idx: 1,
            settlement: &Settlement::choice(0),
            actor: &person("bob"),
            at_ms: 60,
            audit: &about(req.key),
            result_if_last: None,
            finish: &finish,
            grant: None,
        })
        .await
        .unwrap();
    assert_eq!(late, SettleOutcome::Ended(Status::Cancelled));
    let accepted: Vec<bool> = store
        .audit_rows(Some(req.key))
        .await
        .unwrap()
        .iter()
        .map(|r| r.accepted)
        .collect();
    assert_eq!(
        accepted,
        [false, true, true, false, false],
        "ask, answer, end, the second end, late"
    );

    // Schedules move only from where the caller read them.
    assert_eq!(store.schedule_due("digest").await.unwrap(), None);
    assert!(store.advance_schedule("digest", None, 10).await.unwrap());
    assert!(!store.advance_schedule("digest", None, 11).await.unwrap());
    assert!(!store.advance_schedule("digest", Some(9), 12).await.unwrap());
    assert!(store
        .advance_schedule("digest", Some(10), 20)
        .await
        .unwrap());
    assert_eq!(store.schedule_due("digest").await.unwrap(), Some(20));
    store.writable().await.unwrap();
}

/// Listings page by key, pending oldest first and history newest first, and an owner sees
/// only their own.
async fn check_listings(t: TestStore) {
    let store = &*t.store;
    let mut keys = Vec::new();
    for (i, uid) in [1000, 1001, 1000].into_iter().enumerate() {
        let mut new = new_request(&format!("l{i}"));
        new.peer.uid = Some(uid);
        keys.push(create(store, &new).await.key);
    }
    let err = AskError::aborted("gone");
    store
        .end(keys[1], Status::Cancelled, &err, None, &ask())
        .await
        .unwrap();
    let page = |after| Page { limit: 10, after };
    let ids = |reqs: Vec<crate::domain::request::Request>| -> Vec<i64> {
        reqs.into_iter().map(|r| r.key).collect()
    };
    assert_eq!(
        ids(store.pending(Visibility::All, page(None)).await.unwrap()),
        [keys[0], keys[2]]
    );
    assert_eq!(
        ids(store.history(Visibility::All, page(None)).await.unwrap()),
        [keys[2], keys[1], keys[0]]
    );
    assert_eq!(
        ids(store
            .history(Visibility::All, page(Some(keys[2])))
            .await
            .unwrap()),
        [keys[1], keys[0]]
    );
    assert_eq!(
        ids(store
            .history(Visibility::Owner(1001), page(None))
            .await
            .unwrap()),
        [keys[1]]
    );
    assert_eq!(
        ids(store
            .pending(
                Visibility::Owner(1000),
                Page {
                    limit: 1,
                    after: None
                }
            )
            .await
            .unwrap()),
        [keys[0]]
    );
    let pending: Vec<i64> = store
        .all_pending()
        .await
        .unwrap()
        .into_iter()
        .map(|(r, _)| r.key)
        .collect();
    assert_eq!(pending, [keys[0], keys[2]]);
}

/// A one-use grant: minted once per request (a second mint is refused, and audited as
/// such), used once by its own uid for its own call while it lives, and never again; the
/// mint and the use are audited rows of the chain, a miss writes nothing.
async fn check_one_use_grants(t: TestStore) {
    use crate::domain::audit::{verify, Verdict};
    use crate::domain::once_grant::{OnceGrant, LIFE_MS};
    let store = &*t.store;
    let req = create(store, &new_request("once-a")).await;
    let old = create(store, &new_request("once-b")).await;
    let now = 1_000_000;
    let grant = |id: &str, r: &crate::domain::request::Request, ends: i64| OnceGrant {
        id: id.into(),
        session: "s-1".into(),
        call: "c0ffee".into(),
        tool: "Bash".into(),
        uid: 1000,
        approver: "alice (Discord user 1)".into(),
        request_key: r.key,
        request_id: r.request_id.clone(),
        created_at_ms: now,
        ends_at_ms: ends,
        used_at_ms: None,
    };
    let minted = |detail: &str| AuditEntry {
        action: AuditAction::OnceGrant,
        detail: Some(detail.into()),
        ..about(req.key)
    };
    let g = grant("og-000000000001", &req, now + LIFE_MS);
    assert!(store.mint_once_grant(&g, &minted("mint")).await.unwrap());
    // One per request, whatever the id.
    let again = grant("og-000000000002", &req, now + LIFE_MS);
    assert!(!store
        .mint_once_grant(&again, &minted("again"))
        .await
        .unwrap());
    assert_eq!(store.once_grant_of(req.key).await.unwrap(), Some(g.clone()));
    // An ended one is never used.
    let ended = grant("og-000000000003", &old, now - 1);
    assert!(store
        .mint_once_grant(&ended, &minted("ended"))
        .await
        .unwrap());

    let used = |g: &OnceGrant| AuditEntry {
        action: AuditAction::OnceGrantUsed,
        detail: Some(format!("used {}", g.id)),
        ..about(g.request_key)
    };
    let rows_before = store.audit_rows(None).await.unwrap().len();
    // Another uid, another call, another session: nothing, and nothing written.
    for (uid, session, call) in [
        (1001, "s-1", "c0ffee"),
        (1000, "s-1", "beef"),
        (1000, "s-2", "c0ffee"),
    ] {
        assert_eq!(
            store
                .use_once_grant(uid, session, call, now + 1, &used)
                .await
                .unwrap(),
            None
        );
    }
    assert_eq!(store.audit_rows(None).await.unwrap().len(), rows_before);
    // After its life: nothing.
    assert_eq!(
        store
            .use_once_grant(1000, "s-1", "c0ffee", now + LIFE_MS, &used)
            .await
            .unwrap(),
        None
    );
    // Its own: once.
    let took = store
        .use_once_grant(1000, "s-1", "c0ffee", now + 1, &used)
        .await
        .unwrap()
        .expect("the grant is used");
    assert_eq!(
        (took.id.as_str(), took.used_at_ms),
        (g.id.as_str(), Some(now + 1))
    );
    assert_eq!(
        store
            .use_once_grant(1000, "s-1", "c0ffee", now + 2, &used)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .once_grant_of(req.key)
            .await
            .unwrap()
            .unwrap()
            .used_at_ms,
        Some(now + 1)
    );
    let rows = store.audit_rows(None).await.unwrap();
    let ours: Vec<(String, Option<String>, bool)> = rows
        .iter()
        .filter(|r| r.action.starts_with("once_grant"))
        .map(|r| (r.action.clone(), r.detail.clone(), r.accepted))
        .collect();
    assert_eq!(
        ours,
        [
            ("once_grant".into(), Some("mint".into()), true),
            ("once_grant".into(), Some("again".into()), false),
            ("once_grant".into(), Some("ended".into()), true),
            (
                "once_grant_used".into(),
                Some(format!("used {}", g.id)),
                true
            ),
        ]
    );
    let lines = export(store, None).await;
    assert!(
        matches!(
            verify(lines.iter().map(String::as_str)),
            Verdict::Intact { .. }
        ),
        "{lines:?}"
    );
}

/// A request several answerers show: each one's outbox rows under its own name, and every
/// answerer (the owner first) read back, with the pending ones at start-up too; a request of
/// one answerer reads back as its owner alone.
async fn check_copies_of_several_answerers(t: TestStore) {
    let store = &*t.store;
    let mut new = two_questions("c1");
    new.answerer = "discord".into();
    new.answerers = vec!["discord".into(), "slack".into(), "terminal".into()];
    let posts = [
        ("discord", planned(0, "")),
        ("discord", planned(1, "")),
        ("slack", planned(0, "")),
    ]
    .map(|(a, post)| NewPost {
        answerer: a.into(),
        post,
    });
    let Created::New(req) = store.create(&new, &posts, &ask()).await.unwrap() else {
        panic!("expected a new request")
    };
    assert_eq!(req.answerers, new.answerers);
    let (read, stored) = store.by_token("tok-c1").await.unwrap().unwrap();
    assert_eq!(read.answerer.as_deref(), Some("discord"));
    assert_eq!(read.answerers, ["discord", "slack", "terminal"]);
    assert!(read.shown_by("slack") && !read.shown_by("mail"));
    let mut rows: Vec<(usize, &str)> = stored
        .iter()
        .map(|p| (p.idx, p.answerer.as_str()))
        .collect();
    rows.sort();
    assert_eq!(rows, [(0, "discord"), (0, "slack"), (1, "discord")]);
    assert_eq!(store.outbox_due(Some("slack")).await.unwrap().len(), 1);
    assert_eq!(store.outbox_due(Some("discord")).await.unwrap().len(), 2);
    let pending = store.all_pending().await.unwrap();
    assert_eq!(pending[0].0.answerers, new.answerers);
    assert_eq!(pending[0].1.len(), 3);
    create(store, &new_request("c2")).await;
    let lone = store.by_id("c2").await.unwrap().unwrap();
    assert_eq!(lone.answerers, ["terminal"]);
}

/// Runs each check on both backends, as three tests: SQLite, PostgreSQL, and PostgreSQL
/// behind PgBouncer.
macro_rules! both_backends {
    ($($check:ident => $name:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$check(super::sqlite().await).await
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$check(super::postgres().await).await
                }
            )*
        }
        /// The same through PgBouncer in transaction mode (`postgres.pooler_url`).
        mod on_pgbouncer {
            $(
                #[tokio::test]
                async fn $name() {
                    let test = concat!("store::tests::on_pgbouncer::", stringify!($name));
                    if let Some(t) = super::postgres_pooled(test).await {
                        super::$check(t).await
                    }
                }
            )*
        }
    };
}

both_backends! {
    check_first_settlement_wins_and_completes_the_request =>
        first_settlement_wins_and_completes_the_request,
    check_the_audit_log_is_append_only => the_audit_log_is_append_only,
    check_the_audit_chain_links_every_write_and_survives_pruning =>
        the_audit_chain_links_every_write_and_survives_pruning,
    check_concurrent_settlements_have_one_winner => concurrent_settlements_have_one_winner,
    check_pruning_deletes_only_what_ended_and_audit_rows_older_than_the_cutoff =>
        pruning_deletes_only_what_ended_and_audit_rows_older_than_the_cutoff,
    check_the_outbox_timers_drafts_and_schedules => the_outbox_timers_drafts_and_schedules,
    check_listings => listings,
    check_one_use_grants => one_use_grants,
    check_copies_of_several_answerers => copies_of_several_answerers,
}
