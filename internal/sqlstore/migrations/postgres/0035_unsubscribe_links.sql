-- Unsubscribe links (issue 26): a notification email's one-click link is
-- a signed token (accounts.SignLinkToken) naming the account, the
-- category, the channel and the token's own id. The token is single-use:
-- its first use writes this row, and a second finds it. Rows older than
-- the links' lifetime name only expired tokens; housekeeping deletes them.
CREATE TABLE unsubscribe_link_uses (
    token_id   TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    used_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX unsubscribe_link_uses_used_at ON unsubscribe_link_uses (used_at);
