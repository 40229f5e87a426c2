-- Every audit row names its request by the id its client gave (`request_id`), beside the
-- store's key, so that an export reads without the database (and after retention deleted the
-- request). The chain hashes it when present (src/domain/audit.rs, `canonical`); rows from
-- before this migration have none and hash as they always did.
ALTER TABLE audit ADD COLUMN request_id TEXT;
