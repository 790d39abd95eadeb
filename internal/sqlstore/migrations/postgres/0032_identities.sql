-- Sign in with Apple and Google (issue 25): the provider identities an
-- account holds, one per (provider, subject). revoke_token is Apple's
-- refresh token, sealed and bound to its row, kept only to revoke it
-- when the account is deleted.
CREATE TABLE identities (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    provider      TEXT NOT NULL,
    subject       TEXT NOT NULL,
    email         TEXT NOT NULL DEFAULT '',
    private_relay BOOLEAN NOT NULL DEFAULT FALSE,
    revoke_token  BYTEA,
    created_at    TIMESTAMPTZ NOT NULL,
    last_used_at  TIMESTAMPTZ,
    UNIQUE (provider, subject)
);
CREATE INDEX identities_account ON identities (account_id);
