-- +goose Up
-- Erasure (issue 48). erasures records each one: when, by which key, the
-- person's id, whether suppressed; never an identifier. suppressions keeps
-- the identifiers an erasure suppressed as HMAC-SHA256 under the account's
-- secret (suppression_secrets, made at the first suppression, never shown).
-- A suppression added or lifted bumps key_changes and notifies
-- pds_api_keys as a key change does (a payload naming no key: every
-- instance forgets every cached key of the schema): a key read says whether
-- its account holds any suppression (sqlstore.readKey), so that a write of
-- an account without suppressions pays no statement to learn so.
CREATE TABLE erasures (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    person_id  TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    suppressed BOOLEAN NOT NULL,
    erased_at  BIGINT NOT NULL
);
CREATE INDEX erasures_list ON erasures (account_id, erased_at, id);
-- A redelivery asks whether a delivery's person was erased.
CREATE INDEX erasures_person ON erasures (account_id, person_id);

CREATE TABLE suppression_secrets (
    account_id TEXT PRIMARY KEY REFERENCES accounts(id),
    secret     BYTEA NOT NULL
);

CREATE TABLE suppressions (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    kind       TEXT NOT NULL,
    hash       TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX suppressions_hash ON suppressions (account_id, hash);
CREATE INDEX suppressions_list ON suppressions (account_id, created_at, id);

-- +goose StatementBegin
CREATE FUNCTION suppressions_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- "*" is no key's hash: keyWatch forgets every key of this schema.
    PERFORM pg_notify('pds_api_keys', TG_TABLE_SCHEMA || ' *');
    EXECUTE format('UPDATE %I.key_changes SET n = n + 1 WHERE id = 1', TG_TABLE_SCHEMA);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER suppressions_changed AFTER INSERT OR DELETE ON suppressions
    FOR EACH STATEMENT EXECUTE FUNCTION suppressions_changed();

-- The same table as SQLite's, where an erasure deletes in chunks; on
-- PostgreSQL an erasure is one transaction and this stays empty.
CREATE TABLE erasure_purges (
    account_id TEXT NOT NULL,
    person_id  TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    suppress   BOOLEAN NOT NULL,
    started_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, person_id)
);

-- +goose Down
DROP TABLE erasure_purges;
DROP TRIGGER suppressions_changed ON suppressions;
DROP FUNCTION suppressions_changed();
DROP TABLE suppressions;
DROP TABLE suppression_secrets;
DROP TABLE erasures;
