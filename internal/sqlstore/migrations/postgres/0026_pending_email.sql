-- An email change waits for the new address's code here (accounts.Service.RequestEmailChange).
ALTER TABLE accounts ADD COLUMN pending_email TEXT;
