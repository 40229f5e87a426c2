//! Unit tests of the handler's pure parts: the reply when the store could not save.

use super::not_saved;

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
    let late = not_saved(
        "the request could not be saved (storage error: the database did not answer within 5 s \
         (postgres.db_deadline_secs)); nothing changed, try again",
    );
    assert_eq!(
        late,
        "Your answer could not be saved, try again (askrelay's database did not answer in time). \
         Nothing was recorded."
    );
}
