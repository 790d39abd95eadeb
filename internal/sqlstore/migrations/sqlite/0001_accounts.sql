CREATE TABLE accounts (
    id                TEXT PRIMARY KEY,
    email             TEXT NOT NULL UNIQUE,
    password_hash     TEXT NOT NULL,
    email_verified_at TIMESTAMP,
    referral_code     TEXT NOT NULL UNIQUE,
    scope             TEXT NOT NULL DEFAULT '',
    created_at        TIMESTAMP NOT NULL
);

CREATE TABLE subscriptions (
    account_id TEXT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
    plan       TEXT NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);

-- One row per referred account: the bonus is applied once.
CREATE TABLE referral_rewards (
    referred_id   TEXT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
    referrer_id   TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    bonus_seconds INTEGER NOT NULL,
    created_at    TIMESTAMP NOT NULL
);

-- The live code of each purpose; a new code replaces the row, which
-- invalidates every earlier one.
CREATE TABLE one_time_codes (
    account_id    TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    purpose       TEXT NOT NULL,
    code_hash     BLOB NOT NULL,
    expires_at    TIMESTAMP NOT NULL,
    attempts_left INTEGER NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (account_id, purpose)
);

-- Every code email sent, for the resend cooldown and hourly cap.
CREATE TABLE code_sends (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    purpose    TEXT NOT NULL,
    requested  INTEGER NOT NULL, -- 1 when a user asked (resend), 0 for the signup email
    sent_at    TIMESTAMP NOT NULL
);
CREATE INDEX code_sends_account ON code_sends (account_id, purpose, sent_at);

-- A short lease so that one code email per account and purpose is in flight.
CREATE TABLE code_send_leases (
    account_id   TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    purpose      TEXT NOT NULL,
    locked_until TIMESTAMP NOT NULL,
    PRIMARY KEY (account_id, purpose)
);

-- Server-side secrets generated on first start (code hashing key, …).
CREATE TABLE secrets (
    name       TEXT PRIMARY KEY,
    value      BLOB NOT NULL,
    created_at TIMESTAMP NOT NULL
);
