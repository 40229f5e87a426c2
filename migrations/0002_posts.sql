-- The outbox of answerers that show questions somewhere (Discord): one row per question and
-- answerer, written before the platform call, so that a crash at any step can be resumed
-- without posting twice (the nonce lets Discord de-duplicate a repeated create) and messages
-- can be edited, and clicks on them resolved, after a restart.
CREATE TABLE posts (
    request_key INTEGER NOT NULL REFERENCES requests (key),
    idx         INTEGER NOT NULL,
    answerer    TEXT    NOT NULL,
    -- Platform ids as text (Discord snowflakes).
    channel     TEXT    NOT NULL,
    -- Sent with every attempt to create the message; the platform de-duplicates on it.
    nonce       TEXT    NOT NULL,
    -- Set once the platform confirmed the message.
    message     TEXT,
    posted_at   INTEGER,
    attempts    INTEGER NOT NULL DEFAULT 0,
    -- Why the last attempt failed, for `askrelay pending`.
    last_error  TEXT,
    -- The last edit the platform confirmed: NULL, 'settled' or 'ended'.
    edited      TEXT,
    PRIMARY KEY (request_key, idx, answerer)
);
