-- The operators' log (issue 25): an API key's creation or revocation by
-- the command line belongs to no account, so its security event has no
-- account_id (NULL). A user's log stays the rows of its account_id.
ALTER TABLE security_events ALTER COLUMN account_id DROP NOT NULL;
CREATE INDEX security_events_operators ON security_events (id) WHERE account_id IS NULL;
