-- +goose Up
-- A subscription made by `pds webhooks listen` for its own receiver on
-- loopback (http://127.0.0.1:PORT/). Its deliveries, and only its, go
-- through a client that may reach loopback and nothing else, and only an
-- instance on listener_host (the machine whose loopback it is) claims them.
-- Never set through the API. (Numbered apart from the sequence other
-- branches extend.)
ALTER TABLE webhooks ADD COLUMN local_listener BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE webhooks ADD COLUMN listener_host TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE webhooks DROP COLUMN listener_host;
ALTER TABLE webhooks DROP COLUMN local_listener;
