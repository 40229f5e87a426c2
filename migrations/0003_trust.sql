-- Trust: every request gets an unguessable token that its platform controls (Discord custom_ids
-- and nonces) carry, so a control can only ever answer the request it was made for, even after
-- the database is reset and keys start again. Who answered is recorded from the platform (a
-- Discord user id, or the peer uid of a socket connection); what a client typed about itself is
-- only a note. Posts remember the guild of their channel, so an interaction from elsewhere is
-- refused.
ALTER TABLE requests ADD COLUMN token TEXT;
UPDATE requests SET token = lower(hex(randomblob(10))) WHERE token IS NULL;
CREATE UNIQUE INDEX requests_token ON requests (token);

-- The route (Discord) that took the request; it used to live inside accepted_json.
ALTER TABLE requests ADD COLUMN route TEXT;
UPDATE requests SET route = json_extract(accepted_json, '$.route')
 WHERE accepted_json IS NOT NULL AND json_valid(accepted_json);

-- The pending requests of one uid (limits.max_pending_per_uid, and who may see what).
CREATE INDEX requests_owner ON requests (peer_uid, key);

ALTER TABLE questions ADD COLUMN answered_id TEXT;
ALTER TABLE questions ADD COLUMN answered_note TEXT;

ALTER TABLE posts ADD COLUMN guild TEXT;
