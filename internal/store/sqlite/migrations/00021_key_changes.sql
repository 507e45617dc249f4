-- +goose Up
-- The key cache (sqlstore.keyCache) reads this counter on every request and
-- forgets every cached key when it moved. Every change to a key bumps it in
-- the same transaction, whichever process makes it (`pds keys revoke` runs
-- as a process of its own), except a touch of last_used_at, which decides
-- nothing. A column added to api_keys joins the UPDATE OF list.
-- (Numbered apart from the sequence other branches extend.)
CREATE TABLE key_changes (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO key_changes (id, n) VALUES (1, 0);

-- +goose StatementBegin
CREATE TRIGGER api_keys_changed
AFTER UPDATE OF id, account_id, name, prefix, last_four, hash, scopes, rate_limit, expires_at, revoked_at, created_at
ON api_keys
BEGIN
    UPDATE key_changes SET n = n + 1 WHERE id = 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys
BEGIN
    UPDATE key_changes SET n = n + 1 WHERE id = 1;
END;
-- +goose StatementEnd
