-- Geo links (spec document 3, clarifications 41-44): a public page showing
-- the live location of 1 to 100 trackers of an account, found by `hash`.
-- A link belongs to the master user; `creator_id` is the user (master or
-- sub-user) who created it.
CREATE TABLE geo_links (
    id INTEGER PRIMARY KEY,
    master_user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    creator_id BIGINT NOT NULL,
    -- 32 lower-case hex characters: the key of the public page.
    hash TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL,
    enabled BOOLEAN NOT NULL,
    -- `lifetime.from` / `to` as sent (main interface date/time in the
    -- account's zone at the time), and the same instants in ms since the epoch.
    lifetime_from TEXT,
    lifetime_to TEXT,
    from_ms BIGINT,
    to_ms BIGINT,
    -- The link's `params` object as stored (defaults filled), JSON.
    params TEXT NOT NULL,
    -- Description and aliases lower-cased (Unicode) for `filter` and
    -- `contains` conditions.
    description_search TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    -- `created_at` in ms since the epoch (`period` conditions).
    created_ms BIGINT NOT NULL
);
CREATE INDEX geo_links_master ON geo_links (master_user_id, id);

-- The trackers of a link, in the order sent.
CREATE TABLE geo_link_trackers (
    link_id BIGINT NOT NULL REFERENCES geo_links (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    tracker_id BIGINT NOT NULL,
    alias TEXT,
    alias_search TEXT,
    -- `params.object_data`, a JSON array of names.
    object_data TEXT NOT NULL,
    PRIMARY KEY (link_id, position)
) WITHOUT ROWID;
CREATE INDEX geo_link_trackers_tracker ON geo_link_trackers (tracker_id);
