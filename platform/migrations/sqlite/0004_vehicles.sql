-- An account's vehicles (spec document 3) and their service tasks (the
-- maintenance module's records, created with `trackhouse admin`). A vehicle
-- keeps its whole object as JSON in `body`; the members lists sort, filter
-- and join on, and the links with rules, are columns too (the columns are
-- authoritative for those members).

CREATE TABLE vehicles (
    id INTEGER PRIMARY KEY,
    master_user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    tracker_id BIGINT REFERENCES trackers (id),
    garage_id BIGINT REFERENCES garages (id) ON DELETE SET NULL,
    label TEXT NOT NULL,
    reg_number TEXT NOT NULL,
    model TEXT NOT NULL,
    type TEXT NOT NULL CHECK (type IN ('truck', 'car', 'bus', 'special')),
    subtype TEXT,
    vin TEXT NOT NULL,
    fuel_type TEXT CHECK (fuel_type IN ('petrol', 'diesel', 'gas')),
    fuel_grade TEXT NOT NULL,
    norm_avg_fuel_consumption DOUBLE PRECISION NOT NULL,
    fuel_tank_volume BIGINT NOT NULL,
    payload_weight BIGINT NOT NULL,
    chassis_number TEXT NOT NULL,
    wheel_arrangement TEXT NOT NULL,
    tyres_number BIGINT NOT NULL,
    tyre_size TEXT NOT NULL,
    max_speed BIGINT NOT NULL,
    passengers BIGINT NOT NULL,
    -- label, reg_number and vin lower-cased (Unicode), for the list filter.
    search_text TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
-- One vehicle per tracker.
CREATE UNIQUE INDEX vehicles_tracker ON vehicles (tracker_id) WHERE tracker_id IS NOT NULL;
CREATE INDEX vehicles_master ON vehicles (master_user_id, id);
CREATE INDEX vehicles_label ON vehicles (master_user_id, label COLLATE NOCASE, id);
CREATE INDEX vehicles_reg_number ON vehicles (master_user_id, reg_number COLLATE NOCASE, id);
CREATE INDEX vehicles_model ON vehicles (master_user_id, model COLLATE NOCASE, id);
CREATE INDEX vehicles_vin ON vehicles (master_user_id, vin COLLATE NOCASE, id);
CREATE INDEX vehicles_garage ON vehicles (garage_id);

CREATE TABLE vehicle_service_tasks (
    id INTEGER PRIMARY KEY,
    vehicle_id BIGINT NOT NULL REFERENCES vehicles (id) ON DELETE CASCADE,
    description TEXT NOT NULL,
    closed BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX vehicle_service_tasks_vehicle ON vehicle_service_tasks (vehicle_id);
