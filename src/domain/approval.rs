//! The approval vocabulary: the option labels the approval front doors (`askrelay hook`,
//! `askrelay approve`) ask with, and which of them allow or deny. The rules that must know
//! whether an answer lets something run (decisive votes, expiry on approval routes) read them
//! here.

/// The option that allows a tool call (`askrelay hook`, PreToolUse and Codex).
pub const ALLOW: &str = "Allow";
/// The option that allows a permission request once (Claude Code's PermissionRequest).
pub const ALLOW_ONCE: &str = "Allow once";
/// The option that runs the command (`askrelay approve`).
pub const RUN: &str = "Run";
/// How the options that keep a permission begin: Claude Code's suggestions.
pub const KEEP_PREFIXES: [&str; 2] = ["Always allow", "Allow for this session"];

/// The option that denies (free text denies too, with a reason).
pub const DENY: &str = "Deny";
/// Denies and stops the agent's turn (Claude Code's PermissionRequest).
pub const DENY_AND_STOP: &str = "Deny and stop";
/// Does not run the command (`askrelay approve`).
pub const DO_NOT_RUN: &str = "Do not run";

/// The labels of the approval front doors' deny options: decisive on every quorum route. They
/// are known by name rather than marked in the request, which the agent's side writes: a mark
/// there could make "Allow" decisive.
pub const FRONT_DOOR_DENY: [&str; 3] = [DENY, DENY_AND_STOP, DO_NOT_RUN];

/// Whether `label` is one of the front doors' options that let the step run.
pub fn is_front_door_allow(label: &str) -> bool {
    [ALLOW, ALLOW_ONCE, RUN].contains(&label) || KEEP_PREFIXES.iter().any(|p| label.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_front_doors_allow_labels() {
        for l in [
            "Allow",
            "Allow once",
            "Run",
            "Always allow: Bash(npm test:*)",
        ] {
            assert!(is_front_door_allow(l), "{l}");
        }
        assert!(is_front_door_allow("Allow for this session: Edit"));
        for l in ["Deny", "Deny and stop", "Do not run", "allow", "Hold"] {
            assert!(!is_front_door_allow(l), "{l}");
        }
    }
}
