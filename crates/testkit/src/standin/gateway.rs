//! The WebSocket gateway at `/`: the upgrade handler (refused with 503 while the gateway is
//! down), one task per connection that sends HELLO and answers heartbeats, IDENTIFY (READY with
//! a new session) and RESUME (RESUMED, or op 9 for an unknown session), and the dispatch of
//! events to the live sessions.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::json::bot_user_json;
use super::{Conn, ConnCmd, Shared, St, ZombieClose, ZOMBIE_INTERVALS};

const HEARTBEAT_INTERVAL_MS: u64 = 41_250;

impl St {
    /// Sends a dispatch to every live session; returns how many got it.
    pub(super) fn dispatch(&mut self, event_name: &str, payload: &Value) -> usize {
        let St {
            conns, sessions, ..
        } = self;
        let mut sent = 0;
        for conn in conns.values().filter(|c| c.live) {
            let Some(seq) = conn.session.as_ref().and_then(|s| sessions.get_mut(s)) else {
                continue;
            };
            *seq += 1;
            let frame = json!({"op": 0, "t": event_name, "s": *seq, "d": payload});
            if conn.tx.send(ConnCmd::Send(frame)).is_ok() {
                sent += 1;
            }
        }
        sent
    }
}

pub(super) async fn gateway_upgrade(
    State(shared): State<Arc<Shared>>,
    ws: WebSocketUpgrade,
) -> Response {
    {
        let mut st = shared.lock();
        if st.gateway_down {
            st.refused_upgrades += 1;
            drop(st);
            shared.bump();
            return Response::builder()
                .status(StatusCode::SERVICE_UNAVAILABLE)
                .body(Body::from("the gateway is down"))
                .unwrap();
        }
    }
    ws.on_upgrade(move |socket| gateway_connection(shared, socket))
}

async fn send_frame(socket: &mut WebSocket, frame: &Value) -> bool {
    socket
        .send(WsMessage::Text(frame.to_string().into()))
        .await
        .is_ok()
}

async fn gateway_connection(shared: Arc<Shared>, mut socket: WebSocket) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (conn_id, heartbeat_ms) = {
        let mut st = shared.lock();
        let heartbeat_ms = st.heartbeat_ms;
        st.next_conn_id += 1;
        let id = st.next_conn_id;
        st.conns.insert(
            id,
            Conn {
                tx,
                session: None,
                live: false,
            },
        );
        (id, heartbeat_ms)
    };
    shared.bump();

    let interval = heartbeat_ms.unwrap_or(HEARTBEAT_INTERVAL_MS);
    let hello = json!({"op": 10, "d": {"heartbeat_interval": interval}, "s": null, "t": null});
    // With heartbeats enforced, a connection whose client sends nothing for a few intervals is
    // closed, as Discord closes a zombie; otherwise the check never fires.
    let interval = Duration::from_millis(interval);
    let silence_limit = interval * ZOMBIE_INTERVALS;
    let mut last_heard = Instant::now();
    let mut check = tokio::time::interval(interval / 2);
    if send_frame(&mut socket, &hello).await {
        'conn: loop {
            tokio::select! {
                _ = check.tick(), if heartbeat_ms.is_some() => {
                    if last_heard.elapsed() >= silence_limit {
                        let mut st = shared.lock();
                        let was_live = st.conns.get(&conn_id).is_some_and(|c| c.live);
                        st.zombies.push(ZombieClose {
                            was_live,
                            last_heard,
                            silent_from: last_heard + interval,
                            closed_at: Instant::now(),
                        });
                        break 'conn;
                    }
                }
                cmd = rx.recv() => match cmd {
                    Some(ConnCmd::Send(frame)) => {
                        if frame["op"] == 0 {
                            *shared.last_dispatch.lock().unwrap() = Some(Instant::now());
                        }
                        if !send_frame(&mut socket, &frame).await {
                            break 'conn;
                        }
                    }
                    // Dropping the socket without a close frame is the point of `Drop`.
                    Some(ConnCmd::Drop) | None => break 'conn,
                },
                msg = socket.recv() => match msg {
                    Some(Ok(WsMessage::Text(text))) => {
                        last_heard = Instant::now();
                        for reply in client_frame(&shared, conn_id, text.as_str()) {
                            if !send_frame(&mut socket, &reply).await {
                                break 'conn;
                            }
                        }
                    }
                    Some(Ok(WsMessage::Close(_))) => {
                        // Keep reading so that tungstenite flushes its reply to the close frame
                        // (serenity waits for it when it restarts or shuts down a shard).
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

    shared.lock().conns.remove(&conn_id);
    shared.bump();
}

/// Handles one frame from the client; returns the frames to send back, in order.
fn client_frame(shared: &Shared, conn_id: u64, text: &str) -> Vec<Value> {
    let Ok(frame) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let d = frame.get("d").cloned().unwrap_or(Value::Null);
    let replies = match frame.get("op").and_then(Value::as_u64) {
        Some(1) => {
            shared.lock().heartbeat_count += 1;
            vec![json!({"op": 11, "d": null, "s": null, "t": null})]
        }
        Some(2) => identify(shared, conn_id, d),
        Some(6) => resume(shared, conn_id, &d),
        _ => Vec::new(),
    };
    shared.bump();
    replies
}

fn identify(shared: &Shared, conn_id: u64, d: Value) -> Vec<Value> {
    let ids = &shared.ids;
    let shard = d.get("shard").cloned().unwrap_or_else(|| json!([0, 1]));
    let mut st = shared.lock();
    st.identify_count += 1;
    st.last_identify = Some(d);
    st.session_counter += 1;
    let session_id = format!("standin-session-{}", st.session_counter);
    st.sessions.insert(session_id.clone(), 1);
    if let Some(conn) = st.conns.get_mut(&conn_id) {
        conn.session = Some(session_id.clone());
        conn.live = true;
    }
    let mut user = bot_user_json(ids);
    user["verified"] = json!(true);
    user["mfa_enabled"] = json!(false);
    user["email"] = Value::Null;
    let ready = json!({
        "v": 10,
        "user": user,
        "guilds": [],
        "session_id": session_id,
        "session_type": "normal",
        "resume_gateway_url": ids.gateway_url,
        "shard": shard,
        "application": {"id": ids.application_id.to_string(), "flags": 0},
        "private_channels": [],
        "relationships": [],
        "presences": [],
        "guild_join_requests": [],
        "geo_ordered_rtc_regions": [],
        "user_settings": {},
        "auth": {},
        "_trace": ["[\"askrelay-standin\"]"],
    });
    vec![json!({"op": 0, "t": "READY", "s": 1, "d": ready})]
}

fn resume(shared: &Shared, conn_id: u64, d: &Value) -> Vec<Value> {
    let session_id = d
        .get("session_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut st = shared.lock();
    st.resume_count += 1;
    let Some(seq) = st.sessions.get_mut(&session_id) else {
        return vec![json!({"op": 9, "d": false, "s": null, "t": null})];
    };
    *seq += 1;
    let s = *seq;
    for (id, conn) in st.conns.iter_mut() {
        if *id == conn_id {
            conn.session = Some(session_id.clone());
            conn.live = true;
        } else if conn.session.as_deref() == Some(session_id.as_str()) {
            conn.live = false;
        }
    }
    vec![json!({"op": 0, "t": "RESUMED", "s": s, "d": {"_trace": ["[\"askrelay-standin\"]"]}})]
}

#[cfg(test)]
mod tests {
    use crate::standin::StandIn;
    use futures_util::{SinkExt, StreamExt};
    use serde_json::{json, Value};
    use std::time::Duration;
    use tokio_tungstenite::tungstenite::Message;

    type Ws = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

    async fn next_json(ws: &mut Ws) -> Value {
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(5), ws.next())
                .await
                .expect("a frame in time")
                .expect("the connection is open")
                .expect("a frame");
            if let Message::Text(text) = msg {
                return serde_json::from_str(text.as_str()).unwrap();
            }
        }
    }

    async fn send(ws: &mut Ws, frame: Value) {
        ws.send(Message::Text(frame.to_string().into()))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn with_heartbeats_enforced_a_silent_connection_is_closed_and_said_when() {
        let standin = StandIn::start().await;
        standin.enforce_heartbeats(Duration::from_millis(100));
        let addr = standin.gateway_url.trim_start_matches("ws://").to_owned();
        let stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let (mut ws, _) = tokio_tungstenite::client_async(standin.gateway_url.clone(), stream)
            .await
            .unwrap();
        let hello = next_json(&mut ws).await;
        assert_eq!(hello["d"]["heartbeat_interval"], 100);
        send(
            &mut ws,
            json!({"op": 2, "d": {"token": "t", "intents": 0, "properties": {}}}),
        )
        .await;
        assert_eq!(next_json(&mut ws).await["t"], "READY");
        assert_eq!(standin.live_sessions(), 1);
        // Heartbeats keep it open, well past four intervals.
        for _ in 0..8 {
            tokio::time::sleep(Duration::from_millis(80)).await;
            send(&mut ws, json!({"op": 1, "d": null})).await;
            assert_eq!(next_json(&mut ws).await["op"], 11);
        }
        assert!(standin.zombie_closes().is_empty());
        assert_eq!(standin.live_sessions(), 1);
        // Silence: closed after four intervals.
        let closed = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(Ok(m)) = ws.next().await {
                if matches!(m, Message::Close(_)) {
                    break;
                }
            }
        })
        .await;
        assert!(closed.is_ok(), "the silent connection stayed open");
        let zombies = standin.zombie_closes();
        assert_eq!(zombies.len(), 1);
        let z = &zombies[0];
        assert!(z.was_live);
        assert_eq!(z.silent_from - z.last_heard, Duration::from_millis(100));
        assert!(z.closed_at - z.last_heard >= Duration::from_millis(400));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while standin.live_sessions() > 0 {
            assert!(tokio::time::Instant::now() < deadline, "still live");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
