-- Files uploaded with `POST /v2/file/upload`, read by the calls that take a
-- `file_id` (vehicle/batch_convert). A file belongs to the account (what a
-- sub-user uploads is the master's, clarification 32), is kept for a
-- configured time (`--upload-ttl`), and is named by a random key.
CREATE TABLE uploaded_files (
    id INTEGER PRIMARY KEY,
    -- 32 hex characters from the CSPRNG: the `file_id` of the API.
    file_key TEXT NOT NULL UNIQUE,
    master_user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    uploader_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    size BIGINT NOT NULL,
    content BLOB NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX uploaded_files_master ON uploaded_files (master_user_id, created_at);
CREATE INDEX uploaded_files_created ON uploaded_files (created_at);
