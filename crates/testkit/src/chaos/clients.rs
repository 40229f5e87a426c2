//! The clients: ask, re-attach after every restart, record the final lines; and the last
//! re-attach of every request at the end of a run.

use super::plan::PlannedRequest;
use super::shared::Shared;
use super::{Rng, HEALTH_LIMIT, REPLAY_LIMIT};
use askrelay::client::Client;
use askrelay::protocol::{Event, Op};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{sleep, sleep_until, timeout, Instant};

/// The socket of the node request `i` asks on: requests are dealt to the nodes in turn, and
/// each stays with its node (it owns the request).
pub(super) fn node_socket(sockets: &[PathBuf], i: usize) -> &Path {
    &sockets[i % sockets.len()]
}

pub(super) async fn client(
    i: usize,
    line: String,
    socket: PathBuf,
    shared: Arc<Shared>,
    mut rng: Rng,
    start: Instant,
) {
    let mut stop = shared.stop.subscribe();
    tokio::select! {
        _ = sleep_until(start) => {}
        _ = stop.wait_for(|&s| s) => return,
    }
    let mut backoff = 10u64;
    loop {
        if *stop.borrow() {
            return;
        }
        let connected = timeout(Duration::from_secs(5), Client::connect(&socket)).await;
        let mut c = match connected {
            Ok(Ok(c)) => c,
            _ => {
                let wait = Duration::from_millis(backoff + rng.below(backoff / 2 + 1));
                backoff = (backoff * 2).min(300);
                tokio::select! {
                    _ = sleep(wait) => continue,
                    _ = stop.wait_for(|&s| s) => return,
                }
            }
        };
        if c.send_raw(line.as_bytes()).await.is_err() {
            continue;
        }
        shared.reqs.lock().unwrap()[i].connects += 1;
        let mut final_here = false;
        loop {
            let got = tokio::select! {
                r = c.recv_line() => r,
                _ = stop.wait_for(|&s| s) => return,
            };
            let text = match got {
                Ok(Some(t)) => t,
                Ok(None) | Err(_) => break,
            };
            let v: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(_) => {
                    shared.reqs.lock().unwrap()[i]
                        .odd
                        .push(format!("not JSON: {text}"));
                    continue;
                }
            };
            match v["event"].as_str() {
                Some("accepted") => {
                    backoff = 10;
                    let mut reqs = shared.reqs.lock().unwrap();
                    reqs[i].accepted += 1;
                    if final_here {
                        reqs[i]
                            .odd
                            .push(format!("accepted after the final line: {text}"));
                    }
                }
                Some("answered") | Some("error") => {
                    shared.record_final(i, &text, final_here);
                    final_here = true;
                }
                // A graceful stop (a cluster node restarted without its crash point): the
                // request stays pending, the connection closes, and the client re-attaches.
                Some("shutting_down") if !final_here => {}
                _ => shared.reqs.lock().unwrap()[i]
                    .odd
                    .push(format!("unexpected line: {text}")),
            }
        }
        if final_here || shared.reqs.lock().unwrap()[i].finished {
            return;
        }
        let wait = Duration::from_millis(backoff + rng.below(backoff / 2 + 1));
        backoff = (backoff * 2).min(300);
        tokio::select! {
            _ = sleep(wait) => {}
            _ = stop.wait_for(|&s| s) => return,
        }
    }
}

/// At the end: every request once more, on its node; an ended request replays its final line
/// only.
pub(super) async fn replay_all(
    plan: &Arc<Vec<PlannedRequest>>,
    sockets: &[PathBuf],
    shared: &Arc<Shared>,
) {
    let mut tasks = Vec::new();
    for i in 0..plan.len() {
        let plan = plan.clone();
        let socket = node_socket(sockets, i).to_path_buf();
        let shared = shared.clone();
        tasks.push(tokio::spawn(async move {
            let rid = plan[i].request_id.clone();
            let work = async {
                let mut c = Client::connect(&socket)
                    .await
                    .map_err(|e| format!("cannot connect: {e}"))?;
                c.send_raw(plan[i].ask_line.as_bytes())
                    .await
                    .map_err(|e| format!("cannot send: {e}"))?;
                let mut seen = Vec::new();
                loop {
                    match c.recv_line().await {
                        Ok(Some(text)) => {
                            let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                            match v["event"].as_str() {
                                Some("answered") | Some("error") => return Ok((text, seen)),
                                _ => seen.push(text),
                            }
                        }
                        Ok(None) => return Err(format!("the connection closed after {seen:?}")),
                        Err(e) => return Err(format!("{e:#}")),
                    }
                }
            };
            match timeout(REPLAY_LIMIT, work).await {
                Ok(Ok((text, before))) => {
                    if !before.is_empty() {
                        shared.problem(format!(
                            "{rid}: the re-attach after the end got {before:?} before its final line \
                             (an ended request replays its final line only)"
                        ));
                    }
                    let mut reqs = shared.reqs.lock().unwrap();
                    reqs[i].replay = Some(text);
                }
                Ok(Err(e)) => shared.problem(format!("{rid}: the final re-attach failed: {e}")),
                Err(_) => shared.problem(format!(
                    "{rid}: the final re-attach got no final line within {} s",
                    REPLAY_LIMIT.as_secs()
                )),
            }
        }));
    }
    for t in tasks {
        if let Err(e) = t.await {
            shared.problem(format!("a re-attach task failed: {e}"));
        }
    }
}

/// Whether the daemon on `socket` says (`health`) that it leads its cluster; `None` when it
/// does not answer within [`HEALTH_LIMIT`].
pub(super) async fn says_it_leads(socket: &Path) -> Option<bool> {
    let asked = timeout(HEALTH_LIMIT, async {
        let mut c = Client::connect(socket).await.ok()?;
        match c.call(&Op::Health).await.ok()? {
            Event::Health(h) => Some(h),
            _ => None,
        }
    })
    .await;
    match asked {
        Ok(Some(h)) => Some(h.cluster.is_some_and(|c| c.role == "leader")),
        _ => None,
    }
}
