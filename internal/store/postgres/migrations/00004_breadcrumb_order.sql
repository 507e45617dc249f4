-- +goose Up
-- List Breadcrumbs orders by activity time then id, both descending. With the
-- id in every filter index the engine reads a page straight off the index
-- (scanned backwards) instead of sorting every matching row.
DROP INDEX breadcrumbs_person;
DROP INDEX breadcrumbs_flavor;
DROP INDEX breadcrumbs_campaign;
DROP INDEX breadcrumbs_project;
CREATE INDEX breadcrumbs_person ON breadcrumbs (account_id, person_id, activity_at, id);
CREATE INDEX breadcrumbs_flavor ON breadcrumbs (account_id, flavor, activity_at, id);
CREATE INDEX breadcrumbs_campaign ON breadcrumbs (account_id, campaign_id, activity_at, id);
CREATE INDEX breadcrumbs_project ON breadcrumbs (account_id, project_id, activity_at, id);

-- +goose Down
DROP INDEX breadcrumbs_person;
DROP INDEX breadcrumbs_flavor;
DROP INDEX breadcrumbs_campaign;
DROP INDEX breadcrumbs_project;
CREATE INDEX breadcrumbs_person ON breadcrumbs (account_id, person_id, activity_at);
CREATE INDEX breadcrumbs_flavor ON breadcrumbs (account_id, flavor, activity_at);
CREATE INDEX breadcrumbs_campaign ON breadcrumbs (account_id, campaign_id, activity_at);
CREATE INDEX breadcrumbs_project ON breadcrumbs (account_id, project_id, activity_at);
