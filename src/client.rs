//! The client side of the socket, shared by the CLI and the MCP front end: typed operations
//! and events ([`Client`]), and an ask that follows its request to the end, re-attaching when
//! the daemon restarts ([`AskSession`]).
//!
//! A client only talks to a daemon that runs as itself, root, or the configured `daemon_uid`: a
//! socket that another user put in its path could otherwise answer every question "yes". The
//! proof is the connected socket's peer credentials (SO_PEERCRED), read after connecting, since
//! whoever can write the socket's directory can swap the path between any check and the
//! connect; a socket directory that another user owns or may write is refused outright.

use crate::domain::{Ask, AskError, ErrorCode};
use crate::protocol::{Accepted, Event, Op};
use crate::server::framing::{Frame, LineReader};
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
    /// ([`socket_candidates`](crate::config::socket_candidates)); more than one is refused,
    /// naming them all, rather than asking one of them at random.
    pub fn from_config(config_file: Option<&Path>) -> Result<Target> {
        let keys = crate::config::ClientKeys::load(config_file)?;
        let socket = match &keys.socket_path {
            Some(p) => p.clone(),
            None => the_live_one(crate::config::socket_candidates())?,
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

    fn refuse(&self, what: String) -> std::io::Error {
        let me = nix::unistd::geteuid().as_raw();
        std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{what}, which is neither you (uid {me}), root, nor daemon_uid; refusing to talk \
                 to it (set daemon_uid if the daemon runs as that user)"
            ),
        )
    }

    /// Checks the socket's directory: owned by a user trusted as the daemon, and writable by
    /// nobody else (a sticky directory of root's, such as /tmp, lets nobody replace an entry
    /// they do not own, and what is connected to there is checked by its credentials).
    fn check_dir(&self) -> std::io::Result<()> {
        let dir = match self.socket.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let meta = std::fs::metadata(dir)?;
        let owner = meta.uid();
        if !self.trusts(owner) {
            return Err(self.refuse(format!(
                "the socket's directory {} belongs to uid {owner}",
                dir.display()
            )));
        }
        let shared_sticky = owner == 0 && meta.mode() & 0o1000 != 0;
        if meta.mode() & 0o022 != 0 && !shared_sticky {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "the socket's directory {} is writable by other users (mode {:o}), who \
                     could put their own socket there; refusing to use it",
                    dir.display(),
                    meta.mode() & 0o7777
                ),
            ));
        }
        Ok(())
    }

    /// Checks the connected socket itself: the process at the other end must run as a user
    /// trusted as the daemon.
    fn check_peer(&self, stream: &UnixStream) -> std::io::Result<()> {
        let uid = stream.peer_cred()?.uid();
        if self.trusts(uid) {
            return Ok(());
        }
        Err(self.refuse(format!(
            "the daemon on {} runs as uid {uid}",
            self.socket.display()
        )))
    }
}

/// The one candidate a daemon listens at (a connect that is accepted); the first when none
/// does, so that the error names where the daemon is expected.
fn the_live_one(candidates: Vec<PathBuf>) -> Result<PathBuf> {
    let live: Vec<&PathBuf> = candidates
        .iter()
        .filter(|p| std::os::unix::net::UnixStream::connect(p).is_ok())
        .collect();
    match live.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Ok(candidates[0].clone()),
        many => {
            let names: Vec<String> = many.iter().map(|p| p.display().to_string()).collect();
            anyhow::bail!(
                "more than one askrelay daemon is listening ({}); say which with \
                 ASKRELAY_SOCKET_PATH or socket_path in --config",
                names.join(", ")
            )
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
        target.check_dir()?;
        let stream = UnixStream::connect(&target.socket).await?;
        target.check_peer(&stream)?;
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
}

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
                })) => return AskUpdate::Accepted { answerer, detail },
                Ok(Some(Event::Answered { result, .. })) => return AskUpdate::Answered(result),
                Ok(Some(Event::Error { code, message, .. })) => {
                    return AskUpdate::Failed(AskError::new(code, message))
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
        loop {
            if let Ok(mut c) = Client::connect_to(&self.target).await {
                if c.send(&self.op).await.is_ok() {
                    self.client = Some(c);
                    self.lost_until = None;
                    return Some(AskUpdate::Reattached);
                }
            }
            if Instant::now() + delay > deadline {
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
}
