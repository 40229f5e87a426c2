-- The durable state of askrelay. Requests and their questions are never deleted; the audit log
-- is append-only (see the triggers below).

CREATE TABLE requests (
    -- Short internal key; it is what Discord custom_ids carry, so it never changes.
    key            INTEGER PRIMARY KEY AUTOINCREMENT,
    -- The client's idempotency key (or one the daemon made).
    request_id     TEXT    NOT NULL UNIQUE,
    -- Canonical JSON of the validated questions: rendering source and idempotency check.
    questions_json TEXT    NOT NULL,
    caller_json    TEXT    NOT NULL,
    scope_json     TEXT    NOT NULL,
    status         TEXT    NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'answered', 'cancelled', 'expired', 'failed')),
    -- Which answerer took the request, and what it told the client (links, channel).
    answerer       TEXT,
    accepted_json  TEXT,
    -- The local process that asked (SO_PEERCRED).
    peer_uid       INTEGER,
    peer_pid       INTEGER,
    created_at     INTEGER NOT NULL,
    ended_at       INTEGER,
    -- The final line: the §1 result for 'answered', an error code and message otherwise.
    result_json    TEXT,
    error_code     TEXT,
    error_message  TEXT
);

CREATE INDEX requests_pending ON requests (status) WHERE status = 'pending';

CREATE TABLE questions (
    request_key   INTEGER NOT NULL REFERENCES requests (key),
    idx           INTEGER NOT NULL,
    qid           TEXT    NOT NULL,
    -- Set once, by the single conditional UPDATE that decides first-wins.
    answered_at   INTEGER,
    answered_by   TEXT,
    answered_via  TEXT,
    selected_json TEXT,
    custom        TEXT,
    PRIMARY KEY (request_key, idx)
);

-- A person's multi-select choice before they press Submit.
CREATE TABLE drafts (
    request_key   INTEGER NOT NULL,
    idx           INTEGER NOT NULL,
    user_id       TEXT    NOT NULL,
    selected_json TEXT    NOT NULL,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (request_key, idx, user_id),
    FOREIGN KEY (request_key, idx) REFERENCES questions (request_key, idx)
);

CREATE TABLE audit (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    at           INTEGER NOT NULL,
    request_key  INTEGER,
    question_idx INTEGER,
    -- socket, terminal, discord, daemon
    source       TEXT    NOT NULL,
    actor        TEXT,
    action       TEXT    NOT NULL,
    detail       TEXT,
    accepted     INTEGER NOT NULL CHECK (accepted IN (0, 1))
);

CREATE INDEX audit_request ON audit (request_key);

CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;

CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;
