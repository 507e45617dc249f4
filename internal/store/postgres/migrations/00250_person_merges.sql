-- +goose Up
-- Merging duplicate persons (POST /persons/{person_id}/merge).
--
-- person_aliases: an identifier a merged person held that its survivor did
-- not take as its own (the survivor held one of that kind already). Its
-- value is in the normal form persons hold identifiers in (email_norm,
-- external_id, f_id), and it is unique per account and kind, as those are,
-- so that it resolves to one survivor: upserts, breadcrumbs and lookups
-- naming it find person_id, the current survivor (a chain moves it on).
-- from_id is the merged person it came from; merged_at orders the list.
CREATE TABLE person_aliases (
    account_id TEXT NOT NULL,
    kind       TEXT NOT NULL,
    value      TEXT NOT NULL,
    person_id  TEXT NOT NULL,
    from_id    TEXT NOT NULL,
    merged_at  BIGINT NOT NULL,
    PRIMARY KEY (account_id, kind, value)
);
CREATE INDEX person_aliases_person ON person_aliases (account_id, person_id, merged_at);

-- person_merges: each id merged away and the survivor it now resolves to
-- (the end of its chain), for the 404 urn:pds:problem:merged answers and
-- breadcrumbs naming a merged id. Kept as long as the feed keeps the
-- merged person's tombstone; erased with the survivor.
CREATE TABLE person_merges (
    account_id  TEXT NOT NULL,
    person_id   TEXT NOT NULL,
    merged_into TEXT NOT NULL,
    merged_at   BIGINT NOT NULL,
    PRIMARY KEY (account_id, person_id)
);
CREATE INDEX person_merges_into ON person_merges (account_id, merged_into);
CREATE INDEX person_merges_at ON person_merges (merged_at);

-- +goose Down
DROP TABLE person_merges;
DROP TABLE person_aliases;
