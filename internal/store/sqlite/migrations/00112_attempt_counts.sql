-- +goose Up
-- Attempts counted by subscription, hour (the start of the UTC hour, in
-- milliseconds) and outcome, upserted in the transaction that records the
-- attempts (sqlstore.FinishAttempts): the last day of a subscription is at
-- most 24 rows however many deliveries it made. A subscription's counts go
-- with it; retention deletes those of the hours past it, subscription by
-- subscription through the primary key. (No index on hour alone: it would
-- offer reads every subscription's hours in place of one account's.)
CREATE TABLE webhook_attempt_counts (
    webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    hour       INTEGER NOT NULL,
    succeeded  INTEGER NOT NULL DEFAULT 0,
    failed     INTEGER NOT NULL DEFAULT 0,
    errors     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (webhook_id, hour)
);

-- +goose Down
DROP TABLE webhook_attempt_counts;
