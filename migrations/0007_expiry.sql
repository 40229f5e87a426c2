-- Expiry everywhere: every request may carry a deadline and a policy, computed from the config
-- when it is asked and stored with it, so that a restart resumes the deadline and a config
-- change never moves the deadline of a request already asked.
-- on_expire is JSON: "fail", "recommended" or {"select": "LABEL"}.
ALTER TABLE requests ADD COLUMN expire_at INTEGER;
ALTER TABLE requests ADD COLUMN on_expire TEXT;
