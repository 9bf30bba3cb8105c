-- The panel's plans (spec document 2, `/panel/tariff/…`): a search column
-- for the list's filter (the name lower-cased in Rust, Unicode-aware; the
-- backfill's `lower` folds ASCII only, which is what the foundation's plan
-- names are), and the defaults per device type, which now also hold the
-- dealer's default tracker plan (moved from `dealers`).
ALTER TABLE plans ADD COLUMN search_text TEXT NOT NULL DEFAULT '';
UPDATE plans SET search_text = lower(name);

CREATE TABLE plan_defaults (
    dealer_id BIGINT NOT NULL REFERENCES dealers (id) ON DELETE CASCADE,
    device_type TEXT NOT NULL CHECK (device_type IN ('tracker', 'camera')),
    plan_id BIGINT REFERENCES plans (id),
    activation_bonus DOUBLE PRECISION NOT NULL DEFAULT 0,
    free_days BIGINT NOT NULL DEFAULT 0,
    free_days_device_limit BIGINT,
    PRIMARY KEY (dealer_id, device_type)
);
INSERT INTO plan_defaults (dealer_id, device_type, plan_id)
    SELECT id, 'tracker', default_tracker_plan_id FROM dealers WHERE default_tracker_plan_id IS NOT NULL;
ALTER TABLE dealers DROP COLUMN default_tracker_plan_id;
CREATE INDEX plans_dealer ON plans (dealer_id, device_type);
