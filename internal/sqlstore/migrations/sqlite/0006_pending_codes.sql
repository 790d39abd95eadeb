-- A code whose email is being sent. It is valid already, so a user who
-- types it the moment the email arrives is not refused; it is dropped if
-- the send fails, so the code the user already had stays the only one.
CREATE TABLE pending_codes (
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    purpose    TEXT NOT NULL,
    code_hash  BLOB NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    PRIMARY KEY (account_id, purpose)
);
