-- Idempotency keys of sends and broadcasts, one row per caller and key,
-- claimed (status 'pending') before anything is sent and given the first
-- answer ('done') after. A pending claim whose claimed_until passed was
-- abandoned (its replica died) and may be taken over; a row older than
-- 24 hours may be replaced, and housekeeping deletes it.
CREATE TABLE idempotency_keys (
    caller        TEXT NOT NULL,
    idem_key      TEXT NOT NULL,
    operation     TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    status        TEXT NOT NULL,
    claim_token   TEXT NOT NULL,
    response      TEXT,
    claimed_until TIMESTAMPTZ NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (caller, idem_key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- A broadcast's push options (priority, ttl, badge, ...) as JSON; NULL
-- when none.
ALTER TABLE notification_jobs ADD COLUMN push_options TEXT;

-- When a scheduled broadcast starts (status 'scheduled' until then); NULL
-- for one queued at once.
ALTER TABLE notification_jobs ADD COLUMN send_at TIMESTAMPTZ;

-- A broadcast's audience, each a comma-bracketed list (",android,ios,")
-- or '' for everyone: platforms, plans, and the subscription status
-- ('active' or 'expired') as of the job's creation.
ALTER TABLE notification_jobs ADD COLUMN audience_platforms TEXT NOT NULL DEFAULT '';
ALTER TABLE notification_jobs ADD COLUMN audience_plans TEXT NOT NULL DEFAULT '';
ALTER TABLE notification_jobs ADD COLUMN audience_status TEXT NOT NULL DEFAULT '';
