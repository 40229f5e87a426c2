//! Patterns. Shell-style globs, as routes (`match`) and identities (`sessions`) use them
//! ([`matches`]): `*` matches any run of characters, `?` one character, anything else itself.
//! And grant patterns ([`pattern_matches`], [`check_pattern`]), which match on shell words
//! ([`super::shell`]) instead.

use super::shell;

/// Whether `text` matches `pattern`.
pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // One backtrack point, the last `*`: linear in practice, never exponential.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            // The star takes one more character.
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Whether `command` matches `pattern`, on shell words ([`shell::split`]): both must split
/// cleanly (one simple command: no `;` `&` `|` `<` `>` `$` backticks, line breaks, comments,
/// brace expansions or unclosed quotes), a bare `*` word stands for any number of whole words,
/// and inside any other word a bare `*` stands for characters of that word and `?` for one.
/// A command that does not split cleanly never matches.
pub fn pattern_matches(pattern: &str, command: &str) -> bool {
    match (shell::split(pattern), shell::split(command)) {
        (Ok(p), Ok(c)) => names_a_command(&p) && shell::words_match(&p, &c),
        _ => false,
    }
}

/// Whether a pattern's first word is a command: plain text, no wildcard (`*`, `* *` and `?*`
/// would allow any program).
fn names_a_command(words: &[shell::Word]) -> bool {
    words
        .first()
        .is_some_and(|w| !w.has_wildcard() && !w.text().is_empty())
}

/// Why `pattern` cannot be a grant for `command` (the command that was asked), or `Ok`.
pub fn check_pattern(pattern: &str, command: &str) -> Result<(), String> {
    let words = shell::split(pattern)
        .map_err(|why| format!("the pattern does not split into shell words: {why}"))?;
    if !names_a_command(&words) {
        return Err(
            "the pattern must start with the command it allows, without a wildcard (`*`, `* *` \
             and `?*` would allow any program)"
                .into(),
        );
    }
    let asked = shell::split(command).map_err(|why| {
        format!("the command that was asked does not split into shell words ({why}), so no pattern can match it")
    })?;
    if !shell::words_match(&words, &asked) {
        return Err("the pattern must match the command that was asked".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(matches("infra-*", "infra-prod"));
        assert!(matches("*", ""));
        assert!(matches("a?c", "abc"));
        assert!(matches("*-prod", "web-prod"));
        assert!(matches("a*b*c", "axxbyyc"));
        assert!(matches("*a", "*ba"));
        assert!(!matches("infra-*", "web"));
        assert!(!matches("a?c", "ac"));
    }

    #[test]
    fn a_pattern_matches_shell_words_and_never_crosses_shell_syntax() {
        assert!(pattern_matches("cargo test *", "cargo test --all"));
        assert!(pattern_matches("cargo test *", "cargo test "));
        assert!(!pattern_matches("cargo test *", "cargo test; rm -rf ~"));
        assert!(!pattern_matches(
            "cargo test *",
            "cargo test && curl x | sh"
        ));
        assert!(!pattern_matches("cargo test *", "cargo test $(id)"));
        assert!(!pattern_matches("cargo test *", "cargo test \"$(id)\""));
        assert!(!pattern_matches("cargo test *", "cargo test\nrm -rf ~"));
        assert!(!pattern_matches("cargo test *", "cargo build"));
        assert!(pattern_matches(
            "git * --dry-run",
            "git clean -fd --dry-run"
        ));
        assert!(!pattern_matches("git * --dry-run", "git clean -fd"));
        // docs/approvals.md's example: a comment, quotes and backslashes change the words.
        assert!(!pattern_matches(
            "git * --dry-run",
            "git clean -fdx # --dry-run"
        ));
        assert!(!pattern_matches(
            "git * --dry-run",
            "git clean -fdx '# --dry-run'"
        ));
        assert!(!pattern_matches(
            "git * --dry-run",
            "git clean -fdx \\# --dry-run x"
        ));
        assert!(!pattern_matches(
            "git * --dry-run",
            "git clean -fdx '--dry-run x'"
        ));
        assert!(pattern_matches(
            "git * --dry-run",
            "git clean -fdx '--dry-run'"
        ));
        assert!(pattern_matches("ls ?", "ls a"));
        assert!(!pattern_matches("ls ?", "ls ;"));
        assert!(pattern_matches("exact", "exact"));
        assert!(!pattern_matches("exact", "exactly"));
        // A pattern that names no command matches nothing.
        for p in ["*", "* *", "?*", "*test", "'' *"] {
            assert!(!pattern_matches(p, "cargo test"), "{p}");
            assert!(check_pattern(p, "cargo test").is_err(), "{p}");
        }
        assert!(check_pattern("make a; make *", "make a; make b")
            .unwrap_err()
            .contains("does not split"));
        assert!(check_pattern("cargo *", "cargo test # x")
            .unwrap_err()
            .contains("was asked does not split"));
        assert!(check_pattern("cargo *", "cargo test").is_ok());
    }
}
