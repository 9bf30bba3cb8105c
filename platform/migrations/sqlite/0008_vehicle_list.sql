-- What `vehicle/list` sorts and filters by, apart from the vehicles' wide rows
-- (decisions.md 90). A vehicle's row carries its whole object as JSON (about
-- 1 KB), so a list that sorts or filters an account of 100,000 vehicles read
-- 100+ MB and sorted records holding the JSON. The list now sorts and filters
-- narrow copies and reads the JSON of the page's rows only:
--
-- - `vehicle_list_keys`: per vehicle (same id), the columns the list sorts by
--   (with its tracker's label and its garage's organization name), the
--   tracker it carries (the sub-user scope) and the search text;
-- - `vehicle_search`: an FTS5 trigram index of the search text, which finds
--   the vehicles holding a filter of 3 or more characters without a scan.
--
-- Triggers keep both equal to `vehicles`, `trackers.label` and
-- `garages.organization_name` whatever statement changes them; the list
-- still checks every row against the filter with LIKE, so the index only
-- narrows the rows to check.

CREATE TABLE vehicle_list_keys (
    id INTEGER PRIMARY KEY,
    master_user_id BIGINT NOT NULL,
    tracker_id BIGINT,
    garage_id BIGINT,
    label TEXT NOT NULL,
    reg_number TEXT NOT NULL,
    model TEXT NOT NULL,
    type TEXT NOT NULL,
    subtype TEXT,
    vin TEXT NOT NULL,
    fuel_type TEXT,
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
    tracker_label TEXT,
    garage_organization_name TEXT,
    search_text TEXT NOT NULL
);

-- A list walks the first sort item's index when there is one, so a first
-- page reads about a page of rows, and a deep page counts index entries
-- (each index ends with the id, the lists' tie breaker).
CREATE INDEX vehicle_list_master ON vehicle_list_keys (master_user_id);
CREATE INDEX vehicle_list_label ON vehicle_list_keys (master_user_id, label COLLATE NOCASE);
CREATE INDEX vehicle_list_reg_number ON vehicle_list_keys (master_user_id, reg_number COLLATE NOCASE);
CREATE INDEX vehicle_list_model ON vehicle_list_keys (master_user_id, model COLLATE NOCASE);
CREATE INDEX vehicle_list_vin ON vehicle_list_keys (master_user_id, vin COLLATE NOCASE);
CREATE INDEX vehicle_list_tracker_label ON vehicle_list_keys (master_user_id, tracker_label COLLATE NOCASE);
CREATE INDEX vehicle_list_garage ON vehicle_list_keys (master_user_id, garage_organization_name COLLATE NOCASE);
-- For the triggers that follow a tracker's label and a garage's name.
CREATE INDEX vehicle_list_tracker ON vehicle_list_keys (tracker_id) WHERE tracker_id IS NOT NULL;
CREATE INDEX vehicle_list_garage_id ON vehicle_list_keys (garage_id) WHERE garage_id IS NOT NULL;

-- The list no longer reads `vehicles` in these orders.
DROP INDEX vehicles_label;
DROP INDEX vehicles_reg_number;
DROP INDEX vehicles_model;
DROP INDEX vehicles_vin;

-- Rowid = the vehicle's id. `detail = full` keeps positions, so a filter's
-- trigrams matched as a phrase are exactly the vehicles holding it.
CREATE VIRTUAL TABLE vehicle_search USING fts5 (search_text, tokenize = 'trigram');

INSERT INTO vehicle_list_keys
SELECT v.id, v.master_user_id, v.tracker_id, v.garage_id, v.label, v.reg_number, v.model,
       v.type, v.subtype, v.vin, v.fuel_type, v.fuel_grade, v.norm_avg_fuel_consumption,
       v.fuel_tank_volume, v.payload_weight, v.chassis_number, v.wheel_arrangement,
       v.tyres_number, v.tyre_size, v.max_speed, v.passengers, t.label, g.organization_name,
       v.search_text
FROM vehicles v
LEFT JOIN trackers t ON t.id = v.tracker_id
LEFT JOIN garages g ON g.id = v.garage_id;

INSERT INTO vehicle_search (rowid, search_text) SELECT id, search_text FROM vehicles;

CREATE TRIGGER vehicle_list_insert AFTER INSERT ON vehicles BEGIN
    INSERT INTO vehicle_list_keys VALUES (
        NEW.id, NEW.master_user_id, NEW.tracker_id, NEW.garage_id, NEW.label, NEW.reg_number,
        NEW.model, NEW.type, NEW.subtype, NEW.vin, NEW.fuel_type, NEW.fuel_grade,
        NEW.norm_avg_fuel_consumption, NEW.fuel_tank_volume, NEW.payload_weight,
        NEW.chassis_number, NEW.wheel_arrangement, NEW.tyres_number, NEW.tyre_size,
        NEW.max_speed, NEW.passengers,
        (SELECT label FROM trackers WHERE id = NEW.tracker_id),
        (SELECT organization_name FROM garages WHERE id = NEW.garage_id),
        NEW.search_text);
    INSERT INTO vehicle_search (rowid, search_text) VALUES (NEW.id, NEW.search_text);
END;

-- Also run by the foreign key actions (a garage deleted sets `garage_id` to NULL).
CREATE TRIGGER vehicle_list_update AFTER UPDATE ON vehicles BEGIN
    DELETE FROM vehicle_list_keys WHERE id = OLD.id;
    INSERT INTO vehicle_list_keys VALUES (
        NEW.id, NEW.master_user_id, NEW.tracker_id, NEW.garage_id, NEW.label, NEW.reg_number,
        NEW.model, NEW.type, NEW.subtype, NEW.vin, NEW.fuel_type, NEW.fuel_grade,
        NEW.norm_avg_fuel_consumption, NEW.fuel_tank_volume, NEW.payload_weight,
        NEW.chassis_number, NEW.wheel_arrangement, NEW.tyres_number, NEW.tyre_size,
        NEW.max_speed, NEW.passengers,
        (SELECT label FROM trackers WHERE id = NEW.tracker_id),
        (SELECT organization_name FROM garages WHERE id = NEW.garage_id),
        NEW.search_text);
END;

CREATE TRIGGER vehicle_list_search_update AFTER UPDATE OF id, search_text ON vehicles BEGIN
    DELETE FROM vehicle_search WHERE rowid = OLD.id;
    INSERT INTO vehicle_search (rowid, search_text) VALUES (NEW.id, NEW.search_text);
END;

-- Also run by the foreign key actions (an account deleted deletes its vehicles).
CREATE TRIGGER vehicle_list_delete AFTER DELETE ON vehicles BEGIN
    DELETE FROM vehicle_list_keys WHERE id = OLD.id;
    DELETE FROM vehicle_search WHERE rowid = OLD.id;
END;

CREATE TRIGGER vehicle_list_tracker_insert AFTER INSERT ON trackers BEGIN
    UPDATE vehicle_list_keys SET tracker_label = NEW.label WHERE tracker_id = NEW.id;
END;

CREATE TRIGGER vehicle_list_tracker_update AFTER UPDATE OF label ON trackers BEGIN
    UPDATE vehicle_list_keys SET tracker_label = NEW.label WHERE tracker_id = NEW.id;
END;

CREATE TRIGGER vehicle_list_garage_insert AFTER INSERT ON garages BEGIN
    UPDATE vehicle_list_keys SET garage_organization_name = NEW.organization_name
    WHERE garage_id = NEW.id;
END;

CREATE TRIGGER vehicle_list_garage_update AFTER UPDATE OF organization_name ON garages BEGIN
    UPDATE vehicle_list_keys SET garage_organization_name = NEW.organization_name
    WHERE garage_id = NEW.id;
END;
