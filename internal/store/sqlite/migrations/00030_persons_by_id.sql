-- +goose Up
-- Export Persons reads an account's persons in id order, a chunk at a time
-- from the last id it sent (sqlstore.ExportPersons): one range of this
-- index per chunk. The primary key (id) alone would walk every account's
-- persons. The statistics row says what 00010 says of the other indexes.
-- (Numbered apart from the sequence other branches extend.)
CREATE INDEX persons_account_id ON persons (account_id, id);
DELETE FROM sqlite_stat1 WHERE tbl = 'persons' AND idx = 'persons_account_id';
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES ('persons', 'persons_account_id', '1000000 100000 1');

-- +goose Down
DELETE FROM sqlite_stat1 WHERE tbl = 'persons' AND idx = 'persons_account_id';
DROP INDEX persons_account_id;
