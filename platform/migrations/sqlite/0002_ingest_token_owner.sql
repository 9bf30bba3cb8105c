-- An ingest token may be restricted to one user's trackers (NULL: any tracker).
ALTER TABLE ingest_tokens ADD COLUMN user_id BIGINT REFERENCES users (id);
