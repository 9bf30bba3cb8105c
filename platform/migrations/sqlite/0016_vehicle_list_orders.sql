-- An index for every property `vehicle/list` sorts by (decisions.md 90):
-- migration 0008 indexed the text properties a fleet list is usually sorted
-- by; a list sorted first by any other property (`max_speed`, `type`, ...)
-- sorted the whole account for its first page (hundreds of milliseconds at
-- 100,000 vehicles) and counted nothing for a deep one. With these, every
-- first sort item is walked in its index, and a deep page starts at the
-- pivot found in the index (`platform::vehicles::list`).
--
-- Each ends with the rowid (the id, the lists' tie breaker) implicitly.
-- Text properties sort `COLLATE NOCASE`, enums and numbers as stored, as
-- the list's ORDER BY does.

CREATE INDEX vehicle_list_type ON vehicle_list_keys (master_user_id, type);
CREATE INDEX vehicle_list_subtype ON vehicle_list_keys (master_user_id, subtype);
CREATE INDEX vehicle_list_fuel_type ON vehicle_list_keys (master_user_id, fuel_type);
CREATE INDEX vehicle_list_fuel_grade ON vehicle_list_keys (master_user_id, fuel_grade COLLATE NOCASE);
CREATE INDEX vehicle_list_norm_avg_fuel_consumption ON vehicle_list_keys (master_user_id, norm_avg_fuel_consumption);
CREATE INDEX vehicle_list_fuel_tank_volume ON vehicle_list_keys (master_user_id, fuel_tank_volume);
CREATE INDEX vehicle_list_payload_weight ON vehicle_list_keys (master_user_id, payload_weight);
CREATE INDEX vehicle_list_chassis_number ON vehicle_list_keys (master_user_id, chassis_number COLLATE NOCASE);
CREATE INDEX vehicle_list_wheel_arrangement ON vehicle_list_keys (master_user_id, wheel_arrangement COLLATE NOCASE);
CREATE INDEX vehicle_list_tyres_number ON vehicle_list_keys (master_user_id, tyres_number);
CREATE INDEX vehicle_list_tyre_size ON vehicle_list_keys (master_user_id, tyre_size COLLATE NOCASE);
CREATE INDEX vehicle_list_max_speed ON vehicle_list_keys (master_user_id, max_speed);
CREATE INDEX vehicle_list_passengers ON vehicle_list_keys (master_user_id, passengers);
