-- API keys of other services. Only an HMAC-SHA256 of the secret is kept;
-- scopes are space-separated; rate_limit 0 is the apikey tier's default.
CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    secret_hash  BYTEA NOT NULL,
    rate_limit   INTEGER NOT NULL,
    expires_at   TIMESTAMPTZ,
    created_at   TIMESTAMPTZ NOT NULL,
    last_used_at TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ
);
