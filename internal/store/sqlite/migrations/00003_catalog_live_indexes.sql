-- +goose Up
-- Lists show live rows only, newest last, optionally of one context or
-- collection. Partial indexes on exactly those rows let a page stop after
-- LIMIT entries and let the total be counted from the index alone.
CREATE INDEX tags_live ON tags (account_id, created_at, id) WHERE archived_at IS NULL;
CREATE INDEX tags_live_context ON tags (account_id, context, created_at, id) WHERE archived_at IS NULL;
CREATE INDEX custom_fields_live ON custom_fields (account_id, created_at, id) WHERE archived_at IS NULL;
CREATE INDEX custom_fields_live_collection ON custom_fields (account_id, collection, created_at, id) WHERE archived_at IS NULL;
DROP INDEX tags_list;
DROP INDEX custom_fields_list;

-- +goose Down
CREATE INDEX tags_list ON tags (account_id, created_at, id);
CREATE INDEX custom_fields_list ON custom_fields (account_id, created_at, id);
DROP INDEX tags_live;
DROP INDEX tags_live_context;
DROP INDEX custom_fields_live;
DROP INDEX custom_fields_live_collection;
