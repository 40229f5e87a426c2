-- Schedules that belong to no request (the digest): when each is due next. Advancing one is a
-- conditional update from the due time that was read, so two runs never both take a turn, and
-- a restart resumes the schedule instead of starting it again.
CREATE TABLE schedules (
    name   TEXT    PRIMARY KEY,
    due_at INTEGER NOT NULL
);
