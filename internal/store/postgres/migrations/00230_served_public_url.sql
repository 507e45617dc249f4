-- +goose Up
-- The public URL the last pds serve to start on this database uses, so
-- that the administrative commands that print links to it (pds console
-- link, pds persons report's 0_person_url) name the server the operator
-- runs rather than a default of their own.
CREATE TABLE served_public_url (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    url         TEXT NOT NULL,
    recorded_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE served_public_url;
