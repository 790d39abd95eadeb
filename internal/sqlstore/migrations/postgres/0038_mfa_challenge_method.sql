-- The method of a login's first step (pwd, apple, google), so that the
-- session its second step opens says how it was proved (amr): a Google
-- sign-in completed with a TOTP code is ["google","otp"], not ["pwd","otp"].
ALTER TABLE mfa_challenges ADD COLUMN first_method TEXT NOT NULL DEFAULT 'pwd';
