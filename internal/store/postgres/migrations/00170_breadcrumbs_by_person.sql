-- +goose Up
-- An erasure deletes a person row, and PostgreSQL checks the foreign key
-- of breadcrumbs by person_id alone: with the person's index led by
-- account_id, that check read every breadcrumb of the database (a
-- sequential scan, 60 ms at half a million breadcrumbs). Person ids are
-- unique across accounts, so the index now leads with person_id; every read
-- of a person's breadcrumbs still names the account as well. (SQLite skips
-- over the few account_id values of its index, sqlite_stat1 telling it so.)
-- Rebuilding the index takes a while on a large table: a deploy's own
-- step (pds migrate), as any migration.
DROP INDEX breadcrumbs_person;
CREATE INDEX breadcrumbs_person ON breadcrumbs (person_id, activity_at, id);

-- +goose Down
DROP INDEX breadcrumbs_person;
CREATE INDEX breadcrumbs_person ON breadcrumbs (account_id, person_id, activity_at, id);
