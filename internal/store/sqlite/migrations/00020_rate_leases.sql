-- +goose Up
-- An instance leases a slice of a key's budget at a time (LeaseRate):
-- count is what all instances together have taken in the window, granted
-- what the last lease took, so that one atomic upsert can report it.
-- (Numbered apart from the sequence other branches extend.)
ALTER TABLE rate_windows ADD COLUMN granted INTEGER NOT NULL DEFAULT 0;
