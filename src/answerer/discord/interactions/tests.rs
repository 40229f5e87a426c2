//! Unit tests of the handler's pure parts: the grant previews kept per person, and the reply
//! when the store could not save.

use super::grants::{WaitingPatterns, MAX_WAITING_PATTERNS_PER_USER};
use super::not_saved;

#[test]
fn one_persons_grant_previews_never_push_out_anyone_elses() {
    let mut w = WaitingPatterns::default();
    w.insert("t-alice", 1, "cargo test *".into(), 0);
    for i in 0..5_000 {
        w.insert(&format!("t-{i}"), 2, format!("p{i}"), 1);
    }
    assert_eq!(w.take("t-alice", 1), Some(("cargo test *".into(), 0)));
    // Mallory keeps only her newest.
    assert_eq!(w.0[&2].len(), MAX_WAITING_PATTERNS_PER_USER);
    assert_eq!(w.take("t-4999", 2), Some(("p4999".into(), 1)));
    assert_eq!(w.take("t-0", 2), None);
    // A preview is taken once, by its own author, and a new one replaces an older one.
    assert_eq!(w.take("t-alice", 1), None);
    w.insert("t", 3, "a".into(), 0);
    w.insert("t", 3, "b".into(), 1);
    assert_eq!(w.take("t", 2), None);
    assert_eq!(w.take("t", 3), Some(("b".into(), 1)));
    assert!(!w.0.contains_key(&3));
}

#[test]
fn not_saved_names_the_class_of_the_cause_and_never_its_text() {
    let busy = not_saved(
        "the answer could not be saved (storage error: error returned from database: (code: 5) database is locked); nothing changed, try again",
    );
    assert_eq!(
        busy,
        "Your answer could not be saved, try again (askrelay's database was busy). Nothing was recorded."
    );
    assert!(not_saved("canceling statement due to lock timeout").contains("was busy"));
    let failed = not_saved("disk I/O error at /var/lib/askrelay/askrelay.db");
    assert!(failed.contains("askrelay's database failed"), "{failed}");
    assert!(!failed.contains("/var/lib"), "{failed}");
    assert_eq!(failed.lines().count(), 1);
}
