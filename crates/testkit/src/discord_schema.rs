//! Validates recorded Discord REST request bodies against Discord's own OpenAPI spec and against
//! the limits the spec misses or states more loosely than Discord enforces them
//! (see docs/contract.md, "Discord limits").
//!
//! The spec is read in place, never copied into the repository: from `$ASKRELAY_DISCORD_SPEC`,
//! else from `../shared/discord-api-spec/openapi.json` beside the checkout (where CI keeps it).
//! It is [`PINNED`]'s `specs/openapi.json` (docs/testing.md says how to fetch it). Without it,
//! only the validation is skipped, once per test process with one loud line that `tests/run`
//! prints at the end ([`Validator::load_or_skip`]); an `$ASKRELAY_DISCORD_SPEC` that names a
//! missing file is an error, not a skip.
//!
//! The spec is OpenAPI 3.1, whose schemas are JSON Schema 2020-12: nullable fields are written
//! `"type": ["string", "null"]` or `"oneOf": [{"type": "null"}, {"$ref": ...}]`, and unions use
//! `oneOf` / `anyOf` of `$ref`s. It sets `additionalProperties: false` on none of the request
//! schemas, so unknown fields are accepted (as Discord itself does).

use std::collections::HashMap;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::error::ValidationErrorKind;
use serde_json::{Map, Value};

/// Message flag `IS_COMPONENTS_V2` (1 << 15): lifts the 5-action-row layout rules.
const IS_COMPONENTS_V2: u64 = 1 << 15;

/// The environment variable that names the spec file.
pub const SPEC_ENV: &str = "ASKRELAY_DISCORD_SPEC";

/// Where the spec comes from: the file the tests were written against.
pub const PINNED: &str =
    "discord/discord-api-spec at commit 74fda0fad044407ea280043a03ffc9bc64c4e49e, specs/openapi.json";

/// Where Discord's OpenAPI spec is expected: `$ASKRELAY_DISCORD_SPEC`, else
/// `../shared/discord-api-spec/openapi.json` beside the repository. The file may be absent;
/// [`Validator::load`] then returns an error that says so plainly.
pub fn spec_path() -> PathBuf {
    match std::env::var_os(SPEC_ENV).filter(|v| !v.is_empty()) {
        Some(path) => PathBuf::from(path),
        // The repository's parent: this crate is crates/testkit in it.
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .nth(3)
            .unwrap_or(Path::new("/"))
            .join("shared/discord-api-spec/openapi.json"),
    }
}

/// Whether the validation is skipped in this run (the spec is absent at its default place and
/// `$ASKRELAY_DISCORD_SPEC` is not set); the first call says so (see [`Validator::load_or_skip`]).
/// Tests that prove the validation catches a bad body end early then.
pub fn validation_skipped() -> bool {
    matches!(Validator::load_or_skip(), Ok(None))
}

/// Whether the spec may be skipped: it is absent at the default place and nobody named a file.
fn absent_by_default() -> bool {
    std::env::var_os(SPEC_ENV).is_none_or(|v| v.is_empty()) && !spec_path().exists()
}

/// A validator for recorded Discord REST request bodies. Cheap to clone; the spec is parsed once
/// per test binary and each operation's schema is compiled once, on first use.
#[derive(Clone)]
pub struct Validator {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator")
            .field("spec", &self.inner.spec_path)
            .field("operations", &self.inner.operations.len())
            .finish_non_exhaustive()
    }
}

struct Inner {
    spec_path: PathBuf,
    /// The spec's `components` object, embedded into every compiled root document so that
    /// `$ref: "#/components/schemas/..."` resolves.
    components: Value,
    operations: Vec<Operation>,
    compiled: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

struct Operation {
    method: String,
    template: String,
    segments: Vec<String>,
    /// `requestBody.content."application/json".schema`, when the operation has one.
    schema: Option<Value>,
}

/// How the extra (non-spec) limits apply to a body.
#[derive(Clone, Copy)]
enum Extra {
    None,
    /// A message-like object at this JSON pointer (content, embeds, components).
    Message(&'static str),
    /// A modal at this JSON pointer.
    Modal(&'static str),
}

impl Validator {
    /// Loads the spec from [`spec_path`], once per test binary.
    pub fn load() -> Result<Validator, String> {
        static LOADED: OnceLock<Result<Arc<Inner>, String>> = OnceLock::new();
        LOADED
            .get_or_init(|| Inner::load(&spec_path()).map(Arc::new))
            .clone()
            .map(|inner| Validator { inner })
    }

    /// The validator, or `None` when the spec is absent at its default place and
    /// `$ASKRELAY_DISCORD_SPEC` is not set: then the validation is skipped, and the first call in
    /// this process says so in one loud line, on stderr and in `target/skipped-tests.txt`.
    pub fn load_or_skip() -> Result<Option<Validator>, String> {
        if absent_by_default() {
            static SAID: OnceLock<()> = OnceLock::new();
            SAID.get_or_init(|| {
                crate::skipped::record(
                    "Discord payload validation",
                    &format!(
                        "Discord's OpenAPI spec is not at {} and {SPEC_ENV} is not set: the bodies \
                         sent to the Discord stand-in were not checked against it (get {PINNED}; \
                         docs/testing.md)",
                        spec_path().display()
                    ),
                );
            });
            return Ok(None);
        }
        Validator::load().map(Some)
    }

    /// Loads the spec from another path, uncached (for testing the missing-spec message).
    pub fn load_from(path: &Path) -> Result<Validator, String> {
        Inner::load(path).map(|inner| Validator {
            inner: Arc::new(inner),
        })
    }

    /// Validates one recorded request: method ("POST"/"PATCH"...), path like
    /// "/api/v10/channels/123/messages" (a query string is ignored), and JSON body.
    /// Ok(()) when valid; Err(list of human-readable problems, each naming the JSON pointer).
    pub fn check(&self, method: &str, path: &str, body: &Value) -> Result<(), Vec<String>> {
        let no_schema = || vec![format!("no schema for {method} {path}")];
        let op = self.inner.operation(method, path).ok_or_else(no_schema)?;
        let op_schema = op.schema.as_ref().ok_or_else(no_schema)?;

        let named = |name: &str, extra: Extra| {
            (
                format!("#/components/schemas/{name}"),
                serde_json::json!({ "$ref": format!("#/components/schemas/{name}") }),
                extra,
            )
        };
        let (key, root, extra) =
            if op.method == "POST" && op.template == "/webhooks/{webhook_id}/{webhook_token}" {
                // An interaction's follow-up message (the webhook of the application, with the
                // interaction's token). The spec allows either of two schemas here (`anyOf`, a
                // new message or an update), which would take nearly any body and name no
                // field when one is wrong: a follow-up is a new message.
                named("IncomingWebhookRequestPartial", Extra::Message(""))
            } else if op.method == "POST" && op.template == "/channels/{channel_id}/threads" {
                // A thread with no starter message (an agent session's): the spec allows a
                // forum post here too (`anyOf`), which would take nearly any body.
                named("CreateTextThreadWithoutMessageRequest", Extra::None)
            } else if op.template == "/interactions/{interaction_id}/{interaction_token}/callback" {
                match body.get("type").and_then(Value::as_u64) {
                    // 5 (deferred reply) shares CreateMessageInteractionCallbackRequest with 4
                    // (its `type` enum is [4, 5]); 6 (deferred update) shares
                    // UpdateMessageInteractionCallbackRequest with 7 (enum [6, 7]).
                    Some(4 | 5) => named(
                        "CreateMessageInteractionCallbackRequest",
                        Extra::Message("/data"),
                    ),
                    Some(6 | 7) => named(
                        "UpdateMessageInteractionCallbackRequest",
                        Extra::Message("/data"),
                    ),
                    Some(9) => named("ModalInteractionCallbackRequest", Extra::Modal("/data")),
                    _ => (op.key(), op_schema.clone(), Extra::None),
                }
            } else {
                (op.key(), op_schema.clone(), Extra::Message(""))
            };

        let compiled = self.inner.compiled(&key, root).map_err(|e| vec![e])?;
        let mut problems = Vec::new();
        for error in compiled.iter_errors(body) {
            explain(&error, &mut problems);
        }
        match extra {
            Extra::None => {}
            Extra::Message(at) => {
                if let Some(Value::Object(msg)) = pointer(body, at) {
                    check_message(msg, at, &mut problems);
                }
            }
            Extra::Modal(at) => {
                if let Some(Value::Object(modal)) = pointer(body, at) {
                    check_modal(modal, at, &mut problems);
                }
            }
        }

        let mut seen = std::collections::HashSet::new();
        problems.retain(|p| seen.insert(p.clone()));
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}

impl Inner {
    fn load(path: &Path) -> Result<Inner, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!(
                    "Discord's OpenAPI spec is missing at {}; the payload validation test cannot run",
                    path.display()
                ))
            }
            Err(e) => {
                return Err(format!(
                    "Discord's OpenAPI spec at {} cannot be read ({e}); the payload validation test cannot run",
                    path.display()
                ))
            }
        };
        let spec: Value = serde_json::from_str(&text).map_err(|e| {
            format!(
                "Discord's OpenAPI spec at {} is not valid JSON ({e}); the payload validation test cannot run",
                path.display()
            )
        })?;
        let components = spec
            .get("components")
            .filter(|c| c.get("schemas").is_some())
            .cloned()
            .ok_or_else(|| {
                format!(
                    "Discord's OpenAPI spec at {} has no components.schemas; the payload validation test cannot run",
                    path.display()
                )
            })?;
        let paths = spec
            .get("paths")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                format!(
                "Discord's OpenAPI spec at {} has no paths; the payload validation test cannot run",
                path.display()
            )
            })?;

        let mut operations = Vec::new();
        for (template, item) in paths {
            let Some(item) = item.as_object() else {
                continue;
            };
            for method in [
                "get", "put", "post", "delete", "options", "head", "patch", "trace",
            ] {
                let Some(op) = item.get(method) else { continue };
                let schema = op
                    .pointer("/requestBody/content/application~1json/schema")
                    .cloned();
                operations.push(Operation {
                    method: method.to_ascii_uppercase(),
                    template: template.clone(),
                    segments: split_path(template),
                    schema,
                });
            }
        }

        Ok(Inner {
            spec_path: path.to_owned(),
            components,
            operations,
            compiled: Mutex::new(HashMap::new()),
        })
    }

    /// The spec operation for a concrete request path. `{param}` segments match anything; when
    /// several templates match (`.../messages/@original` and `.../messages/{message_id}`), the one
    /// with the most literal segments wins.
    fn operation(&self, method: &str, path: &str) -> Option<&Operation> {
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let path = strip_api_prefix(path);
        let segments = split_path(path);
        self.operations
            .iter()
            .filter(|op| op.method.eq_ignore_ascii_case(method))
            .filter(|op| op.segments.len() == segments.len())
            .filter(|op| {
                op.segments
                    .iter()
                    .zip(&segments)
                    .all(|(t, s)| is_param(t) || t == s)
            })
            .max_by_key(|op| op.segments.iter().filter(|t| !is_param(t)).count())
    }

    fn compiled(&self, key: &str, root: Value) -> Result<Arc<jsonschema::Validator>, String> {
        let mut cache = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = cache.get(key) {
            return Ok(Arc::clone(v));
        }
        if let Some(name) = key.strip_prefix("#/components/schemas/") {
            if self
                .components
                .pointer(&format!("/schemas/{name}"))
                .is_none()
            {
                return Err(format!(
                    "Discord's OpenAPI spec has no schema named {name} (expected at components/schemas/{name})"
                ));
            }
        }
        // A root document made of the target schema plus the spec's `components`, so that
        // `$ref: "#/components/schemas/..."` resolves inside it. OpenAPI 3.1 schemas are JSON
        // Schema 2020-12; `discriminator` and `x-discord-*` are ignored as unknown keywords.
        let mut root = match root {
            Value::Object(map) => map,
            Value::Bool(b) => {
                let mut map = Map::new();
                if !b {
                    map.insert("not".into(), Value::Object(Map::new()));
                }
                map
            }
            other => {
                return Err(format!(
                    "the spec's schema for {key} is not a schema: {other}"
                ))
            }
        };
        root.insert("components".into(), self.components.clone());
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&Value::Object(root))
            .map_err(|e| format!("cannot compile the spec's schema for {key}: {e}"))?;
        let validator = Arc::new(validator);
        cache.insert(key.to_owned(), Arc::clone(&validator));
        Ok(validator)
    }
}

impl Operation {
    fn key(&self) -> String {
        format!("{} {}", self.method, self.template)
    }
}

fn strip_api_prefix(path: &str) -> &str {
    if let Some(rest) = path.strip_prefix("/api/v") {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && (rest[digits..].is_empty() || rest[digits..].starts_with('/')) {
            return &rest[digits..];
        }
    }
    path.strip_prefix("/api")
        .filter(|rest| rest.starts_with('/'))
        .unwrap_or(path)
}

fn split_path(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn is_param(segment: &str) -> bool {
    segment.starts_with('{') && segment.ends_with('}')
}

fn pointer<'a>(body: &'a Value, at: &str) -> Option<&'a Value> {
    if at.is_empty() {
        Some(body)
    } else {
        body.pointer(at)
    }
}

fn show_ptr(ptr: &str) -> &str {
    if ptr.is_empty() {
        "(body root)"
    } else {
        ptr
    }
}

/// A JSON value rendered short enough for a problem message.
fn short(v: &Value) -> String {
    let text = v.to_string();
    let n = text.chars().count();
    if n <= 80 {
        text
    } else {
        let head: String = text.chars().take(50).collect();
        format!("{head}… ({n} characters of JSON)")
    }
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

// ---------------------------------------------------------------------------------------------
// Spec errors
// ---------------------------------------------------------------------------------------------

/// Turns one jsonschema error into readable problems. A failed `oneOf`/`anyOf` (nullable
/// wrappers, component unions) is explained through its closest branch rather than as "not
/// valid under any of the schemas" with the whole instance.
fn explain(error: &jsonschema::ValidationError<'_>, out: &mut Vec<String>) {
    let ptr = error.instance_path().as_str();
    match error.kind() {
        ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context } => {
            match closest_branch(ptr, context) {
                Some(branch) => {
                    for e in branch {
                        explain(e, out);
                    }
                }
                None => match allowed_constants(ptr, context) {
                    Some(allowed) => out.push(format!(
                        "spec violation at {}: {} is not one of the values the spec allows here ({allowed})",
                        show_ptr(ptr),
                        short(error.instance())
                    )),
                    None => out.push(format!(
                        "spec violation at {}: {} matches none of the shapes the spec allows here",
                        show_ptr(ptr),
                        short(error.instance())
                    )),
                },
            }
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => out.push(format!(
            "spec violation at {}: {} matches more than one of the shapes the spec allows here (oneOf)",
            show_ptr(ptr),
            short(error.instance())
        )),
        kind => {
            let instance = error.instance();
            let full = instance.to_string();
            let mut message = error.to_string();
            if chars(&full) > 80 {
                message = message.replacen(&full, &short(instance), 1);
            }
            match (kind, instance.as_ref()) {
                (
                    ValidationErrorKind::MaxLength { .. } | ValidationErrorKind::MinLength { .. },
                    Value::String(s),
                ) => message.push_str(&format!(" (it has {})", chars(s))),
                (
                    ValidationErrorKind::MaxItems { .. } | ValidationErrorKind::MinItems { .. },
                    Value::Array(a),
                ) => message.push_str(&format!(" (it has {} items)", a.len())),
                _ => {}
            }
            out.push(format!("spec violation at {}: {message}", show_ptr(ptr)));
        }
    }
}

/// For a union of `const`s (the spec's enums, e.g. button styles): the allowed values, listed.
fn allowed_constants(
    ptr: &str,
    context: &[Vec<jsonschema::ValidationError<'static>>],
) -> Option<String> {
    let mut allowed = Vec::new();
    for branch in context {
        match branch.as_slice() {
            [e] if e.instance_path().as_str() == ptr => match e.kind() {
                ValidationErrorKind::Constant { expected_value } => {
                    allowed.push(expected_value.to_string());
                }
                ValidationErrorKind::Enum { options } => allowed.push(options.to_string()),
                _ => return None,
            },
            _ => return None,
        }
    }
    (!allowed.is_empty()).then(|| allowed.join(", "))
}

/// The branch of a failed union that the instance was most likely meant to be: one whose failure
/// is not a mismatch of the value's own type or of its `type` discriminator, with the fewest
/// errors. None when every branch is a shape mismatch.
fn closest_branch<'a>(
    ptr: &str,
    context: &'a [Vec<jsonschema::ValidationError<'static>>],
) -> Option<&'a [jsonschema::ValidationError<'static>]> {
    let discriminator = format!("{ptr}/type");
    let mismatch = |e: &jsonschema::ValidationError<'static>| {
        let at = e.instance_path().as_str();
        match e.kind() {
            ValidationErrorKind::Type { .. } => at == ptr,
            ValidationErrorKind::Enum { .. } | ValidationErrorKind::Constant { .. } => {
                at == ptr || at == discriminator
            }
            ValidationErrorKind::OneOfNotValid { .. } => at == discriminator,
            _ => false,
        }
    };
    context
        .iter()
        .filter(|branch| !branch.is_empty() && !branch.iter().any(mismatch))
        .min_by_key(|branch| branch.len())
        .map(Vec::as_slice)
}

// ---------------------------------------------------------------------------------------------
// Limits the spec misses
// ---------------------------------------------------------------------------------------------

fn limit(out: &mut Vec<String>, ptr: &str, message: impl Display) {
    out.push(format!(
        "Discord limit exceeded at {}: {message}",
        show_ptr(ptr)
    ));
}

fn max_chars(out: &mut Vec<String>, obj: &Map<String, Value>, at: &str, field: &str, max: usize) {
    if let Some(Value::String(s)) = obj.get(field) {
        let n = chars(s);
        if n > max {
            limit(
                out,
                &format!("{at}/{field}"),
                format!("{field} has {n} characters; Discord allows at most {max}"),
            );
        }
    }
}

fn int_range(
    out: &mut Vec<String>,
    obj: &Map<String, Value>,
    at: &str,
    field: &str,
    min: i64,
    max: i64,
) -> Option<i64> {
    let v = obj.get(field)?.as_i64()?;
    if v < min || v > max {
        limit(
            out,
            &format!("{at}/{field}"),
            format!("{field} is {v}; Discord allows {min} to {max}"),
        );
    }
    Some(v)
}

/// content, embeds and components of a message body (or of a callback's `data`).
fn check_message(msg: &Map<String, Value>, at: &str, out: &mut Vec<String>) {
    max_chars(out, msg, at, "content", 2000);

    if let Some(Value::Array(embeds)) = msg.get("embeds") {
        check_embeds(embeds, &format!("{at}/embeds"), out);
    }

    if let Some(Value::Array(components)) = msg.get("components") {
        let flags = msg.get("flags").and_then(Value::as_u64).unwrap_or(0);
        let at = format!("{at}/components");
        if flags & IS_COMPONENTS_V2 == 0 {
            if components.len() > 5 {
                limit(
                    out,
                    &at,
                    format!(
                        "{} action rows; Discord allows at most 5 per message (without the IS_COMPONENTS_V2 flag)",
                        components.len()
                    ),
                );
            }
            for (i, c) in components.iter().enumerate() {
                let ty = c.get("type").and_then(Value::as_u64);
                if ty.is_some() && ty != Some(1) {
                    limit(
                        out,
                        &format!("{at}/{i}/type"),
                        format!(
                            "a top-level component of type {} needs the IS_COMPONENTS_V2 flag; without it only action rows (type 1) are allowed",
                            ty.unwrap_or_default()
                        ),
                    );
                }
            }
        }
        let mut ids = HashMap::new();
        check_components(components, &at, &mut ids, out);
    }
}

fn check_embeds(embeds: &[Value], at: &str, out: &mut Vec<String>) {
    if embeds.len() > 10 {
        limit(
            out,
            at,
            format!("{} embeds; Discord allows at most 10", embeds.len()),
        );
    }
    let mut total = 0usize;
    for (i, embed) in embeds.iter().enumerate() {
        let Some(embed) = embed.as_object() else {
            continue;
        };
        let at = format!("{at}/{i}");
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map_or(0, chars);
        max_chars(out, embed, &at, "title", 256);
        max_chars(out, embed, &at, "description", 4096);
        total += text(embed.get("title")) + text(embed.get("description"));
        if let Some(Value::Object(footer)) = embed.get("footer") {
            max_chars(out, footer, &format!("{at}/footer"), "text", 2048);
            total += text(footer.get("text"));
        }
        if let Some(Value::Object(author)) = embed.get("author") {
            max_chars(out, author, &format!("{at}/author"), "name", 256);
            total += text(author.get("name"));
        }
        if let Some(Value::Array(fields)) = embed.get("fields") {
            if fields.len() > 25 {
                limit(
                    out,
                    &format!("{at}/fields"),
                    format!("{} fields; Discord allows at most 25", fields.len()),
                );
            }
            for (j, field) in fields.iter().enumerate() {
                let Some(field) = field.as_object() else {
                    continue;
                };
                let at = format!("{at}/fields/{j}");
                max_chars(out, field, &at, "name", 256);
                max_chars(out, field, &at, "value", 1024);
                total += text(field.get("name")) + text(field.get("value"));
            }
        }
    }
    if total > 6000 {
        limit(
            out,
            at,
            format!(
                "the embeds hold {total} characters of text in total (titles, descriptions, field names and values, footers, author names); Discord allows at most 6000"
            ),
        );
    }
}

fn check_modal(modal: &Map<String, Value>, at: &str, out: &mut Vec<String>) {
    max_chars(out, modal, at, "title", 45);
    if let Some(Value::String(id)) = modal.get("custom_id") {
        check_custom_id_length(id, &format!("{at}/custom_id"), out);
    }
    if let Some(Value::Array(components)) = modal.get("components") {
        let at = format!("{at}/components");
        if components.is_empty() || components.len() > 5 {
            limit(
                out,
                &at,
                format!(
                    "a modal has {} components; Discord allows 1 to 5",
                    components.len()
                ),
            );
        }
        let mut ids = HashMap::new();
        check_components(components, &at, &mut ids, out);
    }
}

fn check_custom_id_length(id: &str, at: &str, out: &mut Vec<String>) {
    let n = chars(id);
    if !(1..=100).contains(&n) {
        limit(
            out,
            at,
            format!("custom_id has {n} characters; Discord allows 1 to 100"),
        );
    }
}

fn is_select(ty: Option<u64>) -> bool {
    matches!(ty, Some(3 | 5 | 6 | 7 | 8))
}

/// Every component in `components` and below it (rows, containers, sections, labels).
/// `ids` maps each custom_id seen so far to where it was first seen.
fn check_components(
    components: &[Value],
    at: &str,
    ids: &mut HashMap<String, String>,
    out: &mut Vec<String>,
) {
    for (i, c) in components.iter().enumerate() {
        check_component(c, &format!("{at}/{i}"), ids, out);
    }
}

fn check_component(c: &Value, at: &str, ids: &mut HashMap<String, String>, out: &mut Vec<String>) {
    let Some(obj) = c.as_object() else { return };
    let ty = obj.get("type").and_then(Value::as_u64);

    if let Some(Value::String(id)) = obj.get("custom_id") {
        let id_at = format!("{at}/custom_id");
        check_custom_id_length(id, &id_at, out);
        if let Some(first) = ids.get(id) {
            limit(
                out,
                &id_at,
                format!(
                    "custom_id {} is used twice (first at {first}); it must be unique within the message or modal",
                    short(&Value::String(id.clone()))
                ),
            );
        } else {
            ids.insert(id.clone(), id_at);
        }
    }

    match ty {
        Some(1) => check_action_row(obj, at, out),
        Some(2) => max_chars(out, obj, at, "label", 80),
        Some(4) => check_text_input(obj, at, out),
        _ => {}
    }
    if is_select(ty) {
        check_select(obj, ty == Some(3), at, out);
    }

    if let Some(Value::Array(children)) = obj.get("components") {
        check_components(children, &format!("{at}/components"), ids, out);
    }
    for key in ["component", "accessory"] {
        if let Some(child @ Value::Object(_)) = obj.get(key) {
            check_component(child, &format!("{at}/{key}"), ids, out);
        }
    }
}

fn check_action_row(row: &Map<String, Value>, at: &str, out: &mut Vec<String>) {
    let Some(Value::Array(children)) = row.get("components") else {
        return;
    };
    let at = format!("{at}/components");
    let types: Vec<Option<u64>> = children
        .iter()
        .map(|c| c.get("type").and_then(Value::as_u64))
        .collect();
    let buttons = types.iter().filter(|t| **t == Some(2)).count();
    let selects = types.iter().filter(|t| is_select(**t)).count();
    let text_inputs = types.iter().filter(|t| **t == Some(4)).count();
    if children.is_empty() {
        limit(
            out,
            &at,
            "an action row is empty; it must hold 1 to 5 buttons or exactly one select menu",
        );
    } else if selects > 0 && children.len() > 1 {
        limit(
            out,
            &at,
            format!(
                "an action row holds a select menu and {} other component(s); a select menu must be alone in its row",
                children.len() - 1
            ),
        );
    } else if text_inputs > 0 && children.len() > 1 {
        limit(
            out,
            &at,
            format!(
                "an action row holds a text input and {} other component(s); a text input must be alone in its row",
                children.len() - 1
            ),
        );
    } else if buttons > 5 {
        limit(
            out,
            &at,
            format!("an action row holds {buttons} buttons; Discord allows at most 5"),
        );
    }
}

fn check_select(select: &Map<String, Value>, string_select: bool, at: &str, out: &mut Vec<String>) {
    max_chars(out, select, at, "placeholder", 150);
    let min = int_range(out, select, at, "min_values", 0, 25);
    let max = int_range(out, select, at, "max_values", 1, 25);
    if let (Some(min), Some(max)) = (min, max) {
        if max < min {
            limit(
                out,
                &format!("{at}/max_values"),
                format!("max_values {max} is below min_values {min}"),
            );
        }
    }
    if !string_select {
        return;
    }
    let Some(Value::Array(options)) = select.get("options") else {
        return;
    };
    let options_at = format!("{at}/options");
    if options.is_empty() || options.len() > 25 {
        limit(
            out,
            &options_at,
            format!(
                "a string select has {} options; Discord allows 1 to 25",
                options.len()
            ),
        );
    }
    if let Some(max) = max {
        if usize::try_from(max).is_ok_and(|m| m > options.len()) {
            limit(
                out,
                &format!("{at}/max_values"),
                format!(
                    "max_values {max} is more than the {} options offered",
                    options.len()
                ),
            );
        }
    }
    for (i, option) in options.iter().enumerate() {
        if let Some(option) = option.as_object() {
            let at = format!("{options_at}/{i}");
            for field in ["label", "value", "description"] {
                max_chars(out, option, &at, field, 100);
            }
        }
    }
}

fn check_text_input(input: &Map<String, Value>, at: &str, out: &mut Vec<String>) {
    max_chars(out, input, at, "label", 45);
    max_chars(out, input, at, "value", 4000);
    max_chars(out, input, at, "placeholder", 100);
    let min = int_range(out, input, at, "min_length", 0, 4000);
    let max = int_range(out, input, at, "max_length", 1, 4000);
    if let (Some(min), Some(max)) = (min, max) {
        if max < min {
            limit(
                out,
                &format!("{at}/max_length"),
                format!("max_length {max} is below min_length {min}"),
            );
        }
    }
}
