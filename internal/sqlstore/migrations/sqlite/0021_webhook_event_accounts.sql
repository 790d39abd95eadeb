-- The accounts webhook events name, so deleting an account forgets them
-- (issue 21).

-- The events of accounts deleted before this migration: what deleting an
-- account now does (a user.deleted event stays; any other event about the
-- account goes; another account's event loses the field naming it).
DELETE FROM webhook_events
WHERE type <> 'user.deleted' AND json_extract(payload, '$.data.userId') IN (SELECT id FROM accounts WHERE deleted_at IS NOT NULL);
UPDATE webhook_events SET payload = json_remove(payload, '$.data.referrerId')
WHERE json_extract(payload, '$.data.referrerId') IN (SELECT id FROM accounts WHERE deleted_at IS NOT NULL);

-- The accounts each event names (data.userId, data.referrerId), so that
-- deleting an account finds its events. A user.deleted event is what
-- deletion leaves, and is not listed.
CREATE TABLE webhook_event_accounts (
    account_id TEXT NOT NULL,
    event_id   TEXT NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    PRIMARY KEY (account_id, event_id)
);
CREATE INDEX webhook_event_accounts_event ON webhook_event_accounts (event_id);
INSERT INTO webhook_event_accounts (account_id, event_id)
SELECT DISTINCT account_id, id FROM (
    SELECT json_extract(payload, '$.data.userId') AS account_id, id, type FROM webhook_events
    UNION ALL
    SELECT json_extract(payload, '$.data.referrerId'), id, type FROM webhook_events
) named
WHERE account_id IS NOT NULL AND type <> 'user.deleted';
