-- Plugins (spec document 3): a catalog, and the plugins enabled per user
-- and per dealer (`trackhouse admin plugin enable|disable`). Plugin 29 is
-- billing (clarification 45). Bills of an account.

CREATE TABLE plugins (
    id INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    ui_module TEXT NOT NULL,
    module TEXT NOT NULL,
    -- JSON object: exclusion (boolean), values (array of model regexes).
    filter TEXT NOT NULL,
    -- JSON object, or NULL.
    parameters TEXT
);
INSERT INTO plugins (id, type, ui_module, module, filter, parameters) VALUES
    (1, 'tracker_register', 'RegisterDefault', 'register.default', '{"exclusion":true,"values":[]}', NULL),
    (2, 'tracker_report', 'ReportDefault', 'report.default', '{"exclusion":true,"values":[]}', NULL),
    (3, 'tracker_register', 'RegisterTeltonika', 'register.teltonika', '{"exclusion":false,"values":["^teltonika_.*"]}', '{"apn_prompt":true}'),
    (29, 'billing', 'Billing', 'billing.orders', '{"exclusion":true,"values":[]}', NULL);

CREATE TABLE user_plugins (
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    plugin_id BIGINT NOT NULL REFERENCES plugins (id),
    PRIMARY KEY (user_id, plugin_id)
);

CREATE TABLE dealer_plugins (
    dealer_id BIGINT NOT NULL REFERENCES dealers (id) ON DELETE CASCADE,
    plugin_id BIGINT NOT NULL REFERENCES plugins (id),
    PRIMARY KEY (dealer_id, plugin_id)
);

CREATE TABLE bills (
    id INTEGER PRIMARY KEY,
    master_user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    payer TEXT NOT NULL,
    sum DOUBLE PRECISION NOT NULL CHECK (sum > 0),
    status TEXT NOT NULL DEFAULT 'created' CHECK (status IN ('created', 'settled', 'canceled')),
    -- JSON array of texts (one for a bill made by bill/create).
    positions TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX bills_master ON bills (master_user_id, id);
