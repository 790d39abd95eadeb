-- An account's subscription moves into its row: the authenticated read
-- (users/me, every token refresh) becomes one primary-key lookup instead
-- of a join of two. A tombstone keeps its last subscription; every read of
-- a subscription skips deleted accounts, as the dropped table had no row
-- for them.
ALTER TABLE accounts
    ADD COLUMN subscription_plan       TEXT        NOT NULL DEFAULT '',
    ADD COLUMN subscription_expires_at TIMESTAMPTZ NOT NULL DEFAULT 'epoch',
    ADD COLUMN subscription_updated_at TIMESTAMPTZ NOT NULL DEFAULT 'epoch';
UPDATE accounts a SET subscription_plan = s.plan, subscription_expires_at = s.expires_at, subscription_updated_at = s.updated_at
FROM subscriptions s WHERE s.account_id = a.id;
DROP TABLE subscriptions;
