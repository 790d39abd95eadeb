-- Messenger broadcasts: one row per job. The walk goes over subscribed
-- chats in chat_id order; walk_cursor is the last chat whose outcome is
-- counted (NULL: none yet), moved with the counters after each batch.
CREATE TABLE messenger_broadcasts (
    id               TEXT COLLATE "C" PRIMARY KEY,
    status           TEXT NOT NULL,
    message          TEXT NOT NULL,
    options          TEXT NOT NULL,
    total_recipients INTEGER NOT NULL,
    sent             INTEGER NOT NULL DEFAULT 0,
    failed           INTEGER NOT NULL DEFAULT 0,
    blocked          INTEGER NOT NULL DEFAULT 0,
    walk_cursor      BIGINT,
    lease_owner      TEXT,
    lease_until      TIMESTAMPTZ,
    requeued_at      TIMESTAMPTZ,
    last_error       TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMPTZ NOT NULL,
    started_at       TIMESTAMPTZ,
    finished_at      TIMESTAMPTZ
);
CREATE INDEX messenger_broadcasts_unfinished ON messenger_broadcasts (id) WHERE status IN ('queued', 'running');
