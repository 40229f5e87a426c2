-- Grants, and the terms an approver attached to an answer: see migrations/0013_grants.sql.
CREATE TABLE grants (
    id            TEXT    PRIMARY KEY,
    route         TEXT    NOT NULL,
    tool          TEXT    NOT NULL,
    pattern       TEXT    NOT NULL,
    exact         BOOLEAN NOT NULL,
    uid           BIGINT  NOT NULL,
    host          TEXT,
    session       TEXT,
    label         TEXT    NOT NULL,
    approver      TEXT    NOT NULL,
    approver_via  TEXT    NOT NULL,
    approver_id   TEXT    NOT NULL,
    request_key   BIGINT  NOT NULL,
    created_at    BIGINT  NOT NULL,
    ends_at       BIGINT  NOT NULL,
    revoked_at    BIGINT,
    revoked_by    TEXT
);

CREATE INDEX grants_live ON grants (route, uid, ends_at) WHERE revoked_at IS NULL;

ALTER TABLE questions ADD COLUMN terms_json TEXT;
