//! Shell-style globs, as routes (`match`), identities (`sessions`) and grants (patterns) use
//! them: `*` matches any run of characters, `?` one character, anything else itself.

/// Whether `text` matches `pattern`.
pub fn matches(pattern: &str, text: &str) -> bool {
    matches_except(pattern, text, &[])
}

/// Whether `text` matches `pattern` when the wildcards never stand for a character of `never`
/// (which then only matches itself, written out in the pattern).
pub fn matches_except(pattern: &str, text: &str, never: &[char]) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // One backtrack point, the last `*`: linear in practice, never exponential.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && ((p[pi] == '?' && !never.contains(&t[ti])) || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            // The star takes one more character, unless it may not.
            if never.contains(&t[st]) {
                return false;
            }
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
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
        assert!(matches_except("x *", "x y", &[';']));
        assert!(!matches_except("x *", "x ;y", &[';']));
        assert!(matches_except("x; *", "x; y", &[';']));
    }
}
