-- +goose Up
-- pds import persons counts its new persons in the persons timeline itself,
-- one delta per chunk (they share their last seen time), where this trigger
-- wrote a delta per person and the fold read a million of them back. While
-- the import's transaction has pds.import_writes set to 'on' (set_config
-- with is_local, so it ends with the transaction whatever happens), the
-- insert trigger leaves the rows alone. Updates are counted as before.
DROP TRIGGER persons_timeline ON persons;
CREATE TRIGGER persons_timeline_insert AFTER INSERT ON persons
    FOR EACH ROW WHEN (current_setting('pds.import_writes', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION persons_timeline();
CREATE TRIGGER persons_timeline_update AFTER UPDATE OF last_seen_at ON persons
    FOR EACH ROW EXECUTE FUNCTION persons_timeline();

-- +goose Down
DROP TRIGGER persons_timeline_update ON persons;
DROP TRIGGER persons_timeline_insert ON persons;
CREATE TRIGGER persons_timeline AFTER INSERT OR UPDATE OF last_seen_at ON persons
    FOR EACH ROW EXECUTE FUNCTION persons_timeline();
