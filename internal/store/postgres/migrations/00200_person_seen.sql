-- +goose Up
-- Last-seen order moves out of persons into a narrow table of its own.
-- PostgreSQL updates a row in place (HOT) only when no indexed column
-- changes and the row's page has room; with last_seen_at in
-- persons_last_seen, every append and every matched upsert wrote a new
-- entry into all seven indexes of persons (at 1M persons, half of the
-- appender's statement and most of its full-page images). person_seen is
-- kept by the triggers below in the statement that writes persons, so that
-- the window lists read it in the same snapshot; persons keeps its
-- last_seen_at for every other read. Pages of persons written from now on
-- keep 15% free so that the update finds room on its page; existing pages
-- are not rewritten (that would lock the table), and fill up as before.
CREATE TABLE person_seen (
    account_id TEXT NOT NULL,
    id TEXT PRIMARY KEY,
    last_seen_at BIGINT NOT NULL
);
INSERT INTO person_seen (account_id, id, last_seen_at) SELECT account_id, id, last_seen_at FROM persons;
CREATE INDEX person_seen_order ON person_seen (account_id, last_seen_at, id);
DROP INDEX persons_last_seen;
ALTER TABLE persons SET (fillfactor = 85);

-- +goose StatementBegin
CREATE FUNCTION person_seen_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO person_seen (account_id, id, last_seen_at) SELECT account_id, id, last_seen_at FROM new_rows;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION person_seen_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM person_seen s USING old_rows o WHERE s.id = o.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- As 00180's, and the person's entry of person_seen moves with them.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION persons_seen_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH moved AS (
        SELECT nw.id, nw.account_id, o.last_seen_at AS old_at, nw.last_seen_at AS new_at
        FROM old_rows o JOIN new_rows nw ON nw.id = o.id WHERE nw.last_seen_at <> o.last_seen_at),
    links AS (UPDATE person_tags pt SET last_seen_at = m.new_at FROM moved m WHERE pt.person_id = m.id),
    seen AS (UPDATE person_seen s SET last_seen_at = m.new_at FROM moved m WHERE s.id = m.id)
    INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    SELECT account_id, 'persons', '', at_ms, SUM(n) FROM (
        SELECT account_id, old_at AS at_ms, -1 AS n FROM moved
        UNION ALL SELECT account_id, new_at, 1 FROM moved) d
    GROUP BY account_id, at_ms HAVING SUM(n) <> 0;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER person_seen_insert AFTER INSERT ON persons REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION person_seen_inserted();
CREATE TRIGGER person_seen_delete AFTER DELETE ON persons REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION person_seen_deleted();

-- +goose Down
DROP TRIGGER person_seen_delete ON persons;
DROP TRIGGER person_seen_insert ON persons;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION persons_seen_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH moved AS (
        SELECT nw.id, nw.account_id, o.last_seen_at AS old_at, nw.last_seen_at AS new_at
        FROM old_rows o JOIN new_rows nw ON nw.id = o.id WHERE nw.last_seen_at <> o.last_seen_at),
    links AS (UPDATE person_tags pt SET last_seen_at = m.new_at FROM moved m WHERE pt.person_id = m.id)
    INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    SELECT account_id, 'persons', '', at_ms, SUM(n) FROM (
        SELECT account_id, old_at AS at_ms, -1 AS n FROM moved
        UNION ALL SELECT account_id, new_at, 1 FROM moved) d
    GROUP BY account_id, at_ms HAVING SUM(n) <> 0;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP FUNCTION person_seen_deleted();
DROP FUNCTION person_seen_inserted();
ALTER TABLE persons RESET (fillfactor);
CREATE INDEX persons_last_seen ON persons (account_id, last_seen_at, id);
DROP TABLE person_seen;
