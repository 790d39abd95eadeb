-- Devices of accounts. A push token belongs to at most one device; a device
-- that lost its token (moved to another device, or removed) has none.
CREATE TABLE devices (
    id                TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    platform          TEXT NOT NULL,
    name              TEXT NOT NULL,
    push_token        TEXT,
    push_token_status TEXT NOT NULL,
    active            BOOLEAN NOT NULL,
    created_at        TIMESTAMP NOT NULL,
    last_seen_at      TIMESTAMP NOT NULL
);
-- An account's devices (list, limit count) and the admin listing by account.
CREATE INDEX devices_account ON devices (account_id, id);
-- One token, one device.
CREATE UNIQUE INDEX devices_push_token ON devices (push_token) WHERE push_token IS NOT NULL;
-- The broadcast's keyset walk and recipient count: recipients only, by id.
CREATE INDEX devices_recipients ON devices (id) WHERE active = TRUE AND push_token_status = 'valid';

-- Broadcast jobs. walk_cursor is the last device id claimed; it moves in
-- the transaction that claims, so a restart resumes exactly there. The
-- lease says which worker may send.
CREATE TABLE notification_jobs (
    id               TEXT PRIMARY KEY,
    subject          TEXT NOT NULL,
    content          TEXT NOT NULL,
    data             TEXT,
    status           TEXT NOT NULL,
    total_recipients INTEGER NOT NULL,
    sent             INTEGER NOT NULL DEFAULT 0,
    failed           INTEGER NOT NULL DEFAULT 0,
    invalid_tokens   INTEGER NOT NULL DEFAULT 0,
    walk_cursor      TEXT NOT NULL DEFAULT '',
    walk_done        BOOLEAN NOT NULL DEFAULT FALSE,
    lease_owner      TEXT,
    lease_until      TIMESTAMP,
    last_error       TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMP NOT NULL,
    started_at       TIMESTAMP,
    finished_at      TIMESTAMP
);
CREATE INDEX notification_jobs_unfinished ON notification_jobs (id) WHERE status IN ('queued', 'running');

-- One row per device per broadcast, written (claimed) before the send and
-- updated with the outcome after it. device_id has no foreign key: this is
-- history, and the walk never deletes devices.
CREATE TABLE notification_deliveries (
    job_id     TEXT NOT NULL REFERENCES notification_jobs(id) ON DELETE CASCADE,
    device_id  TEXT NOT NULL,
    status     TEXT NOT NULL,
    claimed_by TEXT NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (job_id, device_id)
);
-- Deliveries still to resolve after a crash or a transient failure.
CREATE INDEX notification_deliveries_open ON notification_deliveries (job_id, device_id) WHERE status IN ('claimed', 'retry');
