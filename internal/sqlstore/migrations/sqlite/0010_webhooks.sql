-- Webhook endpoints (Standard Webhooks). The signing secret must be kept
-- to sign; previous_secret still signs until previous_secret_until after a
-- rotation. event_types are space-separated. failing_since is the first
-- failed attempt since the last success (five days of it disables).
CREATE TABLE webhook_endpoints (
    id                    TEXT PRIMARY KEY,
    url                   TEXT NOT NULL,
    description           TEXT NOT NULL,
    event_types           TEXT NOT NULL,
    secret                TEXT NOT NULL,
    previous_secret       TEXT,
    previous_secret_until TIMESTAMP,
    disabled_at           TIMESTAMP,
    disabled_reason       TEXT NOT NULL DEFAULT '',
    failing_since         TIMESTAMP,
    created_at            TIMESTAMP NOT NULL,
    updated_at            TIMESTAMP NOT NULL
);

-- The outbox: one row per event, written in the transaction of the change
-- that caused it. payload is the exact body sent: {type, timestamp, data}.
CREATE TABLE webhook_events (
    id         TEXT PRIMARY KEY,
    type       TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX webhook_events_created ON webhook_events (created_at);

-- Every delivery attempt of an event to an endpoint. status_code 0: no
-- answer (error says why).
CREATE TABLE webhook_attempts (
    id          TEXT PRIMARY KEY,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id    TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    status_code INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    error       TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, id);
