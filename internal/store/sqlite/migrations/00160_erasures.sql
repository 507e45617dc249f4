-- +goose Up
-- Erasure (issue 48). erasures records each one: when, by which key, the
-- person's id, whether suppressed; never an identifier. suppressions keeps
-- the identifiers an erasure suppressed as HMAC-SHA256 under the account's
-- secret (suppression_secrets, made at the first suppression, never shown).
-- A suppression added or lifted bumps key_changes: a key read says whether
-- its account holds any suppression (sqlstore.readKey), and the key cache
-- must forget it then, so that a write of an account without suppressions
-- pays no statement to learn so.
CREATE TABLE erasures (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    person_id  TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    suppressed INTEGER NOT NULL,
    erased_at  INTEGER NOT NULL
);
CREATE INDEX erasures_list ON erasures (account_id, erased_at, id);
-- A redelivery asks whether a delivery's person was erased.
CREATE INDEX erasures_person ON erasures (account_id, person_id);

CREATE TABLE suppression_secrets (
    account_id TEXT PRIMARY KEY REFERENCES accounts(id),
    secret     BLOB NOT NULL
);

CREATE TABLE suppressions (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    kind       TEXT NOT NULL,
    hash       TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX suppressions_hash ON suppressions (account_id, hash);
CREATE INDEX suppressions_list ON suppressions (account_id, created_at, id);

-- +goose StatementBegin
CREATE TRIGGER suppressions_inserted AFTER INSERT ON suppressions BEGIN
    UPDATE key_changes SET n = n + 1 WHERE id = 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER suppressions_deleted AFTER DELETE ON suppressions BEGIN
    UPDATE key_changes SET n = n + 1 WHERE id = 1;
END;
-- +goose StatementEnd

-- An erasure under way on SQLite, whose breadcrumbs are deleted in chunks
-- that each hold the write lock no longer than a group commit's batch: the
-- first commit writes this row, the last deletes it with the person. A row
-- found at startup is an erasure a crash interrupted, finished then
-- (sqlstore.FinishErasures), so the person ends erased, never half.
CREATE TABLE erasure_purges (
    account_id TEXT NOT NULL,
    person_id  TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    suppress   INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, person_id)
);

-- +goose Down
DROP TABLE erasure_purges;
DROP TRIGGER suppressions_deleted;
DROP TRIGGER suppressions_inserted;
DROP TABLE suppressions;
DROP TABLE suppression_secrets;
DROP TABLE erasures;
