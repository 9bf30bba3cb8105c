-- Retranslators: where an account's device data is to be forwarded (the
-- forwarding itself comes later; everything it needs is stored). The
-- per-user quota is NULL for the default (10), else set with `trackhouse admin`.

CREATE TABLE retranslators (
    id INTEGER PRIMARY KEY,
    master_user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    protocol_id BIGINT NOT NULL,
    address TEXT NOT NULL,
    port BIGINT NOT NULL CHECK (port BETWEEN 1 AND 65535),
    login TEXT,
    password TEXT,
    enabled BOOLEAN NOT NULL DEFAULT TRUE,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX retranslators_master ON retranslators (master_user_id, id);
-- 247: one retranslator per account and address, port and login (an
-- absent login is one value). Addresses are stored lower-cased.
CREATE UNIQUE INDEX retranslators_target
    ON retranslators (master_user_id, address, port, COALESCE(login, ''));

ALTER TABLE users ADD COLUMN retranslator_quota BIGINT;
