package accounts

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/shed"
	"github.com/herald-vpn/herald/internal/storage"
)

// ByID returns an account.
func (s *Service) ByID(ctx context.Context, id string) (Account, error) {
	acct, err := s.store.AccountByID(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return Account{}, apperr.New(apperr.UserNotFound)
	}
	return acct, err
}

// Profile is the account as its owner sees it (users/me): ID, Email,
// EmailVerifiedAt, ReferralCode, CreatedAt, Subscription and Locale; every
// other field is zero. USER_NOT_FOUND when it is unknown or deleted.
func (s *Service) Profile(ctx context.Context, id string) (Account, error) {
	acct, err := s.store.AccountProfile(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return Account{}, apperr.New(apperr.UserNotFound)
	}
	return acct, err
}

// Now is the service's clock, for transports that render statuses.
func (s *Service) Now() time.Time { return s.now() }

// CheckCredentials returns the account whose email and password these are.
// An unknown email and a wrong password give the same error after about
// the same work (a dummy hash is checked); a disabled or unverified
// account is told so only once its password was right. A hash of weaker
// cost than the current one is replaced.
func (s *Service) CheckCredentials(ctx context.Context, email, plain string) (Account, error) {
	if s.captcha == nil {
		return s.checkCredentials(ctx, email, plain)
	}
	// After repeated failures for this email, a login needs a CAPTCHA;
	// the failures are counted per address, known or not, so the demand
	// tells nothing about whether an account exists.
	key := captchaKey(email)
	if s.captcha.LoginNeedsCaptcha(ctx, key) {
		if err := s.captcha.Require(ctx, "login"); err != nil {
			return Account{}, err
		}
	}
	acct, err := s.checkCredentials(ctx, email, plain)
	switch {
	case err == nil:
		s.captcha.LoginSucceeded(context.WithoutCancel(ctx), key)
	case apperr.Is(err, apperr.InvalidCredentials):
		s.captcha.LoginFailed(context.WithoutCancel(ctx), key)
	}
	return acct, err
}

// captchaKey is the address a login's failures are counted under.
func captchaKey(email string) string {
	if norm, err := NormalizeEmail(email); err == nil {
		return norm
	}
	return strings.ToLower(strings.TrimSpace(email))
}

func (s *Service) checkCredentials(ctx context.Context, email, plain string) (Account, error) {
	badCredentials := apperr.New(apperr.InvalidCredentials)
	norm, err := NormalizeEmail(email)
	if err != nil || plain == "" || len(plain) > 4*MaxPasswordLen {
		if err := s.hasher.VerifyDummy(ctx, plain); err != nil {
			return Account{}, err // refused as a known account would be
		}
		return Account{}, badCredentials
	}
	acct, err := s.store.AccountByEmail(ctx, norm)
	if errors.Is(err, storage.ErrNotFound) {
		if err := s.hasher.VerifyDummy(ctx, plain); err != nil {
			return Account{}, err // refused as a known account would be
		}
		return Account{}, badCredentials
	}
	if err != nil {
		return Account{}, err
	}
	if acct.PasswordHash == "" {
		// An account made by a provider's sign-in has no password until
		// its owner sets one (a reset): refused as a wrong one is.
		if err := s.hasher.VerifyDummy(ctx, plain); err != nil {
			return Account{}, err
		}
		s.recordFailure(ctx, loginFailed(acct.ID, securitylog.Failed, "no_password"))
		return Account{}, badCredentials
	}
	ok, rehash, err := s.hasher.Verify(ctx, plain, acct.PasswordHash)
	if ctx.Err() != nil {
		return Account{}, ctx.Err() // the caller went away
	}
	if busy, isBusy := errors.AsType[*shed.Refused](err); isBusy {
		// Hashing is at capacity: "later", as for an unknown account,
		// and no judgement on the password.
		return Account{}, busy
	}
	if err != nil || !ok {
		if err != nil && ctx.Err() == nil {
			s.logger.ErrorContext(ctx, "stored password hash unreadable", "account_id", acct.ID, "err", err)
		}
		s.recordFailure(ctx, loginFailed(acct.ID, securitylog.Failed, "password"))
		return Account{}, badCredentials
	}
	if acct.Disabled() {
		s.recordFailure(ctx, loginFailed(acct.ID, securitylog.Refused, "disabled"))
		return Account{}, apperr.New(apperr.AccountDisabled)
	}
	if !acct.Verified() {
		s.recordFailure(ctx, loginFailed(acct.ID, securitylog.Refused, "unverified"))
		return Account{}, apperr.New(apperr.EmailNotVerified)
	}
	if rehash {
		if h, err := s.hasher.Hash(ctx, plain); err == nil {
			if err := s.store.RehashPassword(ctx, acct.ID, h); err != nil {
				s.logger.WarnContext(ctx, "password rehash not saved", "account_id", acct.ID, "err", err)
			}
		}
	}
	s.markIfBreached(ctx, &acct, plain)
	return acct, nil
}

// loginFailed is the entry of a password sign-in of a known account that
// did not open a session, and why (detail.reason).
func loginFailed(accountID string, o securitylog.Outcome, reason string) securitylog.Event {
	return securitylog.Event{AccountID: accountID, Kind: securitylog.LoginFailed, Outcome: o, Detail: map[string]string{"method": "password", "reason": reason}}
}

// RequestPasswordReset emails a reset code when the account exists and the
// resend limits allow it. It answers the same in every case, and the email
// goes through the durable job queue, so neither the answer nor its timing
// tells whether an account exists.
func (s *Service) RequestPasswordReset(ctx context.Context, email string) error {
	if err := s.requireCaptcha(ctx, "password_reset"); err != nil {
		return err
	}
	acct, _, found, err := s.lookup(ctx, email)
	if err != nil || !found {
		return err
	}
	if err := s.checkSendLimits(ctx, acct.ID, PurposeReset); err != nil {
		if apperr.Is(err, apperr.RateLimited) {
			s.logger.InfoContext(ctx, "password reset request over the resend limits", "account_id", acct.ID)
			return nil
		}
		return err
	}
	return s.store.EnqueueJob(ctx, CodeEmailArgs{AccountID: acct.ID, Purpose: PurposeReset, Requested: true})
}

// ResetPassword checks a reset code, sets the new password and revokes
// every session of the account. The code proves the mailbox, so an
// unverified account becomes verified too.
func (s *Service) ResetPassword(ctx context.Context, email, code, newPassword string) error {
	if err := s.validateNewPassword(ctx, newPassword); err != nil {
		return err
	}
	acct, _, found, err := s.lookup(ctx, email)
	if err != nil {
		return err
	}
	if !found {
		// As for a wrong code: the answer must not reveal the account.
		return apperr.Newf(apperr.InvalidVerificationCode, "The code is not valid.").With("attemptsRemaining", 0)
	}
	hash, err := s.hasher.Hash(ctx, newPassword)
	if err != nil {
		return err
	}
	return s.consumeCode(ctx, acct, PurposeReset, code, CodeEffect{MarkVerified: true, NewPasswordHash: hash, RevokeSessions: true,
		Record: s.recorder(securitylog.Event{AccountID: acct.ID, Kind: securitylog.PasswordReset, Outcome: securitylog.OK, Detail: map[string]string{"sessionsRevoked": "true"}})})
}

// GrantAdmin makes the account an operator, creating it verified when it
// does not exist. It returns the account id.
func (s *Service) GrantAdmin(ctx context.Context, email, plain string) (string, bool, error) {
	acct, norm, found, err := s.lookup(ctx, email)
	if err != nil {
		return "", false, err
	}
	if found {
		if !acct.HasScope(auth.ScopeAdmin) {
			if err := s.store.SetScope(ctx, acct.ID, strings.TrimSpace(acct.Scope+" "+auth.ScopeAdmin), false, nil); err != nil {
				return "", false, err
			}
		}
		return acct.ID, false, nil
	}
	if err := ValidatePassword(plain); err != nil {
		return "", false, err
	}
	hash, err := s.hasher.Hash(ctx, plain)
	if err != nil {
		return "", false, err
	}
	res, err := s.create(ctx, norm, hash, "", true, auth.ScopeAdmin, "")
	if err != nil {
		return "", false, err
	}
	return res.Account.ID, true, nil
}

// RevokeAdmin takes the admin scope away and ends the account's sessions;
// LAST_ADMIN when it is the last enabled admin.
func (s *Service) RevokeAdmin(ctx context.Context, email string) error {
	acct, _, found, err := s.lookup(ctx, email)
	if err != nil {
		return err
	}
	if !found {
		return apperr.New(apperr.UserNotFound)
	}
	var kept []string
	for _, sc := range acct.Scopes() {
		if sc != auth.ScopeAdmin {
			kept = append(kept, sc)
		}
	}
	return s.store.SetScope(ctx, acct.ID, strings.Join(kept, " "), true, keepAnAdmin)
}
