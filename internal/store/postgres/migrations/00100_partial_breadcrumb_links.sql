-- +goose Up
-- A breadcrumb's campaign and project indexes hold only the breadcrumbs
-- that name one. Most breadcrumbs name neither, and each cost every append
-- and every import two entries under NULL that no list reads: a list names
-- the campaign or project, which implies IS NOT NULL, so the planner still
-- uses these indexes (as 00080 did for the person identifiers).
DROP INDEX breadcrumbs_campaign;
DROP INDEX breadcrumbs_project;
CREATE INDEX breadcrumbs_campaign ON breadcrumbs (account_id, campaign_id, activity_at, id) WHERE campaign_id IS NOT NULL;
CREATE INDEX breadcrumbs_project ON breadcrumbs (account_id, project_id, activity_at, id) WHERE project_id IS NOT NULL;

-- +goose Down
DROP INDEX breadcrumbs_campaign;
DROP INDEX breadcrumbs_project;
CREATE INDEX breadcrumbs_campaign ON breadcrumbs (account_id, campaign_id, activity_at, id);
CREATE INDEX breadcrumbs_project ON breadcrumbs (account_id, project_id, activity_at, id);
