-- +goose Up
-- SQLite plans without statistics until someone runs ANALYZE, and without
-- them it takes "account_id = ?" for a choice of ten rows: it then walks a
-- whole account's persons (or links, or breadcrumbs) through an index that
-- starts with account_id rather than probe the page's ids by primary key.
-- These rows describe the shape the service is built for, accounts of a
-- million persons, so that plans are right from the first request; a later
-- ANALYZE replaces them with measured ones, which at that size say the
-- same (TestHotQueryPlans holds the plans).
ANALYZE sqlite_schema;
DELETE FROM sqlite_stat1 WHERE tbl IN ('persons', 'person_tags', 'person_field_values', 'breadcrumbs', 'tags', 'custom_fields');
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
    ('persons', 'sqlite_autoindex_persons_1', '1000000 1'),
    ('persons', 'persons_email', '1000000 100000 1'),
    ('persons', 'persons_external_id', '1000000 100000 1'),
    ('persons', 'persons_f_id', '1000000 100000 1'),
    ('persons', 'persons_last_seen', '1000000 100000 2 1'),
    ('person_tags', 'sqlite_autoindex_person_tags_1', '1000000 2 1'),
    ('person_tags', 'person_tags_seen', '1000000 100000 10000 2 1'),
    ('person_field_values', 'sqlite_autoindex_person_field_values_1', '1000000 3 1'),
    ('breadcrumbs', 'sqlite_autoindex_breadcrumbs_1', '3000000 1'),
    ('breadcrumbs', 'breadcrumbs_activity', '3000000 300000 2 1'),
    ('breadcrumbs', 'breadcrumbs_person', '3000000 300000 3 2 1'),
    ('breadcrumbs', 'breadcrumbs_flavor', '3000000 300000 50000 2 1'),
    ('breadcrumbs', 'breadcrumbs_campaign', '3000000 300000 1000 2 1'),
    ('breadcrumbs', 'breadcrumbs_project', '3000000 300000 1000 2 1'),
    ('tags', 'sqlite_autoindex_tags_1', '10000 1'),
    ('tags', 'tags_name', '10000 1000 300 1'),
    ('tags', 'tags_live', '10000 1000 1 1'),
    ('tags', 'tags_live_context', '10000 1000 300 1 1'),
    ('custom_fields', 'sqlite_autoindex_custom_fields_1', '10000 1'),
    ('custom_fields', 'custom_fields_key', '10000 100 50 1'),
    ('custom_fields', 'custom_fields_live', '10000 100 1 1'),
    ('custom_fields', 'custom_fields_live_collection', '10000 100 50 1 1');

-- +goose Down
DELETE FROM sqlite_stat1 WHERE tbl IN ('persons', 'person_tags', 'person_field_values', 'breadcrumbs', 'tags', 'custom_fields');
