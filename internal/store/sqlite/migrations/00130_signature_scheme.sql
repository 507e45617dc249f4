-- +goose Up
-- Each subscription chooses how its deliveries are signed: 'pds' (the
-- spec's Service-* headers) or 'standard-webhooks' (the Standard Webhooks
-- headers as well). The previous secret of the last rotation stays until
-- previous_secret_until (unix ms) so that, under Standard Webhooks, both
-- secrets sign while a receiver changes over.
ALTER TABLE webhooks ADD COLUMN signature_scheme TEXT NOT NULL DEFAULT 'pds';
ALTER TABLE webhooks ADD COLUMN previous_secret TEXT;
ALTER TABLE webhooks ADD COLUMN previous_secret_until INTEGER;

-- +goose Down
ALTER TABLE webhooks DROP COLUMN previous_secret_until;
ALTER TABLE webhooks DROP COLUMN previous_secret;
ALTER TABLE webhooks DROP COLUMN signature_scheme;
