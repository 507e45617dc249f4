-- +goose Up
-- Attempts recorded before pds kept signatures without their values hold
-- them whole, which anyone who reads the database or a backup could send
-- the receiver again within its timestamp tolerance. Each is kept as
-- domain.RedactSignatures keeps it now: Service-Signature "t=<unix>,v1=<hex>"
-- as "t=<unix>,v1=…redacted", webhook-signature "v1,<base64>" (one per
-- signing secret, separated by spaces) as "v1,…redacted" as many times; a
-- value of another shape (pds never wrote one) as "…redacted".
UPDATE delivery_attempts
SET request_headers = json_set(request_headers, '$."Service-Signature"',
    CASE WHEN json_extract(request_headers, '$."Service-Signature"') GLOB 't=[0-9]*,v1=*'
         THEN substr(json_extract(request_headers, '$."Service-Signature"'), 1,
                     instr(json_extract(request_headers, '$."Service-Signature"'), ',v1=') + 3) || '…redacted'
         ELSE '…redacted' END)
WHERE json_extract(request_headers, '$."Service-Signature"') IS NOT NULL
  AND json_extract(request_headers, '$."Service-Signature"') NOT GLOB '*…redacted';

-- n signatures ("v1," n times) become n times "v1,…redacted", separated by
-- spaces: n zero digits, each replaced by the redacted item.
UPDATE delivery_attempts
SET request_headers = json_set(request_headers, '$."Webhook-Signature"',
    CASE WHEN json_extract(request_headers, '$."Webhook-Signature"') GLOB 'v1,*'
         THEN rtrim(replace(substr(hex(zeroblob(
                  (length(json_extract(request_headers, '$."Webhook-Signature"'))
                   - length(replace(json_extract(request_headers, '$."Webhook-Signature"'), 'v1,', ''))) / 3)),
                  1, (length(json_extract(request_headers, '$."Webhook-Signature"'))
                      - length(replace(json_extract(request_headers, '$."Webhook-Signature"'), 'v1,', ''))) / 3),
                  '0', 'v1,…redacted '), ' ')
         ELSE '…redacted' END)
WHERE json_extract(request_headers, '$."Webhook-Signature"') IS NOT NULL
  AND json_extract(request_headers, '$."Webhook-Signature"') NOT GLOB '*…redacted';

-- +goose Down
-- The values are gone; there is nothing to put back.
SELECT 1;
