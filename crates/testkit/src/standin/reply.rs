//! What the stand-in's REST routes answer: a status, a JSON body and headers, as Discord sends
//! them (its error bodies carry Discord's own codes).

use axum::body::Body;
use axum::response::Response;
use serde_json::{json, Value};

pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) body: Option<Value>,
    pub(super) headers: Vec<(String, String)>,
}

impl Reply {
    pub(super) fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            body: Some(body),
            headers: Vec::new(),
        }
    }

    pub(super) fn no_content() -> Reply {
        Reply {
            status: 204,
            body: None,
            headers: Vec::new(),
        }
    }

    pub(super) fn error(status: u16, code: u64, message: &str) -> Reply {
        Reply::json(status, json!({"message": message, "code": code}))
    }

    pub(super) fn not_found() -> Reply {
        Reply::error(404, 0, "404: Not Found")
    }

    pub(super) fn unknown_message() -> Reply {
        Reply::error(404, 10008, "Unknown Message")
    }

    pub(super) fn unknown_webhook() -> Reply {
        Reply::error(404, 10015, "Unknown Webhook")
    }

    pub(super) fn into_response(self) -> Response {
        let mut builder = Response::builder().status(self.status);
        for (k, v) in &self.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let response = match self.body {
            Some(body) => builder
                .header("content-type", "application/json")
                .body(Body::from(body.to_string())),
            None => builder.body(Body::empty()),
        };
        response.expect("stand-in: building a response")
    }
}
