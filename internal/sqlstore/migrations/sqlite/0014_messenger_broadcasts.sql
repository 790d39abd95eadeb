-- Messenger broadcasts: one row per job. The walk goes over subscribed
-- chats in chat_id order; walk_cursor is the last chat whose outcome is
-- counted (NULL: none yet), moved with the counters after each batch.
CREATE TABLE messenger_broadcasts (
    id               TEXT PRIMARY KEY,
    status           TEXT NOT NULL,
    message          TEXT NOT NULL,
    options          TEXT NOT NULL,
    total_recipients INTEGER NOT NULL,
    sent             INTEGER NOT NULL DEFAULT 0,
    failed           INTEGER NOT NULL DEFAULT 0,
    blocked          INTEGER NOT NULL DEFAULT 0,
    walk_cursor      INTEGER,
    lease_owner      TEXT,
    lease_until      TIMESTAMP,
    requeued_at      TIMESTAMP,
    last_error       TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMP NOT NULL,
    started_at       TIMESTAMP,
    finished_at      TIMESTAMP
);
CREATE INDEX messenger_broadcasts_unfinished ON messenger_broadcasts (id) WHERE status IN ('queued', 'running');
