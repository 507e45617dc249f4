-- +goose Up
-- List Persons in window mode with tag_ids wants the holders of each tag in
-- last-seen order. Each link carries its person's last-seen time, kept by a
-- trigger, so that a tag's holders in a window are one index range, already
-- in list order, and the holders of several tags meet in one ordered pass.
-- The table is rebuilt because SQLite adds a NOT NULL column only with a
-- default, which would hide a write that forgets the time.
CREATE TABLE person_tags_seen (
    account_id   TEXT NOT NULL,
    person_id    TEXT NOT NULL REFERENCES persons(id),
    tag_id       TEXT NOT NULL REFERENCES tags(id),
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    PRIMARY KEY (person_id, tag_id)
);
INSERT INTO person_tags_seen (account_id, person_id, tag_id, created_at, last_seen_at)
    SELECT pt.account_id, pt.person_id, pt.tag_id, pt.created_at, p.last_seen_at
    FROM person_tags pt JOIN persons p ON p.id = pt.person_id;
DROP TABLE person_tags;
ALTER TABLE person_tags_seen RENAME TO person_tags;
CREATE INDEX person_tags_seen ON person_tags (account_id, tag_id, last_seen_at, person_id);

-- +goose StatementBegin
CREATE TRIGGER person_tags_seen AFTER UPDATE OF last_seen_at ON persons
WHEN NEW.last_seen_at <> OLD.last_seen_at BEGIN
    UPDATE person_tags SET last_seen_at = NEW.last_seen_at WHERE person_id = NEW.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER person_tags_seen;
DROP INDEX person_tags_seen;
ALTER TABLE person_tags DROP COLUMN last_seen_at;
CREATE INDEX person_tags_tag ON person_tags (account_id, tag_id, person_id);
