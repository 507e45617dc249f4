-- +goose Up
-- The change feed (GET /persons/changes): one entry per person, at its
-- latest change, numbered in the order the changes committed. SQLite has
-- one writer, so a number taken inside a write transaction is its commit
-- order: change_seq counts them. The triggers below keep the feed in the
-- statement that writes the person, its tag links or its custom values, so
-- that no write path can forget it; a write that changes nothing of the
-- person's state (an append that only moves last_seen_at, an upsert that
-- changes nothing) leaves its entry where it is. An erased person's entry
-- becomes a tombstone (deleted = 1), kept for --change-retention.
CREATE TABLE change_seq (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO change_seq (id, n) VALUES (1, 0);

CREATE TABLE person_changes (
    account_id  TEXT NOT NULL,
    person_id   TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    changed_at  INTEGER NOT NULL,
    deleted     INTEGER NOT NULL DEFAULT 0,
    merged_into TEXT,
    PRIMARY KEY (account_id, person_id)
);
CREATE UNIQUE INDEX person_changes_order ON person_changes (account_id, seq);
CREATE INDEX person_changes_tombstones ON person_changes (changed_at) WHERE deleted = 1;

-- Every person there is enters the feed once, oldest first.
INSERT INTO person_changes (account_id, person_id, seq, changed_at)
SELECT account_id, id, ROW_NUMBER() OVER (ORDER BY last_seen_at, id), last_seen_at FROM persons;
UPDATE change_seq SET n = (SELECT COUNT(*) FROM persons);

-- +goose StatementBegin
CREATE TRIGGER person_changes_insert AFTER INSERT ON persons BEGIN
    UPDATE change_seq SET n = n + 1;
    INSERT INTO person_changes (account_id, person_id, seq, changed_at, deleted, merged_into)
    VALUES (NEW.account_id, NEW.id, (SELECT n FROM change_seq), NEW.last_seen_at, 0, NULL)
    ON CONFLICT (account_id, person_id) DO UPDATE SET seq = excluded.seq, changed_at = excluded.changed_at,
        deleted = 0, merged_into = NULL;
END;
-- +goose StatementEnd

-- What the Person representation and the extended view show, but for
-- date_last_seen (activity) and upsert_result (how the last write went).
-- +goose StatementBegin
CREATE TRIGGER person_changes_update AFTER UPDATE ON persons
WHEN OLD.email IS NOT NEW.email OR OLD.external_id IS NOT NEW.external_id OR OLD.f_id IS NOT NEW.f_id
    OR OLD.first_name IS NOT NEW.first_name OR OLD.last_name IS NOT NEW.last_name OR OLD.phone IS NOT NEW.phone
    OR OLD.language IS NOT NEW.language OR OLD.pseudonym IS NOT NEW.pseudonym OR OLD.occupation IS NOT NEW.occupation
    OR OLD.age IS NOT NEW.age OR OLD.ethnicity IS NOT NEW.ethnicity OR OLD.income IS NOT NEW.income OR OLD.edu IS NOT NEW.edu
    OR OLD.companies IS NOT NEW.companies OR OLD.address IS NOT NEW.address
    OR OLD.email_opt_out IS NOT NEW.email_opt_out OR OLD.is_archived IS NOT NEW.is_archived
BEGIN
    UPDATE change_seq SET n = n + 1;
    UPDATE person_changes SET seq = (SELECT n FROM change_seq), changed_at = NEW.last_seen_at
    WHERE account_id = NEW.account_id AND person_id = NEW.id;
END;
-- +goose StatementEnd

-- The write that deletes a person (an erasure) sets the tombstone's time
-- to its own clock's; until then it holds the person's last activity.
-- +goose StatementBegin
CREATE TRIGGER person_changes_delete AFTER DELETE ON persons BEGIN
    UPDATE change_seq SET n = n + 1;
    UPDATE person_changes SET seq = (SELECT n FROM change_seq), changed_at = OLD.last_seen_at, deleted = 1
    WHERE account_id = OLD.account_id AND person_id = OLD.id;
END;
-- +goose StatementEnd

-- A link or a value of a person still there moves it; those an erasure
-- deletes (before the person) move it too, and the person's delete then
-- makes the entry a tombstone.
-- +goose StatementBegin
CREATE TRIGGER person_changes_tag_insert AFTER INSERT ON person_tags BEGIN
    UPDATE change_seq SET n = n + 1;
    UPDATE person_changes SET seq = (SELECT n FROM change_seq), changed_at = NEW.created_at
    WHERE account_id = NEW.account_id AND person_id = NEW.person_id AND deleted = 0;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER person_changes_tag_delete AFTER DELETE ON person_tags BEGIN
    UPDATE change_seq SET n = n + 1;
    UPDATE person_changes SET seq = (SELECT n FROM change_seq)
    WHERE account_id = OLD.account_id AND person_id = OLD.person_id AND deleted = 0;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER person_changes_value_insert AFTER INSERT ON person_field_values BEGIN
    UPDATE change_seq SET n = n + 1;
    UPDATE person_changes SET seq = (SELECT n FROM change_seq)
    WHERE account_id = NEW.account_id AND person_id = NEW.person_id AND deleted = 0;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER person_changes_value_update AFTER UPDATE ON person_field_values WHEN OLD.value IS NOT NEW.value BEGIN
    UPDATE change_seq SET n = n + 1;
    UPDATE person_changes SET seq = (SELECT n FROM change_seq)
    WHERE account_id = NEW.account_id AND person_id = NEW.person_id AND deleted = 0;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER person_changes_value_delete AFTER DELETE ON person_field_values BEGIN
    UPDATE change_seq SET n = n + 1;
    UPDATE person_changes SET seq = (SELECT n FROM change_seq)
    WHERE account_id = OLD.account_id AND person_id = OLD.person_id AND deleted = 0;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER person_changes_value_delete;
DROP TRIGGER person_changes_value_update;
DROP TRIGGER person_changes_value_insert;
DROP TRIGGER person_changes_tag_delete;
DROP TRIGGER person_changes_tag_insert;
DROP TRIGGER person_changes_delete;
DROP TRIGGER person_changes_update;
DROP TRIGGER person_changes_insert;
DROP TABLE person_changes;
DROP TABLE change_seq;
