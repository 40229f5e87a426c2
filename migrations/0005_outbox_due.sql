-- The repair loop looks for outbox rows with work due: a question not posted yet, or a message
-- still showing an older state than its question's. A row is done once it shows the answer
-- ('settled') or why the request ended ('ended'), so only rows not edited yet can be due.
CREATE INDEX posts_unfinished ON posts (request_key) WHERE edited IS NULL;
