-- +goose Up
-- The delivery log's filters (sqlstore.ListDeliveries). Each index leads
-- with the subscription and one filtered column, then holds the log's order
-- (created_at, id), so a filtered page is read in order and its total is
-- counted in the index, bounded by since and until. The status index also
-- carries event, and the event index status, so that a log filtered on
-- both is counted without reading a row. A person's deliveries are few.
-- Redeliver Failed reads the status index too.
CREATE INDEX deliveries_webhook_status ON deliveries (webhook_id, status, created_at, id, event);
CREATE INDEX deliveries_webhook_event ON deliveries (webhook_id, event, created_at, id, status);
CREATE INDEX deliveries_webhook_person ON deliveries (webhook_id, person_id, created_at, id);

-- +goose Down
DROP INDEX deliveries_webhook_person;
DROP INDEX deliveries_webhook_event;
DROP INDEX deliveries_webhook_status;
