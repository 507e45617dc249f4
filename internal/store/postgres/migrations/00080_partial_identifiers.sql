-- +goose Up
-- An identifier index holds only the persons that have the identifier. A
-- person without an f_id (most of them) or without an email cost every
-- insert, every import and every update that is not HOT an entry under
-- NULL that no lookup reads: a lookup names a value, which implies IS NOT
-- NULL, so the planner still uses these indexes, and NULLs never collided
-- anyway.
DROP INDEX persons_email;
DROP INDEX persons_external_id;
DROP INDEX persons_f_id;
CREATE UNIQUE INDEX persons_email ON persons (account_id, email_norm) WHERE email_norm IS NOT NULL;
CREATE UNIQUE INDEX persons_external_id ON persons (account_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX persons_f_id ON persons (account_id, f_id) WHERE f_id IS NOT NULL;

-- +goose Down
DROP INDEX persons_email;
DROP INDEX persons_external_id;
DROP INDEX persons_f_id;
CREATE UNIQUE INDEX persons_email ON persons (account_id, email_norm);
CREATE UNIQUE INDEX persons_external_id ON persons (account_id, external_id);
CREATE UNIQUE INDEX persons_f_id ON persons (account_id, f_id);
