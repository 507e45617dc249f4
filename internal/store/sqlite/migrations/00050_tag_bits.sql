-- +goose Up
-- Counting the persons who hold several tags walked every link of each tag
-- (a third and a fifth of a million persons: some 180 ms). Tag bits keep
-- each tag's holders as a bitmap over a number each person gets once
-- (persons.ord), 4,096 persons to a row, so that the holders of all the
-- tags of a filter are counted by ANDing a few hundred rows of 512 bytes
-- (sqlstore/tag_bits.go). As with timelines, triggers append a delta for
-- every link made or broken, so no write path can forget one; the store
-- folds deltas into tag_bits, and readers apply those not yet folded.
--
-- ord is not the rowid: VACUUM may renumber the rowids of a table without
-- an INTEGER PRIMARY KEY, and a bitmap would then name other persons.
ALTER TABLE persons ADD COLUMN ord INTEGER;
UPDATE persons SET ord = rowid;
CREATE UNIQUE INDEX persons_ord ON persons (ord);
-- A write that names no ord (every one but an import, which numbers its
-- persons itself) gets the next.
-- +goose StatementBegin
CREATE TRIGGER persons_ord AFTER INSERT ON persons WHEN NEW.ord IS NULL BEGIN
    UPDATE persons SET ord = (SELECT COALESCE(MAX(ord), 0) + 1 FROM persons) WHERE rowid = NEW.rowid;
END;
-- +goose StatementEnd

CREATE TABLE tag_bits (
    account_id TEXT NOT NULL,
    tag_id     TEXT NOT NULL,
    chunk      INTEGER NOT NULL, -- ord / 4096
    bits       BLOB NOT NULL,    -- bit ord % 4096 set: that person holds the tag
    PRIMARY KEY (account_id, tag_id, chunk)
) WITHOUT ROWID;

CREATE TABLE tag_bit_deltas (
    id         INTEGER PRIMARY KEY,
    account_id TEXT NOT NULL,
    tag_id     TEXT NOT NULL,
    ord        INTEGER NOT NULL,
    n          INTEGER NOT NULL -- +1 a link made, -1 a link broken
);
CREATE INDEX tag_bit_deltas_tag ON tag_bit_deltas (account_id, tag_id, ord);

-- pds import persons writes the bits of its new persons' links itself
-- (sqlstore.personImporter.insertLinks): while this table holds its one
-- row, inside the import's transaction only, links make no delta.
CREATE TABLE tag_bits_import (one INTEGER PRIMARY KEY CHECK (one = 1));

-- +goose StatementBegin
CREATE TRIGGER person_tags_bits_insert AFTER INSERT ON person_tags
WHEN NOT EXISTS (SELECT 1 FROM tag_bits_import) BEGIN
    INSERT INTO tag_bit_deltas (account_id, tag_id, ord, n)
    SELECT NEW.account_id, NEW.tag_id, ord, 1 FROM persons WHERE id = NEW.person_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER person_tags_bits_delete AFTER DELETE ON person_tags BEGIN
    INSERT INTO tag_bit_deltas (account_id, tag_id, ord, n)
    SELECT OLD.account_id, OLD.tag_id, ord, -1 FROM persons WHERE id = OLD.person_id;
END;
-- +goose StatementEnd

-- What is already linked starts as deltas; the store folds them.
INSERT INTO tag_bit_deltas (account_id, tag_id, ord, n)
    SELECT pt.account_id, pt.tag_id, p.ord, 1 FROM person_tags pt JOIN persons p ON p.id = pt.person_id;

DELETE FROM sqlite_stat1 WHERE tbl IN ('tag_bits', 'tag_bit_deltas') OR (tbl = 'persons' AND idx = 'persons_ord');
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
    ('persons', 'persons_ord', '1000000 1'),
    ('tag_bit_deltas', 'tag_bit_deltas_tag', '10000 1000 100 1');

-- +goose Down
DELETE FROM sqlite_stat1 WHERE tbl IN ('tag_bits', 'tag_bit_deltas') OR (tbl = 'persons' AND idx = 'persons_ord');
DROP TRIGGER person_tags_bits_delete;
DROP TRIGGER person_tags_bits_insert;
DROP TABLE tag_bits_import;
DROP TABLE tag_bit_deltas;
DROP TABLE tag_bits;
DROP TRIGGER persons_ord;
DROP INDEX persons_ord;
ALTER TABLE persons DROP COLUMN ord;
