-- An account's subscription moves into its row: the authenticated read
-- (users/me, every token refresh) becomes one primary-key lookup instead
-- of a join of two. A tombstone keeps its last subscription; every read of
-- a subscription skips deleted accounts, as the dropped table had no row
-- for them.
ALTER TABLE accounts ADD COLUMN subscription_plan TEXT NOT NULL DEFAULT '';
ALTER TABLE accounts ADD COLUMN subscription_expires_at TIMESTAMP NOT NULL DEFAULT '1970-01-01 00:00:00+00:00';
ALTER TABLE accounts ADD COLUMN subscription_updated_at TIMESTAMP NOT NULL DEFAULT '1970-01-01 00:00:00+00:00';
UPDATE accounts SET
    subscription_plan = (SELECT s.plan FROM subscriptions s WHERE s.account_id = accounts.id),
    subscription_expires_at = (SELECT s.expires_at FROM subscriptions s WHERE s.account_id = accounts.id),
    subscription_updated_at = (SELECT s.updated_at FROM subscriptions s WHERE s.account_id = accounts.id)
WHERE EXISTS (SELECT 1 FROM subscriptions s WHERE s.account_id = accounts.id);
DROP TABLE subscriptions;
