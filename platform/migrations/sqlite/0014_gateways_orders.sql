-- E-mail gateways and orders of the dealer panel (spec document 2,
-- `/panel/gateways/email/list`, `/panel/order/read`; clarification 53).
-- No panel call creates them: `trackhouse admin email-gateway|order` does.

-- An SMTP gateway. A dealer's own (`dealer_id` set) or the platform
-- operator's (`dealer_id` NULL). A `leasable` gateway is offered to the
-- owner's direct sub-dealers (the operator's: to dealers without a parent),
-- who see it without its parameters.
CREATE TABLE email_gateways (
    id INTEGER PRIMARY KEY,
    dealer_id BIGINT REFERENCES dealers (id) ON DELETE CASCADE,
    label TEXT NOT NULL,
    -- `smtp` for a dealer's own; a vendor's name for the operator's.
    provider TEXT NOT NULL DEFAULT 'smtp',
    leasable BOOLEAN NOT NULL DEFAULT FALSE,
    -- JSON object: the `params` of the own gateway object (sender, host,
    -- port, credentials, TLS, timeouts), checked by `platform::gateways`.
    -- The SMTP password is kept as given: sending needs it.
    params TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX email_gateways_dealer ON email_gateways (dealer_id, id);
CREATE INDEX email_gateways_leasable ON email_gateways (dealer_id, id) WHERE leasable = TRUE;

-- The gateway a dealer sends with (`bound_gateway`): its own or one it may
-- lease; none is null. Deleting either side removes the binding.
CREATE TABLE dealer_email_gateways (
    dealer_id BIGINT PRIMARY KEY REFERENCES dealers (id) ON DELETE CASCADE,
    gateway_id BIGINT NOT NULL REFERENCES email_gateways (id) ON DELETE CASCADE
);
CREATE INDEX dealer_email_gateways_gateway ON dealer_email_gateways (gateway_id);

-- A dealer's order of tracker bundles (devices with their SIM cards).
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    dealer_id BIGINT NOT NULL REFERENCES dealers (id) ON DELETE CASCADE,
    -- The dealer's master user the order is for. Users are marked deleted,
    -- never removed, so an order cannot lose its user.
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE RESTRICT,
    seller_id BIGINT NOT NULL DEFAULT 0,
    amount BIGINT NOT NULL DEFAULT 0 CHECK (amount >= 0),
    order_sum DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (order_sum >= 0),
    order_type TEXT NOT NULL
        CHECK (order_type IN ('bank', 'equip', 'bank_service', 'bank_license', 'bank_license_camera')),
    status TEXT NOT NULL DEFAULT 'created'
        CHECK (status IN ('created', 'settled', 'gathered', 'shipped', 'shipped_partially', 'canceled')),
    payer TEXT NOT NULL DEFAULT '',
    recipient TEXT NOT NULL DEFAULT '',
    contacts TEXT NOT NULL DEFAULT '',
    place TEXT NOT NULL DEFAULT '',
    comment TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX orders_dealer ON orders (dealer_id, id);
CREATE INDEX orders_user ON orders (user_id);

-- The devices of an order, each assigned when it was added.
CREATE TABLE order_bundles (
    id INTEGER PRIMARY KEY,
    order_id BIGINT NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    equip_id BIGINT NOT NULL DEFAULT 0,
    equip_vendor TEXT NOT NULL DEFAULT '',
    equip_name TEXT NOT NULL DEFAULT '',
    equip_model TEXT NOT NULL DEFAULT '',
    model_code TEXT NOT NULL DEFAULT '',
    imei TEXT NOT NULL DEFAULT '',
    iccid TEXT NOT NULL DEFAULT '',
    assign_time TIMESTAMP NOT NULL
);
CREATE INDEX order_bundles_order ON order_bundles (order_id, id);
