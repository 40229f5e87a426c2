-- As migrations/0018_copies.sql for SQLite: every answerer that shows a request, the owner
-- first, comma-separated; NULL for a request stored before, which only its owner showed.
ALTER TABLE requests ADD COLUMN answerers TEXT;
