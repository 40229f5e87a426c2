-- Behind a transaction-mode pooler (postgres.pooler_url) a node has no session of its own to
-- hold its node lock (a session advisory lock) on: its id is guarded by a claim on its row
-- instead. `claim` is the claiming process's random token, `claim_until` (the database's ms)
-- when the claim lapses unless that process beats again; a clean shutdown clears both. Nodes
-- that connect directly leave them NULL.
ALTER TABLE nodes ADD COLUMN claim TEXT, ADD COLUMN claim_until BIGINT;
