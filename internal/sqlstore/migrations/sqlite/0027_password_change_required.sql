-- A login with a password found in a breach corpus marks the account to change it (accounts.Service.CheckCredentials); a new password clears it.
ALTER TABLE accounts ADD COLUMN password_change_required BOOLEAN NOT NULL DEFAULT FALSE;
