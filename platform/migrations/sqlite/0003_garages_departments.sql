-- An account's garages (depots) and departments (spec document 3). Both
-- belong to the master user (everything a sub-user creates does) and go
-- with it. A location is four columns, all NULL when it is null: `lat` and
-- `lng` are set together, `radius` may be NULL on its own.

CREATE TABLE garages (
    id INTEGER PRIMARY KEY,
    master_user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    lat DOUBLE PRECISION,
    lng DOUBLE PRECISION,
    address TEXT,
    radius BIGINT,
    mechanic_name TEXT,
    dispatcher_name TEXT,
    organization_name TEXT,
    created_at TIMESTAMP NOT NULL,
    CHECK ((lat IS NULL) = (lng IS NULL))
);
CREATE INDEX garages_master ON garages (master_user_id, id);

CREATE TABLE departments (
    id INTEGER PRIMARY KEY,
    master_user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    label TEXT NOT NULL,
    lat DOUBLE PRECISION,
    lng DOUBLE PRECISION,
    address TEXT,
    radius BIGINT,
    created_at TIMESTAMP NOT NULL,
    CHECK ((lat IS NULL) = (lng IS NULL))
);
CREATE INDEX departments_master ON departments (master_user_id, id);
