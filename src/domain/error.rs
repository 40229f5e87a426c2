//! The error codes (docs/contract.md, "Error codes") and the one error type that carries them to the wire.
//!
//! Inside the daemon errors are `anyhow`; at the edge (the socket, the CLI, MCP) every failure
//! becomes an [`AskError`] with a stable [`ErrorCode`] and a message that says what to do.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The stable error codes an agent can depend on (docs/contract.md, "Error codes"), plus `CONFLICT` for the
/// supervision operations (an answer that did not count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    InvalidRequest,
    DelegatedCaller,
    NoAnswerer,
    Aborted,
    Expired,
    Internal,
    /// Only for `answer`: the question was already settled or the request has ended.
    Conflict,
    /// The connecting local user is not in `allowed_uids`.
    Forbidden,
    /// The daemon is at `limits.max_connections`.
    Busy,
}

/// The exit code of a client command that cannot reach the daemon (beside the codes of
/// [`ErrorCode::exit_code`]).
pub const EXIT_UNREACHABLE: i32 = 7;

impl ErrorCode {
    /// Every code, for series that must exist before their first event.
    pub const ALL: [ErrorCode; 9] = [
        ErrorCode::InvalidRequest,
        ErrorCode::DelegatedCaller,
        ErrorCode::NoAnswerer,
        ErrorCode::Aborted,
        ErrorCode::Expired,
        ErrorCode::Internal,
        ErrorCode::Conflict,
        ErrorCode::Forbidden,
        ErrorCode::Busy,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::DelegatedCaller => "DELEGATED_CALLER",
            ErrorCode::NoAnswerer => "NO_ANSWERER",
            ErrorCode::Aborted => "ABORTED",
            ErrorCode::Expired => "EXPIRED",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::Conflict => "CONFLICT",
            ErrorCode::Forbidden => "FORBIDDEN",
            ErrorCode::Busy => "BUSY",
        }
    }

    pub fn parse(s: &str) -> Option<ErrorCode> {
        serde_json::from_value(serde_json::Value::String(s.to_owned())).ok()
    }

    /// The exit code of `askrelay ask` for this error (docs/contract.md, "CLI").
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorCode::InvalidRequest => 2,
            ErrorCode::DelegatedCaller => 3,
            ErrorCode::NoAnswerer => 4,
            ErrorCode::Aborted => 5,
            ErrorCode::Expired => 6,
            ErrorCode::Internal | ErrorCode::Conflict | ErrorCode::Forbidden | ErrorCode::Busy => 1,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure with its wire code and a message meant for the agent or the operator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct AskError {
    pub code: ErrorCode,
    pub message: String,
    /// Nothing changed and the same operation may be sent again as it is: the store could not
    /// be reached (the wire's `"retry": true`). A client following an ask asks again with the
    /// same request id until it is stored (docs/contract.md, "Errors").
    pub retry: bool,
}

impl AskError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        AskError {
            code,
            message: message.into(),
            retry: false,
        }
    }

    /// This error, marked as one after which the same operation may be sent again.
    pub fn retryable(mut self) -> Self {
        self.retry = true;
        self
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }

    pub fn internal(err: &anyhow::Error) -> Self {
        Self::new(ErrorCode::Internal, format!("{err:#}"))
    }

    pub fn aborted(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Aborted, message)
    }
}
