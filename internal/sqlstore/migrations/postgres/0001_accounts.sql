CREATE TABLE accounts (
    id                TEXT PRIMARY KEY,
    email             TEXT NOT NULL UNIQUE,
    password_hash     TEXT NOT NULL,
    email_verified_at TIMESTAMPTZ,
    referral_code     TEXT NOT NULL UNIQUE,
    scope             TEXT NOT NULL DEFAULT '',
    created_at        TIMESTAMPTZ NOT NULL
);

CREATE TABLE subscriptions (
    account_id TEXT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
    plan       TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- One row per referred account: the bonus is applied once.
CREATE TABLE referral_rewards (
    referred_id   TEXT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
    referrer_id   TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    bonus_seconds INTEGER NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
);

-- The live code of each purpose; a new code replaces the row, which
-- invalidates every earlier one.
CREATE TABLE one_time_codes (
    account_id    TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    purpose       TEXT NOT NULL,
    code_hash     BYTEA NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL,
    attempts_left INTEGER NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account_id, purpose)
);

-- Every code email sent, for the resend cooldown and hourly cap.
CREATE TABLE code_sends (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    purpose    TEXT NOT NULL,
    requested  BOOLEAN NOT NULL, -- true when a user asked (resend), false for the signup email
    sent_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX code_sends_account ON code_sends (account_id, purpose, sent_at);

-- A short lease so that one code email per account and purpose is in flight.
CREATE TABLE code_send_leases (
    account_id   TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    purpose      TEXT NOT NULL,
    locked_until TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account_id, purpose)
);

-- Server-side secrets generated on first start (code hashing key, …).
CREATE TABLE secrets (
    name       TEXT PRIMARY KEY,
    value      BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
