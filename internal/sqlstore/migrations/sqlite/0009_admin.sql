-- The admin API. A disabled account keeps everything but cannot log in;
-- a deleted one is a tombstone: its id and deleted_at stay (so that ids
-- referenced elsewhere still mean something), while its email, password
-- hash and referral code are overwritten with values derived from the id
-- and everything else personal is deleted.
ALTER TABLE accounts ADD COLUMN disabled_at TIMESTAMP;
ALTER TABLE accounts ADD COLUMN disabled_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE accounts ADD COLUMN last_login_at TIMESTAMP;
ALTER TABLE accounts ADD COLUMN deleted_at TIMESTAMP;

-- What a user's own session list shows: the client as last seen, at login
-- and at each refresh.
ALTER TABLE sessions ADD COLUMN last_used_at TIMESTAMP;
ALTER TABLE sessions ADD COLUMN user_agent TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN ip TEXT NOT NULL DEFAULT '';
