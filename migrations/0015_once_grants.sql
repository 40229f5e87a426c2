-- One-use grants (docs/approvals.md, "Auto mode"): Claude Code's auto mode denied a tool call,
-- a person allowed it once, and the same call of the same session may run once. Minted at
-- most once per request (the unique request_key), used at most once (used_at).
CREATE TABLE once_grants (
    id            TEXT    PRIMARY KEY,
    session       TEXT    NOT NULL,
    -- The call's key: sha256 of the session, the tool's name and its input (32 hex digits).
    call          TEXT    NOT NULL,
    tool          TEXT    NOT NULL,
    -- The uid that asked, the only one that may use it.
    uid           INTEGER NOT NULL,
    approver      TEXT    NOT NULL,
    request_key   INTEGER NOT NULL UNIQUE,
    request_id    TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    ends_at       INTEGER NOT NULL,
    used_at       INTEGER
);

CREATE INDEX once_grants_live ON once_grants (uid, session, call) WHERE used_at IS NULL;
