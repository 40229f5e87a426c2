-- When a question was last posted anywhere in the cluster: read at every /metrics scrape
-- (askrelay_outbox_seconds_since_last_post), so an index keeps it one step.
CREATE INDEX posts_posted_at ON posts (posted_at);
