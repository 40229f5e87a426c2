-- On-call: a question may be shown in more than one place, and an answerer keeps a schedule.
--
-- Outbox rows get a slot: '' is the question's message in its route's channel (every row so
-- far); other slots are copies with the same components (a DM, an escalation step's channel or
-- DM) and notes that are replies without components (reminders, an escalation step's mentions,
-- slots starting 'note:'). The primary key grows by the slot, so the table is rebuilt; the
-- trigger that writes a request's first rows is rebuilt with it.
DROP TRIGGER requests_created;

CREATE TABLE posts_new (
    request_key INTEGER NOT NULL REFERENCES requests (key),
    idx         INTEGER NOT NULL,
    answerer    TEXT    NOT NULL,
    slot        TEXT    NOT NULL DEFAULT '',
    channel     TEXT    NOT NULL,
    nonce       TEXT    NOT NULL,
    message     TEXT,
    posted_at   INTEGER,
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT,
    edited      TEXT,
    guild       TEXT,
    PRIMARY KEY (request_key, idx, answerer, slot)
);
INSERT INTO posts_new (request_key, idx, answerer, slot, channel, nonce, message, posted_at,
                       attempts, last_error, edited, guild)
    SELECT request_key, idx, answerer, '', channel, nonce, message, posted_at, attempts,
           last_error, edited, guild
    FROM posts;
DROP TABLE posts;
ALTER TABLE posts_new RENAME TO posts;
CREATE INDEX posts_unfinished ON posts (request_key) WHERE edited IS NULL;

CREATE TRIGGER requests_created AFTER INSERT ON requests
BEGIN
    INSERT INTO questions (request_key, idx, qid)
        SELECT NEW.key, CAST(j.key AS INTEGER), json_extract(j.value, '$.id')
        FROM json_each(NEW.questions_json) AS j;
    INSERT INTO posts (request_key, idx, answerer, slot, channel, guild, nonce)
        SELECT NEW.key, json_extract(p.value, '$.idx'), NEW.answerer,
               COALESCE(json_extract(p.value, '$.slot'), ''),
               json_extract(p.value, '$.channel'), json_extract(p.value, '$.guild'),
               json_extract(p.value, '$.nonce')
        FROM json_each(COALESCE(NEW.planned_json, '[]')) AS p;
    INSERT INTO audit (at, request_key, question_idx, source, actor, action, detail, accepted)
        SELECT json_extract(NEW.audit_json, '$.at'), NEW.key,
               json_extract(NEW.audit_json, '$.question_idx'),
               json_extract(NEW.audit_json, '$.source'), json_extract(NEW.audit_json, '$.actor'),
               json_extract(NEW.audit_json, '$.action'), json_extract(NEW.audit_json, '$.detail'),
               json_extract(NEW.audit_json, '$.accepted')
        WHERE NEW.audit_json IS NOT NULL;
    UPDATE requests SET planned_json = NULL, audit_json = NULL
        WHERE key = NEW.key AND (planned_json IS NOT NULL OR audit_json IS NOT NULL);
END;

-- An answerer's timers per request (reminders, escalation): how many times each has fired and
-- when it is due next (NULL: done). Advancing a timer and writing the outbox rows it adds is
-- one transaction, conditional on the count it read, so a step is never taken twice.
CREATE TABLE timers (
    request_key INTEGER NOT NULL REFERENCES requests (key),
    answerer    TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    fired       INTEGER NOT NULL DEFAULT 0,
    due_at      INTEGER,
    PRIMARY KEY (request_key, answerer, name)
);
