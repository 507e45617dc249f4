-- +goose Up
-- pds import persons writes the tag bits of its new links itself, by the
-- ords it takes for its persons, as SQLite's import does: the statement
-- trigger wrote a delta per link (a third of a million for a million-line
-- import), the fold read them back after the commit, and until then a fold
-- on any other instance stepped over each of them, uncommitted, every
-- second. While the import's transaction has pds.import_writes 'on' (see
-- 00060) the insert trigger leaves its links alone; breaking links is
-- counted as before.
DROP TRIGGER person_tags_bits_insert ON person_tags;
CREATE TRIGGER person_tags_bits_insert AFTER INSERT ON person_tags
    REFERENCING NEW TABLE AS linked FOR EACH STATEMENT
    WHEN (current_setting('pds.import_writes', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION person_tags_bits();

-- +goose Down
DROP TRIGGER person_tags_bits_insert ON person_tags;
CREATE TRIGGER person_tags_bits_insert AFTER INSERT ON person_tags
    REFERENCING NEW TABLE AS linked FOR EACH STATEMENT EXECUTE FUNCTION person_tags_bits();
