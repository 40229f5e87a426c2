-- One-use grants: see migrations/0015_once_grants.sql.
CREATE TABLE once_grants (
    id            TEXT    PRIMARY KEY,
    session       TEXT    NOT NULL,
    call          TEXT    NOT NULL,
    tool          TEXT    NOT NULL,
    uid           BIGINT  NOT NULL,
    approver      TEXT    NOT NULL,
    request_key   BIGINT  NOT NULL UNIQUE,
    request_id    TEXT    NOT NULL,
    created_at    BIGINT  NOT NULL,
    ends_at       BIGINT  NOT NULL,
    used_at       BIGINT
);

CREATE INDEX once_grants_live ON once_grants (uid, session, call) WHERE used_at IS NULL;
