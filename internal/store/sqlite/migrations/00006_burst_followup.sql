-- +goose Up
-- A change that lands after a burst's window has closed, but before a worker
-- has turned the burst into deliveries, opens the next burst of the person
-- (always person.updated). It waits here until the closed burst is taken.
ALTER TABLE bursts ADD COLUMN next_opened_at INTEGER;
ALTER TABLE bursts ADD COLUMN next_due_at INTEGER;
