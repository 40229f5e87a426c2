-- Retention. Ended requests may be deleted after `retention.ended_after_days` with their
-- questions, drafts, outbox rows and timers (plain DELETEs, in one transaction).
--
-- The audit log stays append-only, with one narrow exception: rows older than a cutoff may be
-- deleted, and only while that cutoff is written in `settings`. The daemon writes the cutoff,
-- deletes the rows older than it and removes the cutoff again in one transaction, so no other
-- statement ever sees a window open. UPDATE stays forbidden, and so does any DELETE of a row
-- at or after the cutoff (or of any row when no cutoff is set).
CREATE TABLE settings (
    name  TEXT    PRIMARY KEY,
    value INTEGER NOT NULL
);

CREATE INDEX requests_ended ON requests (ended_at) WHERE status != 'pending';
CREATE INDEX audit_at ON audit (at);

DROP TRIGGER audit_no_delete;

CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
WHEN OLD.at >= COALESCE((SELECT value FROM settings WHERE name = 'audit_prune_before'),
                        -9223372036854775808)
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only (only rows older than the retention cutoff may be pruned)');
END;
