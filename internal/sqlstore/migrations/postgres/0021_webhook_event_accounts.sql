-- The accounts webhook events name, so deleting an account forgets them
-- (issue 21).

-- The events of accounts deleted before this migration: what deleting an
-- account now does (a user.deleted event stays; any other event about the
-- account goes; another account's event loses the field naming it).
DELETE FROM webhook_events e USING accounts a
WHERE e.type <> 'user.deleted' AND a.deleted_at IS NOT NULL AND a.id = (e.payload::jsonb #>> '{data,userId}');
UPDATE webhook_events e SET payload = (e.payload::jsonb #- '{data,referrerId}')::text FROM accounts a
WHERE a.deleted_at IS NOT NULL AND a.id = (e.payload::jsonb #>> '{data,referrerId}');

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
    SELECT payload::jsonb #>> '{data,userId}' AS account_id, id, type FROM webhook_events
    UNION ALL
    SELECT payload::jsonb #>> '{data,referrerId}', id, type FROM webhook_events
) named
WHERE account_id IS NOT NULL AND type <> 'user.deleted';
