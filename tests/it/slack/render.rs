//! Agent text as Slack shows it: escaped, so that no mention or link in it is live, in the
//! message and in its outcome.

use super::*;
use askrelay_testkit::slack::live_mentions;
use serde_json::json;

/// Every text of a message or a request's parameters.
fn all_texts(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match v {
                    Value::String(s) if k == "text" => out.push(s.clone()),
                    _ => all_texts(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| all_texts(v, out)),
        _ => {}
    }
}

const HOSTILE: &str = "<!channel> <@U1> <!subteam^S1> <https://evil.example|click>";

#[tokio::test]
async fn agent_text_with_mentions_shows_escaped() {
    let t = Slack::start().await;
    let input = json!({"questions": [{"id": "q", "question": format!("Run it? {HOSTILE}"),
        "header": HOSTILE,
        "options": [{"label": format!("Yes {HOSTILE}"), "description": HOSTILE},
                    {"label": "No"}],
        "multiSelect": false}],
        "scope": {"project": HOSTILE}});
    let (mut c, _) = t.ask("hostile", &input).await;
    let m = t.message(0).await;
    let mut texts = Vec::new();
    all_texts(&m, &mut texts);
    assert!(texts.len() > 5, "{texts:?}");
    for text in &texts {
        assert!(live_mentions(text).is_empty(), "live in {text:?}");
    }
    assert!(texts
        .iter()
        .any(|t| t.contains("&lt;!channel&gt; &lt;@U1&gt;")));
    t.press(&alice(), &m, "No").await;
    expect_event(&mut c, "answered").await;
    let update = t.outcome_of(&m).await;
    let mut texts = Vec::new();
    all_texts(&update.params, &mut texts);
    for text in &texts {
        // Only askrelay's own: who answered, and the time.
        let live: Vec<String> = live_mentions(text)
            .into_iter()
            .filter(|l| l != "<@U0ALICE01>" && !l.starts_with("<!date^"))
            .collect();
        assert!(live.is_empty(), "live in {text:?}");
    }
    t.s.assert_no_violations();
}
