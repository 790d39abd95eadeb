-- Refunds of earlier periods (issue 24): the refunds and revocations of
-- store transactions Herald has recorded, keyed by the store's transaction
-- id, so that one read again (the App Store's transaction history at each
-- reconciliation, a notification) records nothing the second time.
CREATE TABLE billing_revocations (
    source         TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    entitlement_id TEXT NOT NULL REFERENCES entitlements (id) ON DELETE CASCADE,
    recorded_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (source, transaction_id)
);

-- Where the read of each purchase's history in its store got to (the App
-- Store's revision): the next reconciliation reads only what changed
-- since.
CREATE TABLE billing_history_cursors (
    entitlement_id TEXT PRIMARY KEY REFERENCES entitlements (id) ON DELETE CASCADE,
    revision       TEXT NOT NULL,
    read_at        TIMESTAMPTZ NOT NULL
);
