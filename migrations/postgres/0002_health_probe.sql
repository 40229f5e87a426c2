-- The health check's write (Store::writable): one row per node, rewritten by every check. An
-- UPDATE that matches nothing writes nothing and so succeeds on a full disk; rewriting a row
-- needs room in the WAL and the table, as every real write does.
CREATE TABLE health_probe (
    node TEXT   PRIMARY KEY,
    at   BIGINT NOT NULL
);
