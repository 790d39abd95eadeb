-- Notification preferences (issue 26): a user's choice per category and
-- channel, stored only where it differs from "on" or was set; erased
-- with the account. A broadcast names its category, and counts the
-- devices its walk skipped because their owner turned that off.
CREATE TABLE notification_preferences (
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    category   TEXT NOT NULL,
    channel    TEXT NOT NULL,
    enabled    BOOLEAN NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account_id, category, channel)
);
ALTER TABLE notification_jobs ADD COLUMN category TEXT NOT NULL DEFAULT 'service';
ALTER TABLE notification_jobs ADD COLUMN opted_out INTEGER NOT NULL DEFAULT 0;
