-- +goose Up
-- Four of the deliveries' indexes serve only some of its rows: the claim,
-- the backlog and a secret rotation look for pending deliveries, a lease is
-- looked up by its token, and retention prunes finished deliveries. Holding
-- every row in each of them made each attempt's record move a delivery in
-- six indexes. As partial indexes (their queries name the status as the
-- same literal, so that both planners see the index applies), a recorded
-- success leaves three of them and enters one. Same columns, so the plans
-- keep their shape.
DROP INDEX deliveries_due;
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at) WHERE status = 'pending';
DROP INDEX deliveries_secret;
CREATE INDEX deliveries_secret ON deliveries (webhook_id, secret_version, status) WHERE status = 'pending';
DROP INDEX deliveries_lease;
CREATE INDEX deliveries_lease ON deliveries (lease_token) WHERE lease_token IS NOT NULL;
DROP INDEX deliveries_finished_age;
CREATE INDEX deliveries_finished_age ON deliveries (status, created_at) WHERE status IN ('succeeded', 'failed');

-- +goose Down
DROP INDEX deliveries_finished_age;
CREATE INDEX deliveries_finished_age ON deliveries (status, created_at);
DROP INDEX deliveries_lease;
CREATE INDEX deliveries_lease ON deliveries (lease_token);
DROP INDEX deliveries_secret;
CREATE INDEX deliveries_secret ON deliveries (webhook_id, secret_version, status);
DROP INDEX deliveries_due;
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);
