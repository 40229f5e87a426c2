//! Proves that the Discord payload validator (crates/testkit/src/discord_schema.rs) can both pass
//! and fail: good bodies pass, and each broken body fails with a problem that names what is wrong.
//! Needs Discord's OpenAPI spec (`$ASKRELAY_DISCORD_SPEC`, else
//! ../shared/discord-api-spec/openapi.json); without it these tests check nothing, and the run
//! says so once (`Validator::load_or_skip`), as every other use of the validation does.

use askrelay_testkit::discord_schema::{spec_path, Validator, PINNED, SPEC_ENV};
use serde_json::{json, Value};
use serenity::builder::{
    CreateActionRow, CreateAllowedMentions, CreateButton, CreateEmbed, CreateEmbedFooter,
    CreateInputText, CreateInteractionResponse, CreateInteractionResponseFollowup,
    CreateInteractionResponseMessage, CreateMessage, CreateModal, CreateSelectMenu,
    CreateSelectMenuKind, CreateSelectMenuOption, EditMessage,
};
use serenity::model::application::{ButtonStyle, InputTextStyle};

const MESSAGES: &str = "/api/v10/channels/111/messages";
const MESSAGE: &str = "/api/v10/channels/111/messages/222";
const CALLBACK: &str = "/api/v10/interactions/333/a-token/callback";
const ORIGINAL: &str = "/api/v10/webhooks/444/a-token/messages/@original";
const FOLLOW_UP: &str = "/api/v10/webhooks/444/a-token";

/// The validator, or None when the spec is absent (the skip is said once per run).
fn validator() -> Option<Validator> {
    Validator::load_or_skip().unwrap_or_else(|e| panic!("{e}"))
}

#[track_caller]
fn assert_valid(method: &str, path: &str, body: &Value) {
    let Some(v) = validator() else { return };
    if let Err(problems) = v.check(method, path, body) {
        panic!(
            "expected {method} {path} to pass, but:\n  {}\nbody: {body:#}",
            problems.join("\n  ")
        );
    }
}

/// Asserts that the body fails and that one problem contains every one of `needles`.
#[track_caller]
fn assert_problem(method: &str, path: &str, body: &Value, needles: &[&str]) {
    let Some(v) = validator() else { return };
    match v.check(method, path, body) {
        Ok(()) => panic!("expected {method} {path} to fail with {needles:?}, but it passed"),
        Err(problems) => {
            assert!(
                problems
                    .iter()
                    .any(|p| needles.iter().all(|n| p.contains(n))),
                "no problem mentions all of {needles:?}; problems were:\n  {}",
                problems.join("\n  ")
            );
        }
    }
}

fn button(custom_id: &str, label: &str) -> Value {
    json!({"type": 2, "style": 1, "custom_id": custom_id, "label": label})
}

fn good_message() -> Value {
    json!({
        "content": "Deploy to production?",
        "tts": false,
        "embeds": [{
            "title": "Question from agent-7",
            "description": "The migration is ready. Run it now?",
            "color": 5793266,
            "fields": [{"name": "Asked", "value": "2 minutes ago", "inline": true}],
            "footer": {"text": "askrelay"},
            "timestamp": "2026-07-18T12:00:00Z"
        }],
        "components": [{"type": 1, "components": [button("ask:1:yes", "Yes"), button("ask:1:no", "No")]}],
        "allowed_mentions": {"parse": []}
    })
}

fn good_modal() -> Value {
    json!({
        "type": 9,
        "data": {
            "custom_id": "ask:1:modal",
            "title": "Answer the question",
            "components": [{
                "type": 1,
                "components": [{
                    "type": 4, "custom_id": "ask:1:text", "style": 2, "label": "Your answer",
                    "placeholder": "Type here", "required": true, "min_length": 1, "max_length": 4000
                }]
            }]
        }
    })
}

fn string_select(options: usize) -> Value {
    let options: Vec<Value> = (0..options)
        .map(|i| json!({"label": format!("Option {i}"), "value": format!("v{i}")}))
        .collect();
    json!({"type": 3, "custom_id": "ask:1:pick", "placeholder": "Pick one", "min_values": 1, "max_values": 1, "options": options})
}

// ---- the spec file ---------------------------------------------------------------------------

/// Where the spec is present, it loads; where it is absent, the run says so.
#[test]
fn spec_is_present_or_its_absence_is_said() {
    if validator().is_some() {
        assert!(spec_path().is_file());
    } else {
        let listed = std::fs::read_to_string(askrelay_testkit::skipped::file()).unwrap_or_default();
        assert!(
            listed.contains("Discord payload validation") && listed.contains(PINNED),
            "the skip is not in the list of skipped tests:\n{listed}"
        );
    }
}

/// `$ASKRELAY_DISCORD_SPEC` moves the spec; a file it names that is missing is an error (the
/// run was asked to validate), where the default place's absence is a skip.
#[test]
fn the_spec_is_found_where_askrelay_discord_spec_says() {
    let bin = std::env::current_exe().unwrap();
    let here = tempfile::tempdir().unwrap();
    let missing = here.path().join("openapi.json");
    let out = std::process::Command::new(&bin)
        .args([
            "--exact",
            "discord_schema_selftest::good_message_passes",
            "--nocapture",
        ])
        .env(SPEC_ENV, &missing)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "passed with a missing named spec:\n{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "Discord's OpenAPI spec is missing at {}",
            missing.display()
        )),
        "{stderr}"
    );
    // Where a spec is at hand, naming it by the variable finds it.
    if let Some(v) = validator() {
        drop(v);
        let out = std::process::Command::new(&bin)
            .args(["--exact", "discord_schema_selftest::good_message_passes"])
            .env(SPEC_ENV, spec_path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn a_missing_spec_is_reported_plainly() {
    let missing = std::env::temp_dir().join("askrelay-no-such-dir/openapi.json");
    let err = Validator::load_from(&missing).unwrap_err();
    assert!(
        err.contains("Discord's OpenAPI spec is missing at") && err.contains("cannot run"),
        "{err}"
    );
}

#[test]
fn unknown_operations_have_no_schema() {
    let Some(v) = validator() else { return };
    let err = v
        .check("POST", "/api/v10/no/such/route", &json!({}))
        .unwrap_err();
    assert_eq!(err, vec!["no schema for POST /api/v10/no/such/route"]);
    // An operation the spec knows but without a JSON request body.
    let err = v
        .check("POST", "/api/v10/channels/111/typing", &json!({}))
        .unwrap_err();
    assert_eq!(err, vec!["no schema for POST /api/v10/channels/111/typing"]);
}

// ---- good bodies pass ------------------------------------------------------------------------

#[test]
fn good_message_passes() {
    assert_valid("POST", MESSAGES, &good_message());
    assert_valid("POST", &format!("{MESSAGES}?&wait=true"), &good_message());
    assert_valid("PATCH", MESSAGE, &good_message());
    assert_valid("PATCH", ORIGINAL, &good_message());
    let mut with_select = good_message();
    with_select["components"] = json!([{"type": 1, "components": [string_select(3)]}]);
    assert_valid("POST", MESSAGES, &with_select);
}

#[test]
fn good_ephemeral_reply_passes() {
    let body = json!({
        "type": 4,
        "data": {
            "content": "Only you can see this.",
            "flags": 64,
            "components": [{"type": 1, "components": [button("ask:1:yes", "Yes")]}],
            "allowed_mentions": {"parse": []}
        }
    });
    assert_valid("POST", CALLBACK, &body);
}

#[test]
fn good_modal_passes() {
    assert_valid("POST", CALLBACK, &good_modal());
}

#[test]
fn good_update_with_no_components_passes() {
    let body = json!({"type": 7, "data": {"content": "Answered: Yes", "components": []}});
    assert_valid("POST", CALLBACK, &body);
}

#[test]
fn deferred_responses_pass() {
    assert_valid("POST", CALLBACK, &json!({"type": 5}));
    assert_valid("POST", CALLBACK, &json!({"type": 5, "data": {"flags": 64}}));
    assert_valid("POST", CALLBACK, &json!({"type": 6}));
    assert_valid("POST", CALLBACK, &json!({"type": 6, "data": null}));
}

/// What serenity 0.12.5 actually puts on the wire for the builders askrelay uses.
#[test]
fn serenity_builder_output_passes() {
    let buttons = CreateActionRow::Buttons(vec![
        CreateButton::new("ask:1:yes")
            .label("Yes")
            .style(ButtonStyle::Success),
        CreateButton::new("ask:1:no")
            .label("No")
            .style(ButtonStyle::Danger),
    ]);
    let select = CreateActionRow::SelectMenu(
        CreateSelectMenu::new(
            "ask:1:pick",
            CreateSelectMenuKind::String {
                options: vec![
                    CreateSelectMenuOption::new("Red", "red").description("the red one"),
                    CreateSelectMenuOption::new("Blue", "blue"),
                ],
            },
        )
        .placeholder("Pick a colour")
        .min_values(1)
        .max_values(2),
    );
    let embed = CreateEmbed::new()
        .title("Question")
        .description("Proceed?")
        .field("Asked by", "agent-7", true)
        .footer(CreateEmbedFooter::new("askrelay"));

    let message = CreateMessage::new()
        .content("Proceed?")
        .embed(embed.clone())
        .components(vec![buttons.clone(), select.clone()])
        .allowed_mentions(CreateAllowedMentions::new());
    assert_valid("POST", MESSAGES, &serde_json::to_value(&message).unwrap());

    let edit = EditMessage::new().content("Answered").components(vec![]);
    assert_valid("PATCH", MESSAGE, &serde_json::to_value(&edit).unwrap());

    let reply = CreateInteractionResponse::Message(
        CreateInteractionResponseMessage::new()
            .content("Only you can see this")
            .ephemeral(true)
            .embed(embed)
            .components(vec![buttons]),
    );
    assert_valid("POST", CALLBACK, &serde_json::to_value(&reply).unwrap());

    let update = CreateInteractionResponse::UpdateMessage(
        CreateInteractionResponseMessage::new()
            .content("Answered")
            .components(vec![]),
    );
    assert_valid("POST", CALLBACK, &serde_json::to_value(&update).unwrap());

    let modal = CreateInteractionResponse::Modal(
        CreateModal::new("ask:1:modal", "Answer").components(vec![CreateActionRow::InputText(
            CreateInputText::new(InputTextStyle::Paragraph, "Your answer", "ask:1:text")
                .placeholder("Type here")
                .max_length(4000),
        )]),
    );
    assert_valid("POST", CALLBACK, &serde_json::to_value(&modal).unwrap());

    let defer = CreateInteractionResponse::Defer(CreateInteractionResponseMessage::new());
    assert_valid("POST", CALLBACK, &serde_json::to_value(&defer).unwrap());
    let ack = CreateInteractionResponse::Acknowledge;
    assert_valid("POST", CALLBACK, &serde_json::to_value(&ack).unwrap());
}

/// An interaction's follow-up (`POST /webhooks/{application}/{token}`), as serenity 0.12.5
/// writes it: checked as a new webhook message, with Discord's limits.
#[test]
fn a_follow_up_is_checked_as_a_new_message() {
    let follow_up = CreateInteractionResponseFollowup::new()
        .content("Your answer could not be saved, try again.")
        .ephemeral(true)
        .allowed_mentions(CreateAllowedMentions::new());
    let body = serde_json::to_value(&follow_up).unwrap();
    assert_eq!(body["flags"], 64, "{body}");
    assert_valid("POST", FOLLOW_UP, &body);
    assert_valid("POST", &format!("{FOLLOW_UP}?wait=true"), &body);
    let mut long = body.clone();
    long["content"] = json!("é".repeat(2001));
    assert_problem("POST", FOLLOW_UP, &long, &["/content", "2001", "2000"]);
    let mut wrong = body;
    wrong["flags"] = json!("ephemeral");
    assert_problem("POST", FOLLOW_UP, &wrong, &["/flags"]);
}

// ---- bad bodies fail, naming the problem -----------------------------------------------------

#[test]
fn content_over_2000_characters_fails() {
    let mut body = good_message();
    // Multi-byte characters: the limit counts characters, not bytes.
    body["content"] = json!("é".repeat(2001));
    assert_problem("POST", MESSAGES, &body, &["/content", "2001", "2000"]);

    body["content"] = json!("é".repeat(2000));
    assert_valid("POST", MESSAGES, &body);

    let reply = json!({"type": 4, "data": {"content": "x".repeat(2001)}});
    assert_problem("POST", CALLBACK, &reply, &["/data/content", "2000"]);
}

#[test]
fn six_action_rows_fail() {
    let mut body = good_message();
    let rows: Vec<Value> = (0..6)
        .map(|i| json!({"type": 1, "components": [button(&format!("b{i}"), "Go")]}))
        .collect();
    body["components"] = json!(rows);
    assert_problem(
        "POST",
        MESSAGES,
        &body,
        &["/components", "6 action rows", "5"],
    );
}

#[test]
fn six_buttons_in_a_row_fail() {
    let mut body = good_message();
    let buttons: Vec<Value> = (0..6).map(|i| button(&format!("b{i}"), "Go")).collect();
    body["components"] = json!([{"type": 1, "components": buttons}]);
    assert_problem(
        "POST",
        MESSAGES,
        &body,
        &["/components/0/components", "6 buttons"],
    );
}

#[test]
fn a_select_must_be_alone_in_its_row() {
    let mut body = good_message();
    body["components"] = json!([{"type": 1, "components": [string_select(2), button("b", "Go")]}]);
    assert_problem(
        "POST",
        MESSAGES,
        &body,
        &["/components/0/components", "alone"],
    );
}

#[test]
fn custom_id_of_101_characters_fails() {
    let mut body = good_message();
    body["components"][0]["components"][0]["custom_id"] = json!("c".repeat(101));
    assert_problem(
        "POST",
        MESSAGES,
        &body,
        &["/components/0/components/0/custom_id", "101", "100"],
    );
}

#[test]
fn duplicate_custom_ids_fail() {
    let mut body = good_message();
    body["components"] = json!([
        {"type": 1, "components": [button("same", "A")]},
        {"type": 1, "components": [button("same", "B")]}
    ]);
    assert_problem(
        "POST",
        MESSAGES,
        &body,
        &[
            "/components/1/components/0/custom_id",
            "used twice",
            "/components/0/components/0/custom_id",
        ],
    );
}

#[test]
fn button_label_of_81_characters_fails() {
    let mut body = good_message();
    body["components"][0]["components"][1]["label"] = json!("l".repeat(81));
    assert_problem(
        "POST",
        MESSAGES,
        &body,
        &["/components/0/components/1/label", "81", "80"],
    );
}

#[test]
fn select_with_26_options_fails() {
    let mut body = good_message();
    body["components"] = json!([{"type": 1, "components": [string_select(26)]}]);
    assert_problem(
        "POST",
        MESSAGES,
        &body,
        &["/components/0/components/0/options", "26 options", "25"],
    );
}

#[test]
fn select_max_values_above_option_count_fails() {
    let mut select = string_select(2);
    select["max_values"] = json!(3);
    let body = json!({"type": 4, "data": {"components": [{"type": 1, "components": [select]}]}});
    assert_problem(
        "POST",
        CALLBACK,
        &body,
        &["/data/components/0/components/0/max_values", "2 options"],
    );
}

#[test]
fn modal_title_of_46_characters_fails() {
    let mut body = good_modal();
    body["data"]["title"] = json!("t".repeat(46));
    assert_problem("POST", CALLBACK, &body, &["/data/title", "46", "45"]);
}

#[test]
fn modal_with_six_components_fails() {
    let mut body = good_modal();
    let rows: Vec<Value> = (0..6)
        .map(|i| json!({"type": 1, "components": [{"type": 4, "custom_id": format!("t{i}"), "style": 1, "label": "L"}]}))
        .collect();
    body["data"]["components"] = json!(rows);
    assert_problem(
        "POST",
        CALLBACK,
        &body,
        &["/data/components", "6 components"],
    );
}

#[test]
fn text_input_label_of_46_characters_fails() {
    let mut body = good_modal();
    body["data"]["components"][0]["components"][0]["label"] = json!("l".repeat(46));
    assert_problem(
        "POST",
        CALLBACK,
        &body,
        &["/data/components/0/components/0/label", "45"],
    );
}

#[test]
fn a_wrong_type_fails() {
    let mut body = good_message();
    body["tts"] = json!("yes");
    assert_problem("POST", MESSAGES, &body, &["/tts", "boolean"]);

    // Inside a nullable wrapper (`oneOf: [null, ...]`) the problem is still named precisely.
    let reply = json!({"type": 4, "data": {"content": 5}});
    assert_problem("POST", CALLBACK, &reply, &["/data/content", "string"]);
}

#[test]
fn an_unknown_component_type_fails() {
    let mut body = good_message();
    body["components"][0]["components"][0]["type"] = json!(99);
    assert_problem(
        "POST",
        MESSAGES,
        &body,
        &["/components/0/components/0", "none of the shapes"],
    );
}

#[test]
fn a_callback_without_data_for_a_modal_fails() {
    assert_problem("POST", CALLBACK, &json!({"type": 9}), &["data"]);
}

#[test]
fn embed_text_over_6000_in_total_fails() {
    let mut body = good_message();
    let embed = |title: &str| json!({"title": title, "description": "d".repeat(4000)});
    // Each embed is within its own limits; together they hold 2 * (4 + 4000) = 8008 characters.
    body["embeds"] = json!([embed("one."), embed("two.")]);
    assert_problem("POST", MESSAGES, &body, &["/embeds", "8008", "6000"]);
}

#[test]
fn embed_field_limits_fail() {
    let mut body = good_message();
    body["embeds"][0]["fields"][0]["value"] = json!("v".repeat(1025));
    assert_problem(
        "POST",
        MESSAGES,
        &body,
        &["/embeds/0/fields/0/value", "1024"],
    );
}

/// The spec sets `additionalProperties: false` on none of the request schemas (Discord ignores
/// unknown fields), so an unknown field passes. Should a future spec forbid them, this test
/// expects the failure instead.
#[test]
fn unknown_fields_follow_the_spec() {
    if validator().is_none() {
        return;
    }
    let spec: Value =
        serde_json::from_str(&std::fs::read_to_string(spec_path()).unwrap_or_else(|_| {
            panic!(
                "Discord's OpenAPI spec is missing at {}; the payload validation test cannot run",
                spec_path().display()
            )
        }))
        .unwrap();
    let forbids = spec.pointer("/components/schemas/MessageCreateRequest/additionalProperties")
        == Some(&json!(false));
    let mut body = good_message();
    body["not_a_discord_field"] = json!(true);
    if forbids {
        assert_problem("POST", MESSAGES, &body, &["not_a_discord_field"]);
    } else {
        assert_valid("POST", MESSAGES, &body);
    }
}
