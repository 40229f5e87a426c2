//! The run: sets up the stand-in, the database and the nodes, starts the tasks, waits for every
//! request to end, and builds the report.

use super::audit::check_audit;
use super::clicker::ClickerTask;
use super::clients::{client, node_socket, replay_all};
use super::cluster_faults::{
    self, faketime_available, ClusterFault, Injected, NodeHandle, FAKETIME_LIB,
};
use super::daemon::DaemonCtl;
use super::database::open_database;
use super::faults::{faults, first_faults, showing_buttons, FaultQueue};
use super::monkey::Monkey;
use super::outcomes::Outcomes;
use super::plan::{make_plan, people, DECISIVE};
use super::report::ChaosReport;
use super::shared::{ReqState, Shared};
use super::{config_toml, ChaosConfig, Rng, CHANNEL, COPIES, FAILOVER_LIMIT};
use crate::discord_schema::Validator;
use crate::proxy::Proxy;
use crate::standin::StandIn;
use askrelay::answerer::discord::custom_id::{self};
use askrelay::store::redact_url;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{timeout, timeout_at, Instant};

/// Runs the harness with `daemon_bin` (the `askrelay` binary) and returns what it saw. Every
/// wait is bounded; a run that cannot finish says why in `problems` instead of hanging.
pub async fn run(cfg: ChaosConfig, daemon_bin: &Path) -> ChaosReport {
    let t0 = Instant::now();
    let deadline = t0 + cfg.deadline;
    let mut rng = Rng::new(cfg.seed);
    let plan = Arc::new(make_plan(&cfg, &mut rng));
    let total_questions: usize = plan.iter().map(|r| r.questions.len()).sum();
    let standin = StandIn::start().await;
    let dir = tempfile::Builder::new()
        .prefix("askrelay-chaos-")
        .tempdir()
        .expect("chaos: cannot create a temp dir");
    let database = match open_database(&cfg, dir.path()).await {
        Ok(db) => db,
        Err(e) => {
            return ChaosReport {
                seed: cfg.seed,
                requests: cfg.requests,
                nodes: cfg.nodes,
                problems: vec![e],
                ..ChaosReport::default()
            }
        }
    };
    let nodes = cfg.nodes;
    // The cluster faults: a proxy in front of the database per node, a heartbeat the stand-in
    // enforces (so that a frozen leader's session ends), and the plan. A skew without
    // libfaketime is skipped, and said so.
    let mut fault_kinds: Vec<ClusterFault> = Vec::new();
    let mut early_notes = Vec::new();
    if !cfg.cluster_faults.is_empty() && !database.cluster {
        early_notes.push("cluster faults need a cluster on PostgreSQL; none injected".to_owned());
    }
    if database.cluster {
        for k in &cfg.cluster_faults {
            if *k == ClusterFault::Skew && !faketime_available() {
                early_notes.push(format!(
                    "the skew fault is skipped: libfaketime is not installed ({FAKETIME_LIB} is \
                     missing; on Debian, apt-get install faketime)"
                ));
                continue;
            }
            if !fault_kinds.contains(k) {
                fault_kinds.push(*k);
            }
        }
    }
    let faults_on = !fault_kinds.is_empty();
    let failover = cfg.failover();
    let fault_plan = if faults_on {
        let count = if cfg.cluster_fault_count == 0 {
            fault_kinds.len()
        } else {
            cfg.cluster_fault_count
        };
        cluster_faults::order(&fault_kinds, count, &mut rng)
    } else {
        Vec::new()
    };
    let mut proxies: Vec<Option<Proxy>> = vec![None; nodes];
    if faults_on {
        for p in &mut proxies {
            match Proxy::for_postgres(&database.url).await {
                Ok((proxy, _)) => *p = Some(proxy),
                Err(e) => {
                    return ChaosReport {
                        seed: cfg.seed,
                        requests: cfg.requests,
                        nodes: cfg.nodes,
                        problems: vec![format!("cannot start a database proxy: {e}")],
                        ..ChaosReport::default()
                    }
                }
            }
        }
        standin.enforce_heartbeats(cluster_faults::HEARTBEAT);
    }
    if !cfg.dedup {
        standin.set_nonce_dedup(false);
    }
    // Alone: askrelay.sock and daemon.log, as always. In a cluster: node-<i>.sock and
    // node-<i>.log.
    let node_ids: Vec<Option<String>> = (1..=nodes)
        .map(|i| database.cluster.then(|| format!("node-{i}")))
        .collect();
    let sockets: Vec<PathBuf> = node_ids
        .iter()
        .map(|n| match n {
            Some(n) => dir.path().join(format!("{n}.sock")),
            None => dir.path().join("askrelay.sock"),
        })
        .collect();
    // The uid the clients ask as: the owner of the directory this process just created.
    let uid = std::os::unix::fs::MetadataExt::uid(
        &std::fs::metadata(dir.path()).expect("chaos: cannot stat the work directory"),
    );
    std::fs::write(dir.path().join("chaos.toml"), config_toml(uid))
        .expect("chaos: cannot write chaos.toml");
    let (finished, _) = watch::channel(0usize);
    let (progress, _) = watch::channel((0usize, 0usize));
    let (all_done, _) = watch::channel(false);
    let (stop, _) = watch::channel(false);
    let shared = Arc::new(Shared {
        t0,
        verbose: cfg.verbose,
        reqs: Mutex::new((0..cfg.requests).map(|_| ReqState::default()).collect()),
        epoch: AtomicU64::new(0),
        finished,
        progress,
        all_done,
        stop,
        problems: Mutex::new(Vec::new()),
        notes: Mutex::new(Vec::new()),
        kills: AtomicUsize::new(0),
        crash_aborts: AtomicUsize::new(0),
        restarts: AtomicUsize::new(0),
        gateway_drops: AtomicUsize::new(0),
        stalls: AtomicUsize::new(0),
        clicks: AtomicUsize::new(0),
        clicks_repeated: AtomicUsize::new(0),
        daemon_error_lines: AtomicUsize::new(0),
        daemon_errors: Mutex::new(Vec::new()),
        fatal: AtomicBool::new(false),
        leader_kills: AtomicUsize::new(0),
        lead_moves: AtomicUsize::new(0),
        failovers: Mutex::new(Vec::new()),
        failover_watches: Mutex::new(Vec::new()),
        click_log: Mutex::new(HashMap::new()),
    });
    for n in early_notes {
        shared.note(n);
    }
    let handles: Vec<Arc<NodeHandle>> = node_ids
        .iter()
        .zip(&sockets)
        .zip(&proxies)
        .map(|((node, socket), proxy)| {
            Arc::new(NodeHandle {
                name: node.clone().unwrap_or_else(|| "daemon".into()),
                socket: socket.clone(),
                pid: AtomicU32::new(0),
                leading: Mutex::new(Arc::new(AtomicBool::new(false))),
                faketime: fault_kinds.contains(&ClusterFault::Skew).then(|| {
                    let file = dir
                        .path()
                        .join(format!("{}.faketime", node.as_deref().unwrap_or("daemon")));
                    std::fs::write(&file, "+0\n").expect("chaos: cannot write a faketime file");
                    file
                }),
                proxy: proxy.clone(),
            })
        })
        .collect();
    let mut daemons: Vec<DaemonCtl> = node_ids
        .iter()
        .zip(&sockets)
        .zip(&handles)
        .map(|((node, socket), handle)| {
            let file = match node {
                Some(n) => format!("{n}.log"),
                None => "daemon.log".into(),
            };
            let log = std::fs::File::create(dir.path().join(&file))
                .unwrap_or_else(|e| panic!("chaos: cannot create {file}: {e}"));
            DaemonCtl {
                bin: daemon_bin.to_path_buf(),
                socket: socket.clone(),
                // Through its own proxy when there are cluster faults.
                db_url: match &handle.proxy {
                    Some(p) => p.postgres_url(&database.url).expect("a postgres URL"),
                    None => database.url.clone(),
                },
                base_url: standin.base_url.clone(),
                node: node.clone(),
                log: Arc::new(Mutex::new(log)),
                child: None,
                crash_at: None,
                aborted_on_purpose: Arc::new(AtomicBool::new(false)),
                pump: None,
                started_at: Instant::now(),
                instance: 0,
                leading: Arc::new(AtomicBool::new(false)),
                handle: handle.clone(),
                failover_secs: cfg.failover_secs,
                shared: shared.clone(),
            }
        })
        .collect();
    // In a cluster, the live gateway sessions from now on: leaders seen from the outside.
    let (stop_sessions, stop_sessions_rx) = watch::channel(false);
    let sessions = database
        .cluster
        .then(|| cluster_faults::watch_sessions(standin.clone(), stop_sessions_rx));
    let wall0 = std::time::SystemTime::now();
    shared.log(format!(
        "{} requests, {total_questions} questions, {} kills, seed {}, {nodes} node(s) on {}, \
         work dir {}",
        cfg.requests,
        cfg.kills,
        cfg.seed,
        database.label,
        dir.path().display()
    ));
    // One after the other: the first takes the lead, and its log shows it.
    for d in &mut daemons {
        if let Err(e) = d.start(None).await {
            shared.fatal(e);
            break;
        }
    }

    // Kill points: thresholds on questions posted + questions settled, spread over the run.
    let mut thresholds: Vec<usize> = (0..cfg.kills)
        .map(|_| rng.below((total_questions * 2 * 19 / 20) as u64 + 1) as usize)
        .collect();
    thresholds.sort_unstable();

    let mut queue = FaultQueue::new();
    if cfg.faults {
        first_faults(&standin, &mut queue);
    }
    let mut clients = Vec::new();
    if !shared.is_fatal() {
        for (i, r) in plan.iter().enumerate() {
            let start = t0 + Duration::from_millis(rng.below(cfg.ramp.as_millis() as u64 + 1));
            clients.push(tokio::spawn(client(
                i,
                r.ask_line.clone(),
                node_socket(&sockets, i).to_path_buf(),
                shared.clone(),
                rng.fork(),
                start,
            )));
        }
    }
    let mut labels = HashMap::new();
    for (ri, r) in plan.iter().enumerate() {
        for (qi, q) in r.questions.iter().enumerate() {
            for (oi, l) in q.labels.iter().enumerate() {
                // "Deny" and "Hold" are on many questions: they never say which one.
                if DECISIVE.contains(&l.as_str()) {
                    continue;
                }
                labels.insert(l.clone(), (ri, qi, oi));
            }
        }
    }
    // The clicks go on through every cluster fault: spread them over the schedule.
    let mut click_spread = cfg.click_spread;
    if faults_on {
        let schedule = cluster_faults::schedule_length(&fault_plan, failover);
        if schedule > click_spread {
            shared.log(format!(
                "clicks spread over {:.0} s, the length of the cluster faults",
                schedule.as_secs_f64()
            ));
            click_spread = schedule;
        }
    }
    let clicker = tokio::spawn(
        ClickerTask {
            standin: standin.clone(),
            plan: plan.clone(),
            shared: shared.clone(),
            rng: rng.fork(),
            click_spread,
            clicks_from: t0 + cfg.ramp,
            people: people(),
            labels,
            targets: BTreeMap::new(),
            iids: HashMap::new(),
            next_iid: 3_000_000_000,
            message_cursor: 0,
            request_cursor: 0,
            finished_seen: vec![false; cfg.requests],
            settle_clicked: HashMap::new(),
            confirmed_count: 0,
            unexpected_replies: 0,
        }
        .run(),
    );
    let fault_task = cfg.faults.then(|| {
        tokio::spawn(faults(
            standin.clone(),
            shared.clone(),
            rng.fork(),
            cfg.fault_every,
            queue,
        ))
    });
    let (faults_done, faults_done_rx) = watch::channel(!faults_on);
    let fault_runner = faults_on.then(|| {
        let schedule = cluster_faults::Schedule {
            kinds: fault_plan.clone(),
            nodes: handles.clone(),
            failover,
            // Once the asks are in and the first clicks are going.
            from: t0 + cfg.ramp + Duration::from_secs(2),
            at_leader: cfg.faults_at_leader,
        };
        tokio::spawn(cluster_faults::run(
            schedule,
            shared.clone(),
            rng.fork(),
            faults_done,
        ))
    });
    let monkey = tokio::spawn(
        Monkey {
            ds: daemons,
            rng: rng.fork(),
            crash_points: cfg.crash_points,
            questions: total_questions,
            shared: shared.clone(),
            deadline,
            cluster: database.cluster.then(|| standin.clone()),
            faults_done: faults_done_rx,
        }
        .run(thresholds),
    );

    // Progress, until every request has its final line or the deadline passes.
    let mut peak_pending = 0;
    {
        let mut finished = shared.finished.subscribe();
        let mut last_report = Instant::now();
        loop {
            let pending = {
                let reqs = shared.reqs.lock().unwrap();
                reqs.iter()
                    .filter(|r| r.connects > 0 && !r.finished)
                    .count()
            };
            peak_pending = peak_pending.max(pending);
            let n = *finished.borrow();
            if n >= cfg.requests || shared.is_fatal() {
                break;
            }
            if Instant::now() >= deadline {
                shared.problem(format!(
                    "only {n} of {} requests got a final line within {} s",
                    cfg.requests,
                    cfg.deadline.as_secs()
                ));
                break;
            }
            if last_report.elapsed() >= Duration::from_secs(5) {
                last_report = Instant::now();
                let (posted, settled) = *shared.progress.borrow();
                shared.log(format!(
                    "progress: {n}/{} requests ended, {posted}/{total_questions} questions \
                     posted, {settled} settled, {} kills",
                    cfg.requests,
                    shared.kills.load(Ordering::SeqCst)
                ));
            }
            let _ = timeout_at(
                deadline.min(Instant::now() + Duration::from_millis(100)),
                finished.changed(),
            )
            .await;
        }
    }
    shared.all_done.send_replace(true);
    shared.log("every request has a final line; finishing the kills");
    let monkey_limit = Duration::from_secs(60 + 5 * cfg.kills as u64)
        + if faults_on {
            cluster_faults::schedule_length(&fault_plan, failover) * 2
        } else {
            Duration::ZERO
        };
    let mut daemons = match timeout(monkey_limit, monkey).await {
        Ok(Ok(d)) => d,
        Ok(Err(e)) => {
            shared.problem(format!("the kill task failed: {e}"));
            Vec::new()
        }
        Err(_) => {
            shared.problem("the kill task did not finish in time".into());
            Vec::new()
        }
    };
    // The failovers of the last leader kills may still be under way; each watch is bounded.
    let watches = std::mem::take(&mut *shared.failover_watches.lock().unwrap());
    for w in watches {
        if timeout(FAILOVER_LIMIT + Duration::from_secs(10), w)
            .await
            .is_err()
        {
            shared.problem("a failover watch did not end in time".into());
        }
    }
    // The cluster faults are over (the monkey waited for them): stop watching the sessions
    // before the final restarts and stops, which are no failure of the lead.
    let injected: Vec<Injected> = match fault_runner {
        Some(f) => match timeout(Duration::from_secs(120), f).await {
            Ok(Ok(v)) => v,
            _ => {
                shared.problem("the cluster fault task did not end in time".into());
                Vec::new()
            }
        },
        None => Vec::new(),
    };
    let measured_until = Instant::now();
    stop_sessions.send_replace(true);
    let session_samples = match sessions {
        Some(h) => timeout(Duration::from_secs(10), h)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let clicked = match timeout(Duration::from_secs(30), clicker).await {
        Ok(Ok(out)) => Some(out),
        Ok(Err(e)) => {
            shared.problem(format!("the clicker failed: {e}"));
            None
        }
        Err(_) => {
            shared.problem("the clicker did not stop in time".into());
            None
        }
    };
    if let Some(f) = fault_task {
        if let Err(e) = timeout(Duration::from_secs(30), f).await {
            shared.problem(format!("the fault task did not stop in time: {e}"));
        }
    }
    standin.clear_failures();

    // Every request once more: an ended request replays the same final line.
    let all_up = !daemons.is_empty() && daemons.iter().all(|d| d.child.is_some());
    if all_up && !shared.is_fatal() {
        shared.log("re-attaching every request once more");
        replay_all(&plan, &sockets, &shared).await;
    }
    shared.stop.send_replace(true);
    for c in clients {
        if timeout(Duration::from_secs(10), c).await.is_err() {
            shared.problem("a client did not stop in time".into());
        }
    }
    // Every message should lose its buttons. An edit cut short by a kill, or given up during an
    // injected outage, is finished at the next start: restart once, gracefully, if one is left.
    // In a cluster every node restarts (the next leader takes the edits over).
    let mut not_edited = showing_buttons(&standin, Duration::from_secs(5)).await;
    if all_up && !not_edited.is_empty() && !shared.is_fatal() {
        shared.log(format!(
            "{} message(s) still show buttons; restarting once, gracefully",
            not_edited.len()
        ));
        for d in &mut daemons {
            if let Some(p) = d.terminate().await {
                shared.problem(p);
            }
        }
        let mut started = true;
        for d in &mut daemons {
            shared.restarts.fetch_add(1, Ordering::SeqCst);
            if let Err(e) = d.start(None).await {
                shared.problem(e);
                started = false;
            }
        }
        if started {
            not_edited = showing_buttons(&standin, Duration::from_secs(10)).await;
        }
    }
    // All at once: a node stopping while the others run would hand them the lead.
    let stops = daemons.iter_mut().map(|d| d.terminate());
    for p in futures_util::future::join_all(stops)
        .await
        .into_iter()
        .flatten()
    {
        shared.problem(p);
    }

    // ---- the report
    let mut twice_requests = Vec::new();
    let audit = check_audit(&database.url, &plan, &shared, &mut twice_requests).await;
    let failovers = shared.failovers.lock().unwrap().clone();
    let mut report = ChaosReport {
        seed: cfg.seed,
        requests: cfg.requests,
        questions: total_questions,
        kills_planned: cfg.kills,
        kills: shared.kills.load(Ordering::SeqCst),
        crash_aborts: shared.crash_aborts.load(Ordering::SeqCst),
        restarts: shared.restarts.load(Ordering::SeqCst),
        gateway_drops: shared.gateway_drops.load(Ordering::SeqCst),
        stalls: shared.stalls.load(Ordering::SeqCst),
        clicks: shared.clicks.load(Ordering::SeqCst),
        clicks_repeated: shared.clicks_repeated.load(Ordering::SeqCst),
        daemon_error_lines: shared.daemon_error_lines.load(Ordering::SeqCst),
        peak_pending,
        nodes,
        database: database.label.clone(),
        cluster: database.cluster,
        leader_kills: shared.leader_kills.load(Ordering::SeqCst),
        lead_moves: shared.lead_moves.load(Ordering::SeqCst),
        failovers: failovers.len(),
        longest_failover: failovers.iter().max().copied(),
        ..audit
    };
    // None: the spec is absent and the check skipped (said once, on stderr and in the list of
    // skipped tests).
    let validator = Validator::load_or_skip();
    if let Err(e) = &validator {
        shared.problem(format!("cannot check the bodies Discord received: {e}"));
    }
    for r in standin.requests_from(0) {
        match r.status {
            500..=599 => report.injected_5xx += 1,
            429 => report.injected_429 += 1,
            _ => {}
        }
        // Every body, also those of retries, reposts after a kill and edits at start-up.
        if let (Ok(Some(v)), Some(body)) = (&validator, &r.body) {
            report.bodies_checked += 1;
            if let Err(why) = v.check(&r.method, &r.path, body) {
                report.bodies_invalid += 1;
                shared.problem(format!(
                    "{} {} sent an invalid body: {}",
                    r.method,
                    r.path,
                    why.join("; ")
                ));
            }
        }
    }

    // Posted messages: one per (request key, question), never more.
    let created = standin.created_messages_from(0);
    let mut per_question: BTreeMap<(String, usize, u64), Vec<u64>> = BTreeMap::new();
    for m in &created {
        let id: u64 = m["id"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0);
        let channel: u64 = m["channel_id"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let key = m["components"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|row| row["components"].as_array().into_iter().flatten())
            .find_map(|c| c["custom_id"].as_str().and_then(custom_id::parse))
            .map(|c| (c.token, c.question, channel));
        match key {
            Some(k) => per_question.entry(k).or_default().push(id),
            None => shared.problem(format!("message {id} was created without any custom_id")),
        }
    }
    report.questions_posted = per_question.keys().filter(|k| k.2 == CHANNEL).count();
    report.copies_posted = per_question.keys().filter(|k| k.2 == COPIES).count();
    // When a message was created, from its snowflake (the stand-in's wall clock).
    let created_at = |id: u64| -> Instant {
        let wall0_ms = wall0
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let ms = (id >> 22) + 1_420_070_400_000;
        t0 + Duration::from_millis(ms.saturating_sub(wall0_ms))
    };
    let mut duplicate_times = Vec::new();
    for ((key, q, channel), ids) in &per_question {
        if ids.len() > 1 {
            duplicate_times.extend(ids[1..].iter().map(|&id| created_at(id)));
            report.duplicates_posted += ids.len() - 1;
            let what = format!(
                "request key {key} question {q} was posted {} times in channel {channel}: messages {ids:?}",
                ids.len()
            );
            if !cfg.dedup && ids.len() == 2 {
                report.duplicates_within_bound += 1;
                shared.note(format!(
                    "{what} (de-duplication off: one copy more, within the bound)"
                ));
            } else {
                shared.problem(what);
            }
        }
    }
    report.messages_not_edited = not_edited.len();
    if !not_edited.is_empty() {
        shared.note(format!(
            "{} message(s) still show their buttons after a graceful restart: {not_edited:?}",
            not_edited.len()
        ));
    }

    // Final lines per request.
    let clicked_all = |ri: usize| {
        clicked.as_ref().is_some_and(|c| {
            (0..plan[ri].questions.len()).all(|q| c.settle_clicked.contains_key(&(ri, q)))
        })
    };
    let mut lost_requests = Vec::new();
    let mut wrong_requests = Vec::new();
    {
        let reqs = shared.reqs.lock().unwrap();
        for (ri, (p, st)) in plan.iter().zip(reqs.iter()).enumerate() {
            report.reattaches += st.connects.saturating_sub(1);
            let distinct: Vec<&String> = {
                let mut seen = Vec::new();
                for l in st.finals.iter().chain(st.replay.iter()) {
                    if !seen.contains(&l) {
                        seen.push(l);
                    }
                }
                seen
            };
            let key = clicked
                .as_ref()
                .and_then(|c| (0..p.questions.len()).find_map(|q| c.keys.get(&(ri, q)).cloned()));
            let who = match key {
                Some(k) => format!("{} (request token {k})", p.request_id),
                None => format!("{} (never posted)", p.request_id),
            };
            if st.finals.is_empty() {
                report.unfinished += 1;
                shared.problem(format!(
                    "{who}: no final line; {} connection(s), {} accepted",
                    st.connects, st.accepted
                ));
            }
            if distinct.len() > 1 {
                report.ended_twice += 1;
                shared.problem(format!("{who} ended twice: {distinct:?}"));
            } else if st.second_on_same_connection > 0 {
                shared.problem(format!(
                    "{who}: the same final line came twice on one connection"
                ));
            }
            let is_answer = |l: &&String| l.starts_with("{\"event\":\"answered\"");
            let answered: Vec<&&String> = distinct.iter().filter(|l| is_answer(l)).collect();
            if st.finals.iter().any(|l| is_answer(&l)) {
                report.answered += 1;
            } else if clicked_all(ri) {
                report.answers_lost += 1;
                lost_requests.push(ri);
                shared.problem(format!(
                    "{who}: every question was clicked but its client never got an answer; \
                     it saw {:?}, the final re-attach {:?}",
                    st.finals.first(),
                    st.replay
                ));
            } else if !st.finals.is_empty() {
                shared.problem(format!(
                    "{who}: ended without an answer before every question was clicked: {:?}",
                    st.finals.first()
                ));
            }
            if !answered.is_empty() {
                let wrong = answered.iter().any(|l| {
                    let v: Value = serde_json::from_str(l).unwrap_or(Value::Null);
                    v["request_id"] != p.request_id.as_str()
                        || serde_json::to_string(&v["result"]).ok().as_deref()
                            != Some(p.expected_result.as_str())
                });
                if wrong {
                    report.wrong_answers += 1;
                    wrong_requests.push(ri);
                    shared.problem(format!(
                        "{who}: wrong answer {answered:?}, expected result {}",
                        p.expected_result
                    ));
                }
            }
            for o in &st.odd {
                shared.problem(format!("{who}: {o}"));
            }
        }
    }
    if database.cluster {
        let outcomes = Outcomes {
            injected: &injected,
            planned: &fault_kinds,
            planned_count: fault_plan.len(),
            samples: &session_samples,
            measured_until,
            duplicate_times: &duplicate_times,
            nonce_reuses: standin
                .nonce_reuses()
                .iter()
                .map(|n| created_at(n.message_id))
                .collect(),
            lost: &lost_requests,
            wrong: &wrong_requests,
            twice: &twice_requests,
            clicked: clicked.as_ref(),
            plan: &plan,
        };
        outcomes.fill(&mut report, &standin, &shared);
        report.dedup = cfg.dedup;
        report.failover_secs = failover.as_secs();
    }
    report.elapsed = t0.elapsed();
    {
        let errors = shared.daemon_errors.lock().unwrap();
        for e in errors.iter() {
            shared.note(format!("daemon error line: {e}"));
        }
    }
    report.problems = shared.problems.lock().unwrap().clone();
    report.notes = shared.notes.lock().unwrap().clone();
    let keep = cfg.keep_dir || (cfg.keep_dir_on_failure && !report.ok());
    if let Some(scratch) = database.scratch {
        if keep {
            report.notes.push(format!(
                "the scratch database {} was kept; drop it with `DROP DATABASE \"{}\"`",
                redact_url(&scratch.url),
                scratch.name
            ));
            // Not dropped: Drop would drop it.
            std::mem::forget(scratch);
        } else if let Err(e) = scratch.drop_now().await {
            report
                .notes
                .push(format!("cannot drop the scratch database: {e:#}"));
        }
    }
    if keep {
        report.workdir = Some(dir.keep());
    }
    report
}
