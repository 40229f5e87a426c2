//! The socket front end: a Unix socket speaking newline-delimited JSON (SPEC §2).
//!
//! Each connection reads lines, turns each into an [`Op`] and runs it; asks run concurrently and
//! their events go through one writer task, so one connection can carry several asks at once.
//! Closing the connection drops its attachments, which starts the hub's cancel grace period.

pub mod framing;
mod outbox;

use crate::config::Config;
use crate::core::{AskError, ErrorCode, Hub, Peer, Phase};
use crate::protocol::{self, Event, Op};
use crate::store::{AuditEntry, SettleOutcome};
use anyhow::{bail, Context, Result};
use framing::{Frame, LineReader};
use serde_json::json;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Binds the socket at `path` with `mode`. A stale socket file from a crashed run is replaced;
/// a live daemon on the path is an error.
pub async fn bind(path: &Path, mode: u32) -> Result<UnixListener> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create the socket directory {}", dir.display()))?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
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

/// What every connection needs.
#[derive(Clone)]
pub struct ServerContext {
    pub hub: Hub,
    pub config: Arc<Config>,
    pub shutdown: CancellationToken,
    pub tasks: TaskTracker,
}

/// Accepts connections until shutdown. At most `limits.max_connections` are served at once;
/// one more gets a `BUSY` error line and is closed, so a flood of idle connections cannot
/// starve the daemon of file descriptors.
pub async fn serve(listener: UnixListener, ctx: ServerContext, socket_path: PathBuf) {
    tracing::info!(path = %socket_path.display(), "listening");
    let slots = Arc::new(tokio::sync::Semaphore::new(
        ctx.config.limits.max_connections,
    ));
    loop {
        tokio::select! {
            _ = ctx.shutdown.cancelled() => break,
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

/// Writes one error line and closes, without waiting long on a client that does not read.
async fn refuse(mut stream: UnixStream, error: AskError) {
    let mut line = Event::Error {
        request_id: None,
        error,
    }
    .to_line();
    line.push('\n');
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(1),
        stream.write_all(line.as_bytes()),
    )
    .await;
}

async fn handle_connection(stream: UnixStream, ctx: ServerContext) {
    let peer = match stream.peer_cred() {
        Ok(c) => Peer {
            uid: Some(c.uid()),
            pid: c.pid(),
        },
        Err(_) => Peer::default(),
    };
    tracing::debug!(?peer, "connection opened");
    let allowed = &ctx.config.allowed_uids;
    if !allowed.is_empty() && !peer.uid.is_some_and(|u| allowed.contains(&u)) {
        let who = peer
            .uid
            .map_or("an unknown user".to_owned(), |u| format!("uid {u}"));
        tracing::warn!(?peer, "connection refused: not in allowed_uids");
        // Boxed, like `run_op` below: a rare path that should not size every connection's task.
        Box::pin(ctx.hub.audit(AuditEntry {
            source: "socket",
            actor: Some(format!(
                "uid={} pid={}",
                peer.uid.map_or("?".into(), |u| u.to_string()),
                peer.pid.map_or("?".into(), |p| p.to_string())
            )),
            action: "connect",
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
    let (tx, mut rx) = outbox::outbox();
    let writer = tokio::spawn(async move {
        while let Some(mut line) = rx.recv().await {
            line.push('\n');
            if wr.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let mut reader = LineReader::new(rd, ctx.config.limits.max_line_bytes).with_line_timeout(
        std::time::Duration::from_secs(ctx.config.limits.line_timeout_secs),
    );
    let mut asks = JoinSet::new();
    loop {
        let frame = tokio::select! {
            _ = ctx.shutdown.cancelled() => break,
            Some(_) = asks.join_next(), if !asks.is_empty() => continue,
            f = reader.next() => f,
        };
        match frame {
            Ok(Frame::Line(line)) => {
                match protocol::parse_line(&line, ctx.config.limits.max_questions) {
                    Ok(Op::Ask(ask)) => {
                        let (hub, tx) = (ctx.hub.clone(), tx.clone());
                        asks.spawn(run_ask(hub, ask, peer, tx));
                    }
                    Ok(op) => {
                        // Boxed: inline, the state of every operation would be part of every
                        // connection's task, and each waiting agent holds one.
                        let event = Box::pin(run_op(&ctx.hub, op, peer)).await;
                        let _ = tx.send(event.to_line());
                    }
                    Err(bad) => {
                        tracing::debug!(error = %bad.error, "bad line");
                        let _ = tx.send(
                            Event::Error {
                                request_id: bad.request_id,
                                error: bad.error,
                            }
                            .to_line(),
                        );
                    }
                }
            }
            Ok(Frame::TooLong) => {
                let _ = tx.send(
                    Event::Error {
                        request_id: None,
                        error: AskError::invalid(format!(
                            "the line is longer than limits.max_line_bytes ({} bytes) and was skipped",
                            ctx.config.limits.max_line_bytes
                        )),
                    }
                    .to_line(),
                );
            }
            Ok(Frame::TimedOut) => {
                let _ = tx.send(
                    Event::Error {
                        request_id: None,
                        error: AskError::invalid(format!(
                            "a line was started but not finished within limits.line_timeout_secs ({} s); closing the connection",
                            ctx.config.limits.line_timeout_secs
                        )),
                    }
                    .to_line(),
                );
                break;
            }
            Ok(Frame::Eof) | Err(_) => break,
        }
    }
    // Dropping the asks drops their attachments: the hub's grace period starts.
    asks.shutdown().await;
    drop(tx);
    let _ = writer.await;
    tracing::debug!(?peer, "connection closed");
}

/// Follows one ask to its final line.
async fn run_ask(hub: Hub, ask: crate::core::Ask, peer: Peer, tx: outbox::LineTx) {
    let given_id = ask.request_id.clone();
    // Boxed, and `phase` below in a block of its own: this task lives as long as the agent
    // waits, so only what the wait needs should size it.
    let mut att = match Box::pin(hub.ask(ask, peer)).await {
        Ok(att) => att,
        Err(error) => {
            let _ = tx.send(
                Event::Error {
                    request_id: given_id,
                    error,
                }
                .to_line(),
            );
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
                                detail,
                            }
                            .to_line(),
                        );
                    }
                }
                Phase::Ended(outcome) => {
                    let _ = tx.send(Event::final_line(&att.request_id, &outcome).to_line());
                    return;
                }
            }
        }
        if att.phase.changed().await.is_err() {
            let last = att.phase.borrow().clone();
            let event = match last {
                Phase::Ended(outcome) => Event::final_line(&att.request_id, &outcome),
                _ => Event::Error {
                    request_id: Some(att.request_id.clone()),
                    error: AskError::new(ErrorCode::Internal, "the daemon is shutting down"),
                },
            };
            let _ = tx.send(event.to_line());
            return;
        }
    }
}

/// Runs a supervision operation and returns its one reply.
async fn run_op(hub: &Hub, op: Op, peer: Peer) -> Event {
    let uid = peer.uid.map_or("?".to_owned(), |u| u.to_string());
    match op {
        Op::Ask(_) => unreachable!("asks are handled by run_ask"),
        Op::Cancel { request_id, reason } => {
            let reason = reason.unwrap_or_else(|| format!("cancelled by a client (uid {uid})"));
            match hub
                .cancel(&request_id, &reason, &format!("uid={uid}"))
                .await
            {
                Ok(()) => Event::Cancelled { request_id },
                Err(error) => Event::Error {
                    request_id: Some(request_id),
                    error,
                },
            }
        }
        Op::Pending => match views(hub, hub.store().pending_requests().await).await {
            Ok(requests) => Event::Report {
                event: "pending",
                body: json!({ "requests": requests }),
            },
            Err(e) => internal(None, &e),
        },
        Op::History { limit } => match views(hub, hub.store().history(limit).await).await {
            Ok(requests) => Event::Report {
                event: "history",
                body: json!({ "requests": requests }),
            },
            Err(e) => internal(None, &e),
        },
        Op::Health => Event::Report {
            event: "health",
            body: json!({
                "version": env!("CARGO_PKG_VERSION"),
                "pending": hub.pending_count(),
                "answerers": hub.answerer_names(),
            }),
        },
        Op::Answer {
            request_id,
            question,
            select,
            custom,
            by,
        } => {
            let by = format!(
                "{} (uid {uid})",
                by.filter(|b| !b.trim().is_empty())
                    .unwrap_or_else(|| "terminal".into())
            );
            match hub
                .answer_by_labels(&request_id, &question, &select, custom, &by, "terminal")
                .await
            {
                Ok(SettleOutcome::Won { result }) => Event::AnswerAccepted {
                    request_id,
                    question,
                    request_answered: result.is_some(),
                },
                Ok(SettleOutcome::AlreadyAnswered(a)) => {
                    let what = match hub.request(&request_id).await {
                        Ok(req) => req
                            .questions
                            .iter()
                            .find(|q| q.id == question)
                            .map(|q| {
                                let qa = crate::core::QuestionAnswer::build(q, &a.settlement);
                                serde_json::to_string(&qa).unwrap_or_default()
                            })
                            .unwrap_or_default(),
                        Err(_) => String::new(),
                    };
                    Event::Error {
                        request_id: Some(request_id),
                        error: AskError::new(
                            ErrorCode::Conflict,
                            format!(
                                "question {question:?} was already answered by {} via {} at {}: {what}",
                                a.by,
                                a.via,
                                protocol::rfc3339(a.at_ms)
                            ),
                        ),
                    }
                }
                Ok(SettleOutcome::Ended(status)) => Event::Error {
                    request_id: Some(request_id.clone()),
                    error: AskError::new(
                        ErrorCode::Conflict,
                        format!(
                            "request {request_id:?} has ended ({}); the answer did not count",
                            status.as_str()
                        ),
                    ),
                },
                Ok(SettleOutcome::Unknown) => Event::Error {
                    request_id: Some(request_id.clone()),
                    error: AskError::invalid(format!("unknown request_id {request_id:?}")),
                },
                Err(error) => Event::Error {
                    request_id: Some(request_id),
                    error,
                },
            }
        }
    }
}

/// The supervision view of each request, with where its questions were posted.
async fn views(
    hub: &Hub,
    reqs: anyhow::Result<Vec<crate::store::StoredRequest>>,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let mut out = Vec::new();
    for r in reqs? {
        let posts = hub.store().all_posts(r.key).await?;
        out.push(protocol::request_view(&r, &posts));
    }
    Ok(out)
}

fn internal(request_id: Option<String>, e: &anyhow::Error) -> Event {
    tracing::error!(error = %format!("{e:#}"), "operation failed");
    Event::Error {
        request_id,
        error: AskError::internal(e),
    }
}
