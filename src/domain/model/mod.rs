//! The tool input (docs/contract.md, "Tool input") as plain types, and the rules a valid one
//! keeps ([`Ask::validate`], in `rules.rs`): every error names the exact field
//! (`questions[1].options[0].label`) and the rule it broke. Reading an ask from a JSON line is
//! the protocol's (`protocol::ask`), which checks it with these rules.

use super::error::AskError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};

/// Hard limits of the tool input (docs/contract.md, "Tool input") that are not configurable.
pub const MAX_ID_CHARS: usize = 64;
pub const MAX_QUESTION_CHARS: usize = 4000;
pub const MAX_HEADER_CHARS: usize = 80;
pub const MAX_OPTIONS: usize = 25;
pub const MAX_LABEL_CHARS: usize = 200;
pub const MAX_DESCRIPTION_CHARS: usize = 1000;
/// Free text is bounded by what a Discord text input can hold.
pub const MAX_CUSTOM_CHARS: usize = 4000;
/// A request id is an idempotency key chosen by the client; it never reaches Discord.
pub const MAX_REQUEST_ID_CHARS: usize = 128;
pub const MAX_SCOPE_LABELS: usize = 16;
pub const MAX_SCOPE_KEY_CHARS: usize = 64;
pub const MAX_SCOPE_VALUE_CHARS: usize = 200;
/// `caller.agent_id` and `caller.owner_agent_id`.
pub const MAX_AGENT_ID_CHARS: usize = 128;
/// The free-text note of a terminal answer (`by`, `askrelay answer --as`).
pub const MAX_NOTE_CHARS: usize = 200;
/// A cancel's `reason`.
pub const MAX_REASON_CHARS: usize = 500;
/// `context.text`, in bytes of UTF-8 (16 KiB).
pub const MAX_CONTEXT_TEXT_BYTES: usize = 16 * 1024;
/// `context.files`: Discord takes at most 10 attachments per message, and one is kept for
/// `context.text` when it is too long to show inline.
pub const MAX_CONTEXT_FILES: usize = 9;
/// `context.files[].content`, in bytes of UTF-8 (1 MiB).
pub const MAX_CONTEXT_FILE_BYTES: usize = 1024 * 1024;
/// `context.files[].name`.
pub const MAX_CONTEXT_FILE_NAME_CHARS: usize = 100;

/// The suffix that marks the recommended option (docs/contract.md, "Tool input").
pub const RECOMMENDED_SUFFIX: &str = " (Recommended)";

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl QuestionOption {
    pub fn is_recommended(&self) -> bool {
        self.label.ends_with(RECOMMENDED_SUFFIX)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Question {
    pub id: String,
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    #[serde(default)]
    pub options: Vec<QuestionOption>,
    #[serde(rename = "multiSelect", default)]
    pub multi_select: bool,
}

/// What kind of answer a question takes; decides rendering and which settlements are valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionKind {
    /// One option, or custom text instead.
    Single,
    /// Any subset of the options, plus optional custom text.
    Multi,
    /// No options: custom text only.
    FreeText,
}

impl Question {
    pub fn kind(&self) -> QuestionKind {
        if self.options.is_empty() {
            QuestionKind::FreeText
        } else if self.multi_select {
            QuestionKind::Multi
        } else {
            QuestionKind::Single
        }
    }

    /// The index of the option whose label is exactly `label`.
    pub fn option_index(&self, label: &str) -> Option<usize> {
        self.options.iter().position(|o| o.label == label)
    }

    /// The options that `picks` name, as indices in the order given: each pick is an option's
    /// label, exactly, or (with `by_number`, for a person at a terminal) its number from 1. A
    /// pick that names none is `INVALID_REQUEST`, listing what the question offers.
    pub fn resolve(&self, picks: &[String], by_number: bool) -> Result<Vec<usize>, AskError> {
        picks
            .iter()
            .map(|p| {
                self.option_index(p)
                    .or_else(|| {
                        let n = p.parse::<usize>().ok().filter(|_| by_number)?;
                        (1..=self.options.len()).contains(&n).then(|| n - 1)
                    })
                    .ok_or_else(|| self.no_such_option(p, by_number))
            })
            .collect()
    }

    fn no_such_option(&self, pick: &str, by_number: bool) -> AskError {
        use super::text::Escaped;
        let offered = if self.options.is_empty() {
            "none (free text only)".to_owned()
        } else if by_number {
            let all: Vec<String> = self
                .options
                .iter()
                .enumerate()
                .map(|(i, o)| format!("{}. {}", i + 1, Escaped(&o.label)))
                .collect();
            all.join(", ")
        } else {
            let all: Vec<String> = self
                .options
                .iter()
                .map(|o| format!("{:?}", Escaped(&o.label)))
                .collect();
            all.join(", ")
        };
        let how = if by_number {
            "give a label or a number"
        } else {
            "its options are"
        };
        AskError::invalid(format!(
            "question {:?} has no option {:?}; {how}: {offered}",
            Escaped(&self.id),
            Escaped(pick)
        ))
    }
}

/// Who is asking (docs/contract.md, "Socket protocol"). A non-null `owner_agent_id` marks a delegated sub-agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub owner_agent_id: Option<String>,
}

/// Free-form labels (`project`, `agent`, `session`, …) that routes match on.
pub type Scope = BTreeMap<String, String>;

/// What exactly is being approved, shown with the question: a text (markdown) and files (a
/// diff, a plan). On the socket only (docs/contract.md, "Context"); the tool input has no such field.
/// How it is shown is the answerer's business.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Context {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ContextFile>,
    /// What the approval is for, in a form grants match on and approvers may edit: set by the
    /// approval front doors (`askrelay hook`, `askrelay approve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
}

/// The subject of an approval: a tool and its exact command, and the agent session asking
/// (docs/approvals.md, "Grants"). A grant matches the tool, the command (or its pattern), the
/// asking uid and host, and the session when there is one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Approval {
    pub tool: String,
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Whether the approver may edit the command before approving it (Edit…): the front door
    /// runs the edited command.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub editable: bool,
}

/// The longest approval command: what Discord's modal can hold to edit it.
pub const MAX_APPROVAL_COMMAND_CHARS: usize = 4000;

/// One file of a [`Context`]: always text (UTF-8).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ContextFile {
    pub name: String,
    pub content: String,
}

impl Context {
    /// Neither text nor files.
    pub fn is_empty(&self) -> bool {
        self.text.is_none() && self.files.is_empty() && self.approval.is_none()
    }
}

/// A validated `ask` operation. Clients build it with `protocol::ask::parse_ask` too, so what
/// they send is what the daemon will accept (the daemon validates again, with its own limits).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ask {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Caller::is_root")]
    pub caller: Caller,
    #[serde(default, skip_serializing_if = "Scope::is_empty")]
    pub scope: Scope,
    pub questions: Vec<Question>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Context>,
    /// What the asking connection closing without an answer means.
    #[serde(default, skip_serializing_if = "OnDisconnect::is_grace")]
    pub on_disconnect: OnDisconnect,
}

/// What an asking connection that closes without an answer means for its request (an ask's
/// `on_disconnect`; docs/protocol.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnDisconnect {
    /// The client may come back (a restart of its own, a lost connection): the request waits
    /// `cancel_grace_secs` for a re-attach.
    #[default]
    Grace,
    /// The client never comes back while the daemon runs (an agent's hook, which the agent
    /// killed or gave up on): the request is withdrawn at once, "the agent moved on".
    Withdraw,
}

impl OnDisconnect {
    pub fn is_grace(&self) -> bool {
        *self == OnDisconnect::Grace
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OnDisconnect::Grace => "grace",
            OnDisconnect::Withdraw => "withdraw",
        }
    }
}

impl Caller {
    /// The default: the root agent, unnamed.
    pub fn is_root(&self) -> bool {
        self.agent_id.is_none() && self.owner_agent_id.is_none()
    }
}

/// What an ask may hold that the configuration decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `limits.max_questions`.
    pub max_questions: usize,
}

impl Limits {
    /// No configured limit: only the contract's own (clients, which the daemon checks again).
    pub const NONE: Limits = Limits {
        max_questions: usize::MAX,
    };
}

impl Ask {
    /// Every rule of an ask (docs/contract.md, "Tool input", and the socket's additions), each error naming its field
    /// and rule: what the line parser checks after reading the shape, and what a typed ask
    /// built in code (a front door's) is checked with before it is sent.
    pub fn validate(&self, limits: &Limits) -> Result<(), AskError> {
        if let Some(id) = &self.request_id {
            check_request_id(id)?;
        }
        for (name, v) in [
            ("agent_id", &self.caller.agent_id),
            ("owner_agent_id", &self.caller.owner_agent_id),
        ] {
            if let Some(v) = v {
                check_line(v, &format!("caller.{name}"), MAX_AGENT_ID_CHARS)?;
            }
        }
        validate_scope(&self.scope)?;
        validate_questions(&self.questions, limits.max_questions)?;
        if let Some(c) = &self.context {
            c.validate()?;
        }
        Ok(())
    }
}

impl Context {
    /// The rules of a context: a text of 1 byte to 16 KiB, at most 9 files, each with a safe
    /// name unique within the context (ignoring case) and 1 byte to 1 MiB of content.
    pub fn validate(&self) -> Result<(), AskError> {
        if let Some(t) = &self.text {
            if t.trim().is_empty() {
                return Err(AskError::invalid(
                    "context.text: must not be empty (leave it out instead)",
                ));
            }
            check_bytes(t, "context.text", MAX_CONTEXT_TEXT_BYTES)?;
        }
        if self.files.len() > MAX_CONTEXT_FILES {
            return Err(AskError::invalid(format!(
                "context.files: at most {MAX_CONTEXT_FILES} files, got {}",
                self.files.len()
            )));
        }
        let mut names = HashSet::new();
        for (i, f) in self.files.iter().enumerate() {
            let path = format!("context.files[{i}]");
            check_text(
                &f.name,
                &format!("{path}.name"),
                MAX_CONTEXT_FILE_NAME_CHARS,
            )?;
            check_file_name(&f.name, &format!("{path}.name"))?;
            // Discord shows names case-insensitively alike as one; so do we.
            if !names.insert(f.name.to_ascii_lowercase()) {
                return Err(AskError::invalid(format!(
                    "{path}.name: \"{}\" is used twice; file names must be unique within a \
                     context",
                    f.name
                )));
            }
            if f.content.is_empty() {
                return Err(AskError::invalid(format!(
                    "{path}.content: must not be empty"
                )));
            }
            check_bytes(
                &f.content,
                &format!("{path}.content"),
                MAX_CONTEXT_FILE_BYTES,
            )?;
        }
        Ok(())
    }
}

mod rules;
pub use rules::*;

#[cfg(test)]
mod tests;
