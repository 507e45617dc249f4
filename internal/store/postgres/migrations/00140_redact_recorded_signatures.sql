-- +goose Up
-- Attempts recorded before pds kept signatures without their values hold
-- them whole, which anyone who reads the database or a backup could send
-- the receiver again within its timestamp tolerance. Each is kept as
-- domain.RedactSignatures keeps it now: Service-Signature "t=<unix>,v1=<hex>"
-- as "t=<unix>,v1=…redacted", webhook-signature "v1,<base64>" (one per
-- signing secret, separated by spaces) as "v1,…redacted" as many times; a
-- value of another shape (pds never wrote one) as "…redacted".
UPDATE delivery_attempts
SET request_headers = jsonb_set(request_headers::jsonb, '{Service-Signature}', to_jsonb(
    CASE WHEN request_headers::jsonb->>'Service-Signature' ~ '^t=[0-9]+,v1='
         THEN substring(request_headers::jsonb->>'Service-Signature' FROM '^t=[0-9]+,v1=') || '…redacted'
         ELSE '…redacted' END))::text
WHERE request_headers::jsonb ? 'Service-Signature'
  AND request_headers::jsonb->>'Service-Signature' NOT LIKE '%…redacted';

UPDATE delivery_attempts
SET request_headers = jsonb_set(request_headers::jsonb, '{Webhook-Signature}', to_jsonb(
    CASE WHEN request_headers::jsonb->>'Webhook-Signature' LIKE 'v1,%'
         THEN rtrim(repeat('v1,…redacted ',
                  (length(request_headers::jsonb->>'Webhook-Signature')
                   - length(replace(request_headers::jsonb->>'Webhook-Signature', 'v1,', ''))) / 3))
         ELSE '…redacted' END))::text
WHERE request_headers::jsonb ? 'Webhook-Signature'
  AND request_headers::jsonb->>'Webhook-Signature' NOT LIKE '%…redacted';

-- +goose Down
-- The values are gone; there is nothing to put back.
SELECT 1;
