-- One thread per agent session (docs/approvals.md, "One thread per agent session"): on a
-- route with `threads = "per_session"`, an answerer posts a session's questions, approvals and
-- ends of turns in one thread of the route's channel. Kept here so that a restart posts in the
-- same thread. One row per answerer, channel, agent and session; the first thread kept wins.
CREATE TABLE session_threads (
    answerer    TEXT    NOT NULL,
    channel     TEXT    NOT NULL,
    agent       TEXT    NOT NULL,
    session     TEXT    NOT NULL,
    thread      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (answerer, channel, agent, session)
);
