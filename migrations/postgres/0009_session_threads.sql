-- As migrations/0015_session_threads.sql for SQLite: one thread per agent session.
CREATE TABLE session_threads (
    answerer    TEXT    NOT NULL,
    channel     TEXT    NOT NULL,
    agent       TEXT    NOT NULL,
    session     TEXT    NOT NULL,
    thread      TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    PRIMARY KEY (answerer, channel, agent, session)
);
