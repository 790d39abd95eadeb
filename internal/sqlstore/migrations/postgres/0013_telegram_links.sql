-- The account a subscriber's chat is linked to (NULL: not linked). One
-- chat per account: linking another chat moves the link.
ALTER TABLE telegram_subscribers ADD COLUMN user_id TEXT REFERENCES accounts(id) ON DELETE SET NULL;
CREATE UNIQUE INDEX telegram_subscribers_user ON telegram_subscribers (user_id);

-- One-time tokens of messengerLinkUrl, kept by their SHA-256 (hex) only.
-- used_at is set by the /start that consumes one; housekeeping deletes
-- rows past their expiry.
CREATE TABLE telegram_link_tokens (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX telegram_link_tokens_expires ON telegram_link_tokens (expires_at);
