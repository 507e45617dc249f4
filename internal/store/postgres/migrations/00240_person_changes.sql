-- +goose Up
-- The change feed (GET /persons/changes): one entry per person, at its
-- latest change. Writers run in parallel here, so no number taken inside a
-- transaction is its commit order: a transaction that took 99 may commit
-- after one that took 100 and was read. Each entry is therefore placed by
-- the id of the transaction that made it (xid), then a sequence for the
-- order within it, and a cursor holds two snapshots: a reader passes the
-- entries whose transactions are visible in the later (committed when it
-- was taken) and were not in the earlier, so a transaction still running
-- at a cut is read in the batch after it, whatever its id (see
-- Dialect.Changes in internal/store/postgres). The statement triggers below keep the feed in the statement that
-- writes the person, its tag links or its custom values, each person once
-- per statement, in the order the statement wrote them; a write that
-- changes nothing of the person's state (an append that only moves
-- last_seen_at, an upsert that changes nothing) leaves its entry where it
-- is. An erased person's entry becomes a tombstone (deleted), kept for
-- --change-retention.
CREATE SEQUENCE person_change_seq;

CREATE TABLE person_changes (
    account_id  TEXT NOT NULL,
    person_id   TEXT NOT NULL,
    xid         xid8 NOT NULL,
    seq         BIGINT NOT NULL,
    changed_at  BIGINT NOT NULL,
    deleted     BOOLEAN NOT NULL DEFAULT false,
    merged_into TEXT,
    PRIMARY KEY (account_id, person_id)
);
CREATE INDEX person_changes_order ON person_changes (account_id, xid, seq);
CREATE INDEX person_changes_tombstones ON person_changes (changed_at) WHERE deleted;

-- Within a statement, its rows are placed in the order it wrote them:
-- seq is the statement's number (one nextval a statement) times 2^24, plus
-- the row's place in the statement.

-- Every person there is enters the feed once, oldest first, as written by
-- this transaction.
INSERT INTO person_changes (account_id, person_id, xid, seq, changed_at)
SELECT account_id, id, pg_current_xact_id(), ROW_NUMBER() OVER (ORDER BY last_seen_at, id), last_seen_at FROM persons;

-- +goose StatementBegin
CREATE FUNCTION person_changes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    base bigint := nextval('person_change_seq') * 16777216;
BEGIN
    INSERT INTO person_changes (account_id, person_id, xid, seq, changed_at, deleted, merged_into)
    SELECT account_id, id, pg_current_xact_id(), base + ROW_NUMBER() OVER (), last_seen_at, false, NULL FROM new_rows
    ON CONFLICT (account_id, person_id) DO UPDATE SET xid = excluded.xid, seq = excluded.seq,
        changed_at = excluded.changed_at, deleted = false, merged_into = NULL;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- What the Person representation and the extended view show, but for
-- date_last_seen (activity) and upsert_result (how the last write went).
-- +goose StatementBegin
CREATE FUNCTION person_changes_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    base bigint;
BEGIN
    -- Most updates (appends, an upsert that changes nothing) change
    -- nothing here: they take no number.
    IF NOT EXISTS (SELECT 1 FROM new_rows nw JOIN old_rows o ON o.id = nw.id WHERE
        (o.email, o.external_id, o.f_id, o.first_name, o.last_name, o.phone, o.language, o.pseudonym,
         o.occupation, o.age, o.ethnicity, o.income, o.edu, o.companies, o.address, o.email_opt_out, o.is_archived)
        IS DISTINCT FROM
        (nw.email, nw.external_id, nw.f_id, nw.first_name, nw.last_name, nw.phone, nw.language, nw.pseudonym,
         nw.occupation, nw.age, nw.ethnicity, nw.income, nw.edu, nw.companies, nw.address, nw.email_opt_out, nw.is_archived)) THEN
        RETURN NULL;
    END IF;
    base := nextval('person_change_seq') * 16777216;
    UPDATE person_changes c SET xid = pg_current_xact_id(), seq = base + m.rn, changed_at = m.last_seen_at
    FROM (SELECT nw.account_id, nw.id, nw.last_seen_at, ROW_NUMBER() OVER () AS rn
        FROM new_rows nw JOIN old_rows o ON o.id = nw.id
        WHERE (o.email, o.external_id, o.f_id, o.first_name, o.last_name, o.phone, o.language, o.pseudonym,
               o.occupation, o.age, o.ethnicity, o.income, o.edu, o.companies, o.address, o.email_opt_out, o.is_archived)
          IS DISTINCT FROM
              (nw.email, nw.external_id, nw.f_id, nw.first_name, nw.last_name, nw.phone, nw.language, nw.pseudonym,
               nw.occupation, nw.age, nw.ethnicity, nw.income, nw.edu, nw.companies, nw.address, nw.email_opt_out, nw.is_archived)) m
    WHERE c.account_id = m.account_id AND c.person_id = m.id AND c.xid <> pg_current_xact_id();
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- The write that deletes a person (an erasure) sets the tombstone's time
-- to its own clock's; until then it holds the person's last activity.
-- +goose StatementBegin
CREATE FUNCTION person_changes_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    base bigint := nextval('person_change_seq') * 16777216;
BEGIN
    UPDATE person_changes c SET xid = pg_current_xact_id(), seq = base + m.rn, changed_at = m.last_seen_at, deleted = true
    FROM (SELECT account_id, id, last_seen_at, ROW_NUMBER() OVER () AS rn FROM old_rows) m
    WHERE c.account_id = m.account_id AND c.person_id = m.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- A link or a value of a person moves it, each person once per statement,
-- at its first row; a value updated to what it was is no change.
-- An entry this transaction wrote already stays where it is, here and in
-- person_changes_updated: the entries of one transaction commit together,
-- and a batch or an import places its own in the order of its items at
-- its end (Dialect.Changes.Reorder). Moving them at every statement wrote
-- each imported person's entry four times, and doubled an import's time.
-- +goose StatementBegin
CREATE FUNCTION person_changes_linked() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    base bigint := nextval('person_change_seq') * 16777216;
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE person_changes c SET xid = pg_current_xact_id(), seq = base + m.rn
        FROM (SELECT account_id, person_id, ROW_NUMBER() OVER (ORDER BY MIN(rn)) AS rn FROM (
            SELECT account_id, person_id, ROW_NUMBER() OVER () AS rn FROM new_rows) r
            GROUP BY account_id, person_id) m
        WHERE c.account_id = m.account_id AND c.person_id = m.person_id AND NOT c.deleted
            AND c.xid <> pg_current_xact_id();
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE person_changes c SET xid = pg_current_xact_id(), seq = base + m.rn
        FROM (SELECT account_id, person_id, ROW_NUMBER() OVER (ORDER BY MIN(rn)) AS rn FROM (
            SELECT account_id, person_id, ROW_NUMBER() OVER () AS rn FROM old_rows) r
            GROUP BY account_id, person_id) m
        WHERE c.account_id = m.account_id AND c.person_id = m.person_id AND NOT c.deleted
            AND c.xid <> pg_current_xact_id();
    ELSE
        UPDATE person_changes c SET xid = pg_current_xact_id(), seq = base + m.rn
        FROM (SELECT account_id, person_id, ROW_NUMBER() OVER (ORDER BY MIN(rn)) AS rn FROM (
            SELECT nw.account_id, nw.person_id, ROW_NUMBER() OVER () AS rn
            FROM new_rows nw JOIN old_rows o ON o.person_id = nw.person_id AND o.field_id = nw.field_id
            WHERE o.value IS DISTINCT FROM nw.value) r
            GROUP BY account_id, person_id) m
        WHERE c.account_id = m.account_id AND c.person_id = m.person_id AND NOT c.deleted
            AND c.xid <> pg_current_xact_id();
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER person_changes_insert AFTER INSERT ON persons REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION person_changes_inserted();
CREATE TRIGGER person_changes_update AFTER UPDATE ON persons REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION person_changes_updated();
CREATE TRIGGER person_changes_delete AFTER DELETE ON persons REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION person_changes_deleted();
CREATE TRIGGER person_changes_tag_insert AFTER INSERT ON person_tags REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION person_changes_linked();
CREATE TRIGGER person_changes_tag_delete AFTER DELETE ON person_tags REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION person_changes_linked();
CREATE TRIGGER person_changes_value_insert AFTER INSERT ON person_field_values REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION person_changes_linked();
CREATE TRIGGER person_changes_value_update AFTER UPDATE ON person_field_values REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION person_changes_linked();
CREATE TRIGGER person_changes_value_delete AFTER DELETE ON person_field_values REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION person_changes_linked();

-- +goose Down
DROP TRIGGER person_changes_value_delete ON person_field_values;
DROP TRIGGER person_changes_value_update ON person_field_values;
DROP TRIGGER person_changes_value_insert ON person_field_values;
DROP TRIGGER person_changes_tag_delete ON person_tags;
DROP TRIGGER person_changes_tag_insert ON person_tags;
DROP TRIGGER person_changes_delete ON persons;
DROP TRIGGER person_changes_update ON persons;
DROP TRIGGER person_changes_insert ON persons;
DROP FUNCTION person_changes_linked();
DROP FUNCTION person_changes_deleted();
DROP FUNCTION person_changes_updated();
DROP FUNCTION person_changes_inserted();
DROP TABLE person_changes;
DROP SEQUENCE person_change_seq;
