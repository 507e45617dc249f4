-- +goose Up
-- An identifier index holds only the persons that have the identifier. A
-- person without an f_id (most of them) or without an email cost every
-- insert and every import an entry under NULL that no lookup reads: a
-- lookup names a value, which implies IS NOT NULL, so the planner still
-- uses these indexes, and NULLs never collided anyway. The statistics rows
-- say what 00010 said of the indexes they replace.
DROP INDEX persons_email;
DROP INDEX persons_external_id;
DROP INDEX persons_f_id;
CREATE UNIQUE INDEX persons_email ON persons (account_id, email_norm) WHERE email_norm IS NOT NULL;
CREATE UNIQUE INDEX persons_external_id ON persons (account_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX persons_f_id ON persons (account_id, f_id) WHERE f_id IS NOT NULL;
DELETE FROM sqlite_stat1 WHERE tbl = 'persons' AND idx IN ('persons_email', 'persons_external_id', 'persons_f_id');
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
    ('persons', 'persons_email', '1000000 100000 1'),
    ('persons', 'persons_external_id', '1000000 100000 1'),
    ('persons', 'persons_f_id', '1000000 100000 1');

-- +goose Down
DROP INDEX persons_email;
DROP INDEX persons_external_id;
DROP INDEX persons_f_id;
CREATE UNIQUE INDEX persons_email ON persons (account_id, email_norm);
CREATE UNIQUE INDEX persons_external_id ON persons (account_id, external_id);
CREATE UNIQUE INDEX persons_f_id ON persons (account_id, f_id);
DELETE FROM sqlite_stat1 WHERE tbl = 'persons' AND idx IN ('persons_email', 'persons_external_id', 'persons_f_id');
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
    ('persons', 'persons_email', '1000000 100000 1'),
    ('persons', 'persons_external_id', '1000000 100000 1'),
    ('persons', 'persons_f_id', '1000000 100000 1');
