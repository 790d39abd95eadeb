-- The operators' log (issue 25): an API key's creation or revocation by
-- the command line belongs to no account, so its security event has no
-- account_id (NULL). A user's log stays the rows of its account_id.
-- SQLite cannot drop a NOT NULL: the table is rebuilt (nothing refers to
-- it).
CREATE TABLE security_events_new (
    id         TEXT PRIMARY KEY,
    account_id TEXT REFERENCES accounts (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    outcome    TEXT NOT NULL,
    actor      TEXT NOT NULL,
    ip         TEXT NOT NULL DEFAULT '',
    user_agent TEXT NOT NULL DEFAULT '',
    device_key TEXT NOT NULL DEFAULT '',
    detail     TEXT NOT NULL DEFAULT '{}',
    created_at TIMESTAMP NOT NULL
);
INSERT INTO security_events_new (id, account_id, kind, outcome, actor, ip, user_agent, device_key, detail, created_at)
    SELECT id, account_id, kind, outcome, actor, ip, user_agent, device_key, detail, created_at FROM security_events;
DROP TABLE security_events;
ALTER TABLE security_events_new RENAME TO security_events;
CREATE INDEX security_events_account ON security_events (account_id, id);
CREATE INDEX security_events_created ON security_events (created_at);
CREATE INDEX security_events_operators ON security_events (id) WHERE account_id IS NULL;
