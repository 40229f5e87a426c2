-- The audit chain, as migrations/0011_audit_chain.sql for SQLite (read it first): every audit
-- row carries the hash of the row before it and its own, computed by the store as it appends
-- the row; `audit_head` is the chain's last row and `audit_checkpoints` where a chain starts.
--
-- In a cluster every node appends to the one chain: the store reads the head with
-- SELECT … FOR UPDATE in the transaction that appends, so the head's row lock orders the
-- appends of every node, and the trigger below refuses a row that does not follow the head.
-- The ids are the store's (the head's id + 1), no longer an identity column.
ALTER TABLE audit ADD COLUMN prev_hash TEXT, ADD COLUMN hash TEXT;

CREATE TABLE audit_head (
    one  INTEGER PRIMARY KEY CHECK (one = 1),
    id   BIGINT  NOT NULL,
    hash TEXT    NOT NULL
);

CREATE TABLE audit_checkpoints (
    after  BIGINT  PRIMARY KEY,
    hash   TEXT    NOT NULL,
    reason TEXT    NOT NULL CHECK (reason IN ('genesis', 'upgrade', 'pruned')),
    at     BIGINT  NOT NULL
);

-- After every id ever given (the identity's sequence), even if retention deleted the newest.
INSERT INTO audit_head (one, id, hash)
    SELECT 1, GREATEST(COALESCE((SELECT MAX(id) FROM audit), 0),
                       COALESCE(pg_sequence_last_value(pg_get_serial_sequence('audit', 'id')::regclass), 0)),
           '0000000000000000000000000000000000000000000000000000000000000000';

INSERT INTO audit_checkpoints (after, hash, reason, at)
    SELECT id, hash, CASE WHEN id = 0 THEN 'genesis' ELSE 'upgrade' END,
           (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT
    FROM audit_head;

ALTER TABLE audit ALTER COLUMN id DROP IDENTITY;

CREATE FUNCTION audit_chained() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    head_id   BIGINT;
    head_hash TEXT;
BEGIN
    SELECT id, hash INTO head_id, head_hash FROM audit_head FOR UPDATE;
    IF NEW.hash IS NULL OR NEW.id IS DISTINCT FROM head_id + 1
       OR NEW.prev_hash IS DISTINCT FROM head_hash THEN
        RAISE EXCEPTION 'an audit row must follow the head of the audit chain';
    END IF;
    UPDATE audit_head SET id = NEW.id, hash = NEW.hash;
    RETURN NEW;
END;
$$;

CREATE TRIGGER audit_chained BEFORE INSERT ON audit
    FOR EACH ROW EXECUTE FUNCTION audit_chained();
