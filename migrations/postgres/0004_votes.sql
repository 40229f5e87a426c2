-- Votes on the questions of quorum routes: see migrations/0012_votes.sql.
ALTER TABLE questions ADD COLUMN votes_json TEXT;
