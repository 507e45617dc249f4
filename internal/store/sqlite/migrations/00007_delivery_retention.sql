-- +goose Up
-- Retention finds finished deliveries by age: without this the pruning
-- statement reads the whole table (deliveries_due orders pending rows by
-- due time, deliveries_webhook needs a subscription).
CREATE INDEX deliveries_finished_age ON deliveries (status, created_at);
