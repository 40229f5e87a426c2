//! The context Slack's message cannot show whole is shared in its thread, through Slack's
//! external upload flow (`files.getUploadURLExternal`, the bytes to its URL,
//! `files.completeUploadExternal` with `thread_ts`), in the background and tried again when it
//! fails; a context that fits shares nothing.

use super::*;
use askrelay_testkit::slack::SlackFailure;
use serde_json::json;

#[tokio::test]
async fn the_context_cut_in_the_message_is_shared_whole_in_its_thread() {
    let t = Slack::start().await;
    // A context that fits: no row, no upload.
    let mut small = yes_no("small");
    small["context"] = json!({"text": "short", "files": [{"name": "a.diff", "content": "+x\n"}]});
    let (_s, _) = t.ask("small", &small).await;
    let first = t.message(0).await;
    // The first try of sharing fails; it is tried again.
    t.s.fail_next("files.completeUploadExternal", SlackFailure::Status(500), 1);
    let text = format!("{}<!channel> end", "y".repeat(6000));
    let log = "z".repeat(5000);
    let mut big = yes_no("big");
    big["context"] = json!({
        "text": text,
        "files": [{"name": "a.txt", "content": "hello"}, {"name": "big.log", "content": log}]
    });
    let (_b, _) = t.ask("big", &big).await;
    let m = t.message(1).await;
    // The message shows what fits and says where the rest is.
    assert!(
        m.to_string()
            .contains("more characters not shown here; the whole of it is in the thread"),
        "{m}"
    );
    within(
        "the files shared",
        t.s.wait_for_request("files.completeUploadExternal", Recorded::ok),
    )
    .await;
    let shared: Vec<_> = t.s.uploads().into_iter().filter(|u| u.completed).collect();
    let names: Vec<&str> = shared.iter().map(|u| u.filename.as_str()).collect();
    assert_eq!(names, ["context.txt", "big.log"], "only what was cut");
    for u in &shared {
        assert_eq!(u.channel.as_deref(), Some(DEFAULT_CHANNEL));
        assert_eq!(
            u.thread_ts.as_deref(),
            Some(ts(&m)),
            "in the question's thread"
        );
    }
    // Whole, and as the agent sent it (a file is not mrkdwn).
    assert_eq!(shared[0].bytes.as_deref(), Some(text.as_bytes()));
    assert_eq!(shared[1].bytes.as_deref(), Some(log.as_bytes()));
    assert_eq!(
        t.s.calls("files.completeUploadExternal").len(),
        2,
        "one failed, one shared"
    );
    assert!(
        !t.s.uploads()
            .iter()
            .any(|u| u.thread_ts.as_deref() == Some(ts(&first))),
        "the small context shares nothing"
    );
    t.s.assert_no_violations();
}
