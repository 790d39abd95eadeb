-- Passkeys (issue 25): WebAuthn credentials (the library's credential
-- record as JSON, its id and signature counter as columns) and the
-- ceremonies begun and not yet finished (their challenge and session
-- data), kept here so that any replica finishes what another began.
CREATE TABLE passkey_credentials (
    id                  TEXT PRIMARY KEY,
    account_id          TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    credential_id       BYTEA NOT NULL UNIQUE,
    name                TEXT NOT NULL DEFAULT '',
    record              TEXT NOT NULL,
    sign_count          BIGINT NOT NULL DEFAULT 0,
    counter_regressions INTEGER NOT NULL DEFAULT 0,
    last_regression_at  TIMESTAMPTZ,
    created_at          TIMESTAMPTZ NOT NULL,
    last_used_at        TIMESTAMPTZ
);
CREATE INDEX passkey_credentials_account ON passkey_credentials (account_id);

CREATE TABLE passkey_ceremonies (
    id         TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    account_id TEXT REFERENCES accounts (id) ON DELETE CASCADE,
    challenge  TEXT NOT NULL UNIQUE,
    session    TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ
);
CREATE INDEX passkey_ceremonies_expires ON passkey_ceremonies (expires_at);
