//! Items 3 and 4: the daemon binary, so that its RSS is its own: the capacity of one daemon
//! holding many pending asks, and the start-up with a backlog of pending rows.

use super::helpers::{answer_line, ask_line, bounded, connect, expect_event};
use super::report::{CapacityReport, StartupReport};
use super::STEP_LIMIT;
use askrelay::client::Client;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A daemon process (terminal answerer, no Discord) on `dir`; killed when dropped.
pub(super) struct DaemonProc {
    child: Child,
    pub(super) socket: PathBuf,
}

impl DaemonProc {
    fn spawn(bin: &Path, dir: &Path) -> DaemonProc {
        Self::spawn_with(bin, dir, &[])
    }

    /// With more environment (or some replaced).
    pub(super) fn spawn_with(bin: &Path, dir: &Path, extra: &[(&str, String)]) -> DaemonProc {
        assert!(
            bin.exists(),
            "bench: the daemon binary {} does not exist (cargo build --release --bin askrelay)",
            bin.display()
        );
        let socket = dir.join("askrelay.sock");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("daemon.log"))
            .unwrap();
        let child = Command::new(bin)
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("ASKRELAY_SOCKET_PATH", &socket)
            .env(
                "ASKRELAY_DATABASE_URL",
                format!("sqlite://{}", dir.join("state/askrelay.db").display()),
            )
            .env("ASKRELAY_TERMINAL__ENABLED", "true")
            .env("ASKRELAY_CANCEL_GRACE_SECS", "3600")
            .env("ASKRELAY_RESTART_GRACE_SECS", "3600")
            .env("ASKRELAY_LOG", "warn")
            // One local user asks everything here.
            .env("ASKRELAY_LIMITS__MAX_PENDING_PER_UID", "1000000")
            .envs(extra.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("bench: cannot start {}: {e}", bin.display()));
        DaemonProc { child, socket }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the daemon answers `health`; returns the number of pending requests.
    pub(super) async fn wait_serving(&mut self) -> usize {
        let deadline = Instant::now() + STEP_LIMIT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("bench: the daemon exited early: {status} (see its daemon.log)");
            }
            if let Ok(mut c) = Client::connect(&self.socket).await {
                if let Ok(Ok(v)) =
                    tokio::time::timeout(STEP_LIMIT, c.call_json(&json!({"op": "health"}))).await
                {
                    return v["pending"].as_u64().unwrap_or(0) as usize;
                }
            }
            assert!(
                Instant::now() < deadline,
                "bench: the daemon did not serve within {} s",
                STEP_LIMIT.as_secs()
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    pub(super) fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("bench: read /proc/PID/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("bench: VmRSS in /proc/PID/status")
    }

    /// SIGKILL: a crash.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and a bounded wait for the graceful shutdown, then SIGKILL.
    pub(super) async fn terminate(&mut self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        if !sent {
            self.kill();
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.kill();
    }
}

impl Drop for DaemonProc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Item 3: `n` clients each ask on their own connection and wait; the daemon's RSS with all of
/// them pending; then 16 connections answer them all through `answer`, and every client must
/// read its `answered` line.
pub(super) async fn capacity(bin: &Path, n: usize) -> CapacityReport {
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = DaemonProc::spawn(bin, dir.path());
    daemon.wait_serving().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss_idle_kib = daemon.rss_kib();
    let socket = daemon.socket.clone();
    let accepted = Arc::new(AtomicUsize::new(0));
    let accepted_note = Arc::new(tokio::sync::Notify::new());
    let connecting = Arc::new(tokio::sync::Semaphore::new(256));
    let mut clients = tokio::task::JoinSet::new();
    for i in 0..n {
        let (socket, accepted, note, connecting) = (
            socket.clone(),
            accepted.clone(),
            accepted_note.clone(),
            connecting.clone(),
        );
        clients.spawn(async move {
            let request_id = format!("cap-{i}");
            let mut c = {
                let _permit = connecting.acquire().await.unwrap();
                let mut c = connect(&socket).await;
                c.send_json(&ask_line(&request_id, None)).await.unwrap();
                expect_event(&mut c, "accepted").await;
                c
            };
            accepted.fetch_add(1, Ordering::SeqCst);
            note.notify_one();
            // Hold the connection until the answer comes.
            let ev = bounded("an answered line", Duration::from_secs(600), c.recv_json()).await;
            let ok = matches!(&ev, Ok(Some(v)) if v["event"] == "answered"
                && v["request_id"] == request_id.as_str()
                && v["result"]["answers"][0]["selected"][0] == "No, keep them");
            (ok, Instant::now())
        });
    }
    bounded(
        "every capacity ask to be accepted",
        Duration::from_secs(600),
        async {
            while accepted.load(Ordering::SeqCst) < n {
                accepted_note.notified().await;
            }
        },
    )
    .await;
    // Let the daemon settle, then take the larger of two readings.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut rss_kib = daemon.rss_kib();
    tokio::time::sleep(Duration::from_millis(500)).await;
    rss_kib = rss_kib.max(daemon.rss_kib());
    eprintln!(
        "bench: {n} pending, daemon RSS {:.1} MiB",
        rss_kib as f64 / 1024.0
    );

    let t0 = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut answerers = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (socket, next) = (socket.clone(), next.clone());
        answerers.spawn(async move {
            let mut c = connect(&socket).await;
            let mut failed = 0usize;
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    return failed;
                }
                let reply = bounded(
                    "an answer reply",
                    STEP_LIMIT,
                    c.call_json(&answer_line(&format!("cap-{i}"))),
                )
                .await;
                match reply {
                    Ok(v) if v["event"] == "answer_accepted" => {}
                    other => {
                        eprintln!("bench: answering cap-{i} failed: {other:?}");
                        failed += 1;
                    }
                }
            }
        });
    }
    while let Some(r) = answerers.join_next().await {
        let _ = r.expect("bench: an answering task panicked");
    }
    let mut delivered = 0;
    let mut last = t0;
    while let Some(r) = clients.join_next().await {
        let (ok, at) = r.expect("bench: a capacity client panicked");
        if ok {
            delivered += 1;
            last = last.max(at);
        }
    }
    daemon.terminate().await;
    CapacityReport {
        pending: n,
        rss_idle_kib,
        rss_kib,
        answer_time: last.saturating_duration_since(t0),
        lost: n - delivered,
    }
}

/// Item 4: a first daemon takes `n` asks (pipelined over 10 connections) and is SIGKILLed with
/// all of them pending; a second one is timed from spawn to its first reply.
pub(super) async fn startup(bin: &Path, n: usize) -> StartupReport {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut first = DaemonProc::spawn(bin, dir.path());
        first.wait_serving().await;
        let lanes = 10.min(n.max(1));
        let mut fill = tokio::task::JoinSet::new();
        for lane in 0..lanes {
            let socket = first.socket.clone();
            let ids: Vec<usize> = (lane..n).step_by(lanes).collect();
            fill.spawn(async move {
                let mut c = connect(&socket).await;
                for i in &ids {
                    c.send_json(&ask_line(&format!("backlog-{i}"), None))
                        .await
                        .unwrap();
                }
                for _ in &ids {
                    expect_event(&mut c, "accepted").await;
                }
                c
            });
        }
        let mut held = Vec::new();
        while let Some(c) = fill.join_next().await {
            held.push(c.expect("bench: a backlog client panicked"));
        }
        first.kill();
    }
    let t0 = Instant::now();
    let mut second = DaemonProc::spawn(bin, dir.path());
    let socket = second.socket.clone();
    let deadline = t0 + STEP_LIMIT;
    let (to_connect, mut c) = loop {
        // A stale socket file from the killed daemon refuses connections until the new one
        // replaces it.
        if let Ok(c) = Client::connect(&socket).await {
            break (t0.elapsed(), c);
        }
        assert!(
            Instant::now() < deadline,
            "bench: the daemon did not listen within {} s",
            STEP_LIMIT.as_secs()
        );
        if let Ok(Some(status)) = second.child.try_wait() {
            panic!("bench: the daemon exited early: {status}");
        }
        tokio::task::yield_now().await;
    };
    let health = bounded(
        "the first health reply",
        STEP_LIMIT,
        c.call_json(&json!({"op": "health"})),
    )
    .await
    .expect("bench: health");
    let to_serve = t0.elapsed();
    let pending_reported = health["pending"].as_u64().unwrap_or(0) as usize;
    second.terminate().await;
    StartupReport {
        backlog: n,
        to_connect,
        to_serve,
        pending_reported,
    }
}
