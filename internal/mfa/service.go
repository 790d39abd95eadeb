package mfa

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image/png"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"cmp"
	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
	"github.com/riverqueue/river"
)

// Factor is one second factor of an account.
type Factor struct {
	ID        string
	AccountID string
	Kind      string // KindTOTP
	Name      string
	// Secret is the TOTP key (raw bytes); the store seals it.
	Secret      []byte
	CreatedAt   time.Time
	ConfirmedAt *time.Time // nil: enrolled, waiting for its first code
	LastStep    int64      // the last time step a code was accepted for
	LastUsedAt  *time.Time
}

// Active reports whether the factor was confirmed: only then does it
// guard logins.
func (f Factor) Active() bool { return f.ConfirmedAt != nil }

// Store is the persistence second factors need (the sqlstore).
type Store interface {
	storage.Transactor
	Emit(ctx context.Context, p webhooks.Payload) error
	EnqueueJob(ctx context.Context, args river.JobArgs) error
	Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error)
	// MFAFactors are the account's factors, oldest first.
	MFAFactors(ctx context.Context, accountID string) ([]Factor, error)
	// LockMFAFactor reads one factor of the account under a row lock
	// (inside InTx): storage.ErrNotFound when it has no such factor.
	LockMFAFactor(ctx context.Context, accountID, id string) (Factor, error)
	InsertMFAFactor(ctx context.Context, f Factor) error
	// UpdateMFAFactor writes a factor's confirmation and last use.
	UpdateMFAFactor(ctx context.Context, f Factor) error
	// DeleteMFAFactors deletes the account's factors that match (all when
	// ids is empty; pendingOnly keeps the confirmed ones) and reports how
	// many went.
	DeleteMFAFactors(ctx context.Context, accountID string, ids []string, pendingOnly bool) (int, error)
	// ReplaceRecoveryCodes drops the account's recovery codes and keeps
	// hashes instead (none: the account has no codes left).
	ReplaceRecoveryCodes(ctx context.Context, accountID string, hashes [][]byte) error
	// UseRecoveryCode marks the unused code of hash used: false when the
	// account has no such unused code; the unused codes left.
	UseRecoveryCode(ctx context.Context, accountID string, hash []byte) (used bool, left int, err error)
	RecoveryCodesLeft(ctx context.Context, accountID string) (int, error)
	// LockMFAFailures reads the account's wrong-code count under a lock
	// (inside InTx); SaveMFAFailures writes it.
	LockMFAFailures(ctx context.Context, accountID string) (Failures, error)
	SaveMFAFailures(ctx context.Context, accountID string, f Failures) error
	CreateMFAChallenge(ctx context.Context, c Challenge) error
	// LockMFAChallenge reads a challenge by hash under a row lock (inside
	// InTx): storage.ErrNotFound for none; UseMFAChallenge marks it used.
	LockMFAChallenge(ctx context.Context, hash []byte) (Challenge, error)
	UseMFAChallenge(ctx context.Context, hash []byte) error
	// HasActiveMFA reports whether the account has a confirmed TOTP
	// factor.
	HasActiveMFA(ctx context.Context, accountID string) (bool, error)
	// HasPasskey reports whether the account has a passkey: a factor too
	// (internal/passkeys owns them).
	HasPasskey(ctx context.Context, accountID string) (bool, error)
	// CountPasskeys is how many passkeys the account has.
	CountPasskeys(ctx context.Context, accountID string) (int, error)
	// DeletePasskeys deletes every passkey of the account (an admin's
	// reset) and reports how many went.
	DeletePasskeys(ctx context.Context, accountID string) (int, error)
}

// Config is the service's settings.
type Config struct {
	// Issuer names the service in authenticator apps (HERALD_PRODUCT_NAME).
	Issuer  string
	Lockout Lockout
	Now     func() time.Time
	Log     *slog.Logger
}

// Service enrolls and checks second factors.
type Service struct {
	store    Store
	accounts *accounts.Service
	sessions *sessions.Service
	cfg      Config
	now      func() time.Time
	codeKey  []byte
}

// NewService returns the service and makes every login of sess ask it for
// a second factor.
func NewService(ctx context.Context, store Store, accts *accounts.Service, sess *sessions.Service, cfg Config) (*Service, error) {
	key, err := store.Secret(ctx, "mfa_recovery_hash_key", func() ([]byte, error) {
		b := make([]byte, 32)
		_, err := randRead(b)
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("load recovery code hashing key: %w", err)
	}
	if cfg.Issuer == "" {
		cfg.Issuer = "Herald"
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	now := cfg.Now
	if now == nil {
		now = func() time.Time { return time.Now().UTC() }
	}
	s := &Service{store: store, accounts: accts, sessions: sess, cfg: cfg, now: now, codeKey: key}
	sess.SetSecondFactor(s)
	return s, nil
}

// Enrollment is a new TOTP factor waiting for its first code: the secret
// in base32, the otpauth:// URI and its QR code (a PNG data URL).
type Enrollment struct {
	Factor Factor
	Secret string
	URI    string
	QRCode string
}

// EnrollTOTP starts a TOTP factor for the caller: MFA_ALREADY_ENROLLED
// when one is active; an earlier unconfirmed one is replaced.
func (s *Service) EnrollTOTP(ctx context.Context, p auth.Principal, name string) (Enrollment, error) {
	acct, err := s.accounts.ByID(ctx, p.AccountID)
	if err != nil {
		return Enrollment{}, err
	}
	name = strings.TrimSpace(name)
	if len([]rune(name)) > 64 {
		return Enrollment{}, apperr.Invalid("name", "at most 64 characters", fmt.Sprintf("%d characters", len([]rune(name))))
	}
	if name == "" {
		name = "Authenticator app"
	}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: s.cfg.Issuer, AccountName: cmp.Or(acct.Address(), acct.ID), Period: uint(Period / time.Second), Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1, SecretSize: 20})
	if err != nil {
		return Enrollment{}, err
	}
	raw, err := base32NoPad.DecodeString(key.Secret())
	if err != nil {
		return Enrollment{}, err
	}
	img, err := key.Image(256, 256)
	if err != nil {
		return Enrollment{}, err
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return Enrollment{}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Enrollment{}, err
	}
	f := Factor{ID: id.String(), AccountID: acct.ID, Kind: KindTOTP, Name: name, Secret: raw, CreatedAt: s.now()}
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		if _, err := s.store.LockMFAFailures(ctx, acct.ID); err != nil { // serializes the account's enrollments
			return err
		}
		active, err := s.store.HasActiveMFA(ctx, acct.ID)
		if err != nil {
			return err
		}
		if active {
			return apperr.New(apperr.MFAAlreadyEnrolled)
		}
		if _, err := s.store.DeleteMFAFactors(ctx, acct.ID, nil, true); err != nil {
			return err
		}
		return s.store.InsertMFAFactor(ctx, f)
	})
	if err != nil {
		return Enrollment{}, err
	}
	return Enrollment{Factor: f, Secret: key.Secret(), URI: key.URL(), QRCode: "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())}, nil
}

// Confirmed is a factor made active by its first code: the recovery codes
// (shown this once; none when the account had some already) and the
// caller's session stepped up to aal2.
type Confirmed struct {
	Factor        Factor
	RecoveryCodes []string
	Tokens        sessions.Tokens
}

// ConfirmTOTP activates the caller's enrolled factor with its first code:
// MFA_FACTOR_NOT_FOUND for another's or an unknown factor,
// MFA_ALREADY_ENROLLED for one active already, MFA_CODE_INVALID for a
// wrong code (counted by the lockout).
func (s *Service) ConfirmTOTP(ctx context.Context, p auth.Principal, factorID, code string) (Confirmed, error) {
	c, err := ParseCode("code", code)
	if err != nil {
		return Confirmed{}, err
	}
	if c.Kind != KindTOTP {
		return Confirmed{}, apperr.Invalid("code", "the 6-digit code the authenticator app shows", "a recovery code")
	}
	var out Confirmed
	var codes []string
	err = s.checked(ctx, p.AccountID, func(ctx context.Context, now time.Time) (bool, error) {
		f, err := s.store.LockMFAFactor(ctx, p.AccountID, factorID)
		if errors.Is(err, storage.ErrNotFound) {
			return true, apperr.New(apperr.MFAFactorNotFound).With("factorId", factorID)
		}
		if err != nil {
			return true, err
		}
		if f.Active() {
			return true, apperr.New(apperr.MFAAlreadyEnrolled)
		}
		step, err := MatchTOTP(f.Secret, c.Value, now, f.LastStep)
		if err != nil {
			return false, err
		}
		f.ConfirmedAt, f.LastStep, f.LastUsedAt = &now, step, &now
		if err := s.store.UpdateMFAFactor(ctx, f); err != nil {
			return true, err
		}
		left, err := s.store.RecoveryCodesLeft(ctx, p.AccountID)
		if err != nil {
			return true, err
		}
		if left == 0 {
			if codes, err = s.replaceRecoveryCodes(ctx, p.AccountID); err != nil {
				return true, err
			}
		}
		out.Factor = f
		return true, s.accounts.SecurityLog().Record(ctx, securitylog.Event{AccountID: p.AccountID, Kind: securitylog.MFAEnrolled, Outcome: securitylog.OK,
			Detail: map[string]string{"factorId": f.ID, "type": string(f.Kind)}})
	})
	if err != nil {
		return Confirmed{}, err
	}
	out.RecoveryCodes = codes
	if out.Tokens, err = s.sessions.StepUp(ctx, p, auth.AMROTP); err != nil {
		return Confirmed{}, err
	}
	return out, nil
}

// Factors are the account's factors, oldest first.
func (s *Service) Factors(ctx context.Context, accountID string) ([]Factor, error) {
	return s.store.MFAFactors(ctx, accountID)
}

// Status is what an account's second factors are, for its owner and the
// admins: the factors, how many recovery codes are left and how many
// passkeys the account has (each a factor too).
type Status struct {
	Factors           []Factor
	RecoveryCodesLeft int
	Passkeys          int
}

// StatusOf is the account's second factors.
func (s *Service) StatusOf(ctx context.Context, accountID string) (Status, error) {
	fs, err := s.store.MFAFactors(ctx, accountID)
	if err != nil {
		return Status{}, err
	}
	left, err := s.store.RecoveryCodesLeft(ctx, accountID)
	if err != nil {
		return Status{}, err
	}
	passkeys, err := s.store.CountPasskeys(ctx, accountID)
	return Status{Factors: fs, RecoveryCodesLeft: left, Passkeys: passkeys}, err
}

// RemoveFactor removes one of the caller's factors (needs aal2 while the
// account has an active factor). The last active factor takes the
// recovery codes with it.
func (s *Service) RemoveFactor(ctx context.Context, p auth.Principal, factorID string) error {
	if err := s.RequireAAL2(ctx, p); err != nil {
		return err
	}
	return s.store.InTx(ctx, func(ctx context.Context) error {
		n, err := s.store.DeleteMFAFactors(ctx, p.AccountID, []string{factorID}, false)
		if err != nil {
			return err
		}
		if n == 0 {
			return apperr.New(apperr.MFAFactorNotFound).With("factorId", factorID)
		}
		if err := s.accounts.SecurityLog().Record(ctx, securitylog.Event{AccountID: p.AccountID, Kind: securitylog.MFARemoved, Outcome: securitylog.OK,
			Detail: map[string]string{"factorId": factorID}}); err != nil {
			return err
		}
		active, err := s.store.HasActiveMFA(ctx, p.AccountID)
		if err != nil || active {
			return err
		}
		return s.store.ReplaceRecoveryCodes(ctx, p.AccountID, nil)
	})
}

// RegenerateRecoveryCodes replaces the caller's recovery codes with ten
// new ones, shown this once (needs aal2; MFA_NOT_ENABLED without an
// active factor).
func (s *Service) RegenerateRecoveryCodes(ctx context.Context, p auth.Principal) ([]string, error) {
	if err := s.RequireAAL2(ctx, p); err != nil {
		return nil, err
	}
	var codes []string
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		active, err := s.store.HasActiveMFA(ctx, p.AccountID)
		if err != nil {
			return err
		}
		if !active {
			return apperr.New(apperr.MFANotEnabled)
		}
		if codes, err = s.replaceRecoveryCodes(ctx, p.AccountID); err != nil {
			return err
		}
		return s.accounts.SecurityLog().Record(ctx, securitylog.Event{AccountID: p.AccountID, Kind: securitylog.RecoveryCodesRegen, Outcome: securitylog.OK})
	})
	return codes, err
}

func (s *Service) replaceRecoveryCodes(ctx context.Context, accountID string) ([]string, error) {
	codes, err := NewRecoveryCodes(RecoveryCodes)
	if err != nil {
		return nil, err
	}
	hashes := make([][]byte, len(codes))
	for i, c := range codes {
		n, err := ParseCode("code", c)
		if err != nil {
			return nil, err
		}
		hashes[i] = HashRecoveryCode(s.codeKey, accountID, n.Value)
	}
	return codes, s.store.ReplaceRecoveryCodes(ctx, accountID, hashes)
}

// RequireAAL2 implements auth.StepUp: MFA_STEP_UP_REQUIRED for a user
// below aal2 whose account has an active factor. API keys are not users'
// sessions and pass (they hold no self-service operation).
func (s *Service) RequireAAL2(ctx context.Context, p auth.Principal) error {
	if p.Kind != auth.User || p.AAL == auth.AAL2 {
		return nil
	}
	active, err := s.HasFactor(ctx, p.AccountID)
	if err != nil {
		return err
	}
	if active {
		return apperr.New(apperr.MFAStepUpRequired).With("requiredAal", auth.AAL2).With("currentAal", auth.AAL1)
	}
	return nil
}

// HasFactor reports whether the account has a factor that guards it: an
// active TOTP factor or a passkey.
func (s *Service) HasFactor(ctx context.Context, accountID string) (bool, error) {
	active, err := s.store.HasActiveMFA(ctx, accountID)
	if err != nil || active {
		return active, err
	}
	return s.store.HasPasskey(ctx, accountID)
}

// Challenge implements sessions.SecondFactor: nil for an account without
// an active factor (TOTP or a passkey); otherwise MFA_REQUIRED with a
// fresh challenge (details challengeToken, expiresAt, factors: the kinds
// that may complete it). firstMethod is the amr of the step done (a
// password, or a provider's sign-in).
func (s *Service) Challenge(ctx context.Context, acct accounts.Account, firstMethod string) error {
	totpActive, err := s.store.HasActiveMFA(ctx, acct.ID)
	if err != nil {
		return err
	}
	passkey, err := s.store.HasPasskey(ctx, acct.ID)
	if err != nil {
		return err
	}
	if !totpActive && !passkey {
		return nil
	}
	tok, hash, err := NewChallenge()
	if err != nil {
		return err
	}
	now := s.now()
	c := Challenge{Hash: hash, AccountID: acct.ID, FirstMethod: firstMethod, CreatedAt: now, ExpiresAt: now.Add(ChallengeTTL)}
	if err := s.store.CreateMFAChallenge(ctx, c); err != nil {
		return err
	}
	var kinds []string
	if totpActive {
		kinds = append(kinds, KindTOTP)
	}
	if left, err := s.store.RecoveryCodesLeft(ctx, acct.ID); err != nil {
		return err
	} else if left > 0 {
		kinds = append(kinds, KindRecovery)
	}
	if passkey {
		kinds = append(kinds, KindPasskey)
	}
	return apperr.New(apperr.MFARequired).
		With("challengeToken", tok).
		With("expiresAt", c.ExpiresAt.UTC().Format(time.RFC3339)).
		With("factors", kinds)
}

// Proof proves a second factor of an account inside the unit of work of
// a check (the failures row locked): the amr method it proved, or the
// error of a wrong proof (counted by the lockout unless final) —
// final errors (not found, a database failure) are not counted.
// CompleteLogin's codes are one; a passkey assertion is meant to be
// another (see CompleteLoginWith).
type Proof func(ctx context.Context, accountID string, now time.Time) (method string, counted bool, err error)

// CodeProof is the proof of a TOTP or recovery code.
func (s *Service) CodeProof(code string) (Proof, error) {
	c, err := ParseCode("code", code)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, accountID string, now time.Time) (string, bool, error) {
		return s.proveCode(ctx, accountID, c, now)
	}, nil
}

// ChallengeAccount is the account of a login's challenge that may still
// complete it (MFA_CHALLENGE_INVALID otherwise): what a passkey
// assertion begun for the challenge is bound to.
func (s *Service) ChallengeAccount(ctx context.Context, challengeToken string) (string, error) {
	hash, err := ParseChallenge(challengeToken)
	if err != nil {
		return "", err
	}
	var accountID string
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		ch, err := s.store.LockMFAChallenge(ctx, hash)
		if errors.Is(err, storage.ErrNotFound) {
			return apperr.New(apperr.MFAChallengeInvalid).With("reason", "unknown")
		}
		if err != nil {
			return err
		}
		if err := ch.Usable(s.store.TxTime(ctx)); err != nil {
			return err
		}
		accountID = ch.AccountID
		return nil
	})
	return accountID, err
}

// CompleteLogin completes a login's challenge with a TOTP or recovery
// code: the session's tokens at aal2.
func (s *Service) CompleteLogin(ctx context.Context, challengeToken, code string, c sessions.Client) (sessions.Tokens, error) {
	proof, err := s.CodeProof(code)
	if err != nil {
		return sessions.Tokens{}, err
	}
	return s.CompleteLoginWith(ctx, challengeToken, proof, c)
}

// CompleteLoginWith completes a login's challenge with any proof: the
// seam another factor (a passkey) completes challenges through. The
// challenge is single use and bound to its account; MFA_CHALLENGE_INVALID
// (details.reason) for one malformed, unknown, used or expired.
func (s *Service) CompleteLoginWith(ctx context.Context, challengeToken string, proof Proof, c sessions.Client) (sessions.Tokens, error) {
	hash, err := ParseChallenge(challengeToken)
	if err != nil {
		return sessions.Tokens{}, err
	}
	var accountID, first, method string
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		ch, err := s.store.LockMFAChallenge(ctx, hash)
		if errors.Is(err, storage.ErrNotFound) {
			return apperr.New(apperr.MFAChallengeInvalid).With("reason", "unknown")
		}
		if err != nil {
			return err
		}
		if err := ch.Usable(s.store.TxTime(ctx)); err != nil {
			return err
		}
		accountID, first = ch.AccountID, cmp.Or(ch.FirstMethod, auth.AMRPassword)
		return nil
	})
	if err != nil {
		return sessions.Tokens{}, err
	}
	err = s.checked(ctx, accountID, func(ctx context.Context, now time.Time) (bool, error) {
		m, counted, err := proof(ctx, accountID, now)
		if err != nil {
			return !counted, err
		}
		method = m
		// Used in the same unit of work as the code: a challenge
		// completes one login.
		ch, err := s.store.LockMFAChallenge(ctx, hash)
		if err != nil {
			return true, err
		}
		if err := ch.Usable(now); err != nil {
			return true, err
		}
		return true, s.store.UseMFAChallenge(ctx, hash)
	})
	if apperr.Is(err, apperr.MFACodeInvalid) || apperr.Is(err, apperr.MFACodeReused) || apperr.Is(err, apperr.MFALocked) ||
		apperr.Is(err, apperr.PasskeyAssertionFailed) || apperr.Is(err, apperr.PasskeyCounterRegression) {
		s.recordLoginFailed(ctx, accountID, err)
	}
	if err != nil {
		return sessions.Tokens{}, err
	}
	acct, err := s.accounts.ByID(ctx, accountID)
	if err != nil {
		return sessions.Tokens{}, err
	}
	if acct.Disabled() {
		return sessions.Tokens{}, apperr.New(apperr.AccountDisabled)
	}
	return s.sessions.Open(ctx, acct, auth.AAL2, []string{first, method}, c)
}

// recordLoginFailed logs a login's second step refused: the proof was
// wrong (reason second_factor) or the account is locked out
// (second_factor_locked). A failure to write it is logged, not returned.
func (s *Service) recordLoginFailed(ctx context.Context, accountID string, refusal error) {
	e := securitylog.Event{AccountID: accountID, Kind: securitylog.LoginFailed, Outcome: securitylog.Failed, Detail: map[string]string{"reason": "second_factor"}}
	if apperr.Is(refusal, apperr.MFALocked) {
		e.Outcome, e.Detail["reason"] = securitylog.Refused, "second_factor_locked"
	}
	if err := s.accounts.SecurityLog().Record(context.WithoutCancel(ctx), e); err != nil {
		s.cfg.Log.WarnContext(ctx, "security log entry not written", "kind", e.Kind, "account_id", accountID, "err", err)
	}
}

// Verify steps the caller's session up to aal2 with a TOTP or recovery
// code: a new token pair for the same session. MFA_NOT_ENABLED without
// an active factor.
func (s *Service) Verify(ctx context.Context, p auth.Principal, code string) (sessions.Tokens, error) {
	proof, err := s.CodeProof(code)
	if err != nil {
		return sessions.Tokens{}, err
	}
	return s.VerifyWith(ctx, p, proof)
}

// VerifyWith steps the caller's session up to aal2 with any proof (a
// passkey's assertion), under the lockout as a code is.
func (s *Service) VerifyWith(ctx context.Context, p auth.Principal, proof Proof) (sessions.Tokens, error) {
	var method string
	err := s.checked(ctx, p.AccountID, func(ctx context.Context, now time.Time) (bool, error) {
		m, counted, err := proof(ctx, p.AccountID, now)
		method = m
		return !counted, err
	})
	if err != nil {
		return sessions.Tokens{}, err
	}
	return s.sessions.StepUp(ctx, p, method)
}

// proveCode checks a TOTP code against the account's active factor, or
// uses a recovery code (and tells the owner, by a job in the same unit of
// work).
func (s *Service) proveCode(ctx context.Context, accountID string, c Code, now time.Time) (string, bool, error) {
	fs, err := s.store.MFAFactors(ctx, accountID)
	if err != nil {
		return "", false, err
	}
	i := slices.IndexFunc(fs, func(f Factor) bool { return f.Active() && f.Kind == KindTOTP })
	if i < 0 {
		return "", false, apperr.New(apperr.MFANotEnabled)
	}
	if c.Kind == KindRecovery {
		used, left, err := s.store.UseRecoveryCode(ctx, accountID, HashRecoveryCode(s.codeKey, accountID, c.Value))
		if err != nil {
			return "", false, err
		}
		if !used {
			return "", true, apperr.New(apperr.MFACodeInvalid)
		}
		if err := s.store.EnqueueJob(ctx, RecoveryCodeUsedArgs{AccountID: accountID, Left: left, UsedAt: now}); err != nil {
			return "", false, err
		}
		if err := s.accounts.SecurityLog().Record(ctx, securitylog.Event{AccountID: accountID, Kind: securitylog.RecoveryCodeUsed, Outcome: securitylog.OK,
			Detail: map[string]string{"left": strconv.Itoa(left)}}); err != nil {
			return "", false, err
		}
		return auth.AMRRecovery, false, nil
	}
	f, err := s.store.LockMFAFactor(ctx, accountID, fs[i].ID)
	if err != nil {
		return "", false, err
	}
	step, err := MatchTOTP(f.Secret, c.Value, now, f.LastStep)
	if err != nil {
		return "", true, err
	}
	f.LastStep, f.LastUsedAt = step, &now
	return auth.AMROTP, false, s.store.UpdateMFAFactor(ctx, f)
}

// checked runs check under the account's lockout, in one unit of work
// with the wrong-code count locked: refused while locked; a counted
// failure (check's first answer false with an error) is added to the
// count, which is committed all the same, and may lock the account; a
// success resets the count.
func (s *Service) checked(ctx context.Context, accountID string, check func(ctx context.Context, now time.Time) (final bool, err error)) error {
	var failed error
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		now := s.store.TxTime(ctx)
		f, err := s.store.LockMFAFailures(ctx, accountID)
		if err != nil {
			return err
		}
		if err := s.cfg.Lockout.Check(f, now); err != nil {
			return err
		}
		final, err := check(ctx, now)
		if err != nil && final {
			return err
		}
		if err != nil {
			f = s.cfg.Lockout.Fail(f, now)
			if e := s.store.SaveMFAFailures(ctx, accountID, f); e != nil {
				return e
			}
			failed = err
			if lock := s.cfg.Lockout.Check(f, now); lock != nil {
				failed = lock
			} else if left := s.cfg.Lockout.Left(f); left >= 0 {
				if ae, ok := err.(*apperr.Error); ok {
					failed = ae.With("attemptsLeft", left)
				}
			}
			return nil // the count is kept
		}
		if f.Count > 0 || !f.LockedUntil.IsZero() {
			return s.store.SaveMFAFailures(ctx, accountID, Failures{})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return failed
}

// Reset removes every factor, passkey and recovery code of an account (an
// admin's action, audited by the security.mfa_reset webhook event):
// USER_NOT_FOUND for an unknown account; an account holding admin needs a
// caller holding admin (accounts.MayManage). It reports how many factors
// (passkeys included) went.
func (s *Service) Reset(ctx context.Context, by auth.Principal, accountID string) (int, error) {
	acct, err := s.accounts.ByID(ctx, accountID)
	if err != nil {
		return 0, err
	}
	if err := accounts.MayManage(by, acct); err != nil {
		return 0, err
	}
	var n int
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		var err error
		if n, err = s.store.DeleteMFAFactors(ctx, accountID, nil, false); err != nil {
			return err
		}
		passkeys, err := s.store.DeletePasskeys(ctx, accountID)
		if err != nil {
			return err
		}
		n += passkeys
		if err := s.store.ReplaceRecoveryCodes(ctx, accountID, nil); err != nil {
			return err
		}
		if err := s.store.SaveMFAFailures(ctx, accountID, Failures{}); err != nil {
			return err
		}
		if err := s.store.Emit(ctx, Reset{UserID: accountID, FactorsRemoved: n, ActorKind: actorKind(by), ActorID: actorID(by)}); err != nil {
			return err
		}
		return s.accounts.SecurityLog().Record(ctx, securitylog.Event{AccountID: accountID, Kind: securitylog.MFAReset, Outcome: securitylog.OK,
			Actor: accounts.AdminActor(by), Detail: map[string]string{"factorsRemoved": strconv.Itoa(n)}})
	})
	if err != nil {
		return 0, err
	}
	s.cfg.Log.InfoContext(ctx, "second factors reset by an admin", "account_id", accountID, "factors", n, "actor", by.Subject())
	return n, nil
}

func actorKind(p auth.Principal) string {
	if p.Kind == auth.APIKey {
		return "apiKey"
	}
	return "user"
}

func actorID(p auth.Principal) string {
	if p.Kind == auth.APIKey {
		return p.KeyID
	}
	return p.AccountID
}
