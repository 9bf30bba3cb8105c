-- `users_dealer` (migration 0001) indexed `users (dealer_id)`, which
-- `users_dealer_master` (migration 0013: `dealer_id, master_user_id,
-- deleted, id`) also starts with: every lookup by dealer, the foreign key
-- check of a deleted dealer included, can use the wider one. Every stored
-- user updated both (a `panel/user/upload` of 10,000 users writes eleven
-- index entries a user; now ten).
DROP INDEX users_dealer;
