-- The trigram indexes of the lists (`vehicle_search`, migration 0008;
-- `panel_user_search`, migration 0015) kept each trigram's positions and
-- a copy of the text they index. Neither is needed: every candidate the
-- index gives is checked with LIKE anyway, and the text is in the table
-- the index follows. Without positions (`detail = none`), without the copy
-- (external content) and without the per-row sizes (`columnsize = 0`), an
-- index takes half the time to write (a `panel/user/upload` of 10,000
-- users maintains one per user) and answers faster.
--
-- Without positions a filter is no longer looked up as one phrase of its
-- trigrams but as all of its trigrams (`platform::listing`), which also
-- finds texts holding them apart; LIKE keeps only the texts holding the
-- filter, as before (decisions.md 103).
--
-- An external content index is told what to forget: the triggers pass the
-- old text with the 'delete' command. The insert triggers of 0008 and 0015
-- write to the new tables as they are.

DROP TRIGGER vehicle_list_search_update;
DROP TRIGGER vehicle_list_delete;
DROP TABLE vehicle_search;

CREATE VIRTUAL TABLE vehicle_search USING fts5 (
    search_text, tokenize = 'trigram', detail = none, columnsize = 0,
    content = 'vehicle_list_keys', content_rowid = 'id'
);
INSERT INTO vehicle_search (rowid, search_text) SELECT id, search_text FROM vehicle_list_keys;

CREATE TRIGGER vehicle_list_search_update AFTER UPDATE OF id, search_text ON vehicles BEGIN
    INSERT INTO vehicle_search (vehicle_search, rowid, search_text)
    VALUES ('delete', OLD.id, OLD.search_text);
    INSERT INTO vehicle_search (rowid, search_text) VALUES (NEW.id, NEW.search_text);
END;

-- Also run by the foreign key actions (an account deleted deletes its vehicles).
CREATE TRIGGER vehicle_list_delete AFTER DELETE ON vehicles BEGIN
    DELETE FROM vehicle_list_keys WHERE id = OLD.id;
    INSERT INTO vehicle_search (vehicle_search, rowid, search_text)
    VALUES ('delete', OLD.id, OLD.search_text);
END;

DROP TRIGGER panel_user_search_update;
DROP TRIGGER panel_user_search_delete;
DROP TABLE panel_user_search;

CREATE VIRTUAL TABLE panel_user_search USING fts5 (
    search_text, tokenize = 'trigram', detail = none, columnsize = 0,
    content = 'users', content_rowid = 'id'
);
INSERT INTO panel_user_search (rowid, search_text)
SELECT id, search_text FROM users WHERE search_text <> '';

CREATE TRIGGER panel_user_search_update AFTER UPDATE OF id, search_text ON users BEGIN
    INSERT INTO panel_user_search (panel_user_search, rowid, search_text)
    SELECT 'delete', OLD.id, OLD.search_text WHERE OLD.search_text <> '';
    INSERT INTO panel_user_search (rowid, search_text)
    SELECT NEW.id, NEW.search_text WHERE NEW.search_text <> '';
END;

CREATE TRIGGER panel_user_search_delete AFTER DELETE ON users
WHEN OLD.search_text <> '' BEGIN
    INSERT INTO panel_user_search (panel_user_search, rowid, search_text)
    VALUES ('delete', OLD.id, OLD.search_text);
END;
