//! The socket front end: a Unix socket speaking newline-delimited JSON (docs/contract.md, "Socket protocol").
//!
//! Each connection reads lines, turns each into an [`Op`] and runs it; asks run concurrently and
//! their events go through one writer task, so one connection can carry several asks at once.
//! Who the client is comes from its peer credentials (uid, pid, and the uid's user name), never
//! from what it writes. Closing the connection drops its attachments, which starts the hub's
//! cancel grace period.

mod send_queue;

use crate::config::Config;
use crate::domain::hub::TerminalAnswer;
use crate::domain::request::{AuditAction, AuditEntry, Source};
use crate::domain::store::Page;
use crate::domain::text::Escaped;
use crate::domain::{AskError, ErrorCode, Hub, LocalUser, Operators, Peer, Phase, SettleOutcome};
use crate::protocol::framing::{Frame, LineReader};
use crate::protocol::{self, Event, Op, OutboxBacklog, RequestView};
use anyhow::{bail, Context, Result};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Binds the socket at `path` with `mode`. The directory is created owner-only when missing,
/// and refused when another user owns it or others may write to it. A stale socket file from a
/// crashed run is replaced; a live daemon on the path is an error.
pub async fn bind(path: &Path, mode: u32) -> Result<UnixListener> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        prepare_dir(dir)?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => match UnixStream::connect(path).await {
            Ok(_) => bail!(
                "another askrelay daemon is already listening on {}; stop it first or set a \
                 different socket_path",
                path.display()
            ),
            Err(_) => {
                tracing::info!(path = %path.display(), "replacing a stale socket file from an earlier run");
                std::fs::remove_file(path).with_context(|| {
                    format!("cannot remove the stale socket file {}", path.display())
                })?;
            }
        },
        Ok(_) => bail!(
            "{} exists and is not a socket; refusing to replace it (check socket_path)",
            path.display()
        ),
        Err(_) => {}
    }
    let listener =
        UnixListener::bind(path).with_context(|| format!("cannot listen on {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set the mode of {}", path.display()))?;
    Ok(listener)
}

/// The socket's directory: created 0700 when missing. One that another user owns, or that
/// others may write to without the sticky bit, could hold a fake daemon's socket: refused.
fn prepare_dir(dir: &Path) -> Result<()> {
    if !dir.exists() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the socket directory {}", dir.display()))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        return Ok(());
    }
    let meta = std::fs::metadata(dir)
        .with_context(|| format!("cannot read the socket directory {}", dir.display()))?;
    let me = nix::unistd::geteuid().as_raw();
    let mode = meta.mode();
    let sticky = mode & 0o1000 != 0;
    if meta.uid() != me && meta.uid() != 0 {
        bail!(
            "the socket directory {} belongs to uid {}, not to this user (uid {me}); another \
             user could replace the socket: choose a socket_path in a directory of your own",
            dir.display(),
            meta.uid()
        );
    }
    if mode & 0o022 != 0 && !sticky {
        bail!(
            "the socket directory {} is writable by other users; choose a socket_path in a \
             private directory (mode 0700)",
            dir.display()
        );
    }
    Ok(())
}

/// What every connection needs.
#[derive(Clone)]
pub struct ServerContext {
    pub hub: Hub,
    pub config: Arc<Config>,
    pub operators: Arc<Operators>,
    pub names: Arc<UserNames>,
    pub shutdown: CancellationToken,
    pub tasks: TaskTracker,
}

/// Accepts connections until shutdown. At most `limits.max_connections` are served at once;
/// one more gets a `BUSY` error line and is closed, so a flood of idle connections cannot
/// starve the daemon of file descriptors.
///
/// Every [`SOCKET_CHECK`] it also checks that the socket file is still the one it listens on: a
/// file deleted under the daemon (a cleanup of /tmp or /run, a careless `rm`) would leave it
/// running and healthy but out of every client's reach. A deleted file is bound again, as at
/// start-up; a path that now holds another file is left alone, and said once.
pub async fn serve(mut listener: UnixListener, ctx: ServerContext, socket_path: PathBuf) {
    // Taken before "listening" is said: from then on a deletion is one to notice.
    let mut watch = SocketWatch::start(&socket_path);
    tracing::info!(path = %socket_path.display(), "listening");
    let slots = Arc::new(tokio::sync::Semaphore::new(
        ctx.config.limits.max_connections,
    ));
    let mut check = tokio::time::interval(SOCKET_CHECK);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ctx.shutdown.cancelled() => break,
            _ = check.tick() => {
                if let Some(rebound) = watch.check(&socket_path, ctx.config.socket_mode.0).await {
                    listener = rebound;
                }
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let ctx2 = ctx.clone();
                    match slots.clone().try_acquire_owned() {
                        Ok(permit) => {
                            ctx.tasks.spawn(async move {
                                handle_connection(stream, ctx2).await;
                                drop(permit);
                            });
                        }
                        Err(_) => {
                            let max = ctx.config.limits.max_connections;
                            tracing::warn!(max, "connection refused: limits.max_connections reached");
                            ctx.tasks.spawn(refuse(stream, AskError::new(
                                ErrorCode::Busy,
                                format!("the daemon already serves {max} connections (limits.max_connections); try again later"),
                            )));
                        }
                    }
                }
                Err(e) => {
                    // EMFILE and friends: log, back off a little, keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
        }
    }
}

/// How often [`serve`] looks at its socket file: a stat call, cheap enough to make the gap a
/// deleted socket leaves short.
const SOCKET_CHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// Which file a path holds: its device and inode, the identity a replaced file does not keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SocketFile {
    dev: u64,
    ino: u64,
}

impl SocketFile {
    /// The file at `path` now; `None` when there is none (or it cannot be read).
    fn of(path: &Path) -> Option<SocketFile> {
        std::fs::symlink_metadata(path).ok().map(|m| SocketFile {
            dev: m.dev(),
            ino: m.ino(),
        })
    }
}

/// What [`serve`] knows of its socket file, so that each change is logged once, not at every
/// check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SocketWatch {
    /// The path holds the socket this daemon listens on.
    Ours(SocketFile),
    /// The path is empty and binding it again failed (said once); tried again at each check.
    Gone,
    /// The path holds a file that is not ours (said once): another daemon's socket, or one put
    /// there by hand. Not ours to remove; bound again only once it is gone.
    Foreign,
}

impl SocketWatch {
    fn start(path: &Path) -> SocketWatch {
        SocketFile::of(path).map_or(SocketWatch::Gone, SocketWatch::Ours)
    }

    /// One check of the path. Returns a new listener when the path was empty and has been
    /// bound again (owner-only directory and `mode`, as at start-up).
    async fn check(&mut self, path: &Path, mode: u32) -> Option<UnixListener> {
        let now = SocketFile::of(path);
        match (*self, now) {
            (SocketWatch::Ours(ours), Some(there)) if ours == there => None,
            (SocketWatch::Ours(_) | SocketWatch::Gone, Some(_)) => {
                tracing::error!(
                    path = %path.display(),
                    "the socket file was replaced by another file; clients reach that file now, \
                     not this daemon (it binds the path again once the path is empty)"
                );
                *self = SocketWatch::Foreign;
                None
            }
            (SocketWatch::Foreign, Some(_)) => None,
            (was, None) => {
                if was != SocketWatch::Gone {
                    tracing::warn!(path = %path.display(), "the socket file was deleted; binding it again");
                }
                match bind(path, mode).await {
                    Ok(listener) => {
                        *self = SocketWatch::start(path);
                        tracing::info!(path = %path.display(), "socket file recreated; listening");
                        Some(listener)
                    }
                    Err(e) => {
                        if was != SocketWatch::Gone {
                            tracing::error!(
                                path = %path.display(),
                                error = %format!("{e:#}"),
                                "cannot recreate the socket file; clients cannot reach this \
                                 daemon until it can (tried again every few seconds)"
                            );
                        }
                        *self = SocketWatch::Gone;
                        None
                    }
                }
            }
        }
    }
}

/// Writes one error line and closes, without waiting long on a client that does not read.
async fn refuse(mut stream: UnixStream, error: AskError) {
    let mut line = Event::error(None, error).to_line();
    line.push('\n');
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(1),
        stream.write_all(line.as_bytes()),
    )
    .await;
}

/// Local user names by uid: the passwd database is read once per uid, not once per connection
/// (each agent opens one per question).
#[derive(Default)]
pub struct UserNames(std::sync::Mutex<std::collections::HashMap<u32, Option<String>>>);

impl UserNames {
    fn name(&self, uid: u32) -> Option<String> {
        if let Some(n) = self.0.lock().unwrap().get(&uid) {
            return n.clone();
        }
        let name = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
            .ok()
            .flatten()
            .map(|u| u.name);
        self.0.lock().unwrap().insert(uid, name.clone());
        name
    }
}

/// Who is on the other end, from SO_PEERCRED and the passwd database.
fn local_user(stream: &UnixStream, operators: &Operators, names: &UserNames) -> LocalUser {
    let peer = match stream.peer_cred() {
        Ok(c) => Peer {
            uid: Some(c.uid()),
            pid: c.pid(),
        },
        Err(_) => Peer::default(),
    };
    let name = peer.uid.and_then(|u| names.name(u));
    LocalUser {
        peer,
        name,
        operator: operators.contains(peer.uid),
    }
}

async fn handle_connection(stream: UnixStream, ctx: ServerContext) {
    let user = local_user(&stream, &ctx.operators, &ctx.names);
    let peer = user.peer;
    tracing::debug!(%peer, "connection opened");
    let allowed = &ctx.config.allowed_uids;
    if !allowed.is_empty() && !peer.uid.is_some_and(|u| allowed.contains(&u)) {
        let who = peer
            .uid
            .map_or("an unknown user".to_owned(), |u| format!("uid {u}"));
        tracing::warn!(%peer, "connection refused: not in allowed_uids");
        // Boxed, like `run_op` below: a rare path that should not size every connection's task.
        Box::pin(ctx.hub.audit(AuditEntry {
            source: Source::Socket,
            actor: Some(peer.audit(None)),
            action: AuditAction::Connect,
            detail: Some("not in allowed_uids".into()),
            accepted: false,
            ..Default::default()
        }))
        .await;
        Box::pin(refuse(
            stream,
            AskError::new(
                ErrorCode::Forbidden,
                format!("{who} may not use this askrelay daemon (allowed_uids)"),
            ),
        ))
        .await;
        return;
    }
    let (rd, mut wr) = stream.into_split();
    let (tx, mut rx) = send_queue::send_queue(ctx.config.limits.max_output_bytes);
    // Cancelled when the client stops reading its replies: the connection is then closed,
    // even while a write to it is blocked on a full socket.
    let stalled = tx.overflow();
    let writer = {
        let stalled = stalled.clone();
        tokio::spawn(async move {
            // Ends when the connection closes or the client went over its budget.
            while let send_queue::Next::Line(mut line) = rx.recv().await {
                line.push('\n');
                tokio::select! {
                    r = wr.write_all(line.as_bytes()) => if r.is_err() { break },
                    _ = stalled.cancelled() => break,
                }
            }
        })
    };
    let mut reader = LineReader::new(rd, ctx.config.limits.max_line_bytes).with_line_timeout(
        std::time::Duration::from_secs(ctx.config.limits.line_timeout_secs),
    );
    let mut asks = JoinSet::new();
    loop {
        let frame = tokio::select! {
            _ = ctx.shutdown.cancelled() => break,
            _ = stalled.cancelled() => {
                tracing::warn!(%peer, "disconnecting a client that does not read its replies (limits.max_output_bytes)");
                break;
            }
            Some(_) = asks.join_next(), if !asks.is_empty() => continue,
            f = reader.next() => f,
        };
        match frame {
            Ok(Frame::Line(line)) => {
                match protocol::parse_line(&line, ctx.config.limits.max_questions) {
                    Ok(Op::Ask(ask)) => {
                        let (hub, tx) = (ctx.hub.clone(), tx.clone());
                        asks.spawn(run_ask(hub, Box::new(ask), peer, tx));
                    }
                    Ok(op) => {
                        // Boxed: inline, the state of every operation would be part of every
                        // connection's task, and each waiting agent holds one.
                        let event = Box::pin(run_op(&ctx, op, &user)).await;
                        let _ = tx.send(event.to_line());
                    }
                    Err(bad) => {
                        tracing::debug!(error = %Escaped(&bad.error.message), "bad line");
                        ctx.hub.recorder().failed(bad.error.code);
                        let _ = tx.send(Event::error(bad.request_id, bad.error).to_line());
                    }
                }
            }
            Ok(Frame::TooLong) => {
                let _ = tx.send(
                    Event::error(
                        None,
                        AskError::invalid(format!(
                            "the line is longer than limits.max_line_bytes ({} bytes) and was skipped",
                            ctx.config.limits.max_line_bytes
                        )),
                    )
                    .to_line(),
                );
            }
            Ok(Frame::TimedOut) => {
                let _ = tx.send(
                    Event::error(
                        None,
                        AskError::invalid(format!(
                            "a line was started but not finished within limits.line_timeout_secs ({} s); closing the connection",
                            ctx.config.limits.line_timeout_secs
                        )),
                    )
                    .to_line(),
                );
                break;
            }
            Ok(Frame::Eof) | Err(_) => break,
        }
    }
    if ctx.shutdown.is_cancelled() {
        // The asks send their `shutting_down` lines before the connection closes.
        while asks.join_next().await.is_some() {}
    }
    // Dropping the asks drops their attachments: the hub's grace period starts.
    asks.shutdown().await;
    drop(tx);
    let _ = writer.await;
    tracing::debug!(%peer, "connection closed");
}

/// Follows one ask to its final line.
async fn run_ask(hub: Hub, ask: Box<crate::domain::Ask>, peer: Peer, tx: send_queue::LineTx) {
    let given_id = ask.request_id.clone();
    // The ask boxed (a task's state holds its arguments until it first runs), the asking
    // boxed, and `phase` below in a block of its own: this task lives as long as the agent
    // waits, so only what the wait needs should size it. The ask's box is freed as the asking
    // starts (`let boxed = ask; *boxed`): moved out of in place (`*ask`), a box in an async
    // function is freed only when the function ends.
    let mut att = match Box::pin(hub.ask(
        {
            let boxed = ask;
            *boxed
        },
        peer,
    ))
    .await
    {
        Ok(att) => att,
        Err(error) => {
            let _ = tx.send(Event::error(given_id, error).to_line());
            return;
        }
    };
    let mut accepted_sent = false;
    loop {
        {
            let phase = att.phase.borrow_and_update().clone();
            match phase {
                Phase::Offering => {}
                Phase::Accepted { answerer, detail } => {
                    if !accepted_sent {
                        accepted_sent = true;
                        let _ = tx.send(
                            Event::Accepted {
                                request_id: att.request_id.clone(),
                                answerer,
                                detail: detail.get(),
                            }
                            .to_line(),
                        );
                    }
                }
                Phase::Ended(outcome) => {
                    let _ = tx.send(Event::final_line(&att.request_id, &outcome).to_line());
                    return;
                }
                Phase::ShuttingDown => {
                    let _ = tx.send(
                        Event::ShuttingDown {
                            request_id: att.request_id.clone(),
                        }
                        .to_line(),
                    );
                    return;
                }
            }
        }
        if att.phase.changed().await.is_err() {
            let last = att.phase.borrow().clone();
            let event = match last {
                Phase::Ended(outcome) => Event::final_line(&att.request_id, &outcome),
                _ => Event::ShuttingDown {
                    request_id: att.request_id.clone(),
                },
            };
            let _ = tx.send(event.to_line());
            return;
        }
    }
}

/// Runs a supervision operation and returns its one reply.
async fn run_op(ctx: &ServerContext, op: Op, user: &LocalUser) -> Event {
    let hub = &ctx.hub;
    match op {
        Op::Ask(_) => unreachable!("asks are handled by run_ask"),
        Op::Cancel { request_id, reason } => match hub.cancel(&request_id, reason, user).await {
            Ok(()) => Event::Cancelled { request_id },
            Err(error) => Event::error(Some(request_id), error),
        },
        Op::Withdraw {
            reason,
            session,
            call,
            request_id,
            agent,
            event,
        } => {
            let Some(reason) = crate::domain::hub::WithdrawReason::parse(&reason) else {
                return Event::error(None, crate::domain::AskError::invalid("reason: unknown"));
            };
            let m = crate::domain::hub::WithdrawMatch {
                session,
                call,
                request_id,
                agent,
                event,
            };
            match hub.withdraw(reason, &m, user).await {
                Ok(ids) => Event::Withdrawn {
                    ended: ids.len(),
                    request_ids: ids,
                },
                Err(e) => Event::error(None, e),
            }
        }
        Op::OnceGrant { request_id } => match hub.mint_once_grant(&request_id, user).await {
            Ok(grant) => Event::OnceGrant { grant },
            Err(e) => Event::error(Some(request_id), e),
        },
        Op::UseOnceGrant { session, call } => {
            match hub.use_once_grant(&session, &call, user).await {
                Ok(grant) => Event::OnceGrantUsed { grant },
                Err(e) => Event::error(None, e),
            }
        }
        Op::Pending {
            request_id: Some(id),
            ..
        } => match hub.request_for(&id, user).await {
            Ok(req) if req.status == crate::domain::Status::Pending => {
                match hub.posts_of(&req).await {
                    Ok(posts) => Event::Pending {
                        requests: vec![RequestView::new(&req, &posts)],
                        next: None,
                        outbox: None,
                    },
                    Err(e) => Event::error(None, e),
                }
            }
            Ok(_) => Event::Pending {
                requests: Vec::new(),
                next: None,
                outbox: None,
            },
            Err(e) => Event::error(Some(id), e),
        },
        Op::Pending {
            request_id: None,
            limit,
            after,
        } => {
            let page = Page {
                limit: limit.unwrap_or(protocol::PENDING_PAGE_DEFAULT),
                after: after.as_deref().and_then(protocol::parse_cursor),
            };
            match hub.pending(user, page).await {
                Ok(reqs) => {
                    let next = next_cursor(&reqs, page);
                    // Said on the first page only.
                    let outbox = match page.after {
                        None => OutboxBacklog::of(hub).await.filter(|b| b.overdue > 0),
                        Some(_) => None,
                    };
                    Event::Pending {
                        requests: reqs.iter().map(|(r, p)| RequestView::new(r, p)).collect(),
                        next,
                        outbox,
                    }
                }
                Err(e) => Event::error(None, e),
            }
        }
        Op::History { limit, before } => {
            let page = Page {
                limit: limit.unwrap_or(protocol::HISTORY_PAGE_DEFAULT),
                after: before.as_deref().and_then(protocol::parse_cursor),
            };
            match hub.history(user, page).await {
                Ok(reqs) => {
                    let next = next_cursor(&reqs, page);
                    Event::History {
                        requests: reqs.iter().map(|(r, p)| RequestView::new(r, p)).collect(),
                        next,
                    }
                }
                Err(e) => Event::error(None, e),
            }
        }
        Op::Health => Event::Health(hub.health().await),
        Op::Grants => match hub.live_grants().await {
            // A grant names who asked and who approved: an operator sees every one, anyone
            // else those for their uid or approved from their terminal.
            Ok(grants) => Event::Grants {
                grants: grants
                    .into_iter()
                    .filter(|g| {
                        user.operator
                            || user.peer.uid.is_some_and(|uid| {
                                g.uid == uid || g.approved_by("terminal", &uid.to_string())
                            })
                    })
                    .collect(),
            },
            Err(e) => Event::error(None, e),
        },
        Op::RevokeGrant { grant } => {
            let actor = crate::domain::Actor::local(user.peer.uid, user.name.clone(), None);
            match hub.revoke_grant(&grant, &actor, user.operator).await {
                Ok(grant) => Event::Revoked { grant },
                Err(e) => Event::error(None, e),
            }
        }
        Op::AuditExport {
            since_ms,
            limit,
            after,
        } => {
            let limit = limit.unwrap_or(protocol::AUDIT_PAGE_DEFAULT);
            let after = after.as_deref().and_then(protocol::parse_cursor);
            match hub.audit_export(user, since_ms, after, limit).await {
                Ok((start, page)) => {
                    let rows = page.rows;
                    let next = (rows.len() as u32 == limit)
                        .then(|| rows.last().map(|r| r.row.id.to_string()))
                        .flatten();
                    Event::Audit {
                        start,
                        rows,
                        next,
                        head: Some(page.head),
                    }
                }
                Err(e) => Event::error(None, e),
            }
        }
        Op::Answer {
            request_id,
            question,
            select,
            custom,
            by,
            confirm,
        } => {
            let answer = TerminalAnswer {
                request_id: request_id.clone(),
                question: question.clone(),
                labels: select,
                custom,
                note: by,
                confirm,
            };
            match hub.answer_from_terminal(answer, user).await {
                Ok(crate::domain::Settled {
                    outcome: SettleOutcome::Won { result },
                    ..
                }) => Event::AnswerAccepted {
                    request_id,
                    question,
                    request_answered: result.is_some(),
                    votes: None,
                },
                Ok(crate::domain::Settled {
                    outcome: SettleOutcome::Voted(t),
                    ..
                }) => Event::AnswerAccepted {
                    request_id,
                    question,
                    request_answered: false,
                    votes: Some(protocol::VoteCount {
                        count: t.count,
                        needed: t.needed,
                    }),
                },
                Ok(crate::domain::Settled {
                    outcome: SettleOutcome::AlreadyVoted(t),
                    ..
                }) => Event::error(
                    Some(request_id),
                    AskError::new(
                        ErrorCode::Conflict,
                        format!(
                            "you already voted for this answer to question {:?} ({} of {} \
                             approvals); it settles when {} more chose the same",
                            Escaped(&question),
                            t.count,
                            t.needed,
                            t.needed.saturating_sub(t.count)
                        ),
                    ),
                ),
                Ok(crate::domain::Settled {
                    outcome: SettleOutcome::AlreadyAnswered(a),
                    request: req,
                }) => {
                    let what = req
                        .questions
                        .iter()
                        .find(|q| q.id == question)
                        .map(|q| {
                            let qa = crate::domain::QuestionAnswer::build(q, &a.settlement);
                            serde_json::to_string(&qa).unwrap_or_default()
                        })
                        .unwrap_or_default();
                    Event::error(
                        Some(request_id),
                        AskError::new(
                            ErrorCode::Conflict,
                            format!(
                                "question {:?} was already answered by {} at {}: {what}",
                                Escaped(&question),
                                a.actor.describe(),
                                crate::domain::clock::rfc3339(a.at_ms)
                            ),
                        ),
                    )
                }
                Ok(crate::domain::Settled {
                    outcome: SettleOutcome::Ended(status),
                    ..
                }) => Event::error(
                    Some(request_id.clone()),
                    AskError::new(
                        ErrorCode::Conflict,
                        format!(
                            "request {:?} has ended ({}); the answer did not count",
                            Escaped(&request_id),
                            status.as_str()
                        ),
                    ),
                ),
                Ok(crate::domain::Settled {
                    outcome: SettleOutcome::Unknown,
                    ..
                }) => Event::error(
                    Some(request_id.clone()),
                    AskError::invalid(format!("unknown request_id {:?}", Escaped(&request_id))),
                ),
                Err(error) => Event::error(Some(request_id), error),
            }
        }
    }
}

/// The cursor of the page after `reqs`, when the page was full.
fn next_cursor<T>(reqs: &[(crate::domain::Request, T)], page: Page) -> Option<String> {
    if reqs.len() < page.limit as usize {
        return None;
    }
    reqs.last().map(|(r, _)| r.key.to_string())
}
