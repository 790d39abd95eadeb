-- The security log (issue 25): one row per security event of an account
-- (internal/securitylog), its detail a small JSON object. Purged after
-- the configured retention; erased with the account.
CREATE TABLE security_events (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    outcome    TEXT NOT NULL,
    actor      TEXT NOT NULL,
    ip         TEXT NOT NULL DEFAULT '',
    user_agent TEXT NOT NULL DEFAULT '',
    device_key TEXT NOT NULL DEFAULT '',
    detail     TEXT NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX security_events_account ON security_events (account_id, id);
CREATE INDEX security_events_created ON security_events (created_at);
