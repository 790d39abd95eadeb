-- Store subscriptions (issue 24): an account's subscription is derived
-- from its entitlements (store purchases, an administrator's grant, the
-- signup trial, referral bonuses); the account's row keeps the derived
-- subscription for the hot reads.
CREATE TABLE entitlements (
    id            TEXT PRIMARY KEY,
    account_id    TEXT REFERENCES accounts (id) ON DELETE CASCADE,
    source        TEXT NOT NULL,
    external_id   TEXT NOT NULL,
    product_id    TEXT NOT NULL DEFAULT '',
    plan          TEXT NOT NULL,
    state         TEXT NOT NULL,
    started_at    TIMESTAMPTZ NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL,
    grace_ends_at TIMESTAMPTZ,
    auto_renew    BOOLEAN NOT NULL DEFAULT FALSE,
    environment   TEXT NOT NULL DEFAULT '',
    customer      TEXT NOT NULL DEFAULT '',
    observed_at   TIMESTAMPTZ NOT NULL,
    reminded_at   TIMESTAMPTZ,
    changed_at    TIMESTAMPTZ NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    UNIQUE (source, external_id)
);
CREATE INDEX entitlements_account ON entitlements (account_id);
CREATE INDEX entitlements_live ON entitlements (expires_at) WHERE state IN ('trial', 'active', 'grace', 'cancelled');
CREATE INDEX entitlements_customer ON entitlements (customer) WHERE customer <> '';

-- Every change of an entitlement, and what caused it.
CREATE TABLE entitlement_changes (
    id             TEXT PRIMARY KEY,
    entitlement_id TEXT NOT NULL REFERENCES entitlements (id) ON DELETE CASCADE,
    account_id     TEXT,
    source         TEXT NOT NULL,
    cause          TEXT NOT NULL,
    from_state     TEXT NOT NULL,
    to_state       TEXT NOT NULL,
    plan           TEXT NOT NULL,
    expires_at     TIMESTAMPTZ NOT NULL,
    at             TIMESTAMPTZ NOT NULL
);
CREATE INDEX entitlement_changes_account ON entitlement_changes (account_id, at);
CREATE INDEX entitlement_changes_entitlement ON entitlement_changes (entitlement_id, at);

-- What the stores sent, kept before it is answered, keyed by the store's
-- own id so that a repeat is recognised; a job works each.
CREATE TABLE billing_notifications (
    source       TEXT NOT NULL,
    id           TEXT NOT NULL,
    kind         TEXT NOT NULL,
    payload      TEXT NOT NULL,
    inbound      TEXT NOT NULL,
    received_at  TIMESTAMPTZ NOT NULL,
    processed_at TIMESTAMPTZ,
    outcome      TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (source, id)
);

ALTER TABLE accounts
    ADD COLUMN subscription_source        TEXT    NOT NULL DEFAULT '',
    ADD COLUMN subscription_auto_renew    BOOLEAN NOT NULL DEFAULT FALSE,
    ADD COLUMN subscription_grace_ends_at TIMESTAMPTZ;

-- Each existing account's subscription becomes its first entitlement: the
-- trial's, or an administrator's grant for any other plan.
INSERT INTO entitlements (id, account_id, source, external_id, plan, state, started_at, expires_at, observed_at, changed_at, created_at)
SELECT 'migrated-' || id, id,
       CASE WHEN subscription_plan = 'trial' THEN 'trial' ELSE 'admin' END,
       id, subscription_plan,
       CASE WHEN subscription_expires_at <= now() THEN 'expired'
            WHEN subscription_plan = 'trial' THEN 'trial' ELSE 'active' END,
       created_at, subscription_expires_at, subscription_updated_at, subscription_updated_at, created_at
FROM accounts WHERE deleted_at IS NULL AND subscription_plan <> '';
UPDATE accounts SET subscription_source = CASE WHEN subscription_plan = 'trial' THEN 'trial' ELSE 'admin' END
WHERE deleted_at IS NULL AND subscription_plan <> '';
