-- +goose Up
-- Timelines: exact per-account counts of persons by last-seen time and of
-- breadcrumbs by activity time, so that a list's total and a deep page's
-- first row are found by summing a few buckets instead of walking every row
-- (see sqlstore/timeline.go). Triggers append one delta per change: no write
-- path can forget one, and concurrent writers never wait on a shared count
-- row. The store folds deltas into timeline_counts in the background, and
-- readers add the deltas not yet folded.
CREATE TABLE timeline_deltas (
    id         BIGSERIAL PRIMARY KEY,
    account_id TEXT NOT NULL,
    series     TEXT NOT NULL,
    key        TEXT NOT NULL,
    at_ms      BIGINT NOT NULL,
    n          BIGINT NOT NULL
);
CREATE INDEX timeline_deltas_at ON timeline_deltas (account_id, series, key, at_ms);

-- Level l counts the rows of one bucket of 64^l milliseconds.
CREATE TABLE timeline_counts (
    account_id TEXT NOT NULL,
    series     TEXT NOT NULL,
    key        TEXT NOT NULL,
    level      INTEGER NOT NULL,
    bucket     BIGINT NOT NULL,
    n          BIGINT NOT NULL,
    PRIMARY KEY (account_id, series, key, level, bucket)
);

-- +goose StatementBegin
CREATE FUNCTION persons_timeline() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
        VALUES (NEW.account_id, 'persons', '', NEW.last_seen_at, 1);
    ELSIF NEW.last_seen_at <> OLD.last_seen_at THEN
        INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
        VALUES (OLD.account_id, 'persons', '', OLD.last_seen_at, -1),
               (NEW.account_id, 'persons', '', NEW.last_seen_at, 1);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER persons_timeline AFTER INSERT OR UPDATE OF last_seen_at ON persons
    FOR EACH ROW EXECUTE FUNCTION persons_timeline();

-- A replayed Idempotency-Key overwrites its record, flavor and time included.
-- +goose StatementBegin
CREATE FUNCTION breadcrumbs_timeline() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.flavor = OLD.flavor AND NEW.activity_at = OLD.activity_at THEN
            RETURN NULL;
        END IF;
        INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
        VALUES (OLD.account_id, 'breadcrumbs', '', OLD.activity_at, -1),
               (OLD.account_id, 'breadcrumbs', OLD.flavor, OLD.activity_at, -1);
    END IF;
    INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    VALUES (NEW.account_id, 'breadcrumbs', '', NEW.activity_at, 1),
           (NEW.account_id, 'breadcrumbs', NEW.flavor, NEW.activity_at, 1);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER breadcrumbs_timeline AFTER INSERT OR UPDATE OF flavor, activity_at ON breadcrumbs
    FOR EACH ROW EXECUTE FUNCTION breadcrumbs_timeline();

-- What is already stored starts as deltas; the store folds them.
INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    SELECT account_id, 'persons', '', last_seen_at, 1 FROM persons;
INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    SELECT account_id, 'breadcrumbs', '', activity_at, 1 FROM breadcrumbs;
INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    SELECT account_id, 'breadcrumbs', flavor, activity_at, 1 FROM breadcrumbs;

-- +goose Down
DROP TRIGGER breadcrumbs_timeline ON breadcrumbs;
DROP FUNCTION breadcrumbs_timeline();
DROP TRIGGER persons_timeline ON persons;
DROP FUNCTION persons_timeline();
DROP TABLE timeline_counts;
DROP TABLE timeline_deltas;
