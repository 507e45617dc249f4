-- +goose Up
-- Times are unix milliseconds (INTEGER) so both engines share one SQL dialect
-- for comparisons and ordering. Every table carries account_id and every
-- index leads with it: no query may cross accounts.

CREATE TABLE accounts (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts(id),
    name         TEXT,
    prefix       TEXT NOT NULL,
    last_four    TEXT NOT NULL,
    hash         BLOB NOT NULL UNIQUE,
    scopes       TEXT NOT NULL,
    rate_limit   INTEGER,
    expires_at   INTEGER,
    revoked_at   INTEGER,
    last_used_at INTEGER,
    created_at   INTEGER NOT NULL
);
CREATE INDEX api_keys_account ON api_keys (account_id, created_at, id);

CREATE TABLE rate_windows (
    key_id       TEXT NOT NULL,
    window_start INTEGER NOT NULL,
    count        INTEGER NOT NULL,
    PRIMARY KEY (key_id, window_start)
);

CREATE TABLE tags (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts(id),
    name        TEXT NOT NULL,
    context     TEXT NOT NULL,
    archived_at INTEGER,
    created_at  INTEGER NOT NULL
);
-- One row per (name, context) ever: an archived tag keeps its pair so that
-- creating it again revives it.
CREATE UNIQUE INDEX tags_name ON tags (account_id, context, name);
CREATE INDEX tags_list ON tags (account_id, created_at, id);

CREATE TABLE custom_fields (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts(id),
    collection   TEXT NOT NULL,
    data_type    TEXT NOT NULL,
    key          TEXT NOT NULL,
    label        TEXT,
    description  TEXT,
    form_type    TEXT NOT NULL,
    is_default   INTEGER NOT NULL DEFAULT 0,
    is_read_only INTEGER NOT NULL DEFAULT 0,
    archived_at  INTEGER,
    created_at   INTEGER NOT NULL
);
-- Archived fields keep their key reserved.
CREATE UNIQUE INDEX custom_fields_key ON custom_fields (account_id, collection, key);
CREATE INDEX custom_fields_list ON custom_fields (account_id, created_at, id);

CREATE TABLE projects (
    id               TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL REFERENCES accounts(id),
    name             TEXT NOT NULL,
    location         TEXT,
    registration_url TEXT,
    site_url         TEXT,
    created_at       INTEGER NOT NULL,
    start_at         INTEGER,
    end_at           INTEGER
);
CREATE INDEX projects_list ON projects (account_id, created_at, id);

CREATE TABLE campaigns (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts(id),
    name        TEXT NOT NULL,
    description TEXT,
    kind        TEXT,
    state       TEXT,
    is_enabled  INTEGER NOT NULL DEFAULT 0,
    project_id  TEXT REFERENCES projects(id),
    created_at  INTEGER NOT NULL,
    start_at    INTEGER,
    end_at      INTEGER
);
CREATE INDEX campaigns_list ON campaigns (account_id, created_at, id);

CREATE TABLE persons (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts(id),
    email         TEXT,
    email_norm    TEXT,
    external_id   TEXT,
    f_id          TEXT,
    first_name    TEXT,
    last_name     TEXT,
    phone         TEXT,
    language      TEXT,
    pseudonym     TEXT,
    occupation    TEXT,
    age           TEXT,
    ethnicity     TEXT,
    income        TEXT,
    edu           TEXT,
    companies     TEXT NOT NULL DEFAULT '[]',
    address       TEXT NOT NULL DEFAULT '{}',
    email_opt_out INTEGER NOT NULL DEFAULT 0,
    is_archived   INTEGER NOT NULL DEFAULT 0,
    upsert_result TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL
);
CREATE UNIQUE INDEX persons_email ON persons (account_id, email_norm);
CREATE UNIQUE INDEX persons_external_id ON persons (account_id, external_id);
CREATE UNIQUE INDEX persons_f_id ON persons (account_id, f_id);
CREATE INDEX persons_last_seen ON persons (account_id, last_seen_at, id);

CREATE TABLE person_tags (
    account_id TEXT NOT NULL,
    person_id  TEXT NOT NULL REFERENCES persons(id),
    tag_id     TEXT NOT NULL REFERENCES tags(id),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (person_id, tag_id)
);
CREATE INDEX person_tags_tag ON person_tags (account_id, tag_id, person_id);

CREATE TABLE person_field_values (
    account_id TEXT NOT NULL,
    person_id  TEXT NOT NULL REFERENCES persons(id),
    field_id   TEXT NOT NULL REFERENCES custom_fields(id),
    value      TEXT NOT NULL,
    PRIMARY KEY (person_id, field_id)
);

CREATE TABLE breadcrumbs (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts(id),
    flavor      TEXT NOT NULL,
    person_id   TEXT NOT NULL REFERENCES persons(id),
    campaign_id TEXT,
    project_id  TEXT,
    email       TEXT,
    external_id TEXT,
    f_id        TEXT,
    occurred_at INTEGER,
    activity_at INTEGER NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX breadcrumbs_activity ON breadcrumbs (account_id, activity_at, id);
CREATE INDEX breadcrumbs_person ON breadcrumbs (account_id, person_id, activity_at);
CREATE INDEX breadcrumbs_flavor ON breadcrumbs (account_id, flavor, activity_at);
CREATE INDEX breadcrumbs_campaign ON breadcrumbs (account_id, campaign_id, activity_at);
CREATE INDEX breadcrumbs_project ON breadcrumbs (account_id, project_id, activity_at);

CREATE TABLE webhooks (
    id               TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL REFERENCES accounts(id),
    name             TEXT NOT NULL,
    target_url       TEXT NOT NULL,
    events           TEXT NOT NULL,
    is_active        INTEGER NOT NULL DEFAULT 1,
    disabled_reason  TEXT,
    last_error       TEXT,
    secret           TEXT NOT NULL,
    secret_version   INTEGER NOT NULL DEFAULT 1,
    streak_started_at INTEGER,
    streak_failures  INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
CREATE INDEX webhooks_list ON webhooks (account_id, created_at, id);

-- Earlier secrets stay until no delivery signed with them is pending.
CREATE TABLE webhook_secrets (
    webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    version    INTEGER NOT NULL,
    secret     TEXT NOT NULL,
    retired_at INTEGER NOT NULL,
    PRIMARY KEY (webhook_id, version)
);

-- The outbox: one row per person with an open burst, written in the same
-- transaction as the person change.
CREATE TABLE bursts (
    person_id      TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL,
    event          TEXT NOT NULL,
    opened_at      INTEGER NOT NULL,
    last_change_at INTEGER NOT NULL,
    due_at         INTEGER NOT NULL,
    lease_until    INTEGER
);
CREATE INDEX bursts_due ON bursts (due_at);

CREATE TABLE deliveries (
    id               TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL,
    webhook_id       TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    event            TEXT NOT NULL,
    person_id        TEXT NOT NULL,
    body             TEXT NOT NULL,
    secret_version   INTEGER NOT NULL,
    status           TEXT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER,
    last_error       TEXT,
    next_attempt_at  INTEGER,
    lease_until      INTEGER,
    created_at       INTEGER NOT NULL
);
CREATE INDEX deliveries_webhook ON deliveries (webhook_id, created_at, id);
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);

CREATE TABLE delivery_attempts (
    delivery_id  TEXT NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
    attempt      INTEGER NOT NULL,
    attempted_at INTEGER NOT NULL,
    status_code  INTEGER,
    error        TEXT,
    duration_ms  INTEGER NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);
