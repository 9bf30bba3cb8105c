-- What `panel/user/list` sorts and filters by (issue 15). The list showed
-- a dealer's master users by scanning and sorting its rows: a dealer of
-- 100,000 users cost every call a scan of the dealer's rows for the
-- count, a sort of them for the page, and a scan for any filter.
--
-- - An index per order and direction the call offers, partial to the
--   users the panel lists (master users, not deleted: the terms of the
--   list's WHERE), each led by the dealer and ending with the id, the
--   list's tie breaker: a page walks its order's index and stops after
--   `offset + limit` entries, and the count reads the dealer's index
--   entries, not its rows.
-- - `panel_user_search`: an FTS5 trigram index of the users' search text
--   (login, names, legal name, phone, lower-cased), which finds the users
--   holding a filter of 3 or more characters without a scan. The list
--   still checks every candidate with LIKE, so the index only narrows.
--
-- Triggers keep the search index equal to `users.search_text` whatever
-- statement changes it.

-- By id, the list walks `users_dealer_master` (migration 0013). The other
-- orders break ties by the id ascending whatever their direction, so a
-- descending order has its own index (`…_desc`) too: walking the ascending
-- one backwards would give the ties in descending ids and make SQLite sort
-- every group of equal values (92% of a dealer's users are activated, all
-- have the same balance; SQLite does not know that logins are unique).
CREATE INDEX panel_users_login ON users (dealer_id, login, id)
    WHERE master_user_id IS NULL AND deleted = FALSE;
CREATE INDEX panel_users_login_desc ON users (dealer_id, login DESC, id)
    WHERE master_user_id IS NULL AND deleted = FALSE;
CREATE INDEX panel_users_first_name ON users (dealer_id, first_name COLLATE NOCASE, id)
    WHERE master_user_id IS NULL AND deleted = FALSE;
CREATE INDEX panel_users_first_name_desc ON users (dealer_id, first_name COLLATE NOCASE DESC, id)
    WHERE master_user_id IS NULL AND deleted = FALSE;
CREATE INDEX panel_users_last_name ON users (dealer_id, last_name COLLATE NOCASE, id)
    WHERE master_user_id IS NULL AND deleted = FALSE;
CREATE INDEX panel_users_last_name_desc ON users (dealer_id, last_name COLLATE NOCASE DESC, id)
    WHERE master_user_id IS NULL AND deleted = FALSE;
CREATE INDEX panel_users_legal_name ON users (dealer_id, legal_name COLLATE NOCASE, id)
    WHERE master_user_id IS NULL AND deleted = FALSE;
CREATE INDEX panel_users_legal_name_desc ON users (dealer_id, legal_name COLLATE NOCASE DESC, id)
    WHERE master_user_id IS NULL AND deleted = FALSE;
CREATE INDEX panel_users_created_at ON users (dealer_id, created_at, id)
    WHERE master_user_id IS NULL AND deleted = FALSE;
CREATE INDEX panel_users_created_at_desc ON users (dealer_id, created_at DESC, id)
    WHERE master_user_id IS NULL AND deleted = FALSE;
CREATE INDEX panel_users_activated ON users (dealer_id, activated, id)
    WHERE master_user_id IS NULL AND deleted = FALSE;
CREATE INDEX panel_users_activated_desc ON users (dealer_id, activated DESC, id)
    WHERE master_user_id IS NULL AND deleted = FALSE;
CREATE INDEX panel_users_balance ON users (dealer_id, balance, id)
    WHERE master_user_id IS NULL AND deleted = FALSE;
CREATE INDEX panel_users_balance_desc ON users (dealer_id, balance DESC, id)
    WHERE master_user_id IS NULL AND deleted = FALSE;

-- Rowid = the user's id. `detail = full` keeps positions, so a filter's
-- trigrams matched as a phrase are the users holding it.
CREATE VIRTUAL TABLE panel_user_search USING fts5 (search_text, tokenize = 'trigram');

INSERT INTO panel_user_search (rowid, search_text)
SELECT id, search_text FROM users WHERE search_text <> '';

CREATE TRIGGER panel_user_search_insert AFTER INSERT ON users
WHEN NEW.search_text <> '' BEGIN
    INSERT INTO panel_user_search (rowid, search_text) VALUES (NEW.id, NEW.search_text);
END;

CREATE TRIGGER panel_user_search_update AFTER UPDATE OF id, search_text ON users BEGIN
    DELETE FROM panel_user_search WHERE rowid = OLD.id;
    INSERT INTO panel_user_search (rowid, search_text)
    SELECT NEW.id, NEW.search_text WHERE NEW.search_text <> '';
END;

CREATE TRIGGER panel_user_search_delete AFTER DELETE ON users BEGIN
    DELETE FROM panel_user_search WHERE rowid = OLD.id;
END;
