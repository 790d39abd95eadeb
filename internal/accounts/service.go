package accounts

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/password"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/storage"
)

// Config holds the account rules an operator may tune.
type Config struct {
	CodeTTL           time.Duration // validity of a one-time code
	CodeAttempts      int           // wrong attempts a code survives
	ResendCooldown    time.Duration // between two user-requested code emails
	ResendHourlyLimit int           // user-requested code emails per sliding hour
	TrialPeriod       time.Duration
	ReferralBonus     time.Duration
	SendTimeout       time.Duration // bound on one synchronous email send
	// CodeKey keys the code hashes; empty: a key generated once and kept
	// in the database.
	CodeKey []byte
	// Now is the clock (default time.Now in UTC).
	Now func() time.Time
	// Emails composes the code emails; nil: the embedded templates, for
	// the product "Herald".
	Emails *mail.Templates
	// CancelEmailChangeURL is the page that cancels an email change; the
	// old address's notice links to it with ?token=. Empty: the notice
	// has no link (the server knows no public URL).
	CancelEmailChangeURL string
	// DeviceLimit ranks plans (subscriptions.Service.DeviceLimit) when an
	// account holds several entitlements; nil ranks them alike.
	DeviceLimit func(plan string) int
	// RecentSignIn is how recent the sign-in of a session must be for an
	// account without a password to delete itself (default 10 minutes).
	RecentSignIn time.Duration
}

// DefaultConfig is the spec's numbers.
func DefaultConfig() Config {
	return Config{
		CodeTTL:           15 * time.Minute,
		CodeAttempts:      5,
		ResendCooldown:    60 * time.Second,
		ResendHourlyLimit: 5,
		TrialPeriod:       168 * time.Hour,
		ReferralBonus:     168 * time.Hour,
		SendTimeout:       15 * time.Second,
		RecentSignIn:      DefaultRecentSignIn,
	}
}

// DefaultRecentSignIn is Config.RecentSignIn's default.
const DefaultRecentSignIn = 10 * time.Minute

// Service is the account lifecycle.
type Service struct {
	store   Store
	hasher  *password.Hasher
	mailer  Mailer
	cfg     Config
	codeKey []byte
	logger  *slog.Logger
	now     func() time.Time
	emails  *mail.Templates
	stepUp  auth.StepUp
	// breaches checks new passwords against a breach corpus; nil: off.
	breaches BreachChecker
	// captcha guards signup, resend, reset requests and logins after
	// repeated failures; nil: off.
	captcha Captcha
	// seclog is the security log; nil records nothing.
	seclog *securitylog.Log
}

// Captcha is the CAPTCHA guard (captcha.Guard): Require checks the token
// of the request in ctx for an action; the Login methods count an
// account's failed logins, after which its logins need a token too.
type Captcha interface {
	Require(ctx context.Context, action string) error
	LoginNeedsCaptcha(ctx context.Context, key string) bool
	LoginFailed(ctx context.Context, key string)
	LoginSucceeded(ctx context.Context, key string)
}

// SetCaptcha makes signup, resend, password reset requests and logins
// after repeated failures need a CAPTCHA (set once, before serving).
func (s *Service) SetCaptcha(c Captcha) { s.captcha = c }

// SetSecurityLog makes the service (and those built on it: sessions,
// second factors, passkeys) record security events in l (set once,
// before serving).
func (s *Service) SetSecurityLog(l *securitylog.Log) { s.seclog = l }

// SecurityLog is the log set by SetSecurityLog (nil: none; its Record is
// then a no-op).
func (s *Service) SecurityLog() *securitylog.Log { return s.seclog }

// recorder is a CodeEffect's Record of e (nil without a log).
func (s *Service) recorder(e securitylog.Event) func(ctx context.Context) error {
	if s.seclog == nil {
		return nil
	}
	return func(ctx context.Context) error { return s.seclog.Record(ctx, e) }
}

// recordFailure writes an entry of a refused attempt in its own
// transaction; a failure to write it is logged, never the caller's.
func (s *Service) recordFailure(ctx context.Context, e securitylog.Event) {
	if err := s.seclog.Record(context.WithoutCancel(ctx), e); err != nil {
		s.logger.WarnContext(ctx, "security log entry not written", "kind", e.Kind, "account_id", e.AccountID, "err", err)
	}
}

// requireCaptcha checks the request's CAPTCHA for action, if one is set.
func (s *Service) requireCaptcha(ctx context.Context, action string) error {
	if s.captcha == nil {
		return nil
	}
	return s.captcha.Require(ctx, action)
}

// BreachChecker says how many times a password has appeared in breaches
// (pwned.Checker). An error means it could not tell.
type BreachChecker interface {
	Breached(ctx context.Context, plain string) (int, error)
}

// SetBreachChecker makes signup, reset and password change refuse a
// password seen in a breach (set once, before serving).
func (s *Service) SetBreachChecker(c BreachChecker) { s.breaches = c }

// markIfBreached marks the account to change its password when a login's
// (right) password is in the breach corpus. The login goes on either way;
// a corpus that cannot answer leaves the account as it was.
func (s *Service) markIfBreached(ctx context.Context, acct *Account, plain string) {
	if s.breaches == nil {
		return
	}
	n, err := s.breaches.Breached(ctx, plain)
	if err != nil {
		s.logger.WarnContext(ctx, "breached-password check at login could not answer (fail open)", "account_id", acct.ID, "error", err)
		return
	}
	if n == 0 {
		return
	}
	if err := s.store.SetPasswordChangeRequired(ctx, acct.ID); err != nil {
		s.logger.WarnContext(ctx, "breached password at login not marked", "account_id", acct.ID, "err", err)
		return
	}
	acct.PasswordChangeRequired = true
}

// validateNewPassword applies the password rules, then the breach check.
// The breach check fails open: a corpus that cannot answer (down, slow)
// is logged and the password accepted, since refusing every signup while
// a third party is down would be worse than the risk it guards against.
func (s *Service) validateNewPassword(ctx context.Context, plain string) error {
	if err := ValidatePassword(plain); err != nil {
		return err
	}
	if s.breaches == nil {
		return nil
	}
	n, err := s.breaches.Breached(ctx, plain)
	if err != nil {
		s.logger.WarnContext(ctx, "breached-password check could not answer; the password is accepted (fail open)", "error", err)
		return nil
	}
	if n > 0 {
		return apperr.Newf(apperr.WeakPassword, "The password has appeared in a data breach; choose another.").
			With("requirements", PasswordRequirements()).
			With("failedChecks", []string{CheckBreached})
	}
	return nil
}

// SetStepUp makes the sensitive operations (deleting one's own account)
// need a session at aal2 when the account has a second factor (set
// once, before serving).
func (s *Service) SetStepUp(c auth.StepUp) { s.stepUp = c }

// NewService loads (or creates) the code-hashing key and returns the service.
func NewService(ctx context.Context, store Store, hasher *password.Hasher, mailer Mailer, cfg Config, logger *slog.Logger) (*Service, error) {
	now := cfg.Now
	if now == nil {
		now = func() time.Time { return time.Now().UTC() }
	}
	if cfg.CodeAttempts <= 0 {
		cfg.CodeAttempts = 5
	}
	if cfg.SendTimeout <= 0 {
		cfg.SendTimeout = 15 * time.Second
	}
	emails := cfg.Emails
	if emails == nil {
		var err error
		if emails, err = mail.LoadTemplates("", mail.Brand{}); err != nil {
			return nil, err
		}
	}
	key := cfg.CodeKey
	if len(key) == 0 {
		var err error
		key, err = store.Secret(ctx, "code_hash_key", func() ([]byte, error) {
			b := make([]byte, 32)
			_, err := rand.Read(b)
			return b, err
		})
		if err != nil {
			return nil, fmt.Errorf("load code hashing key: %w", err)
		}
	}
	return &Service{store: store, hasher: hasher, mailer: mailer, cfg: cfg, codeKey: key, logger: logger, now: now, emails: emails}, nil
}

// SignupResult is what a signup did.
type SignupResult struct {
	Account         Account
	ReferralApplied bool
}

// Signup creates an unverified account with a trial subscription and queues
// its verification email in the same transaction. lang decides the
// account's locale, the language of its emails.
func (s *Service) Signup(ctx context.Context, email, plain, referral string, lang Language) (SignupResult, error) {
	if err := s.requireCaptcha(ctx, "signup"); err != nil {
		return SignupResult{}, err
	}
	email, err := NormalizeEmail(email)
	if err != nil {
		return SignupResult{}, err
	}
	if err := s.validateNewPassword(ctx, plain); err != nil {
		return SignupResult{}, err
	}
	locale, err := s.chooseLocale(lang)
	if err != nil {
		return SignupResult{}, err
	}
	// Spare the hashing cost when the answer is already known.
	if _, err := s.store.AccountByEmail(ctx, email); err == nil {
		return SignupResult{}, apperr.New(apperr.EmailExists)
	} else if !errors.Is(err, storage.ErrNotFound) {
		return SignupResult{}, err
	}
	hash, err := s.hasher.Hash(ctx, plain)
	if err != nil {
		return SignupResult{}, err
	}
	return s.create(ctx, email, hash, referral, false, "", locale)
}

// create stores a new account. A clash on the random referral code is
// retried with a new one; a clash on the email means another signup won the
// race. Unverified accounts get their verification email queued in the
// same transaction.
func (s *Service) create(ctx context.Context, email, hash, referral string, verified bool, scope, locale string) (SignupResult, error) {
	return s.createAccount(ctx, email, hash, referral, verified, scope, locale, "")
}

// createGuest stores a new guest account of an app install: a
// placeholder address, no password, no verification email.
func (s *Service) createGuest(ctx context.Context, installID, locale string) (SignupResult, error) {
	return s.createAccount(ctx, "", "", "", false, "", locale, installID)
}

func (s *Service) createAccount(ctx context.Context, email, hash, referral string, verified bool, scope, locale, guestInstall string) (SignupResult, error) {
	uid, err := uuid.NewV7()
	if err != nil {
		return SignupResult{}, err
	}
	id := uid.String()
	if guestInstall != "" {
		email = "guest-" + id + GuestDomain
	}
	for attempt := 0; attempt < 5; attempt++ {
		code, err := newReferralCode()
		if err != nil {
			return SignupResult{}, err
		}
		n := NewAccount{
			ID:             id,
			Email:          email,
			PasswordHash:   hash,
			ReferralCode:   code,
			Trial:          s.cfg.TrialPeriod,
			Referral:       normalizeReferral(referral),
			ReferralBonus:  s.cfg.ReferralBonus,
			DeviceLimit:    s.cfg.DeviceLimit,
			Verified:       verified,
			Scope:          scope,
			Locale:         locale,
			GuestInstallID: guestInstall,
		}
		if !verified && guestInstall == "" {
			n.Job = CodeEmailArgs{AccountID: id, Purpose: PurposeVerify}
		}
		acct, applied, err := Create(ctx, s.store, n)
		if err == nil {
			return SignupResult{Account: acct, ReferralApplied: applied}, nil
		}
		if !errors.Is(err, storage.ErrConflict) {
			return SignupResult{}, err
		}
		if guestInstall != "" {
			// The install's one live guest was made by a racing call:
			// the caller takes that one (Guest), not another try.
			if _, err := s.store.GuestByInstall(ctx, guestInstall); err == nil {
				return SignupResult{}, storage.ErrConflict
			}
		} else if _, err := s.store.AccountByEmail(ctx, email); err == nil {
			return SignupResult{}, apperr.New(apperr.EmailExists)
		}
	}
	return SignupResult{}, errors.New("signup: could not find a free referral code")
}

// lookup finds the account of a user-typed address: INVALID_EMAIL for a
// malformed one, found false for an unknown one. It also returns the
// normalized address.
func (s *Service) lookup(ctx context.Context, raw string) (Account, string, bool, error) {
	email, err := NormalizeEmail(raw)
	if err != nil {
		return Account{}, "", false, err
	}
	acct, err := s.store.AccountByEmail(ctx, email)
	if errors.Is(err, storage.ErrNotFound) {
		return Account{}, email, false, nil
	}
	return acct, email, err == nil, err
}

// accountByEmail is lookup with EMAIL_NOT_FOUND for an unknown address.
func (s *Service) accountByEmail(ctx context.Context, raw string) (Account, error) {
	acct, _, found, err := s.lookup(ctx, raw)
	if err == nil && !found {
		return Account{}, apperr.New(apperr.EmailNotFound)
	}
	return acct, err
}

// ResendVerification emails a new verification code now, within the
// cooldown and hourly cap, and reports EMAIL_DELIVERY_FAILED when the mail
// server refuses or cannot be reached.
func (s *Service) ResendVerification(ctx context.Context, email string) error {
	if err := s.requireCaptcha(ctx, "resend"); err != nil {
		return err
	}
	acct, err := s.accountByEmail(ctx, email)
	if err != nil {
		return err
	}
	if acct.Verified() {
		return apperr.New(apperr.AlreadyVerified)
	}
	return s.SendRequestedCode(ctx, acct, PurposeVerify)
}

// SendRequestedCode sends a code the user asked for, synchronously, under
// the resend limits. Twenty parallel requests send one email: the lease lets
// one through and the others are told to wait.
func (s *Service) SendRequestedCode(ctx context.Context, acct Account, p Purpose) error {
	if err := s.checkSendLimits(ctx, acct.ID, p); err != nil {
		return err
	}
	ok, err := s.store.AcquireSendLease(ctx, acct.ID, p, s.now().Add(s.leaseFor()))
	if err != nil {
		return err
	}
	if !ok {
		return rateLimited(s.cfg.ResendCooldown, "A code email is already on its way; wait before asking again.")
	}
	// A request that finished between the check and the lease has moved
	// the limits; look again now that nobody else can.
	if err := s.checkSendLimits(ctx, acct.ID, p); err != nil {
		s.store.ReleaseSendLease(context.WithoutCancel(ctx), acct.ID, p)
		return err
	}
	if err := s.sendCode(ctx, acct, p, true); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return apperr.New(apperr.EmailDeliveryFailed)
	}
	return nil
}

func (s *Service) checkSendLimits(ctx context.Context, accountID string, p Purpose) error {
	now := s.now()
	stats, err := s.store.SendStats(ctx, accountID, p, now.Add(-time.Hour))
	if err != nil {
		return err
	}
	if !stats.LastRequested.IsZero() {
		if wait := stats.LastRequested.Add(s.cfg.ResendCooldown).Sub(now); wait > 0 {
			return rateLimited(wait, "Wait before asking for another code.")
		}
	}
	if s.cfg.ResendHourlyLimit > 0 && stats.RequestedInWindow >= s.cfg.ResendHourlyLimit {
		wait := stats.OldestInWindow.Add(time.Hour).Sub(now)
		return rateLimited(wait, "Too many codes asked for in the last hour.")
	}
	return nil
}

func rateLimited(wait time.Duration, msg string) error {
	secs := apperr.WaitSeconds(wait)
	return apperr.Newf(apperr.RateLimited, "%s Retry in %d seconds.", msg, secs).WithRetryAfter(secs)
}

// leaseFor bounds how long a crashed sender can hold the lease.
func (s *Service) leaseFor() time.Duration { return s.cfg.SendTimeout + 5*time.Second }

// VerifyEmail checks a verification code and marks the account verified.
func (s *Service) VerifyEmail(ctx context.Context, email, code string) error {
	acct, err := s.accountByEmail(ctx, email)
	if err != nil {
		return err
	}
	if acct.Verified() {
		return apperr.New(apperr.AlreadyVerified)
	}
	return s.consumeCode(ctx, acct, PurposeVerify, code, CodeEffect{MarkVerified: true})
}

// consumeCode checks a code in constant time and applies effect when right.
func (s *Service) consumeCode(ctx context.Context, acct Account, p Purpose, code string, effect CodeEffect) error {
	want := hashCode(s.codeKey, acct.ID, p, code)
	matches := func(stored []byte) bool { return hmac.Equal(stored, want) }
	res, err := AttemptCode(ctx, s.store, acct.ID, p, matches, effect)
	if err != nil {
		return err
	}
	return res.Err()
}

// SignupMessage is the confirmation both doors show after a signup.
func SignupMessage(email string) string {
	return "Account created. We sent a verification code to " + email + "."
}

// Lookup is the account of an address, if any: found false for an
// unknown one, INVALID_EMAIL for a malformed one.
func (s *Service) Lookup(ctx context.Context, raw string) (Account, bool, error) {
	acct, _, found, err := s.lookup(ctx, raw)
	return acct, found, err
}

// CreateVerified creates a verified account without a password, for an
// identity whose provider verified the address (its owner signs in with
// that identity, or adds a password by a reset): EMAIL_EXISTS when the
// address is taken.
func (s *Service) CreateVerified(ctx context.Context, raw string, lang Language) (Account, error) {
	email, err := NormalizeEmail(raw)
	if err != nil {
		return Account{}, err
	}
	locale, err := s.chooseLocale(lang)
	if err != nil {
		return Account{}, err
	}
	res, err := s.create(ctx, email, "", "", true, "", locale)
	return res.Account, err
}

// SecurityEvents is a page of an account's security log (first 0: the
// default; after: the last entry's id of the page before):
// USER_NOT_FOUND for an unknown account, VALIDATION_ERROR for first out
// of 1..100 or a malformed after.
func (s *Service) SecurityEvents(ctx context.Context, accountID string, first int, after string) ([]securitylog.Event, bool, error) {
	if _, err := s.ByID(ctx, accountID); err != nil {
		return nil, false, err
	}
	page, more, err := s.seclog.Events(ctx, accountID, first, after)
	return page, more, logPageError(err, first, after)
}

// OperatorSecurityEvents reads a page of the operators' log: the entries
// of no account (an API key made or revoked at the command line), as
// SecurityEvents.
func (s *Service) OperatorSecurityEvents(ctx context.Context, first int, after string) ([]securitylog.Event, bool, error) {
	page, more, err := s.seclog.OperatorEvents(ctx, first, after)
	return page, more, logPageError(err, first, after)
}

// logPageError is the catalogue's error of a log page asked for badly.
func logPageError(err error, first int, after string) error {
	switch {
	case errors.Is(err, securitylog.ErrBadPage):
		return apperr.Invalid("first", fmt.Sprintf("between 1 and %d", securitylog.MaxPage), strconv.Itoa(first))
	case errors.Is(err, securitylog.ErrBadCursor):
		return apperr.Invalid("after", "the endCursor of a page before", after)
	}
	return err
}
