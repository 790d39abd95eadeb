-- Second factors (issue 25): a session's assurance level and the methods
-- that proved it, TOTP factors (secrets sealed), recovery codes (keyed
-- hashes), the wrong-code count of the lockout and login challenges.
ALTER TABLE sessions
    ADD COLUMN aal TEXT NOT NULL DEFAULT 'aal1',
    ADD COLUMN amr TEXT NOT NULL DEFAULT 'pwd';

CREATE TABLE mfa_factors (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind         TEXT NOT NULL,
    name         TEXT NOT NULL DEFAULT '',
    secret       BYTEA NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    confirmed_at TIMESTAMPTZ,
    last_step    BIGINT NOT NULL DEFAULT 0,
    last_used_at TIMESTAMPTZ
);
CREATE INDEX mfa_factors_account ON mfa_factors (account_id);

CREATE TABLE mfa_recovery_codes (
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    code_hash  BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ,
    PRIMARY KEY (account_id, code_hash)
);

CREATE TABLE mfa_failures (
    account_id   TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    count        INTEGER NOT NULL DEFAULT 0,
    locked_until TIMESTAMPTZ
);

CREATE TABLE mfa_challenges (
    token_hash BYTEA PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ
);
CREATE INDEX mfa_challenges_expires ON mfa_challenges (expires_at);
