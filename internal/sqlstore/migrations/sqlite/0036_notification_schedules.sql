-- When a user may be reached (issue 26): their IANA time zone ('' for
-- UTC) and quiet hours (minutes after local midnight; NULL for none),
-- inside which non-critical sends are held until the window ends.
-- Erased with the account.
CREATE TABLE notification_schedules (
    account_id  TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    time_zone   TEXT NOT NULL DEFAULT '',
    quiet_start INTEGER,
    quiet_end   INTEGER,
    updated_at  TIMESTAMP NOT NULL
);
