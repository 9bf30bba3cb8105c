-- The panel's users (spec document 2, `/panel/user/…`): each master user's
-- discount, and a search column for the list's filter (login, names, legal
-- name and phone, lower-cased in Rust; the backfill's `lower` folds ASCII
-- only). Sub-users keep it empty: the panel lists master users only.
CREATE TABLE user_discounts (
    user_id BIGINT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    -- Percent, 0 to 100.
    value DOUBLE PRECISION NOT NULL,
    min_trackers BIGINT NOT NULL,
    end_date TIMESTAMP,
    strategy TEXT NOT NULL CHECK (strategy IN ('no_summing', 'sum_with_progressive'))
);

-- Devices the user may hold at most (`panel/user/upload`'s "Device limit"); null: the plan's.
ALTER TABLE users ADD COLUMN device_limit BIGINT;
ALTER TABLE users ADD COLUMN search_text TEXT NOT NULL DEFAULT '';
UPDATE users SET search_text = lower(login || char(10) || first_name || char(10) || middle_name
    || char(10) || last_name || char(10) || legal_name || char(10) || phone)
    WHERE master_user_id IS NULL;
CREATE INDEX users_dealer_master ON users (dealer_id, master_user_id, deleted, id);
