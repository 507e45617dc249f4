-- +goose Up
-- The key cache of an instance that has no session of its own to LISTEN
-- on (behind a transaction-mode pooler, with no --database-direct) reads
-- this counter before each request (postgres.keyPoll) and forgets every
-- cached key when it moved. Every change to a key bumps it in the same
-- transaction as the notification of migration 00021, which the LISTEN
-- connection of --database-direct still hears.
CREATE TABLE key_changes (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  BIGINT NOT NULL
);
INSERT INTO key_changes (id, n) VALUES (1, 0);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION api_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('pds_api_keys', TG_TABLE_SCHEMA || ' ' || encode(OLD.hash, 'hex'));
    -- The table beside api_keys, whatever the changer's search_path.
    EXECUTE format('UPDATE %I.key_changes SET n = n + 1 WHERE id = 1', TG_TABLE_SCHEMA);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION api_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('pds_api_keys', TG_TABLE_SCHEMA || ' ' || encode(OLD.hash, 'hex'));
    RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP TABLE key_changes;
