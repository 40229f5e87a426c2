//! Shell-style globs, as routes (`match`) and identities (`sessions`) use them: `*` matches any
//! run of characters, `?` one character, anything else itself. (Grant patterns match on shell
//! words instead: `domain::shell`.)

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
}
