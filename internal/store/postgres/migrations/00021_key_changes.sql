-- +goose Up
-- Every instance caches keys (sqlstore.keyCache) and listens on channel
-- pds_api_keys (postgres.keyWatch). Every change to a key notifies it in the
-- same transaction, whoever makes it (`pds keys revoke`, another instance,
-- an operator's UPDATE), with the table's schema and the key's hash, except
-- a touch of last_used_at, which decides nothing. A column added to api_keys
-- joins the UPDATE OF list.
-- (Numbered apart from the sequence other branches extend.)

-- +goose StatementBegin
CREATE FUNCTION api_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('pds_api_keys', TG_TABLE_SCHEMA || ' ' || encode(OLD.hash, 'hex'));
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER api_keys_changed
AFTER UPDATE OF id, account_id, name, prefix, last_four, hash, scopes, rate_limit, expires_at, revoked_at, created_at
ON api_keys FOR EACH ROW EXECUTE FUNCTION api_key_changed();

CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION api_key_changed();
