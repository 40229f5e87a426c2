-- The audit chain (src/domain/audit.rs, docs/security.md "The audit chain"): every audit row
-- carries the hash of the row before it (`prev_hash`) and its own (`hash`), computed by the
-- store over the row's stored fields as it appends the row, in the same transaction.
--
-- `audit_head` is the chain's last row (its id and hash). A row may only be appended as the
-- head's successor: the trigger below refuses any other, and the head moves with every insert.
-- Ids are given by the store (the head's id + 1), so the chain's rows are numbered without gaps.
--
-- `audit_checkpoints` says where a chain starts when its first rows are gone:
-- - 'upgrade' (written here): the rows already in the log when this migration ran are not
--   hashed (their hash columns stay NULL); the chain starts after the last of them, from the
--   genesis hash (64 zeros). 'genesis' when the log was empty.
-- - 'pruned' (written by retention): the id and hash of the last row deleted, so that what is
--   left still verifies.
--
-- The audit_json columns of requests and questions (0004) are no longer filled: the store
-- appends the audit row itself. Their triggers would write a row without a hash, which the
-- trigger below refuses.
ALTER TABLE audit ADD COLUMN prev_hash TEXT;
ALTER TABLE audit ADD COLUMN hash TEXT;

CREATE TABLE audit_head (
    one  INTEGER PRIMARY KEY CHECK (one = 1),
    id   INTEGER NOT NULL,
    hash TEXT    NOT NULL
);

CREATE TABLE audit_checkpoints (
    -- The last row before the chain continues (0: none).
    after  INTEGER PRIMARY KEY,
    -- That row's hash, or the genesis hash.
    hash   TEXT    NOT NULL,
    reason TEXT    NOT NULL CHECK (reason IN ('genesis', 'upgrade', 'pruned')),
    at     INTEGER NOT NULL
);

-- After every id ever given (AUTOINCREMENT's counter), even if retention deleted the newest.
INSERT INTO audit_head (one, id, hash)
    SELECT 1, MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'audit'), 0),
                  COALESCE((SELECT MAX(id) FROM audit), 0)),
           '0000000000000000000000000000000000000000000000000000000000000000';

INSERT INTO audit_checkpoints (after, hash, reason, at)
    SELECT id, hash, CASE WHEN id = 0 THEN 'genesis' ELSE 'upgrade' END,
           CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    FROM audit_head;

CREATE TRIGGER audit_chained BEFORE INSERT ON audit
WHEN NEW.hash IS NULL OR NEW.prev_hash IS NULL
     OR NEW.id IS NOT (SELECT id + 1 FROM audit_head)
     OR NEW.prev_hash IS NOT (SELECT hash FROM audit_head)
BEGIN
    SELECT RAISE(ABORT, 'an audit row must follow the head of the audit chain');
END;

CREATE TRIGGER audit_head_moves AFTER INSERT ON audit
BEGIN
    UPDATE audit_head SET id = NEW.id, hash = NEW.hash;
END;

-- The head and the checkpoints are the chain's: they are not edited by hand either.
CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE ON audit_checkpoints
BEGIN
    SELECT RAISE(ABORT, 'the audit checkpoints are append-only');
END;
