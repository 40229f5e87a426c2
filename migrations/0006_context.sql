-- What exactly is being approved (the socket ask's `context`: a text and text files), stored
-- with its request so that a restart posts the question again with the same context, and so
-- that a re-attach with another context is refused like one with other questions. NULL when
-- the ask had none. Pages of `pending` and `history` leave it out; it can be large.
ALTER TABLE requests ADD COLUMN context_json TEXT;
