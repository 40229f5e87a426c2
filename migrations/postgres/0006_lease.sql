-- The cluster's lead as a lease on the database's clock (replacing the session advisory lock,
-- which a frozen or cut-off leader kept until the server noticed its dead connection).
--
-- One row: who holds the lead, its epoch (one more at every change of holder, and whenever a
-- lapsed lease is taken again), when it was last renewed and when it expires, in milliseconds
-- of the database's clock. A node takes it only when it has expired; its holder renews it
-- before then. Every write the leader makes for Discord checks, in its own transaction, that
-- the row still names it with its epoch and has not expired (`FOR SHARE`, so that a takeover
-- waits for such a write to commit): a deposed leader's writes are refused.
CREATE FUNCTION askrelay_now_ms() RETURNS BIGINT LANGUAGE sql VOLATILE
    AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

CREATE TABLE lease (
    one        SMALLINT PRIMARY KEY CHECK (one = 1),
    holder     TEXT     NOT NULL,
    epoch      BIGINT   NOT NULL,
    renewed_at BIGINT   NOT NULL,
    expires_at BIGINT   NOT NULL
);

-- The epoch of the lead that last claimed an outbox row to post or edit it.
ALTER TABLE posts ADD COLUMN claimed_epoch BIGINT;
