-- +goose Up
-- An erasure clears the erased person's identifiers from every breadcrumb
-- that names them, whoever holds it (a breadcrumb matched to one person by
-- its external_id may carry another's email). These indexes find them
-- without reading every breadcrumb of the account; each holds only the
-- breadcrumbs that carry its identifier. Building them reads the table: a
-- deploy's own step (pds migrate), as any migration.
CREATE INDEX breadcrumbs_email ON breadcrumbs (account_id, email) WHERE email IS NOT NULL;
CREATE INDEX breadcrumbs_external_id ON breadcrumbs (account_id, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX breadcrumbs_f_id ON breadcrumbs (account_id, f_id) WHERE f_id IS NOT NULL;

-- +goose Down
DROP INDEX breadcrumbs_email;
DROP INDEX breadcrumbs_external_id;
DROP INDEX breadcrumbs_f_id;
