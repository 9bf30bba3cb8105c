-- Activation codes a dealer sells (spec document 2, clarification 52): a
-- 10-digit code from the CSPRNG, unique on the platform, for a plan of the
-- dealer; activated once, by a device.
CREATE TABLE activation_codes (
    code TEXT PRIMARY KEY,
    dealer_id BIGINT NOT NULL REFERENCES dealers (id) ON DELETE CASCADE,
    plan_id BIGINT NOT NULL REFERENCES plans (id),
    bonus_amount BIGINT NOT NULL DEFAULT 0,
    free_days BIGINT NOT NULL DEFAULT 0,
    money_amount BIGINT NOT NULL DEFAULT 0,
    activated BOOLEAN NOT NULL DEFAULT FALSE,
    activation_date TIMESTAMP,
    -- The tracker activated with the code; 0 before.
    device_id BIGINT NOT NULL DEFAULT 0,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX activation_codes_dealer ON activation_codes (dealer_id, code);
