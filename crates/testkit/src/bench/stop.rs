//! Item 7: how long SIGTERM takes, with nothing in flight and with edits queued.

use super::binary::DaemonProc;
use super::helpers::{answer_line, ask_line, bounded, connect, expect_event};
use super::report::StopReport;
use super::{CHANNEL, STEP_LIMIT};
use crate::standin::{Stall, StandIn};
use std::path::Path;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq)]
pub(super) enum StopCase {
    GatewayUp,
    GatewayDown,
    PendingEdits,
}

/// The edits queued before SIGTERM in the last case.
pub(super) const STOP_EDITS: usize = 20;

/// Item 7 (also run alone: `bench --stop-only`).
pub async fn stop_times(bin: &Path) -> StopReport {
    let (gateway_up, _) = stop_once(bin, StopCase::GatewayUp).await;
    let (gateway_down, _) = stop_once(bin, StopCase::GatewayDown).await;
    let (pending_edits, edits_sent) = stop_once(bin, StopCase::PendingEdits).await;
    StopReport {
        gateway_up,
        gateway_down,
        pending_edits,
        edits: STOP_EDITS,
        edits_sent,
    }
}

/// One daemon on the stand-in, stopped with SIGTERM: the time to its exit, and the message
/// edits the stand-in got.
pub(super) async fn stop_once(bin: &Path, case: StopCase) -> (Duration, usize) {
    let standin = StandIn::start().await;
    let dir = tempfile::tempdir().unwrap();
    if case == StopCase::GatewayDown {
        standin.set_gateway_down(true);
    }
    let mut daemon = DaemonProc::spawn_with(
        bin,
        dir.path(),
        &[
            (
                "ASKRELAY_DISCORD__TOKEN",
                "MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.bench-bot-token".into(),
            ),
            ("ASKRELAY_DISCORD__API_BASE", standin.base_url.clone()),
            ("ASKRELAY_DISCORD__CHANNEL_ID", CHANNEL.to_string()),
            ("ASKRELAY_DISCORD__TERMINAL_ANSWERS", "true".into()),
        ],
    );
    daemon.wait_serving().await;
    match case {
        StopCase::GatewayDown => {
            bounded(
                "the gateway to refuse a connection",
                STEP_LIMIT,
                standin.wait_refused_upgrades(1),
            )
            .await
        }
        _ => {
            bounded(
                "the gateway session",
                STEP_LIMIT,
                standin.wait_identify_count(1),
            )
            .await
        }
    }
    let edits = |standin: &StandIn| {
        standin
            .requests()
            .iter()
            .filter(|r| r.method == "PATCH" && r.path.contains("/messages/"))
            .count()
    };
    if case == StopCase::PendingEdits {
        let mut c = connect(&daemon.socket).await;
        for i in 0..STOP_EDITS {
            c.send_json(&ask_line(&format!("stop-{i}"), None))
                .await
                .unwrap();
            expect_event(&mut c, "accepted").await;
        }
        bounded(
            "the questions to be posted",
            STEP_LIMIT,
            standin.wait_for_requests(STOP_EDITS, |r| r.method == "POST" && r.status == 200),
        )
        .await;
        // Each edit is held a little, so that most are still to send when SIGTERM comes.
        standin.stall_next(
            "PATCH",
            "/messages/",
            Stall::For(Duration::from_millis(50)),
            STOP_EDITS,
        );
        let mut a = connect(&daemon.socket).await;
        for i in 0..STOP_EDITS {
            a.send_json(&answer_line(&format!("stop-{i}")))
                .await
                .unwrap();
            expect_event(&mut a, "answer_accepted").await;
        }
    }
    let t0 = Instant::now();
    daemon.terminate().await;
    (t0.elapsed(), edits(&standin))
}
