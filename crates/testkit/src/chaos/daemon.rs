//! The daemon process: starting `askrelay serve` (one node of a cluster, or the only one),
//! waiting for it to listen, SIGKILL and SIGTERM, and asking a node whether it leads.

use super::clients::says_it_leads;
use super::cluster_faults::{self, NodeHandle, FAKETIME_LIB};
use super::faults::STALL_DEADLINE;
use super::shared::Shared;
use super::{CHANNEL, START_LIMIT, STOP_LIMIT};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;
use tokio::time::{timeout, Instant};

pub(super) struct DaemonCtl {
    pub(super) bin: PathBuf,
    pub(super) socket: PathBuf,
    pub(super) db_url: String,
    pub(super) base_url: String,
    /// Its cluster node id (`cluster.node_id`), the same across its restarts; `None` alone on
    /// SQLite.
    pub(super) node: Option<String>,
    pub(super) log: Arc<Mutex<std::fs::File>>,
    pub(super) child: Option<Child>,
    pub(super) crash_at: Option<&'static str>,
    /// Set by the log reader when this instance said it aborts at its crash point.
    pub(super) aborted_on_purpose: Arc<AtomicBool>,
    /// The task copying this instance's stderr to the log; it ends at the process's exit.
    pub(super) pump: Option<tokio::task::JoinHandle<()>>,
    pub(super) started_at: Instant,
    pub(super) instance: u64,
    /// Set by the log reader while this instance says it leads the cluster ("leading the
    /// cluster" until "stepping down"): where the leader is when `health` does not answer.
    pub(super) leading: Arc<AtomicBool>,
    /// What the cluster fault task needs of this node (pid, skew, proxy).
    pub(super) handle: Arc<NodeHandle>,
    /// `cluster.failover_secs`, when the run sets it.
    pub(super) failover_secs: Option<u64>,
    pub(super) shared: Arc<Shared>,
}

impl DaemonCtl {
    /// How its log lines and messages name an instance: `#3`, or `node-2 #3` in a cluster.
    pub(super) fn name(&self, instance: u64) -> String {
        match &self.node {
            Some(node) => format!("{node} #{instance}"),
            None => format!("#{instance}"),
        }
    }

    /// Starts `askrelay serve` and waits (bounded) until it says it listens.
    pub(super) async fn start(&mut self, crash_at: Option<&'static str>) -> Result<(), String> {
        self.instance += 1;
        let n = self.instance;
        let name = self.name(n);
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        let mut cmd = Command::new(&self.bin);
        cmd.arg("serve")
            .arg("--config")
            .arg(self.socket.with_file_name("chaos.toml"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("ASKRELAY_SOCKET_PATH", &self.socket)
            .env("ASKRELAY_DATABASE_URL", &self.db_url)
            .env(
                "ASKRELAY_DISCORD__TOKEN",
                "MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.chaos-bot-token",
            )
            .env("ASKRELAY_DISCORD__API_BASE", &self.base_url)
            .env("ASKRELAY_DISCORD__CHANNEL_ID", CHANNEL.to_string())
            .env("ASKRELAY_DISCORD__RETRY_MAX_DELAY_MS", "200")
            // Short deadlines, so that the stall faults (longer than these) are met as
            // hung calls.
            .env(
                "ASKRELAY_DISCORD__REQUEST_TIMEOUT_MS",
                STALL_DEADLINE.as_millis().to_string(),
            )
            .env("ASKRELAY_DISCORD__CALLBACK_TIMEOUT_MS", "300")
            .env("ASKRELAY_DISCORD__REPAIR_INTERVAL_SECS", "1")
            .env("ASKRELAY_CANCEL_GRACE_SECS", "600")
            .env("ASKRELAY_RESTART_GRACE_SECS", "3600")
            .env("ASKRELAY_TERMINAL__ENABLED", "false")
            .env("ASKRELAY_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(node) = &self.node {
            cmd.env("ASKRELAY_CLUSTER__NODE_ID", node);
            if let Some(secs) = self.failover_secs {
                cmd.env("ASKRELAY_CLUSTER__FAILOVER_SECS", secs.to_string());
            }
        }
        if let Some(file) = &self.handle.faketime {
            // Under libfaketime, with the offset in a file the skew fault rewrites (read again
            // every second). The monotonic clock stays true: only the wall clock (what a lease
            // on local time would read) moves.
            cmd.env("LD_PRELOAD", FAKETIME_LIB)
                .env("FAKETIME_TIMESTAMP_FILE", file)
                .env(
                    "FAKETIME_CACHE_DURATION",
                    cluster_faults::FAKETIME_CACHE.as_secs().to_string(),
                )
                .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        }
        if let Some(point) = crash_at {
            cmd.env(askrelay::crash::ENV, point);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.bin.display()))?;
        let pid = child.id().unwrap_or(0);
        self.handle.pid.store(pid, Ordering::SeqCst);
        self.shared.log(format!(
            "daemon {name} started (pid {pid}{})",
            crash_at.map_or(String::new(), |p| format!(", crash point {p}"))
        ));
        let stderr = child.stderr.take().expect("stderr is piped");
        let (listening_tx, listening_rx) = oneshot::channel::<()>();
        let aborted = Arc::new(AtomicBool::new(false));
        self.aborted_on_purpose = aborted.clone();
        let leading = Arc::new(AtomicBool::new(false));
        self.leading = leading.clone();
        *self.handle.leading.lock().unwrap() = leading.clone();
        let log = self.log.clone();
        let shared = self.shared.clone();
        {
            let mut f = log.lock().unwrap();
            let _ = writeln!(
                f,
                "[{name}] ===== start (pid {pid}, crash point {crash_at:?}) ====="
            );
        }
        self.pump = Some(tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            let mut listening = Some(listening_tx);
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains(": listening") {
                    if let Some(tx) = listening.take() {
                        let _ = tx.send(());
                    }
                }
                if line.contains("aborting here on purpose") {
                    aborted.store(true, Ordering::SeqCst);
                }
                if line.contains("leading the cluster") {
                    leading.store(true, Ordering::SeqCst);
                } else if line.contains("stepping down") {
                    leading.store(false, Ordering::SeqCst);
                }
                if line.contains(" ERROR ") {
                    shared.daemon_error_lines.fetch_add(1, Ordering::Relaxed);
                    let mut e = shared.daemon_errors.lock().unwrap();
                    if e.len() < 10 {
                        e.push(format!("{name}: {line}"));
                    }
                }
                let mut f = log.lock().unwrap();
                let _ = writeln!(f, "[{name}] {line}");
            }
        }));
        self.child = Some(child);
        self.crash_at = crash_at;
        self.started_at = Instant::now();
        match timeout(START_LIMIT, listening_rx).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => {
                let status = self.reap().await;
                Err(format!(
                    "daemon {} exited before listening ({status})",
                    self.name(n)
                ))
            }
            Err(_) => {
                self.kill().await;
                Err(format!(
                    "daemon {} did not say \"listening\" within {} s",
                    self.name(n),
                    START_LIMIT.as_secs()
                ))
            }
        }
    }

    /// Waits for an exiting child (bounded) and describes how it ended.
    async fn reap(&mut self) -> String {
        let Some(mut child) = self.child.take() else {
            return "not running".into();
        };
        self.handle.pid.store(0, Ordering::SeqCst);
        match timeout(Duration::from_secs(10), child.wait()).await {
            Ok(Ok(s)) => describe(s),
            Ok(Err(e)) => format!("wait failed: {e}"),
            Err(_) => {
                let _ = child.start_kill();
                let _ = timeout(Duration::from_secs(10), child.wait()).await;
                "did not exit; killed".into()
            }
        }
    }

    /// SIGKILL and wait until the process is gone.
    pub(super) async fn kill(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
        let status = self.reap().await;
        self.shared.log(format!(
            "daemon {} killed ({status})",
            self.name(self.instance)
        ));
    }

    /// SIGTERM, and SIGKILL if it does not stop in time. Returns a problem if it did not stop
    /// cleanly.
    pub(super) async fn terminate(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        let pid = child.id()?;
        let name = self.name(self.instance);
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        if !sent.is_ok_and(|s| s.success()) {
            self.kill().await;
            return Some(format!("cannot send SIGTERM to daemon {name}"));
        }
        let mut child = self.child.take().expect("checked above");
        self.handle.pid.store(0, Ordering::SeqCst);
        match timeout(STOP_LIMIT, child.wait()).await {
            Ok(Ok(s)) if s.success() => None,
            Ok(Ok(s)) => Some(format!(
                "daemon {name} ended badly after SIGTERM: {}",
                describe(s)
            )),
            Ok(Err(e)) => Some(format!("waiting for daemon {name}: {e}")),
            Err(_) => {
                let _ = child.start_kill();
                let _ = timeout(Duration::from_secs(10), child.wait()).await;
                Some(format!(
                    "daemon {name} did not stop within {} s of SIGTERM",
                    STOP_LIMIT.as_secs()
                ))
            }
        }
    }

    /// Whether this instance leads its cluster now: what its `health` says, or, when it does
    /// not answer in time, what its log last said.
    pub(super) async fn is_leader(&self) -> bool {
        if self.child.is_none() {
            return false;
        }
        match says_it_leads(&self.socket).await {
            Some(leads) => leads,
            None => self.leading.load(Ordering::SeqCst),
        }
    }
}

pub(super) fn describe(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => "unknown status".into(),
    }
}
