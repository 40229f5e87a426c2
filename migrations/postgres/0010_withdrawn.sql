-- As migrations/0015_withdrawn.sql for SQLite: why a request was withdrawn, when it was.
ALTER TABLE requests ADD COLUMN withdrawn TEXT;
