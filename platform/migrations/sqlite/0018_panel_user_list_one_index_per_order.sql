-- `panel/user/list` in a descending order is now the ascending order
-- reversed, ties included (the id descending; `OrderedQuery::checked`), so
-- SQLite walks the ascending index of migration 0015 backwards and the
-- `…_desc` twins that gave ties by the id ascending in a descending order
-- go. Every stored user updated them: seven of the fourteen indexes a
-- `panel/user/upload` of 10,000 users maintained (BENCHMARKS.md).

DROP INDEX panel_users_login_desc;
DROP INDEX panel_users_first_name_desc;
DROP INDEX panel_users_last_name_desc;
DROP INDEX panel_users_legal_name_desc;
DROP INDEX panel_users_created_at_desc;
DROP INDEX panel_users_activated_desc;
DROP INDEX panel_users_balance_desc;
