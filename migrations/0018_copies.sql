-- A request shown by several answerers at once (a route's `answerers`, docs/contract.md,
-- "Answerers and routes"): `answerers` lists every answerer that took it, the owner
-- (`answerer`) first, comma-separated ("discord,terminal"); NULL for a request stored before,
-- which only its owner showed. Each answerer's outbox rows are stored under its own name: the
-- trigger reads the row's `answerer` from `planned_json`, else the owner's as before.
ALTER TABLE requests ADD COLUMN answerers TEXT;

DROP TRIGGER requests_created;

-- As in 0008, without the audit row (written by the store itself since 0011).
CREATE TRIGGER requests_created AFTER INSERT ON requests
BEGIN
    INSERT INTO questions (request_key, idx, qid)
        SELECT NEW.key, CAST(j.key AS INTEGER), json_extract(j.value, '$.id')
        FROM json_each(NEW.questions_json) AS j;
    INSERT INTO posts (request_key, idx, answerer, slot, channel, guild, nonce)
        SELECT NEW.key, json_extract(p.value, '$.idx'),
               COALESCE(json_extract(p.value, '$.answerer'), NEW.answerer),
               COALESCE(json_extract(p.value, '$.slot'), ''),
               json_extract(p.value, '$.channel'), json_extract(p.value, '$.guild'),
               json_extract(p.value, '$.nonce')
        FROM json_each(COALESCE(NEW.planned_json, '[]')) AS p;
    UPDATE requests SET planned_json = NULL, audit_json = NULL
        WHERE key = NEW.key AND (planned_json IS NOT NULL OR audit_json IS NOT NULL);
END;
