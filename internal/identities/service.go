package identities

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/riverqueue/river"
)

// Store keeps identities (sqlstore.DB).
type Store interface {
	storage.Transactor
	EnqueueJob(ctx context.Context, args river.JobArgs) error
	// LockIdentity reads the identity of (provider, subject) under a row
	// lock (inside InTx): storage.ErrNotFound for none.
	LockIdentity(ctx context.Context, p Provider, subject string) (Identity, error)
	InsertIdentity(ctx context.Context, i Identity) error
	// TouchIdentity records a sign-in with the identity.
	TouchIdentity(ctx context.Context, id string, at time.Time) error
	// SetIdentityRevokeToken keeps Apple's refresh token, sealed.
	SetIdentityRevokeToken(ctx context.Context, id, token string) error
	Identities(ctx context.Context, accountID string) ([]Identity, error)
	// DeleteIdentity deletes one of the account's identities, enqueueing
	// the revocation of its token when it has one (RevokeArgs), and
	// returns it: storage.ErrNotFound when it has no such identity.
	DeleteIdentity(ctx context.Context, accountID, id string) (Identity, error)
	// WaysIn counts the account's ways to sign in (inside InTx, with the
	// account's row locked).
	WaysIn(ctx context.Context, accountID string) (WaysIn, error)
}

// TokenVerifier checks one provider's id_tokens (provider.Verifier).
type TokenVerifier interface {
	Verify(ctx context.Context, raw, nonce string) (Claims, error)
}

// AppleTokens exchanges Apple authorization codes and revokes the refresh
// tokens they give (provider.Apple).
type AppleTokens interface {
	Exchange(ctx context.Context, code string) (string, error)
	Revoke(ctx context.Context, refreshToken string) error
}

// SecondFactor asks for a second factor when the account has one
// (mfa.Service): MFA_REQUIRED with a challenge.
type SecondFactor interface {
	Challenge(ctx context.Context, acct accounts.Account, firstMethod string) error
}

// Service signs people in with a provider's identity and manages the
// identities an account holds.
type Service struct {
	store     Store // its EnqueueJob is the revocation's
	accounts  *accounts.Service
	sessions  *sessions.Service
	verifiers map[Provider]TokenVerifier
	apple     AppleTokens // nil: no code exchange, no revocation
	second    SecondFactor
	stepUp    auth.StepUp
	log       *slog.Logger
}

// Config is the service's providers: a provider without a verifier is
// off (IDENTITY_PROVIDER_NOT_CONFIGURED).
type Config struct {
	Verifiers map[Provider]TokenVerifier
	Apple     AppleTokens
	Log       *slog.Logger
}

// NewService returns the service.
func NewService(store Store, accts *accounts.Service, sess *sessions.Service, cfg Config) *Service {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, accounts: accts, sessions: sess, verifiers: cfg.Verifiers, apple: cfg.Apple, log: cfg.Log}
}

// SetSecondFactor makes a provider sign-in of an account with a second
// factor answer MFA_REQUIRED, as a password's does (set once).
func (s *Service) SetSecondFactor(f SecondFactor) { s.second = f }

// SetStepUp makes linking an identity need aal2 when the account has a
// second factor (set once).
func (s *Service) SetStepUp(c auth.StepUp) { s.stepUp = c }

func (s *Service) verify(ctx context.Context, p Provider, idToken, nonce string) (Claims, error) {
	v := s.verifiers[p]
	if v == nil {
		return Claims{}, apperr.New(apperr.IdentityProviderNotConfigured).With("provider", string(p))
	}
	return v.Verify(ctx, idToken, nonce)
}

// SignedIn is a provider sign-in's outcome: the session, and whether it
// created the account.
type SignedIn struct {
	Tokens  sessions.Tokens
	Created bool
}

// SignIn verifies a provider's id_token and signs in to the account the
// identity holds, links it to the account of the same verified email, or
// creates a verified account for it (Decide). authCode, Apple's
// authorization code, is exchanged once for the refresh token its
// revocation needs. An account with a second factor answers MFA_REQUIRED.
func (s *Service) SignIn(ctx context.Context, p Provider, idToken, nonce, authCode string, c sessions.Client) (SignedIn, error) {
	claims, err := s.verify(ctx, p, idToken, nonce)
	if err != nil {
		return SignedIn{}, err
	}
	// A new account is made apart from its identity; a sign-in racing
	// this one (two taps) then finds the account or the identity, and the
	// second attempt links or signs in.
	var ident Identity
	var created bool
	for attempt := 0; ; attempt++ {
		var outcome Outcome
		ident, outcome, err = s.signIn(ctx, p, claims)
		if err == nil && outcome == Create {
			created = true
			var acct accounts.Account
			if acct, err = s.accounts.CreateVerified(ctx, claims.Email, accounts.Language{}); err == nil {
				err = s.store.InTx(ctx, func(ctx context.Context) error {
					var err error
					ident, err = s.insert(ctx, acct.ID, p, claims, s.store.TxTime(ctx))
					return err
				})
			}
		}
		if attempt == 0 && (apperr.Is(err, apperr.EmailExists) || errors.Is(err, storage.ErrConflict)) {
			created = false
			continue
		}
		if err != nil {
			return SignedIn{}, err
		}
		break
	}
	s.keepRevokeToken(ctx, ident, authCode)
	acct, err := s.accounts.ByID(ctx, ident.AccountID)
	if err != nil {
		return SignedIn{}, err
	}
	if acct.Disabled() {
		return SignedIn{}, apperr.New(apperr.AccountDisabled)
	}
	if s.second != nil {
		if err := s.second.Challenge(ctx, acct, string(p)); err != nil {
			return SignedIn{}, err
		}
	}
	t, err := s.sessions.Open(ctx, acct, auth.AAL1, []string{string(p)}, c)
	return SignedIn{Tokens: t, Created: created}, err
}

// signIn decides, in one unit of work, what the verified claims do: sign
// in with a known identity (its use recorded), link to the account of
// the same verified email, or (Create) nothing yet.
func (s *Service) signIn(ctx context.Context, p Provider, claims Claims) (Identity, Outcome, error) {
	var ident Identity
	var outcome Outcome
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		var e Existing
		known, err := s.store.LockIdentity(ctx, p, claims.Subject)
		switch {
		case err == nil:
			e.Identity = &known
		case !errors.Is(err, storage.ErrNotFound):
			return err
		case claims.Email != "":
			acct, found, err := s.accounts.Lookup(ctx, claims.Email)
			if err != nil && !apperr.Is(err, apperr.InvalidEmail) {
				return err
			}
			if found {
				e.AccountID, e.AccountVerified, e.AccountDisabled = acct.ID, acct.Verified(), acct.Disabled()
			}
		}
		if outcome, err = Decide(claims, e); err != nil {
			return err
		}
		now := s.store.TxTime(ctx)
		switch outcome {
		case SignIn:
			ident = known
			return s.store.TouchIdentity(ctx, known.ID, now)
		case Link:
			ident, err = s.insert(ctx, e.AccountID, p, claims, now)
			return err
		}
		return nil
	})
	return ident, outcome, err
}

// insert links a new identity to the account, in the caller's unit of
// work, with its security log entry.
func (s *Service) insert(ctx context.Context, accountID string, p Provider, c Claims, now time.Time) (Identity, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Identity{}, err
	}
	i := Identity{ID: id.String(), AccountID: accountID, Provider: p, Subject: c.Subject, Email: c.Email, PrivateRelay: c.PrivateRelay, CreatedAt: now, LastUsedAt: &now}
	if err := s.store.InsertIdentity(ctx, i); err != nil {
		return Identity{}, err
	}
	err = s.accounts.SecurityLog().Record(ctx, securitylog.Event{AccountID: accountID, Kind: securitylog.IdentityLinked, Outcome: securitylog.OK,
		Detail: map[string]string{"identityId": i.ID, "provider": string(p)}})
	return i, err
}

// keepRevokeToken exchanges Apple's authorization code for the refresh
// token the account's deletion revokes, once per identity. A failure is
// logged: the sign-in stands, and the next one with a code tries again.
func (s *Service) keepRevokeToken(ctx context.Context, i Identity, authCode string) {
	if i.Provider != Apple || authCode == "" || s.apple == nil || i.HasRevokeToken {
		return
	}
	if len(authCode) > MaxTokenLen {
		return
	}
	tok, err := s.apple.Exchange(ctx, authCode)
	if err == nil {
		err = s.store.SetIdentityRevokeToken(ctx, i.ID, tok)
	}
	if err != nil {
		s.log.WarnContext(ctx, "Apple authorization code not exchanged: the account's deletion cannot revoke its token until a later sign-in sends another", "identity_id", i.ID, "err", err)
	}
}

// Link adds a provider identity to the caller's account: IDENTITY_IN_USE
// when it is another account's; linking one the account holds already
// answers it again. An account with a second factor needs aal2.
func (s *Service) Link(ctx context.Context, by auth.Principal, p Provider, idToken, nonce, authCode string) (Identity, error) {
	if s.stepUp != nil {
		if err := s.stepUp.RequireAAL2(ctx, by); err != nil {
			return Identity{}, err
		}
	}
	claims, err := s.verify(ctx, p, idToken, nonce)
	if err != nil {
		return Identity{}, err
	}
	var ident Identity
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		known, err := s.store.LockIdentity(ctx, p, claims.Subject)
		if err == nil {
			if known.AccountID != by.AccountID {
				return apperr.New(apperr.IdentityInUse)
			}
			ident = known
			return nil
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		if ident, err = s.insert(ctx, by.AccountID, p, claims, s.store.TxTime(ctx)); err != nil {
			return err
		}
		// A guest upgrades: it takes the provider's address when verified and free.
		email := ""
		if claims.EmailVerified {
			email = claims.Email
		}
		return s.accounts.EndGuest(ctx, by.AccountID, string(p), email)
	})
	if err != nil {
		return Identity{}, err
	}
	s.keepRevokeToken(ctx, ident, authCode)
	return ident, nil
}

// List is the account's identities, oldest first.
func (s *Service) List(ctx context.Context, accountID string) ([]Identity, error) {
	return s.store.Identities(ctx, accountID)
}

// ListOf is a user's identities, oldest first, as an operator reads them:
// USER_NOT_FOUND for an unknown account.
func (s *Service) ListOf(ctx context.Context, accountID string) ([]Identity, error) {
	if _, err := s.accounts.ByID(ctx, accountID); err != nil {
		return nil, err
	}
	return s.store.Identities(ctx, accountID)
}

// Unlink removes one of the caller's identities: IDENTITY_NOT_FOUND for
// another's or an unknown one, LAST_SIGN_IN_METHOD when nothing else
// signs in to the account. Apple's token is revoked (a job).
func (s *Service) Unlink(ctx context.Context, by auth.Principal, id string) error {
	if s.stepUp != nil {
		if err := s.stepUp.RequireAAL2(ctx, by); err != nil {
			return err
		}
	}
	return s.store.InTx(ctx, func(ctx context.Context) error {
		gone, err := s.store.DeleteIdentity(ctx, by.AccountID, id)
		if errors.Is(err, storage.ErrNotFound) {
			return apperr.New(apperr.IdentityNotFound).With("identityId", id)
		}
		if err != nil {
			return err
		}
		// Counted with the account's row locked, after the deletion: of two
		// unlinks at once, the second sees the first's, and rolls back
		// (its revocation job with it) when nothing would be left.
		ways, err := s.store.WaysIn(ctx, by.AccountID)
		if err != nil {
			return err
		}
		if err := ways.Remain(); err != nil {
			return err
		}
		return s.accounts.SecurityLog().Record(ctx, securitylog.Event{AccountID: by.AccountID, Kind: securitylog.IdentityUnlinked, Outcome: securitylog.OK,
			Detail: map[string]string{"identityId": id, "provider": string(gone.Provider)}})
	})
}

// RevokeWorker works RevokeArgs: it opens the sealed token and revokes it
// at Apple. Apple refusing the token (already revoked, or expired) ends
// the job; an outage is retried.
type RevokeWorker struct {
	river.WorkerDefaults[RevokeArgs]
	Tokens interface {
		OpenRevokeToken(identityID string, sealed []byte) (string, error)
	}
	Apple      AppleTokens
	IsTerminal func(error) bool // the revoker's "retrying will not help"
	Log        *slog.Logger
}

func (w *RevokeWorker) Work(ctx context.Context, j *river.Job[RevokeArgs]) error {
	if j.Args.Provider != Apple || w.Apple == nil {
		return nil
	}
	tok, err := w.Tokens.OpenRevokeToken(j.Args.IdentityID, j.Args.Sealed)
	if err != nil {
		return river.JobCancel(err) // a key it was sealed with is gone: nothing to retry
	}
	err = w.Apple.Revoke(ctx, tok)
	if err != nil && w.IsTerminal != nil && w.IsTerminal(err) {
		w.Log.WarnContext(ctx, "Apple refused to revoke a token: given up", "identity_id", j.Args.IdentityID, "err", err)
		return nil
	}
	if err == nil {
		w.Log.InfoContext(ctx, "Apple token revoked", "identity_id", j.Args.IdentityID)
	}
	return err
}
