-- Digests (issue 26, HERALD_NOTIFICATION_DIGESTS): a user's sends of a
-- category within a window, folded into one notification when it ends.
-- One open digest per account and category (the partial unique index); a
-- digest being sent is no longer open, so a send arriving meanwhile opens
-- the next. entries is a JSON array of the latest sends (subject,
-- content, data, options, channels); count counts every send folded in.
-- A River job (notification_digest) sends each digest at due_at and
-- deletes it. Erased with the account.
CREATE TABLE notification_digests (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    category   TEXT NOT NULL,
    opened_at  TIMESTAMPTZ NOT NULL,
    due_at     TIMESTAMPTZ NOT NULL,
    count      INTEGER NOT NULL,
    entries    TEXT NOT NULL,
    sending    BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE UNIQUE INDEX notification_digests_open ON notification_digests (account_id, category) WHERE NOT sending;
