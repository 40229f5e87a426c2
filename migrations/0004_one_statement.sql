-- The hot paths in one statement each. Every SQL statement is a round trip to the connection's
-- worker thread, and an ask or a click used to take six or more. Now:
-- - storing a request is one INSERT: its questions, its outbox rows and its audit row are
--   written by the trigger below from columns of the same row (which it then clears);
-- - settling a question is one conditional UPDATE: its audit row and, when it was the last open
--   question, the request's final result are written by the trigger on questions.
-- A single statement with its triggers is atomic, so nothing is ever half-written.

-- The outbox rows to create with the request (a JSON array of {idx, channel, guild, nonce}) and
-- its audit row (a JSON object); both are NULL once the row is stored.
ALTER TABLE requests ADD COLUMN planned_json TEXT;
ALTER TABLE requests ADD COLUMN audit_json TEXT;

CREATE TRIGGER requests_created AFTER INSERT ON requests
BEGIN
    INSERT INTO questions (request_key, idx, qid)
        SELECT NEW.key, CAST(j.key AS INTEGER), json_extract(j.value, '$.id')
        FROM json_each(NEW.questions_json) AS j;
    INSERT INTO posts (request_key, idx, answerer, channel, guild, nonce)
        SELECT NEW.key, json_extract(p.value, '$.idx'), NEW.answerer,
               json_extract(p.value, '$.channel'), json_extract(p.value, '$.guild'),
               json_extract(p.value, '$.nonce')
        FROM json_each(COALESCE(NEW.planned_json, '[]')) AS p;
    INSERT INTO audit (at, request_key, question_idx, source, actor, action, detail, accepted)
        SELECT json_extract(NEW.audit_json, '$.at'), NEW.key,
               json_extract(NEW.audit_json, '$.question_idx'),
               json_extract(NEW.audit_json, '$.source'), json_extract(NEW.audit_json, '$.actor'),
               json_extract(NEW.audit_json, '$.action'), json_extract(NEW.audit_json, '$.detail'),
               json_extract(NEW.audit_json, '$.accepted')
        WHERE NEW.audit_json IS NOT NULL;
    UPDATE requests SET planned_json = NULL, audit_json = NULL
        WHERE key = NEW.key AND (planned_json IS NOT NULL OR audit_json IS NOT NULL);
END;

-- The audit row of the answer (a JSON object) and, when the caller knew this would be the last
-- open question, the request's final result; both are NULL once the answer is stored.
ALTER TABLE questions ADD COLUMN audit_json TEXT;
ALTER TABLE questions ADD COLUMN result_if_last TEXT;

CREATE TRIGGER questions_answered AFTER UPDATE OF answered_at ON questions
WHEN OLD.answered_at IS NULL AND NEW.answered_at IS NOT NULL
BEGIN
    INSERT INTO audit (at, request_key, question_idx, source, actor, action, detail, accepted)
        SELECT NEW.answered_at, NEW.request_key, NEW.idx,
               json_extract(NEW.audit_json, '$.source'), json_extract(NEW.audit_json, '$.actor'),
               json_extract(NEW.audit_json, '$.action'), json_extract(NEW.audit_json, '$.detail'),
               1
        WHERE NEW.audit_json IS NOT NULL;
    UPDATE requests SET status = 'answered', result_json = NEW.result_if_last,
                        ended_at = NEW.answered_at
        WHERE key = NEW.request_key AND status = 'pending' AND NEW.result_if_last IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM questions q
                          WHERE q.request_key = NEW.request_key AND q.answered_at IS NULL);
    UPDATE questions SET audit_json = NULL, result_if_last = NULL
        WHERE request_key = NEW.request_key AND idx = NEW.idx
          AND (audit_json IS NOT NULL OR result_if_last IS NOT NULL);
END;
