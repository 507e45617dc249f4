-- +goose Up
-- List Persons in window mode with tag_ids wants the holders of each tag in
-- last-seen order. Each link carries its person's last-seen time, kept by a
-- trigger, so that a tag's holders in a window are one index range, already
-- in list order, and the holders of several tags meet in one ordered pass.
ALTER TABLE person_tags ADD COLUMN last_seen_at BIGINT;
UPDATE person_tags pt SET last_seen_at = p.last_seen_at FROM persons p WHERE p.id = pt.person_id;
ALTER TABLE person_tags ALTER COLUMN last_seen_at SET NOT NULL;
CREATE INDEX person_tags_seen ON person_tags (account_id, tag_id, last_seen_at, person_id);
-- It answers everything person_tags_tag did.
DROP INDEX person_tags_tag;

-- +goose StatementBegin
CREATE FUNCTION person_tags_seen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.last_seen_at <> OLD.last_seen_at THEN
        UPDATE person_tags SET last_seen_at = NEW.last_seen_at WHERE person_id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER person_tags_seen AFTER UPDATE OF last_seen_at ON persons
    FOR EACH ROW EXECUTE FUNCTION person_tags_seen();

-- +goose Down
DROP TRIGGER person_tags_seen ON persons;
DROP FUNCTION person_tags_seen();
DROP INDEX person_tags_seen;
CREATE INDEX person_tags_tag ON person_tags (account_id, tag_id, person_id);
ALTER TABLE person_tags DROP COLUMN last_seen_at;
