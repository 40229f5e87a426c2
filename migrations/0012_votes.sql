-- Votes on the questions of quorum routes (`approvals` > 1): a JSON array of
-- {person, via, id, name, selected, custom, at_ms}, one entry per person, replaced as a whole
-- by a compare-and-swap on its previous value. NULL: no vote.
ALTER TABLE questions ADD COLUMN votes_json TEXT;
