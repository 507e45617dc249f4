-- +goose Up
-- The console's sessions and one-time sign-in links, in the database so
-- that every instance knows them. Each is found by the SHA-256 of the
-- token the browser (or the link) holds; each acts as one API key, named
-- by its hash, never holding it.
CREATE TABLE console_sessions (
    id_hash    BYTEA PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    key_hash   BYTEA NOT NULL,
    csrf       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);

CREATE TABLE console_links (
    token_hash BYTEA PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    key_hash   BYTEA NOT NULL,
    expires_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE console_links;
DROP TABLE console_sessions;
