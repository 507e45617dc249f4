-- +goose Up
-- An erasure clears the erased person's identifiers from every breadcrumb
-- that names them, whoever holds it (a breadcrumb matched to one person by
-- its external_id may carry another's email). These indexes find them
-- without reading every breadcrumb of the account; each holds only the
-- breadcrumbs that carry its identifier, as 00100's do for campaigns.
CREATE INDEX breadcrumbs_email ON breadcrumbs (account_id, email) WHERE email IS NOT NULL;
CREATE INDEX breadcrumbs_external_id ON breadcrumbs (account_id, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX breadcrumbs_f_id ON breadcrumbs (account_id, f_id) WHERE f_id IS NOT NULL;
DELETE FROM sqlite_stat1 WHERE tbl = 'breadcrumbs' AND idx IN ('breadcrumbs_email', 'breadcrumbs_external_id', 'breadcrumbs_f_id');
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
    ('breadcrumbs', 'breadcrumbs_email', '3000000 300000 3'),
    ('breadcrumbs', 'breadcrumbs_external_id', '3000000 300000 3'),
    ('breadcrumbs', 'breadcrumbs_f_id', '3000000 300000 3');

-- +goose Down
DROP INDEX breadcrumbs_email;
DROP INDEX breadcrumbs_external_id;
DROP INDEX breadcrumbs_f_id;
DELETE FROM sqlite_stat1 WHERE tbl = 'breadcrumbs' AND idx IN ('breadcrumbs_email', 'breadcrumbs_external_id', 'breadcrumbs_f_id');
