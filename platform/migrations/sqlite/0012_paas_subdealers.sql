-- PaaS plans: what the platform operator sells dealers (the `tariff` of
-- `panel/dealer/get_info`), made with `trackhouse admin paas-tariff`; every
-- dealer is on one (`dealers.paas_plan_id`), the first one by default.
CREATE TABLE paas_tariffs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    tariff_type TEXT NOT NULL DEFAULT 'monthly',
    currency TEXT NOT NULL DEFAULT 'USD',
    license_price DOUBLE PRECISION,
    min_license_pay DOUBLE PRECISION,
    vat BOOLEAN NOT NULL DEFAULT FALSE,
    trial BOOLEAN NOT NULL DEFAULT FALSE,
    premium_gis BOOLEAN NOT NULL DEFAULT FALSE,
    -- JSON object: incoming_sms, outgoing_sms, service_sms, phone_call, traffic.
    service_prices TEXT NOT NULL DEFAULT '{}',
    -- Longest data store period the dealer may sell (short form: `1y`).
    store_period TEXT NOT NULL DEFAULT '1y',
    -- Whether dealers on the plan may have sub-dealers (`panel/subpaas/*`).
    allows_subpaas BOOLEAN NOT NULL DEFAULT TRUE,
    created_at TIMESTAMP NOT NULL
);
INSERT INTO paas_tariffs (id, name, created_at) VALUES (1, 'PaaS Standard', CURRENT_TIMESTAMP);
UPDATE dealers SET paas_plan_id = 1
    WHERE paas_plan_id IS NULL OR paas_plan_id NOT IN (SELECT id FROM paas_tariffs);

-- Sub-dealers (`panel/subpaas/*`, clarification 51) are dealers with a
-- parent; these are the members of their object that dealers lacked. A
-- deleted account stays (its users and trackers refer to it) and refuses
-- every change.
ALTER TABLE dealers ADD COLUMN email TEXT NOT NULL DEFAULT '';
ALTER TABLE dealers ADD COLUMN jur_country TEXT NOT NULL DEFAULT '';
ALTER TABLE dealers ADD COLUMN contact_fio TEXT NOT NULL DEFAULT '';
ALTER TABLE dealers ADD COLUMN contact_post TEXT NOT NULL DEFAULT '';
ALTER TABLE dealers ADD COLUMN contact_phone TEXT NOT NULL DEFAULT '';
ALTER TABLE dealers ADD COLUMN deleted BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX dealers_parent ON dealers (parent_dealer_id, id);
