//! Socket Mode at `/socket?ticket=…`: the upgrade (a ticket from `apps.connections.open`, good
//! once), one task per connection that sends `hello` and reads the client's acks, the envelopes
//! the tests send, `disconnect` notices and abrupt drops, and what an ack's payload does to a
//! modal (`response_action`). In the HTTP mode ([`super::deliver`]) the envelopes are recorded
//! here as well, and their responses as acks.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::blocks::{check_view, unmodelled_view};
use super::deliver::{self, HttpFailure};
use super::json::{disconnect, hello, view_json};
use super::{Ctx, Shared, SlackStandIn, St, StoredView};

/// What an envelope carries (`type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvelopeType {
    /// Block actions, view submissions and closes, shortcuts.
    Interactive,
    SlashCommands,
    EventsApi,
}

impl EnvelopeType {
    fn as_str(self) -> &'static str {
        match self {
            EnvelopeType::Interactive => "interactive",
            EnvelopeType::SlashCommands => "slash_commands",
            EnvelopeType::EventsApi => "events_api",
        }
    }
}

/// An envelope the stand-in sent.
#[derive(Clone, Debug)]
pub struct SentEnvelope {
    pub envelope_id: String,
    pub kind: EnvelopeType,
    pub payload: Value,
    pub accepts_response_payload: bool,
    /// The connection it went to (1 for the first one opened); 0 when it went over HTTP.
    pub connection: u64,
    /// When it was written to the socket (the last time, for a redelivered one).
    pub sent_at: Instant,
    /// 0, then 1, 2… for each redelivery.
    pub retry_attempt: u32,
}

/// An acknowledgement the client sent: `{"envelope_id":"…","payload":{…}?}`.
#[derive(Clone, Debug)]
pub struct Ack {
    pub envelope_id: String,
    /// The response payload, if the ack carried one.
    pub payload: Option<Value>,
    /// The connection it came on; 0 for the response to a delivery over HTTP.
    pub connection: u64,
    pub acked_at: Instant,
    /// When the envelope it acknowledges was (last) sent; `None` for an envelope never sent.
    pub sent_at: Option<Instant>,
}

impl Ack {
    /// From sending the envelope to reading its ack.
    pub fn latency(&self) -> Option<Duration> {
        self.sent_at
            .map(|s| self.acked_at.saturating_duration_since(s))
    }
}

pub(super) enum ConnCmd {
    Send(Value),
    /// Close the TCP connection without a close frame.
    Drop,
}

pub(super) struct Conn {
    tx: mpsc::UnboundedSender<ConnCmd>,
    /// Open, hello sent, and not told to go (disconnect) or dropped.
    live: bool,
    /// Over TLS (wss://): the URLs sent on it are https://.
    tls: bool,
}

#[derive(Default)]
pub(super) struct SocketState {
    /// Tickets handed out, and whether each was used.
    tickets: HashMap<String, bool>,
    conns: BTreeMap<u64, Conn>,
    next_conn: u64,
    /// Connections that got their hello, in all.
    opened: usize,
    /// Upgrades refused for a missing, unknown or used ticket.
    refused: usize,
    envelopes: Vec<SentEnvelope>,
    pub(super) acks: Vec<Ack>,
    /// Reasons of the disconnects sent, in order.
    disconnects: Vec<String>,
    drops: usize,
    /// Where the envelopes go over HTTP instead ([`SlackStandIn::deliver_over_http`]).
    pub(super) http: Option<deliver::Target>,
    pub(super) http_failures: Vec<HttpFailure>,
}

impl SocketState {
    pub(super) fn new_ticket(&mut self) -> String {
        let ticket = random_hex(16);
        self.tickets.insert(ticket.clone(), false);
        ticket
    }

    fn live(&self) -> usize {
        self.conns.values().filter(|c| c.live).count()
    }

    /// The newest live connection.
    fn newest_live(&self) -> Option<(u64, &Conn)> {
        self.conns
            .iter()
            .rev()
            .find(|(_, c)| c.live)
            .map(|(id, c)| (*id, c))
    }

    /// Whether the newest live connection is over TLS (plain when none is live).
    pub(super) fn newest_tls(&self) -> bool {
        self.newest_live().is_some_and(|(_, c)| c.tls)
    }

    pub(super) fn summary(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "socket mode: {} opened in all, {} live, {} refused; disconnects sent {:?}, drops {}; \
             {} envelope(s), {} ack(s)",
            self.opened,
            self.live(),
            self.refused,
            self.disconnects,
            self.drops,
            self.envelopes.len(),
            self.acks.len()
        );
        if let Some(target) = &self.http {
            let _ = write!(out, "\ndelivering over HTTP to {}", target.url());
        }
        for f in &self.http_failures {
            let _ = write!(
                out,
                "\n  envelope {} over HTTP: status {}: {}",
                f.envelope_id, f.status, f.body
            );
        }
        for e in &self.envelopes {
            let acked = self.acks.iter().any(|a| a.envelope_id == e.envelope_id);
            let _ = write!(
                out,
                "\n  envelope {} {} on connection {}: {}",
                e.envelope_id,
                e.kind.as_str(),
                e.connection,
                if acked { "acked" } else { "NOT acked" }
            );
        }
        out
    }
}

pub(super) fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("slack stand-in: random bytes");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) async fn upgrade(State(ctx): State<Ctx>, uri: Uri, ws: WebSocketUpgrade) -> Response {
    let ticket = url::form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "ticket")
        .map(|(_, v)| v.into_owned());
    let valid = {
        let mut st = ctx.shared.lock();
        let valid = match ticket.and_then(|t| st.socket.tickets.get_mut(&t)) {
            Some(used) if !*used => {
                *used = true;
                true
            }
            _ => false,
        };
        if !valid {
            st.socket.refused += 1;
        }
        valid
    };
    if !valid {
        ctx.shared.bump();
        return Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .body(Body::from("invalid or used ticket"))
            .expect("slack stand-in: a response");
    }
    let (shared, tls) = (Arc::clone(&ctx.shared), ctx.tls);
    ws.on_upgrade(move |socket| connection(shared, socket, tls))
}

async fn send_frame(socket: &mut WebSocket, frame: &Value) -> bool {
    socket
        .send(WsMessage::Text(frame.to_string().into()))
        .await
        .is_ok()
}

async fn connection(shared: Arc<Shared>, mut socket: WebSocket, tls: bool) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (id, num) = {
        let mut st = shared.lock();
        st.socket.next_conn += 1;
        let id = st.socket.next_conn;
        st.socket.conns.insert(
            id,
            Conn {
                tx,
                live: false,
                tls,
            },
        );
        (id, st.socket.live() + 1)
    };
    if send_frame(&mut socket, &hello(num)).await {
        {
            let mut st = shared.lock();
            st.socket.opened += 1;
            if let Some(c) = st.socket.conns.get_mut(&id) {
                c.live = true;
            }
        }
        shared.bump();
        'conn: loop {
            tokio::select! {
                cmd = rx.recv() => match cmd {
                    Some(ConnCmd::Send(frame)) => {
                        if !send_frame(&mut socket, &frame).await {
                            break 'conn;
                        }
                    }
                    // Dropping the socket without a close frame is the point of `Drop`.
                    Some(ConnCmd::Drop) | None => break 'conn,
                },
                msg = socket.recv() => match msg {
                    Some(Ok(WsMessage::Text(text))) => client_frame(&shared, id, text.as_str()),
                    Some(Ok(WsMessage::Close(_))) => {
                        // Keep reading so that tungstenite flushes its reply to the close frame.
                        let drain = async { while let Some(Ok(_)) = socket.recv().await {} };
                        let _ = tokio::time::timeout(Duration::from_secs(5), drain).await;
                        break 'conn;
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break 'conn,
                },
            }
        }
    }
    shared.lock().socket.conns.remove(&id);
    shared.bump();
}

/// A frame from the client: an ack, or something Slack would ignore (recorded as a violation).
fn client_frame(shared: &Shared, conn: u64, text: &str) {
    let frame = serde_json::from_str::<Value>(text).ok();
    let envelope_id = frame
        .as_ref()
        .and_then(|f| f.get("envelope_id"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    {
        let mut st = shared.lock();
        match envelope_id {
            None => {
                let shown: String = text.chars().take(200).collect();
                st.violation("socket", "", format!("a frame that is not an ack: {shown}"));
            }
            Some(envelope_id) => {
                let payload = frame.as_ref().and_then(|f| f.get("payload")).cloned();
                let sent = st
                    .socket
                    .envelopes
                    .iter()
                    .find(|e| e.envelope_id == envelope_id)
                    .cloned();
                if sent.is_none() {
                    st.violation(
                        "socket",
                        "",
                        format!("an ack for an envelope never sent: {envelope_id}"),
                    );
                }
                if let Some(sent) = &sent {
                    apply_response(&mut st, sent, payload.as_ref(), "socket");
                }
                st.socket.acks.push(Ack {
                    envelope_id,
                    payload,
                    connection: conn,
                    acked_at: Instant::now(),
                    sent_at: sent.map(|s| s.sent_at),
                });
            }
        }
    }
    shared.bump();
}

/// What the ack of a slash command does: its payload is the command's reply
/// ([`super::methods::command_reply`]). What the ack of a view_submission does to the modal: no payload closes it (a pushed view
/// returns to the one under it), `clear` closes every view of its stack, `update` replaces it,
/// `push` opens another on top (three at most, as Slack keeps), `errors` keeps it open and must
/// name input blocks the view has. A violation is recorded under `via`: `socket`, or `http` for
/// the response to a delivery over HTTP.
pub(super) fn apply_response(st: &mut St, sent: &SentEnvelope, payload: Option<&Value>, via: &str) {
    if sent.kind == EnvelopeType::SlashCommands {
        if let Some(payload) = payload {
            super::methods::command_reply(st, &sent.payload, payload);
        }
        return;
    }
    if sent.payload["type"] != "view_submission" {
        return;
    }
    let Some(view_id) = sent.payload["view"]["id"].as_str() else {
        return;
    };
    let root = st
        .views
        .iter()
        .find(|v| v.id == view_id)
        .and_then(|v| v.value["root_view_id"].as_str())
        .unwrap_or(view_id)
        .to_owned();
    let action = payload
        .and_then(|p| p.get("response_action"))
        .and_then(Value::as_str);
    match action {
        None => {
            for v in st.views.iter_mut().filter(|v| v.id == view_id) {
                v.closed = true;
            }
        }
        Some("clear") => {
            for v in st
                .views
                .iter_mut()
                .filter(|v| v.id == view_id || v.value["root_view_id"] == root.as_str())
            {
                v.closed = true;
            }
        }
        Some("update") | Some("push") => {
            let Some(view) = payload.and_then(|p| p.get("view")) else {
                st.violation(via, "/payload/view", "response_action without a view");
                return;
            };
            let problems = check_view(view, "/payload/view");
            for p in &problems {
                st.violation(via, &p.pointer, p.violation());
            }
            for problem in unmodelled_view(view, "/payload/view") {
                st.violation(via, "/payload/view", problem);
            }
            if !problems.is_empty() {
                return;
            }
            let hash = st.next_ts();
            if action == Some("update") {
                if let Some(v) = st.views.iter_mut().find(|v| v.id == view_id) {
                    v.value = view_json(view_id, &hash, view, &root);
                }
            } else {
                let stacked = st
                    .views
                    .iter()
                    .filter(|v| !v.closed && v.value["root_view_id"] == root.as_str())
                    .count();
                if stacked >= 3 {
                    st.violation(
                        via,
                        "/payload/response_action",
                        "push_limit_reached: a stack holds three views at most",
                    );
                    return;
                }
                let id = st.next_id("V");
                let user = sent.payload["user"]["id"].as_str().map(str::to_owned);
                let mut value = view_json(&id, &hash, view, &root);
                value["previous_view_id"] = json!(view_id);
                st.views.push(StoredView {
                    id,
                    user,
                    value,
                    closed: false,
                });
            }
        }
        Some("errors") => {
            // Slack shows each error under the input block it names, and refuses the
            // response when a key names no input block of the view.
            let inputs: Vec<String> = sent.payload["view"]["blocks"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == "input")
                .filter_map(|b| b["block_id"].as_str().map(str::to_owned))
                .collect();
            match payload
                .and_then(|p| p.get("errors"))
                .and_then(Value::as_object)
            {
                None => st.violation(via, "/payload/errors", "errors is missing"),
                Some(errors) => {
                    for (key, why) in errors {
                        if !inputs.contains(key) {
                            st.violation(
                                via,
                                &format!("/payload/errors/{key}"),
                                format!("{key} is not an input block of the view ({inputs:?})"),
                            );
                        }
                        if why.as_str().is_none_or(str::is_empty) {
                            st.violation(
                                via,
                                &format!("/payload/errors/{key}"),
                                "an error must be a non-empty string",
                            );
                        }
                    }
                }
            }
        }
        Some(other) => st.violation(
            via,
            "/payload/response_action",
            format!("unknown response_action: {other:?}"),
        ),
    }
}

impl SlackStandIn {
    /// Sends an envelope to the newest live connection, waiting (up to 30 s) for one; or, after
    /// [`SlackStandIn::deliver_over_http`], POSTs its payload to the app at once (recorded as an
    /// envelope on connection 0).
    pub async fn send_envelope(
        &self,
        kind: EnvelopeType,
        payload: Value,
        accepts_response_payload: bool,
    ) -> SentEnvelope {
        let envelope_id = {
            let r = random_hex(16);
            format!(
                "{}-{}-{}-{}-{}",
                &r[..8],
                &r[8..12],
                &r[12..16],
                &r[16..20],
                &r[20..]
            )
        };
        let (sent, target) = self
            .wait_until(
                &format!(
                    "a live Socket Mode connection to send a {} envelope to",
                    kind.as_str()
                ),
                |st| {
                    if let Some(target) = st.socket.http.clone() {
                        let sent = SentEnvelope {
                            envelope_id: envelope_id.clone(),
                            kind,
                            payload: payload.clone(),
                            accepts_response_payload,
                            connection: 0,
                            sent_at: Instant::now(),
                            retry_attempt: 0,
                        };
                        st.socket.envelopes.push(sent.clone());
                        return Some((sent, Some(target)));
                    }
                    let (connection, conn) = st.socket.newest_live()?;
                    let mut frame = json!({
                        "envelope_id": envelope_id,
                        "type": kind.as_str(),
                        "payload": payload,
                        "accepts_response_payload": accepts_response_payload,
                    });
                    if kind == EnvelopeType::EventsApi {
                        frame["retry_attempt"] = json!(0);
                        frame["retry_reason"] = json!("");
                    }
                    conn.tx.send(ConnCmd::Send(frame)).ok()?;
                    let sent = SentEnvelope {
                        envelope_id: envelope_id.clone(),
                        kind,
                        payload: payload.clone(),
                        accepts_response_payload,
                        connection,
                        sent_at: Instant::now(),
                        retry_attempt: 0,
                    };
                    st.socket.envelopes.push(sent.clone());
                    Some((sent, None))
                },
            )
            .await;
        if let Some(target) = target {
            deliver::post(Arc::clone(&self.shared), target, sent.clone());
        }
        self.shared.bump();
        sent
    }

    /// Sends an envelope again, with the same id and `retry_attempt` one more, as Slack does when
    /// an ack is late. Socket Mode only.
    pub async fn redeliver(&self, envelope_id: &str) -> SentEnvelope {
        assert!(
            self.shared.lock().socket.http.is_none(),
            "slack stand-in: redeliver is for Socket Mode, not deliveries over HTTP"
        );
        let sent = self
            .wait_until("a live Socket Mode connection to redeliver to", |st| {
                let i = st
                    .socket
                    .envelopes
                    .iter()
                    .position(|e| e.envelope_id == envelope_id)
                    .unwrap_or_else(|| {
                        panic!("slack stand-in: no envelope {envelope_id} was sent")
                    });
                let (connection, conn) = st.socket.newest_live()?;
                let e = &st.socket.envelopes[i];
                let frame = json!({
                    "envelope_id": e.envelope_id,
                    "type": e.kind.as_str(),
                    "payload": e.payload,
                    "accepts_response_payload": e.accepts_response_payload,
                    "retry_attempt": e.retry_attempt + 1,
                    "retry_reason": "timeout",
                });
                conn.tx.send(ConnCmd::Send(frame)).ok()?;
                let e = &mut st.socket.envelopes[i];
                e.retry_attempt += 1;
                e.connection = connection;
                e.sent_at = Instant::now();
                Some(e.clone())
            })
            .await;
        self.shared.bump();
        sent
    }

    /// Sends `{"type":"disconnect","reason":…}` to every live connection (waiting for one):
    /// `refresh_requested`, `warning` or `link_disabled`. They stop counting as live; the client
    /// should open a new connection.
    pub async fn send_disconnect(&self, reason: &str) {
        self.wait_until("a live Socket Mode connection to disconnect", |st| {
            if st.socket.live() == 0 {
                return None;
            }
            for c in st.socket.conns.values_mut().filter(|c| c.live) {
                c.live = false;
                let _ = c.tx.send(ConnCmd::Send(disconnect(reason)));
            }
            st.socket.disconnects.push(reason.to_owned());
            Some(())
        })
        .await;
        self.shared.bump();
    }

    /// Closes every live connection abruptly, without a close frame (waiting for one).
    pub async fn drop_socket(&self) {
        self.wait_until("a live Socket Mode connection to drop", |st| {
            if st.socket.live() == 0 {
                return None;
            }
            for c in st.socket.conns.values_mut().filter(|c| c.live) {
                c.live = false;
                let _ = c.tx.send(ConnCmd::Drop);
            }
            st.socket.drops += 1;
            Some(())
        })
        .await;
        self.shared.bump();
    }

    /// Waits until `n` connections have been opened (hello sent) in all and one is live.
    pub async fn wait_connected(&self, n: usize) {
        self.wait_until(&format!("{n} Socket Mode connection(s), one live"), |st| {
            (st.socket.opened >= n && st.socket.live() > 0).then_some(())
        })
        .await
    }

    /// Connections opened (hello sent) in all.
    pub fn connections_opened(&self) -> usize {
        self.shared.lock().socket.opened
    }

    /// Connections live now.
    pub fn live_connections(&self) -> usize {
        self.shared.lock().socket.live()
    }

    /// Upgrades refused for a missing, unknown or used ticket.
    pub fn refused_connections(&self) -> usize {
        self.shared.lock().socket.refused
    }

    /// The ack of an envelope (already received or still to come). Panics after 30 s.
    pub async fn wait_ack(&self, envelope_id: &str) -> Ack {
        self.wait_until(&format!("the ack of envelope {envelope_id}"), |st| {
            st.socket
                .acks
                .iter()
                .find(|a| a.envelope_id == envelope_id)
                .cloned()
        })
        .await
    }

    /// The ack of an envelope, if it came.
    pub fn ack_of(&self, envelope_id: &str) -> Option<Ack> {
        self.shared
            .lock()
            .socket
            .acks
            .iter()
            .find(|a| a.envelope_id == envelope_id)
            .cloned()
    }

    /// Every ack so far, in order.
    pub fn acks(&self) -> Vec<Ack> {
        self.shared.lock().socket.acks.clone()
    }

    /// Every envelope sent so far, in order.
    pub fn envelopes(&self) -> Vec<SentEnvelope> {
        self.shared.lock().socket.envelopes.clone()
    }
}
