-- The in-app inbox (issue 26): what a send kept for the app to show,
-- with its seen, read and archived marks, until it expires (its
-- expires_at, HERALD_INBOX_RETENTION after it was kept). An item's id is
-- a UUIDv7, so id order is the order items were kept. A broadcast's
-- items name their job (source_id) and are written once per account by
-- the broadcast's job: the unique index makes a takeover's second
-- attempt write nothing, and inbox_written_at on the job row spares it
-- the attempt.
CREATE TABLE inbox_items (
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    id          TEXT NOT NULL,
    source_id   TEXT,
    title       TEXT NOT NULL,
    body        TEXT NOT NULL,
    data        TEXT,
    category    TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    seen_at     TIMESTAMP,
    read_at     TIMESTAMP,
    archived_at TIMESTAMP,
    expires_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (account_id, id)
);
CREATE UNIQUE INDEX inbox_items_source ON inbox_items (account_id, source_id);
CREATE INDEX inbox_items_expires ON inbox_items (expires_at);
ALTER TABLE notification_jobs ADD COLUMN inbox BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE notification_jobs ADD COLUMN inbox_written_at TIMESTAMP;
ALTER TABLE notification_jobs ADD COLUMN inbox_items INTEGER NOT NULL DEFAULT 0;
