-- +goose Up
-- A subscription's own headers, sent on every attempt (issue 67): a JSON
-- object of names to values, sealed as the signing secret is (its values
-- may be credentials); NULL when it has none.
ALTER TABLE webhooks ADD COLUMN headers TEXT;

-- +goose Down
ALTER TABLE webhooks DROP COLUMN headers;
