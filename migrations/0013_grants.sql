-- Grants (docs/approvals.md, "Grants"): an approver allowed a request and, for a while, the
-- same requester's later requests on the same route for the same tool and command (or a
-- pattern the approver wrote). Written in the transaction of the answer that granted it.
CREATE TABLE grants (
    id            TEXT    PRIMARY KEY,
    route         TEXT    NOT NULL,
    tool          TEXT    NOT NULL,
    -- The exact command (exact = 1), or the approver's pattern (`*`, `?`).
    pattern       TEXT    NOT NULL,
    exact         INTEGER NOT NULL CHECK (exact IN (0, 1)),
    -- Who it allows: the asking uid, on its node (cluster mode), in its agent session.
    uid           INTEGER NOT NULL,
    host          TEXT,
    session       TEXT,
    -- The option it answers with.
    label         TEXT    NOT NULL,
    approver      TEXT    NOT NULL,
    approver_via  TEXT    NOT NULL,
    approver_id   TEXT    NOT NULL,
    request_key   INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    ends_at       INTEGER NOT NULL,
    revoked_at    INTEGER,
    revoked_by    TEXT
);

CREATE INDEX grants_live ON grants (route, uid, ends_at) WHERE revoked_at IS NULL;

-- What an approver attached to an answer: a grant's terms, an edited command (JSON; NULL:
-- none).
ALTER TABLE questions ADD COLUMN terms_json TEXT;
