//! The client side of the socket, shared by the CLI and the MCP front end: typed operations
//! and events ([`Client`]), and an ask that follows its request to the end, re-attaching when
//! the daemon restarts ([`AskSession`]).
//!
//! A client only talks to a daemon that runs as itself, root, or the configured `daemon_uid`: a
//! socket that another user put in its path could otherwise answer every question "yes". The
//! proof is the connected socket's peer credentials (SO_PEERCRED), read after connecting, since
//! whoever can write the socket's directory can swap the path between any check and the
//! connect; a socket directory that another user owns or may write is refused outright. A
//! client looking for the daemon at the default places counts only the ones that pass these
//! checks, so a socket another user plants there cannot make it refuse to choose.

use crate::domain::{Ask, AskError, ErrorCode};
use crate::protocol::framing::{Frame, LineReader};
use crate::protocol::{Accepted, Event, Op};
use anyhow::{bail, Context, Result};
use serde_json::value::RawValue;
use serde_json::Value;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tokio::time::Instant;

/// Replies are bounded too, but generously: a page of `history` can be large.
const MAX_REPLY_BYTES: usize = 64 * 1024 * 1024;

/// Where the daemon is, and whom to trust there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub socket: PathBuf,
    /// The daemon's uid when it is another user (a system service).
    pub daemon_uid: Option<u32>,
}

impl Target {
    /// Finds the daemon the way the daemon itself does: the defaults, then `--config FILE`,
    /// then the `ASKRELAY_*` environment (`ASKRELAY_SOCKET_PATH`, `ASKRELAY_DAEMON_UID`), the
    /// later winning (`config::ClientKeys`).
    /// Without a configured socket, the daemon that listens at one of the default places
    /// ([`socket_candidates`](crate::config::socket_candidates)) and passes the checks of a real
    /// connection ([`Client::connect_to`]); more than one is refused, naming them all, rather
    /// than asking one of them at random. A default place skipped because it failed those checks
    /// is named on stderr, one line each (`askrelay: skipped PATH: why`): for the hooks and
    /// `askrelay mcp` that is where their agent or MCP client shows or logs it, and stdout stays
    /// theirs.
    pub async fn from_config(config_file: Option<&Path>) -> Result<Target> {
        let keys = crate::config::ClientKeys::load(config_file)?;
        let socket = match &keys.socket_path {
            Some(p) => p.clone(),
            None => {
                let candidates = crate::config::socket_candidates();
                let found = Found::look(&candidates, keys.daemon_uid).await;
                for (path, why) in &found.skipped {
                    eprintln!("askrelay: skipped {}: {why}", path.display());
                }
                found.the_live_one(candidates)?
            }
        };
        Ok(Target {
            socket,
            daemon_uid: keys.daemon_uid,
        })
    }

    pub fn new(socket: impl Into<PathBuf>) -> Target {
        Target {
            socket: socket.into(),
            daemon_uid: None,
        }
    }

    /// Whether `uid` may be the daemon: this user, root, or `daemon_uid`.
    fn trusts(&self, uid: u32) -> bool {
        uid == nix::unistd::geteuid().as_raw() || uid == 0 || Some(uid) == self.daemon_uid
    }

    /// Connects after checking the socket's directory, then checks who answered: the one way
    /// every client, and the search for the daemon, reaches a daemon.
    async fn open(&self) -> std::result::Result<UnixStream, Refused> {
        self.check_dir()?;
        let stream = UnixStream::connect(&self.socket).await?;
        let uid = stream.peer_cred()?.uid();
        if !self.trusts(uid) {
            return Err(Refused::Untrusted(Untrusted::Peer { uid }));
        }
        Ok(stream)
    }

    /// Checks the socket's directory: owned by a user trusted as the daemon, and writable by
    /// nobody else (a sticky directory of root's, such as /tmp, lets nobody replace an entry
    /// they do not own, and what is connected to there is checked by its credentials).
    fn check_dir(&self) -> std::result::Result<(), Refused> {
        let dir = match self.socket.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let meta = std::fs::metadata(dir)?;
        let owner = meta.uid();
        if !self.trusts(owner) {
            return Err(Refused::Untrusted(Untrusted::DirOwner {
                dir: dir.to_path_buf(),
                uid: owner,
            }));
        }
        let shared_sticky = owner == 0 && meta.mode() & 0o1000 != 0;
        if meta.mode() & 0o022 != 0 && !shared_sticky {
            return Err(Refused::Untrusted(Untrusted::DirWritable {
                dir: dir.to_path_buf(),
                mode: meta.mode() & 0o7777,
            }));
        }
        Ok(())
    }

    /// The error a client reports when it refuses the daemon (it exits 7, the daemon cannot be
    /// reached): what is wrong, and, for a user it does not trust, how to trust it.
    fn refusal(&self, why: Untrusted) -> std::io::Error {
        let me = nix::unistd::geteuid().as_raw();
        let untrusted = |what: String| {
            format!(
                "{what}, which is neither you (uid {me}), root, nor daemon_uid; refusing to talk \
                 to it (set daemon_uid if the daemon runs as that user)"
            )
        };
        let message = match why {
            Untrusted::DirOwner { dir, uid } => untrusted(format!(
                "the socket's directory {} belongs to uid {uid}",
                dir.display()
            )),
            Untrusted::DirWritable { dir, mode } => format!(
                "the socket's directory {} is writable by other users (mode {mode:o}), who could \
                 put their own socket there; refusing to use it",
                dir.display()
            ),
            Untrusted::Peer { uid } => untrusted(format!(
                "the daemon on {} runs as uid {uid}",
                self.socket.display()
            )),
        };
        std::io::Error::new(std::io::ErrorKind::PermissionDenied, message)
    }
}

/// Why [`Target::open`] did not give a connection to a trusted daemon.
#[derive(Debug)]
enum Refused {
    /// Nothing listens there, or not for this user (no such directory, no socket, a stale
    /// socket file, a socket this user may not open).
    Io(std::io::Error),
    /// Something is there, and a check says it may not be the daemon.
    Untrusted(Untrusted),
}

impl From<std::io::Error> for Refused {
    fn from(e: std::io::Error) -> Refused {
        Refused::Io(e)
    }
}

/// What a check found wrong with a would-be daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Untrusted {
    /// The socket's directory belongs to a user not trusted as the daemon.
    DirOwner { dir: PathBuf, uid: u32 },
    /// Group or others may write the socket's directory (and it is no sticky one of root's).
    DirWritable { dir: PathBuf, mode: u32 },
    /// The process that accepted the connection runs as a user not trusted as the daemon.
    Peer { uid: u32 },
}

/// Said after the path it is about (`askrelay: skipped PATH: …`).
impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let me = nix::unistd::geteuid().as_raw();
        match self {
            Untrusted::DirOwner { uid, .. } => write!(
                f,
                "its directory belongs to uid {uid}, which is neither you (uid {me}), root, nor \
                 daemon_uid"
            ),
            Untrusted::DirWritable { mode, .. } => {
                write!(
                    f,
                    "its directory is writable by other users (mode {mode:o})"
                )
            }
            Untrusted::Peer { uid } => write!(
                f,
                "the daemon there runs as uid {uid}, which is neither you (uid {me}), root, nor \
                 daemon_uid"
            ),
        }
    }
}

/// What looking at the default places found. Only paths are kept: the connection that showed a
/// daemon is closed at once (nothing is sent on it), and the one the client then uses is made
/// again by [`Client::connect_to`], through the same checks, so a socket swapped in between is
/// refused there.
#[derive(Debug, Default, PartialEq, Eq)]
struct Found {
    /// Where a trusted daemon accepted a connection, in the candidates' order.
    live: Vec<PathBuf>,
    /// Where something is that the checks refused, and why.
    skipped: Vec<(PathBuf, Untrusted)>,
}

impl Found {
    /// Tries each candidate as a real connection would, with `daemon_uid` trusted.
    async fn look(candidates: &[PathBuf], daemon_uid: Option<u32>) -> Found {
        let mut found = Found::default();
        for path in candidates {
            let target = Target {
                socket: path.clone(),
                daemon_uid,
            };
            match target.open().await {
                Ok(stream) => {
                    drop(stream);
                    found.live.push(path.clone());
                }
                Err(Refused::Untrusted(why)) => {
                    // A directory is refused before connecting, as a real connection refuses
                    // it: named only when something is at the path, a socket that would have
                    // been tried.
                    let connected = matches!(why, Untrusted::Peer { .. });
                    if connected || std::fs::symlink_metadata(path).is_ok() {
                        found.skipped.push((path.clone(), why));
                    }
                }
                Err(Refused::Io(_)) => {}
            }
        }
        found
    }

    /// The one live candidate; the first candidate when none is, so that the error names where
    /// the daemon is expected.
    fn the_live_one(mut self, mut candidates: Vec<PathBuf>) -> Result<PathBuf> {
        match self.live.len() {
            1 => Ok(self.live.swap_remove(0)),
            0 => Ok(candidates.swap_remove(0)),
            _ => {
                let names: Vec<String> =
                    self.live.iter().map(|p| p.display().to_string()).collect();
                bail!(
                    "more than one askrelay daemon is listening ({}); say which with \
                     ASKRELAY_SOCKET_PATH or socket_path in --config",
                    names.join(", ")
                )
            }
        }
    }
}

pub struct Client {
    reader: LineReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Client")
    }
}

impl Client {
    /// Connects to a socket owned by this user or root.
    pub async fn connect(path: &Path) -> std::io::Result<Client> {
        Self::connect_to(&Target::new(path)).await
    }

    /// Connects to the daemon, after checking the socket's directory, and checks who answered.
    pub async fn connect_to(target: &Target) -> std::io::Result<Client> {
        let stream = target.open().await.map_err(|e| match e {
            Refused::Io(e) => e,
            Refused::Untrusted(why) => target.refusal(why),
        })?;
        let (rd, wr) = stream.into_split();
        Ok(Client {
            reader: LineReader::new(rd, MAX_REPLY_BYTES),
            writer: wr,
        })
    }

    /// Sends one operation.
    pub async fn send(&mut self, op: &Op) -> std::io::Result<()> {
        let mut line = op.to_line().into_bytes();
        line.push(b'\n');
        self.writer.write_all(&line).await
    }

    /// Sends any JSON value as a line (tests of the raw protocol).
    pub async fn send_json(&mut self, value: &Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(value)?;
        line.push(b'\n');
        self.writer.write_all(&line).await
    }

    /// Sends raw bytes, for tests of bad input.
    pub async fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.writer.write_all(bytes).await
    }

    /// The next line as raw text, or `None` when the daemon closed the connection.
    pub async fn recv_line(&mut self) -> Result<Option<String>> {
        match self.reader.next().await? {
            Frame::Line(l) => Ok(Some(
                String::from_utf8(l).context("the daemon sent a line that is not UTF-8")?,
            )),
            Frame::TooLong => bail!("the daemon sent a line longer than {MAX_REPLY_BYTES} bytes"),
            Frame::Eof => Ok(None),
            Frame::TimedOut => bail!("the daemon stalled in the middle of a line"),
        }
    }

    /// The next event, or `None` when the daemon closed the connection.
    pub async fn recv(&mut self) -> Result<Option<Event>> {
        match self.recv_line().await? {
            Some(l) => Ok(Some(Event::from_line(&l).with_context(|| {
                format!("the daemon sent a line this client does not understand: {l}")
            })?)),
            None => Ok(None),
        }
    }

    /// The next line as a JSON value (tests of the raw protocol).
    pub async fn recv_json(&mut self) -> Result<Option<Value>> {
        match self.recv_line().await? {
            Some(l) => Ok(Some(
                serde_json::from_str(&l).context("the daemon sent a line that is not JSON")?,
            )),
            None => Ok(None),
        }
    }

    /// Sends one operation and reads its one reply.
    pub async fn call(&mut self, op: &Op) -> Result<Event> {
        self.send(op).await?;
        self.recv()
            .await?
            .context("the daemon closed the connection before replying")
    }

    /// [`Client::call`] with JSON values (tests of the raw protocol).
    pub async fn call_json(&mut self, op: &Value) -> Result<Value> {
        self.send_json(op).await?;
        self.recv_json()
            .await?
            .context("the daemon closed the connection before replying")
    }
}

/// What happened to an ask, as [`AskSession::next`] reports it.
#[derive(Debug)]
pub enum AskUpdate {
    /// Stored and handed to an answerer (again after a re-attach).
    Accepted { answerer: String, detail: Accepted },
    /// The daemon went away (or is shutting down); reconnecting for up to `window`.
    Lost { window: Duration },
    /// Connected again and re-sent the ask with the same request id.
    Reattached,
    /// The daemon could not store the ask (its database did not answer): nothing changed, and
    /// the ask is sent again with the same request id, backing off, for up to `window` from
    /// the first such error.
    Retrying { error: AskError, window: Duration },
    /// The result (docs/contract.md, "Result JSON"), byte for byte as the daemon sent it.
    Answered(Box<RawValue>),
    /// The final error (or the daemon did not come back: `INTERNAL`).
    Failed(AskError),
}

/// One ask followed to its final line, re-attaching with the same request id when the daemon
/// restarts, for up to `reconnect`.
pub struct AskSession {
    target: Target,
    op: Op,
    request_id: String,
    client: Option<Client>,
    reconnect: Duration,
    /// Set while reconnecting: when to give up.
    lost_until: Option<Instant>,
    /// Set while the daemon answers that it cannot store the ask: when to give up, the last
    /// such error, and the wait before the next try.
    retrying: Option<(Instant, AskError, Duration)>,
}

/// The first wait before an ask the daemon could not store is sent again, and the longest.
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(5);

impl AskSession {
    /// Connects and sends the ask. The ask must carry its request id (re-attaching needs it).
    pub async fn start(target: Target, ask: Ask, reconnect: Duration) -> std::io::Result<Self> {
        Self::start_on(None, target, ask, reconnect).await
    }

    /// [`AskSession::start`] on a connection made ahead of time, when there is one and it still
    /// takes the ask (a daemon restarted since leaves it closed); on a new one otherwise.
    pub async fn start_on(
        spare: Option<Client>,
        target: Target,
        ask: Ask,
        reconnect: Duration,
    ) -> std::io::Result<Self> {
        let request_id = ask
            .request_id
            .clone()
            .expect("an AskSession's ask carries its request id");
        let op = Op::Ask(ask);
        let sent = match spare {
            Some(mut c) => c.send(&op).await.ok().map(|()| c),
            None => None,
        };
        let client = match sent {
            Some(c) => c,
            None => {
                let mut c = Client::connect_to(&target).await?;
                c.send(&op).await?;
                c
            }
        };
        Ok(AskSession {
            target,
            op,
            request_id,
            client: Some(client),
            reconnect,
            lost_until: None,
            retrying: None,
        })
    }

    pub fn request_id(&self) -> &str {
        &self.request_id
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The next thing that happened. After `Answered` or `Failed` the session is over.
    pub async fn next(&mut self) -> AskUpdate {
        loop {
            let Some(client) = self.client.as_mut() else {
                if let Some(update) = self.reconnect_step().await {
                    return update;
                }
                continue;
            };
            let event = client.recv().await;
            match event {
                Ok(Some(ev)) if ev.request_id().is_some_and(|id| id != self.request_id) => {}
                Ok(Some(Event::Accepted {
                    answerer, detail, ..
                })) => {
                    self.retrying = None;
                    return AskUpdate::Accepted { answerer, detail };
                }
                Ok(Some(Event::Answered { result, .. })) => return AskUpdate::Answered(result),
                Ok(Some(Event::Error {
                    code,
                    message,
                    retry,
                    ..
                })) => {
                    let error = AskError::new(code, message);
                    if !retry {
                        return AskUpdate::Failed(error);
                    }
                    // Nothing was stored: the same ask (the same request id) is sent again,
                    // as after a restart, until the daemon stores it or the window closes.
                    let now = Instant::now();
                    let (until, wait) = match self.retrying.take() {
                        Some((until, _, wait)) => (until, (wait * 2).min(RETRY_MAX)),
                        None => (now + self.reconnect, RETRY_FIRST),
                    };
                    if now + wait > until {
                        return AskUpdate::Failed(error);
                    }
                    self.retrying = Some((until, error.clone(), wait));
                    self.client = None;
                    self.lost_until = Some(until);
                    return AskUpdate::Retrying {
                        error,
                        window: until.saturating_duration_since(now),
                    };
                }
                Ok(Some(Event::ShuttingDown { .. })) | Ok(None) | Err(_) => {
                    self.client = None;
                    self.lost_until = Some(Instant::now() + self.reconnect);
                    return AskUpdate::Lost {
                        window: self.reconnect,
                    };
                }
                Ok(Some(_)) => {}
            }
        }
    }

    /// One step of reconnecting: `Some` when there is something to report.
    async fn reconnect_step(&mut self) -> Option<AskUpdate> {
        let deadline = self
            .lost_until
            .unwrap_or_else(|| Instant::now() + self.reconnect);
        let mut delay = Duration::from_millis(100);
        if let Some((_, _, wait)) = &self.retrying {
            tokio::time::sleep(*wait).await;
        }
        loop {
            if let Ok(mut c) = Client::connect_to(&self.target).await {
                if c.send(&self.op).await.is_ok() {
                    self.client = Some(c);
                    self.lost_until = None;
                    return Some(AskUpdate::Reattached);
                }
            }
            if Instant::now() + delay > deadline {
                if let Some((_, error, _)) = self.retrying.take() {
                    return Some(AskUpdate::Failed(error));
                }
                return Some(AskUpdate::Failed(AskError::new(
                    ErrorCode::Internal,
                    format!(
                        "lost the askrelay daemon at {} and it did not come back within {} s; \
                         request {} may still be pending there (re-run with the same request id \
                         to re-attach)",
                        self.target.socket.display(),
                        self.reconnect.as_secs(),
                        self.request_id
                    ),
                )));
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }

    /// Asks the daemon to cancel the request (on a connection of its own, so this one carries
    /// only the ask's events). The final line still comes through [`AskSession::next`].
    pub async fn cancel(&self, reason: &str) -> Result<Event> {
        let mut c = Client::connect_to(&self.target).await?;
        c.call(&Op::Cancel {
            request_id: self.request_id.clone(),
            reason: Some(reason.to_owned()),
        })
        .await
    }

    /// Withdraws the request: its asker (an agent's hook) goes away without the answer
    /// (`hook_killed`, told by `event`: "SIGTERM"). Like [`AskSession::cancel`], on a
    /// connection of its own; the final line still comes through [`AskSession::next`].
    pub async fn withdraw(&self, event: &str) -> Result<Event> {
        let mut c = Client::connect_to(&self.target).await?;
        c.call(&Op::Withdraw {
            reason: crate::domain::request::WithdrawReason::HookKilled
                .as_str()
                .to_owned(),
            session: None,
            call: None,
            request_id: Some(self.request_id.clone()),
            agent: None,
            event: Some(event.to_owned()),
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use tokio::net::UnixListener;

    /// `name/askrelay.sock` under `root`, its directory made with `mode`, with a listener when
    /// `listen` (kept by the caller) or no socket at all.
    fn place(root: &Path, name: &str, mode: u32, listen: bool) -> (PathBuf, Option<UnixListener>) {
        let dir = root.join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        let socket = dir.join("askrelay.sock");
        let listener = listen.then(|| UnixListener::bind(&socket).unwrap());
        (socket, listener)
    }

    #[tokio::test]
    async fn only_the_places_that_pass_the_checks_count_and_the_others_are_named() {
        let root = tempfile::tempdir().unwrap();
        let (ours, _l1) = place(root.path(), "ours", 0o700, true);
        let (open, _l2) = place(root.path(), "open", 0o777, true);
        let (empty, _) = place(root.path(), "empty", 0o777, false);
        let missing = root.path().join("missing/askrelay.sock");
        // A socket file nobody listens at any more (a daemon that was killed).
        let (stale, l3) = place(root.path(), "stale", 0o700, true);
        drop(l3);
        let candidates = vec![missing.clone(), open.clone(), empty, stale, ours.clone()];
        let found = Found::look(&candidates, None).await;
        assert_eq!(found.live, std::slice::from_ref(&ours));
        assert_eq!(
            found.skipped,
            [(
                open.clone(),
                Untrusted::DirWritable {
                    dir: open.parent().unwrap().to_path_buf(),
                    mode: 0o777
                }
            )]
        );
        assert_eq!(
            found.skipped[0].1.to_string(),
            "its directory is writable by other users (mode 777)"
        );
        assert_eq!(found.the_live_one(candidates).unwrap(), ours);
    }

    #[tokio::test]
    async fn a_directory_of_another_users_counts_only_as_daemon_uid() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: client::tests::a_directory_of_another_users_counts_only_as_daemon_uid: chown needs root");
            return;
        }
        const NOBODY: u32 = 65534;
        let root = tempfile::tempdir().unwrap();
        let (theirs, _l) = place(root.path(), "theirs", 0o755, true);
        nix::unistd::chown(
            theirs.parent().unwrap(),
            Some(nix::unistd::Uid::from_raw(NOBODY)),
            None,
        )
        .unwrap();
        let found = Found::look(std::slice::from_ref(&theirs), None).await;
        assert!(found.live.is_empty(), "{found:?}");
        let (path, why) = &found.skipped[0];
        assert_eq!(path, &theirs);
        let me = nix::unistd::geteuid().as_raw();
        assert_eq!(
            why.to_string(),
            format!(
                "its directory belongs to uid {NOBODY}, which is neither you (uid {me}), root, \
                 nor daemon_uid"
            )
        );
        // The configured daemon_uid is trusted here as everywhere.
        let found = Found::look(std::slice::from_ref(&theirs), Some(NOBODY)).await;
        assert_eq!(found.live, [theirs]);
        assert!(found.skipped.is_empty());
    }

    #[test]
    fn two_live_daemons_are_refused_by_name_and_none_points_at_the_first_place() {
        let a = PathBuf::from("/run/user/1000/askrelay.sock");
        let b = PathBuf::from("/tmp/askrelay-1000/askrelay.sock");
        let found = Found {
            live: vec![a.clone(), b.clone()],
            skipped: vec![],
        };
        let err = found
            .the_live_one(vec![a.clone(), b.clone()])
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("more than one askrelay daemon is listening (/run/user/1000/askrelay.sock, /tmp/askrelay-1000/askrelay.sock)"),
            "{err}"
        );
        assert_eq!(
            Found::default().the_live_one(vec![a.clone(), b]).unwrap(),
            a
        );
    }
}
