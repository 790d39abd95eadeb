-- Per-user, per-category caps (issue 26): "at most 3 product
-- notifications a day". notification_cap_counts holds, per account,
-- category and window (the calendar day on the user's wall clock, as
-- YYYY-MM-DD), how many sends the cap let through; a send locks its row
-- while it decides, so two replicas never both pass the cap.
-- notification_cap_uses records each send's decision by its send id (a
-- held send's River job, a request's idempotency key): a send counted
-- again, a retried job, answers its first decision and counts nothing.
-- Housekeeping deletes the windows of days past.
CREATE TABLE notification_cap_counts (
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    category   TEXT NOT NULL,
    cap_window TEXT NOT NULL,
    sends      INTEGER NOT NULL,
    PRIMARY KEY (account_id, category, cap_window)
);
CREATE INDEX notification_cap_counts_window ON notification_cap_counts (cap_window);
CREATE TABLE notification_cap_uses (
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    category   TEXT NOT NULL,
    cap_window TEXT NOT NULL,
    send_id    TEXT NOT NULL,
    allowed    BOOLEAN NOT NULL,
    PRIMARY KEY (account_id, category, cap_window, send_id)
);
CREATE INDEX notification_cap_uses_window ON notification_cap_uses (cap_window);
