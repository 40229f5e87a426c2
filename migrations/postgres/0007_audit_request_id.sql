-- As migrations/0014_audit_request_id.sql for SQLite: every audit row names its request by
-- the id its client gave, hashed with the row when present.
ALTER TABLE audit ADD COLUMN request_id TEXT;
