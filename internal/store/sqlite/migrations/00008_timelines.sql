-- +goose Up
-- Timelines: exact per-account counts of persons by last-seen time and of
-- breadcrumbs by activity time, so that a list's total and a deep page's
-- first row are found by summing a few buckets instead of walking every row
-- (see sqlstore/timeline.go). Triggers append one delta per change, so no
-- write path can forget one; the store folds deltas into timeline_counts in
-- the background, and readers add the deltas not yet folded.
CREATE TABLE timeline_deltas (
    id         INTEGER PRIMARY KEY,
    account_id TEXT NOT NULL,
    series     TEXT NOT NULL,
    key        TEXT NOT NULL,
    at_ms      INTEGER NOT NULL,
    n          INTEGER NOT NULL
);
CREATE INDEX timeline_deltas_at ON timeline_deltas (account_id, series, key, at_ms);

-- Level l counts the rows of one bucket of 64^l milliseconds.
CREATE TABLE timeline_counts (
    account_id TEXT NOT NULL,
    series     TEXT NOT NULL,
    key        TEXT NOT NULL,
    level      INTEGER NOT NULL,
    bucket     INTEGER NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (account_id, series, key, level, bucket)
) WITHOUT ROWID;

-- +goose StatementBegin
CREATE TRIGGER persons_timeline_insert AFTER INSERT ON persons BEGIN
    INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    VALUES (NEW.account_id, 'persons', '', NEW.last_seen_at, 1);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER persons_timeline_update AFTER UPDATE OF last_seen_at ON persons
WHEN NEW.last_seen_at <> OLD.last_seen_at BEGIN
    INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    VALUES (OLD.account_id, 'persons', '', OLD.last_seen_at, -1),
           (NEW.account_id, 'persons', '', NEW.last_seen_at, 1);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER breadcrumbs_timeline_insert AFTER INSERT ON breadcrumbs BEGIN
    INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    VALUES (NEW.account_id, 'breadcrumbs', '', NEW.activity_at, 1),
           (NEW.account_id, 'breadcrumbs', NEW.flavor, NEW.activity_at, 1);
END;
-- +goose StatementEnd

-- A replayed Idempotency-Key overwrites its record, flavor and time included.
-- +goose StatementBegin
CREATE TRIGGER breadcrumbs_timeline_update AFTER UPDATE OF flavor, activity_at ON breadcrumbs
WHEN NEW.flavor <> OLD.flavor OR NEW.activity_at <> OLD.activity_at BEGIN
    INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    VALUES (OLD.account_id, 'breadcrumbs', '', OLD.activity_at, -1),
           (OLD.account_id, 'breadcrumbs', OLD.flavor, OLD.activity_at, -1),
           (NEW.account_id, 'breadcrumbs', '', NEW.activity_at, 1),
           (NEW.account_id, 'breadcrumbs', NEW.flavor, NEW.activity_at, 1);
END;
-- +goose StatementEnd

-- What is already stored starts as deltas; the store folds them.
INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    SELECT account_id, 'persons', '', last_seen_at, 1 FROM persons;
INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    SELECT account_id, 'breadcrumbs', '', activity_at, 1 FROM breadcrumbs;
INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
    SELECT account_id, 'breadcrumbs', flavor, activity_at, 1 FROM breadcrumbs;

-- +goose Down
DROP TRIGGER breadcrumbs_timeline_update;
DROP TRIGGER breadcrumbs_timeline_insert;
DROP TRIGGER persons_timeline_update;
DROP TRIGGER persons_timeline_insert;
DROP TABLE timeline_counts;
DROP TABLE timeline_deltas;
