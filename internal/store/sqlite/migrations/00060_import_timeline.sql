-- +goose Up
-- pds import persons also counts its new persons in the persons timeline
-- itself, one delta per chunk (they share their last seen time), where the
-- trigger wrote a delta per person and the fold then read a million of
-- them back. The marker table that tells the link triggers to leave an
-- import's links alone now tells this trigger the same, so it takes a name
-- that says so: while it holds its one row, inside an import's transaction
-- only, the import writes what these triggers would derive.
ALTER TABLE tag_bits_import RENAME TO import_writes;

DROP TRIGGER persons_timeline_insert;
-- +goose StatementBegin
CREATE TRIGGER persons_timeline_insert AFTER INSERT ON persons
WHEN NOT EXISTS (SELECT 1 FROM import_writes) BEGIN
    INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    VALUES (NEW.account_id, 'persons', '', NEW.last_seen_at, 1);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER persons_timeline_insert;
-- +goose StatementBegin
CREATE TRIGGER persons_timeline_insert AFTER INSERT ON persons BEGIN
    INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    VALUES (NEW.account_id, 'persons', '', NEW.last_seen_at, 1);
END;
-- +goose StatementEnd
ALTER TABLE import_writes RENAME TO tag_bits_import;
