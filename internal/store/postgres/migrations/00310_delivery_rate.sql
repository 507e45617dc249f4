-- +goose Up
-- max_per_second: the most attempts all instances together start for the
-- subscription in one wall-clock second, counted in rate_windows under the
-- key "webhook:<id>" as the API keys' budgets are; 0 is no bound.
-- include_changes: its bodies carry the top-level changes member.
ALTER TABLE webhooks ADD COLUMN max_per_second INTEGER NOT NULL DEFAULT 0;
ALTER TABLE webhooks ADD COLUMN include_changes BOOLEAN NOT NULL DEFAULT FALSE;

-- The inactive subscriptions counted by reason at every metrics scrape
-- (pds_webhook_subscriptions_inactive), read in this index alone.
CREATE INDEX webhooks_inactive ON webhooks (is_active, disabled_reason);

-- delivered_states: the members changes compares (email, external_id,
-- first_name, last_name, phone, tag_ids, custom_fields) as the last closed
-- burst of the person told them, kept while an active subscription of the
-- account includes changes: the start of the person's next burst. Erased
-- and merged persons' rows go with them.
CREATE TABLE delivered_states (
    account_id TEXT NOT NULL,
    person_id  TEXT NOT NULL,
    state      TEXT NOT NULL,
    PRIMARY KEY (account_id, person_id)
);

-- +goose Down
DROP TABLE delivered_states;
DROP INDEX webhooks_inactive;
ALTER TABLE webhooks DROP COLUMN include_changes;
ALTER TABLE webhooks DROP COLUMN max_per_second;
