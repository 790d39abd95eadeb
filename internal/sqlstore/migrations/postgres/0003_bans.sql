-- Addresses refused outright until an operator lifts the ban.
CREATE TABLE bans (
    ip         TEXT PRIMARY KEY,
    reason     TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
