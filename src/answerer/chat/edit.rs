//! Edit-then-approve: an approver edits the command asked and approves the edited one (a
//! route's `allow_edits`). The form starts from the edit others voted for last, so that a
//! second approver approves the same edited command; a command sent back unchanged is a
//! plain allow.

use crate::domain::answer::Terms;
use crate::domain::request::Request;
use crate::domain::Settlement;

/// The command the edit form of question `idx` starts from: the edit voted for last on a
/// quorum route, else the command as `asked`.
pub fn starting_command(req: &Request, idx: usize, asked: &str) -> String {
    req.votes[idx]
        .iter()
        .rev()
        .find_map(|v| v.terms.as_ref().and_then(|t| t.edited.clone()))
        .unwrap_or_else(|| asked.to_owned())
}

/// The settlement of an edit form sent with `text`: the first option (the front door's
/// allow), with the edited command when it differs from the one asked.
pub fn edited(req: &Request, text: String) -> Settlement {
    let asked = req
        .context
        .as_deref()
        .and_then(|c| c.approval.as_ref())
        .map(|ap| ap.command.as_str());
    let edited = (asked != Some(text.as_str())).then_some(text);
    Settlement {
        selected: vec![0],
        custom: None,
        terms: edited.map(|e| Terms {
            grant: None,
            edited: Some(e),
        }),
    }
}
