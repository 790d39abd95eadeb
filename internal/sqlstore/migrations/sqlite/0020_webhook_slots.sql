-- Fair webhook delivery (issue 21): each endpoint's slots, its parked
-- deliveries and its circuit breaker.

-- Each endpoint's circuit breaker (webhooks.Slots): failed attempts since
-- the last success, openings since then, and until when it is open.
ALTER TABLE webhook_endpoints ADD COLUMN breaker_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE webhook_endpoints ADD COLUMN breaker_opens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE webhook_endpoints ADD COLUMN breaker_until TIMESTAMP;

-- Deliveries in flight: a slot of an endpoint, held by the River job
-- delivering, until it is released or expires (its holder died). Taken
-- and released under the endpoint's row lock, so every replica counts the
-- same slots.
CREATE TABLE webhook_slots (
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    job_id      INTEGER NOT NULL,
    expires_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (endpoint_id, job_id)
);

-- Deliveries waiting for a slot, oldest (lowest id) first; attempts were
-- made before they waited.
CREATE TABLE webhook_parked (
    id          INTEGER PRIMARY KEY,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id    TEXT NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    attempts    INTEGER NOT NULL,
    parked_at   TIMESTAMP NOT NULL
);
CREATE INDEX webhook_parked_endpoint ON webhook_parked (endpoint_id, id);
CREATE INDEX webhook_parked_event ON webhook_parked (event_id);
