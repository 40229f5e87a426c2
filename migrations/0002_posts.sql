-- Where each question was shown: one row per question and answerer, so that messages can be
-- edited (and clicks on them resolved) after a restart.
CREATE TABLE posts (
    request_key INTEGER NOT NULL REFERENCES requests (key),
    idx         INTEGER NOT NULL,
    answerer    TEXT    NOT NULL,
    -- Platform ids as text (Discord snowflakes).
    channel     TEXT    NOT NULL,
    message     TEXT,
    posted_at   INTEGER,
    PRIMARY KEY (request_key, idx, answerer)
);
