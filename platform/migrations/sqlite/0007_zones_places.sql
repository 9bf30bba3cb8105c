-- Zones and places of an account (created with `trackhouse admin zone|place
-- create`; geo links refer to them by `bounding_zone_ids` and `place_ids`,
-- clarification 44). Both belong to the master user and go with it.

-- A zone is a circle (`center_lat`, `center_lng`, `radius` in metres; no
-- points) or a polygon (`points`: a JSON array of {"lat":..,"lng":..}, in
-- order; no center or radius).
CREATE TABLE zones (
    id INTEGER PRIMARY KEY,
    master_user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    label TEXT NOT NULL,
    address TEXT NOT NULL DEFAULT '',
    -- Six hex digits without `#`.
    color TEXT NOT NULL,
    type TEXT NOT NULL CHECK (type IN ('circle', 'polygon')),
    center_lat DOUBLE PRECISION,
    center_lng DOUBLE PRECISION,
    radius BIGINT,
    points TEXT,
    created_at TIMESTAMP NOT NULL,
    CHECK ((type = 'circle') = (center_lat IS NOT NULL AND center_lng IS NOT NULL AND radius IS NOT NULL)),
    CHECK ((type = 'polygon') = (points IS NOT NULL))
);
CREATE INDEX zones_master ON zones (master_user_id, id);

-- A place: a named point with an optional radius, address and description.
CREATE TABLE places (
    id INTEGER PRIMARY KEY,
    master_user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    label TEXT NOT NULL,
    lat DOUBLE PRECISION NOT NULL,
    lng DOUBLE PRECISION NOT NULL,
    address TEXT NOT NULL DEFAULT '',
    radius BIGINT,
    description TEXT,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX places_master ON places (master_user_id, id);
