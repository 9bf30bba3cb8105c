-- A counter of the changes that can alter an intake verdict: what an
-- ingest token or a tracker line is answered with (accepted, 2, 201, 204,
-- 208, 219). Triggers add 1 in the transaction of every such change,
-- whatever statement or process makes it (`trackhouse admin` on the same
-- file included), so the intake's in-memory verdicts (`platform::IntakeLookup`)
-- are known current while the counter has not moved: a request reads this
-- one row instead of a token and every tracker it names (decisions.md 107).
-- The value only grows.

CREATE TABLE intake_generation (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    value BIGINT NOT NULL
);

INSERT INTO intake_generation (id, value) VALUES (1, 1);

-- Trackers: every column a verdict reads (id, owner, device id, block,
-- deletion, clone source) and the plan the verdict's join needs; not the
-- label, zone or movement settings.
CREATE TRIGGER intake_generation_tracker_insert AFTER INSERT ON trackers BEGIN
    UPDATE intake_generation SET value = value + 1 WHERE id = 1;
END;

CREATE TRIGGER intake_generation_tracker_update
AFTER UPDATE OF id, user_id, plan_id, device_id, blocked, deleted, clone_of ON trackers BEGIN
    UPDATE intake_generation SET value = value + 1 WHERE id = 1;
END;

CREATE TRIGGER intake_generation_tracker_delete AFTER DELETE ON trackers BEGIN
    UPDATE intake_generation SET value = value + 1 WHERE id = 1;
END;

-- Ingest tokens: any change (a revocation sets `revoked_at`).
CREATE TRIGGER intake_generation_token_insert AFTER INSERT ON ingest_tokens BEGIN
    UPDATE intake_generation SET value = value + 1 WHERE id = 1;
END;

CREATE TRIGGER intake_generation_token_update AFTER UPDATE ON ingest_tokens BEGIN
    UPDATE intake_generation SET value = value + 1 WHERE id = 1;
END;

CREATE TRIGGER intake_generation_token_delete AFTER DELETE ON ingest_tokens BEGIN
    UPDATE intake_generation SET value = value + 1 WHERE id = 1;
END;

-- A tracker is found through a join with its owner and its plan: rows
-- foreign keys keep while a tracker names them, unless a connection
-- without foreign keys (the sqlite3 shell) deletes one.
CREATE TRIGGER intake_generation_user_delete AFTER DELETE ON users BEGIN
    UPDATE intake_generation SET value = value + 1 WHERE id = 1;
END;

CREATE TRIGGER intake_generation_plan_delete AFTER DELETE ON plans BEGIN
    UPDATE intake_generation SET value = value + 1 WHERE id = 1;
END;
