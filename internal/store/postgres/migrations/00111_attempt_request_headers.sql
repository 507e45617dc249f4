-- +goose Up
-- The headers each attempt's request carried (the signed Service-* headers,
-- Content-Type, User-Agent), as a JSON object of strings, so that the log
-- shows a receiver what it was sent. Attempts recorded before hold none.
ALTER TABLE delivery_attempts ADD COLUMN request_headers TEXT NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE delivery_attempts DROP COLUMN request_headers;
