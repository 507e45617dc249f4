-- +goose Up
-- The triggers that keep the timelines and the tag links' last-seen times
-- ran once per row, each a PL/pgSQL call running statements of its own, and
-- wrote four delta rows an append for the fold to move: in a statement
-- appending 32 breadcrumbs (the appender's batches) 2-3 ms of a 6-10 ms
-- statement. Statement triggers over the transition tables write the same
-- counts with one statement per trigger, whatever the rows: deltas of one
-- bucket summed (a batch's breadcrumbs share a millisecond), none where they
-- cancel out. A transition table excludes a
-- column list (UPDATE OF), so the update triggers fire on every UPDATE and
-- compare the old and new rows themselves.

-- +goose StatementBegin
CREATE FUNCTION persons_timeline_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    SELECT account_id, 'persons', '', last_seen_at, COUNT(*) FROM new_rows GROUP BY account_id, last_seen_at;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION persons_seen_moved() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- +goose StatementBegin
CREATE FUNCTION breadcrumbs_timeline_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    SELECT n.account_id, 'breadcrumbs', k.key, n.activity_at, COUNT(*)
    FROM new_rows n CROSS JOIN LATERAL (VALUES (''), (n.flavor)) AS k (key)
    GROUP BY n.account_id, k.key, n.activity_at;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- A replayed Idempotency-Key overwrites its record, flavor and time included.
-- +goose StatementBegin
CREATE FUNCTION breadcrumbs_timeline_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH moved AS (
        SELECT o.account_id, o.flavor AS old_flavor, o.activity_at AS old_at, nw.flavor, nw.activity_at AS new_at
        FROM old_rows o JOIN new_rows nw ON nw.id = o.id
        WHERE nw.flavor <> o.flavor OR nw.activity_at <> o.activity_at)
    INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    SELECT account_id, 'breadcrumbs', key, at_ms, SUM(n) FROM (
        SELECT m.account_id, k.key, m.old_at AS at_ms, -1 AS n FROM moved m CROSS JOIN LATERAL (VALUES (''), (m.old_flavor)) AS k (key)
        UNION ALL
        SELECT m.account_id, k.key, m.new_at, 1 FROM moved m CROSS JOIN LATERAL (VALUES (''), (m.flavor)) AS k (key)) d
    GROUP BY account_id, key, at_ms HAVING SUM(n) <> 0;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP TRIGGER persons_timeline_insert ON persons;
DROP TRIGGER persons_timeline_update ON persons;
DROP TRIGGER person_tags_seen ON persons;
DROP TRIGGER breadcrumbs_timeline ON breadcrumbs;
CREATE TRIGGER persons_timeline_insert AFTER INSERT ON persons REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT WHEN (current_setting('pds.import_writes', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION persons_timeline_inserted();
CREATE TRIGGER persons_seen_moved AFTER UPDATE ON persons REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION persons_seen_moved();
CREATE TRIGGER breadcrumbs_timeline_insert AFTER INSERT ON breadcrumbs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION breadcrumbs_timeline_inserted();
CREATE TRIGGER breadcrumbs_timeline_update AFTER UPDATE ON breadcrumbs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION breadcrumbs_timeline_updated();

-- +goose Down
DROP TRIGGER breadcrumbs_timeline_update ON breadcrumbs;
DROP TRIGGER breadcrumbs_timeline_insert ON breadcrumbs;
DROP TRIGGER persons_seen_moved ON persons;
DROP TRIGGER persons_timeline_insert ON persons;
CREATE TRIGGER breadcrumbs_timeline AFTER INSERT OR UPDATE OF flavor, activity_at ON breadcrumbs
    FOR EACH ROW EXECUTE FUNCTION breadcrumbs_timeline();
CREATE TRIGGER person_tags_seen AFTER UPDATE OF last_seen_at ON persons
    FOR EACH ROW EXECUTE FUNCTION person_tags_seen();
CREATE TRIGGER persons_timeline_update AFTER UPDATE OF last_seen_at ON persons
    FOR EACH ROW EXECUTE FUNCTION persons_timeline();
CREATE TRIGGER persons_timeline_insert AFTER INSERT ON persons
    FOR EACH ROW WHEN (current_setting('pds.import_writes', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION persons_timeline();
DROP FUNCTION breadcrumbs_timeline_updated();
DROP FUNCTION breadcrumbs_timeline_inserted();
DROP FUNCTION persons_seen_moved();
DROP FUNCTION persons_timeline_inserted();
