-- The durable state of askrelay in PostgreSQL (cluster mode). It behaves like the SQLite schema
-- after migrations/0001 to 0010 (read those for why each table and column is there), with three
-- differences:
-- - the SQLite triggers that write a request's rows and an answer's rows from one statement
--   (0004, 0008) are not here: the PostgreSQL store writes those rows itself, in one statement or
--   one transaction, and the columns those triggers read (planned_json, audit_json,
--   result_if_last) are gone, as is the unused accepted_json;
-- - the audit log's prune window is a transaction-local setting instead of a `settings` row
--   (see audit_append_only below);
-- - a request has an owning node, and the nodes of the cluster are registered in `nodes`.
-- Times are milliseconds since the epoch (BIGINT), as in SQLite.

CREATE TABLE requests (
    -- Short internal key; Discord custom_ids carry it, so it never changes.
    key            BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The client's idempotency key (or one the daemon made).
    request_id     TEXT    NOT NULL UNIQUE,
    -- The unguessable token every platform control of the request carries.
    token          TEXT    UNIQUE,
    -- Canonical JSON of the validated questions: rendering source and idempotency check.
    questions_json TEXT    NOT NULL,
    caller_json    TEXT    NOT NULL,
    scope_json     TEXT    NOT NULL,
    -- What is being approved (the ask's `context`), NULL when it had none.
    context_json   TEXT,
    status         TEXT    NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'answered', 'cancelled', 'expired', 'failed')),
    -- Which answerer took the request, and its route (Discord).
    answerer       TEXT,
    route          TEXT,
    -- The local process that asked (SO_PEERCRED), on the owning node's host.
    peer_uid       BIGINT,
    peer_pid       INTEGER,
    created_at     BIGINT  NOT NULL,
    ended_at       BIGINT,
    -- The final line: the §1 result for 'answered', an error code and message otherwise.
    result_json    TEXT,
    error_code     TEXT,
    error_message  TEXT,
    -- The deadline and its policy (JSON: "fail", "recommended" or {"select": "LABEL"}).
    expire_at      BIGINT,
    on_expire      TEXT,
    -- The node that stored the request and serves its client (cluster.node_id).
    node           TEXT
);

CREATE INDEX requests_pending ON requests (status) WHERE status = 'pending';
CREATE INDEX requests_owner ON requests (peer_uid, key);
CREATE INDEX requests_ended ON requests (ended_at) WHERE status <> 'pending';
-- A node's pending requests (start-up, listings, orphans of a dead node).
CREATE INDEX requests_node ON requests (node, status);

CREATE TABLE questions (
    request_key   BIGINT  NOT NULL REFERENCES requests (key),
    idx           BIGINT  NOT NULL,
    qid           TEXT    NOT NULL,
    -- Set once, by the single conditional UPDATE that decides first-wins.
    answered_at   BIGINT,
    answered_by   TEXT,
    answered_via  TEXT,
    answered_id   TEXT,
    answered_note TEXT,
    selected_json TEXT,
    custom        TEXT,
    PRIMARY KEY (request_key, idx)
);

-- A person's multi-select choice before they press Submit.
CREATE TABLE drafts (
    request_key   BIGINT  NOT NULL,
    idx           BIGINT  NOT NULL,
    user_id       TEXT    NOT NULL,
    selected_json TEXT    NOT NULL,
    updated_at    BIGINT  NOT NULL,
    PRIMARY KEY (request_key, idx, user_id),
    FOREIGN KEY (request_key, idx) REFERENCES questions (request_key, idx)
);

-- The outbox: one row per place a question is shown (see migrations/0002 and 0008).
CREATE TABLE posts (
    request_key BIGINT  NOT NULL REFERENCES requests (key),
    idx         BIGINT  NOT NULL,
    answerer    TEXT    NOT NULL,
    slot        TEXT    NOT NULL DEFAULT '',
    channel     TEXT    NOT NULL,
    -- Sent with every attempt to create the message; the platform de-duplicates on it.
    nonce       TEXT    NOT NULL,
    message     TEXT,
    posted_at   BIGINT,
    attempts    BIGINT  NOT NULL DEFAULT 0,
    last_error  TEXT,
    -- The last edit the platform confirmed: NULL, 'settled' or 'ended'.
    edited      TEXT,
    guild       TEXT,
    PRIMARY KEY (request_key, idx, answerer, slot)
);

CREATE INDEX posts_unfinished ON posts (request_key) WHERE edited IS NULL;

-- An answerer's timers per request (reminders, escalation).
CREATE TABLE timers (
    request_key BIGINT  NOT NULL REFERENCES requests (key),
    answerer    TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    fired       BIGINT  NOT NULL DEFAULT 0,
    due_at      BIGINT,
    PRIMARY KEY (request_key, answerer, name)
);

-- Schedules that belong to no request (the digest): when each is due next.
CREATE TABLE schedules (
    name   TEXT    PRIMARY KEY,
    due_at BIGINT  NOT NULL
);

CREATE TABLE audit (
    id           BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           BIGINT  NOT NULL,
    request_key  BIGINT,
    question_idx BIGINT,
    -- socket, terminal, discord, daemon, policy
    source       TEXT    NOT NULL,
    actor        TEXT,
    action       TEXT    NOT NULL,
    detail       TEXT,
    accepted     BOOLEAN NOT NULL
);

CREATE INDEX audit_request ON audit (request_key);
CREATE INDEX audit_at ON audit (at);

-- The audit log is append-only, with the one narrow exception of migrations/0010: rows older
-- than a cutoff may be deleted, and only while that cutoff is set. The store sets it with
-- set_config(..., true), which lasts until the end of its transaction, deletes the rows older
-- than it and commits; no other session ever sees the setting, and it is gone once the
-- transaction ends. UPDATE and TRUNCATE stay forbidden, and so does any DELETE of a row at or
-- after the cutoff (or of any row when no cutoff is set).
CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    cutoff TEXT;
BEGIN
    IF TG_OP = 'DELETE' THEN
        cutoff := current_setting('askrelay.audit_prune_before', true);
        IF cutoff IS NOT NULL AND cutoff <> '' AND OLD.at < cutoff::BIGINT THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'the audit log is append-only (only rows older than the retention cutoff may be pruned)';
    END IF;
    RAISE EXCEPTION 'the audit log is append-only';
END;
$$;

CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
    FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
    FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
    FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();

-- The daemons of the cluster. A node upserts its row when it takes its lease, beats it while
-- it runs, and records here whether it leads (the lead itself is an advisory lock on the
-- node's lease connection; this column is what Cluster::nodes reports).
CREATE TABLE nodes (
    node         TEXT    PRIMARY KEY,
    host         TEXT    NOT NULL,
    pid          BIGINT  NOT NULL,
    version      TEXT    NOT NULL,
    heartbeat_at BIGINT  NOT NULL,
    leader       BOOLEAN NOT NULL DEFAULT false
);
