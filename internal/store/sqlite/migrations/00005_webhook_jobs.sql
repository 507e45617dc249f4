-- +goose Up
-- Leases on bursts and deliveries carry a token per claim, so that a worker
-- finishes only the work it still holds (a crashed worker's lease expires and
-- another claim replaces the token).
ALTER TABLE bursts ADD COLUMN lease_token TEXT;
ALTER TABLE deliveries ADD COLUMN lease_token TEXT;
-- The attempt count at which the current round of the retry schedule began:
-- a redelivery starts a fresh round without forgetting earlier attempts.
ALTER TABLE deliveries ADD COLUMN round_start INTEGER NOT NULL DEFAULT 0;
-- Whether a retired secret is still needed by a pending delivery.
CREATE INDEX deliveries_secret ON deliveries (webhook_id, secret_version, status);
CREATE INDEX deliveries_lease ON deliveries (lease_token);
