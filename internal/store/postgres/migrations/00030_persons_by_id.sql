-- +goose Up
-- Export Persons reads an account's persons in id order, a chunk at a time
-- from the last id it sent (sqlstore.ExportPersons): one range of this
-- index per chunk. The primary key (id) alone would walk every account's
-- persons. (Numbered apart from the sequence other branches extend.)
CREATE INDEX persons_account_id ON persons (account_id, id);

-- +goose Down
DROP INDEX persons_account_id;
