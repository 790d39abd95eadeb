package passkeys

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/mfa"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/storage"
)

// Store is the persistence passkeys need (the sqlstore).
type Store interface {
	storage.Transactor
	// Passkeys are the account's passkeys, oldest first.
	Passkeys(ctx context.Context, accountID string) ([]Credential, error)
	// LockPasskeyByCredentialID reads the passkey of a WebAuthn credential
	// id under a row lock (inside InTx): storage.ErrNotFound for none.
	LockPasskeyByCredentialID(ctx context.Context, credentialID []byte) (Credential, error)
	// InsertPasskey stores a new passkey: storage.ErrConflict when its
	// credential id is known already.
	InsertPasskey(ctx context.Context, c Credential) error
	// SavePasskeyUse writes a passkey's record, last use and counter
	// regressions after an assertion.
	SavePasskeyUse(ctx context.Context, c Credential) error
	// RenamePasskey renames one of the account's passkeys:
	// storage.ErrNotFound when it has no such passkey.
	RenamePasskey(ctx context.Context, accountID, id, name string) (Credential, error)
	// DeletePasskey deletes one of the account's passkeys: false when it
	// has no such passkey.
	DeletePasskey(ctx context.Context, accountID, id string) (bool, error)
	CreatePasskeyCeremony(ctx context.Context, c Ceremony) error
	// LockPasskeyCeremony reads a ceremony by id, or by challenge when id
	// is empty, under a row lock (inside InTx): storage.ErrNotFound for
	// none. UsePasskeyCeremony marks it used.
	LockPasskeyCeremony(ctx context.Context, id, challenge string) (Ceremony, error)
	UsePasskeyCeremony(ctx context.Context, id string) error
}

// Config is the relying party: off (every ceremony answers
// PASSKEYS_NOT_CONFIGURED) while RPID is empty.
type Config struct {
	RPID   string
	RPName string
	// Origins are the origins ceremonies may come from: web origins and
	// Android apps' android:apk-key-hash:… (told apart here).
	Origins []string
	Log     *slog.Logger
}

// Service registers passkeys and signs in with them.
type Service struct {
	store    Store
	accounts *accounts.Service
	sessions *sessions.Service
	mfa      *mfa.Service
	wa       *webauthn.WebAuthn // nil: off
	log      *slog.Logger
}

// NewService returns the service; an error for a relying party the
// library refuses.
func NewService(store Store, accts *accounts.Service, sess *sessions.Service, factors *mfa.Service, cfg Config) (*Service, error) {
	s := &Service{store: store, accounts: accts, sessions: sess, mfa: factors, log: cfg.Log}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.RPID == "" {
		return s, nil
	}
	wc := &webauthn.Config{
		RPID:                  cfg.RPID,
		RPDisplayName:         cmpOr(cfg.RPName, cfg.RPID),
		AttestationPreference: protocol.PreferNoAttestation,
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Timeout: CeremonyTTL, TimeoutUVD: CeremonyTTL},
			Registration: webauthn.TimeoutConfig{Timeout: CeremonyTTL, TimeoutUVD: CeremonyTTL},
		},
	}
	for _, o := range cfg.Origins {
		if strings.HasPrefix(o, "http://") || strings.HasPrefix(o, "https://") {
			wc.RPOrigins = append(wc.RPOrigins, o)
		} else {
			wc.RPOpaqueOrigins = append(wc.RPOpaqueOrigins, o)
		}
	}
	if len(wc.RPOrigins) == 0 {
		wc.RPOrigins = []string{"https://" + cfg.RPID}
	}
	wa, err := webauthn.New(wc)
	if err != nil {
		return nil, fmt.Errorf("passkeys: %w", err)
	}
	s.wa = wa
	return s, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Enabled reports whether a relying party is configured.
func (s *Service) Enabled() bool { return s.wa != nil }

func (s *Service) requireEnabled() error {
	if s.wa == nil {
		return apperr.New(apperr.PasskeysNotConfigured)
	}
	return nil
}

// Begun is a ceremony begun: its id, when it expires, and the options
// for navigator.credentials.create or .get (the publicKey member).
type Begun struct {
	ChallengeID string
	ExpiresAt   time.Time
	Options     json.RawMessage
}

// user is an account as the library sees it: its user handle is the
// account's id.
type user struct {
	acct  accounts.Account
	creds []Credential
}

func (u user) WebAuthnID() []byte { return []byte(u.acct.ID) }
func (u user) WebAuthnName() string {
	// An authenticator shows it: never a guest's placeholder.
	return cmp.Or(u.acct.Address(), u.acct.ID)
}
func (u user) WebAuthnDisplayName() string { return u.WebAuthnName() }
func (u user) WebAuthnCredentials() []webauthn.Credential {
	out := make([]webauthn.Credential, len(u.creds))
	for i, c := range u.creds {
		out[i] = c.Record
		out[i].Authenticator.CloneWarning = false
	}
	return out
}

// begin stores a ceremony and answers it.
func (s *Service) begin(ctx context.Context, kind, accountID string, session *webauthn.SessionData, options any) (Begun, error) {
	id, err := newCeremonyID()
	if err != nil {
		return Begun{}, err
	}
	opts, err := json.Marshal(options)
	if err != nil {
		return Begun{}, err
	}
	now := s.store.TxTime(ctx)
	c := Ceremony{ID: id, Kind: kind, AccountID: accountID, Challenge: session.Challenge, Session: *session, CreatedAt: now, ExpiresAt: now.Add(CeremonyTTL)}
	if err := s.store.CreatePasskeyCeremony(ctx, c); err != nil {
		return Begun{}, err
	}
	return Begun{ChallengeID: id, ExpiresAt: c.ExpiresAt, Options: opts}, nil
}

// take reads a ceremony of kind for accountID ("" for a sign-in), checks
// it may be finished and marks it used, inside the caller's unit of work:
// a ceremony is finished once, well or not.
func (s *Service) take(ctx context.Context, id, challenge, kind, accountID string) (Ceremony, error) {
	c, err := s.store.LockPasskeyCeremony(ctx, id, challenge)
	if errors.Is(err, storage.ErrNotFound) {
		return Ceremony{}, challengeInvalid("unknown")
	}
	if err != nil {
		return Ceremony{}, err
	}
	if c.Kind != kind || c.AccountID != accountID {
		return Ceremony{}, challengeInvalid("unknown")
	}
	if err := c.Usable(s.store.TxTime(ctx)); err != nil {
		return Ceremony{}, err
	}
	return c, s.store.UsePasskeyCeremony(ctx, c.ID)
}

// BeginRegistration begins registering a passkey for the caller: a
// discoverable credential (resident key required), user verification
// preferred, the account's passkeys excluded. Needs aal2 while the
// account has a factor.
func (s *Service) BeginRegistration(ctx context.Context, p auth.Principal) (Begun, error) {
	if err := s.requireEnabled(); err != nil {
		return Begun{}, err
	}
	if err := s.mfa.RequireAAL2(ctx, p); err != nil {
		return Begun{}, err
	}
	acct, err := s.accounts.ByID(ctx, p.AccountID)
	if err != nil {
		return Begun{}, err
	}
	creds, err := s.store.Passkeys(ctx, acct.ID)
	if err != nil {
		return Begun{}, err
	}
	u := user{acct: acct, creds: creds}
	required := true
	creation, session, err := s.wa.BeginRegistration(u,
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{
			RequireResidentKey: &required,
			ResidentKey:        protocol.ResidentKeyRequirementRequired,
			UserVerification:   protocol.VerificationPreferred,
		}),
		webauthn.WithExclusions(webauthn.Credentials(u.WebAuthnCredentials()).CredentialDescriptors()),
	)
	if err != nil {
		return Begun{}, err
	}
	return s.begin(ctx, CeremonyRegister, acct.ID, session, creation.Response)
}

// FinishRegistration verifies the authenticator's answer to a
// registration the caller began (found by challengeID, or by the
// challenge the answer carries when challengeID is empty) and stores the
// passkey named name. PASSKEY_CHALLENGE_INVALID for a ceremony unknown,
// another's, used or expired; PASSKEY_REGISTRATION_FAILED (details.reason)
// for an answer that does not verify (a wrong origin or relying party
// id…); PASSKEY_ALREADY_REGISTERED for a credential known already.
func (s *Service) FinishRegistration(ctx context.Context, p auth.Principal, challengeID, name string, raw []byte) (Credential, error) {
	if err := s.requireEnabled(); err != nil {
		return Credential{}, err
	}
	name, err := NormalizeName(name, "Passkey")
	if err != nil {
		return Credential{}, err
	}
	if challengeID != "" {
		if challengeID, err = ParseCeremonyID(challengeID); err != nil {
			return Credential{}, err
		}
	}
	parsed, err := ParseCreation(raw)
	if err != nil {
		return Credential{}, err
	}
	if err := s.mfa.RequireAAL2(ctx, p); err != nil {
		return Credential{}, err
	}
	acct, err := s.accounts.ByID(ctx, p.AccountID)
	if err != nil {
		return Credential{}, err
	}
	challenge := ""
	if challengeID == "" {
		if challenge = parsed.Response.CollectedClientData.Challenge; challenge == "" {
			return Credential{}, challengeInvalid("unknown")
		}
	}
	var out Credential
	var failed error
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		c, err := s.take(ctx, challengeID, challenge, CeremonyRegister, acct.ID)
		if err != nil {
			return err
		}
		creds, err := s.store.Passkeys(ctx, acct.ID)
		if err != nil {
			return err
		}
		rec, err := s.wa.CreateCredential(user{acct: acct, creds: creds}, c.Session, parsed)
		if err != nil {
			failed = apperr.New(apperr.PasskeyRegistrationFailed).With("reason", reasonOf(err))
			return nil // the ceremony stays used
		}
		if _, err := s.store.LockPasskeyByCredentialID(ctx, rec.ID); err == nil {
			failed = apperr.New(apperr.PasskeyAlreadyRegistered)
			return nil
		} else if !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		id, err := uuid.NewV7()
		if err != nil {
			return err
		}
		rec.Authenticator.CloneWarning = false
		out = Credential{ID: id.String(), AccountID: acct.ID, Name: name, Record: *rec, CreatedAt: s.store.TxTime(ctx)}
		if err := s.store.InsertPasskey(ctx, out); errors.Is(err, storage.ErrConflict) {
			return apperr.New(apperr.PasskeyAlreadyRegistered)
		} else if err != nil {
			return err
		}
		if err := s.accounts.SecurityLog().Record(ctx, securitylog.Event{AccountID: acct.ID, Kind: securitylog.PasskeyAdded, Outcome: securitylog.OK,
			Detail: map[string]string{"passkeyId": out.ID, "name": out.Name}}); err != nil {
			return err
		}
		return s.accounts.EndGuest(ctx, acct.ID, "passkey", "") // a guest upgrades
	})
	if err != nil {
		return Credential{}, err
	}
	if failed != nil {
		return Credential{}, failed
	}
	s.log.InfoContext(ctx, "passkey registered", "account_id", acct.ID, "passkey_id", out.ID, "attestation", out.Record.AttestationFormat)
	return out, nil
}

// List is the account's passkeys, oldest first.
func (s *Service) List(ctx context.Context, accountID string) ([]Credential, error) {
	return s.store.Passkeys(ctx, accountID)
}

// ListOf is a user's passkeys, oldest first, for an operator:
// USER_NOT_FOUND for an unknown or deleted account.
func (s *Service) ListOf(ctx context.Context, accountID string) ([]Credential, error) {
	if _, err := s.accounts.ByID(ctx, accountID); err != nil {
		return nil, err
	}
	return s.store.Passkeys(ctx, accountID)
}

// RemoveFor deletes one passkey of a user for an operator (by), held to
// the rules of the admin's other actions on an account (MayManage), and
// records it in the user's security log as passkey_removed with the
// operator as the actor. USER_NOT_FOUND for an unknown account,
// PASSKEY_NOT_FOUND for a passkey it does not have.
func (s *Service) RemoveFor(ctx context.Context, by auth.Principal, accountID, id string) error {
	acct, err := s.accounts.ByID(ctx, accountID)
	if err != nil {
		return err
	}
	if err := accounts.MayManage(by, acct); err != nil {
		return err
	}
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		ok, err := s.store.DeletePasskey(ctx, accountID, id)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.New(apperr.PasskeyNotFound).With("passkeyId", id)
		}
		return s.accounts.SecurityLog().Record(ctx, securitylog.Event{AccountID: accountID, Kind: securitylog.PasskeyRemoved, Outcome: securitylog.OK,
			Actor: accounts.AdminActor(by), Detail: map[string]string{"passkeyId": id}})
	})
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "passkey removed by an admin", "account_id", accountID, "passkey_id", id, "actor", by.Subject())
	return nil
}

// Rename renames one of the caller's passkeys: PASSKEY_NOT_FOUND for
// another's or an unknown one.
func (s *Service) Rename(ctx context.Context, p auth.Principal, id, name string) (Credential, error) {
	name, err := NormalizeName(name, "")
	if err != nil {
		return Credential{}, err
	}
	if name == "" {
		return Credential{}, apperr.Invalid("name", "a name of 1 to 64 characters", "nothing")
	}
	c, err := s.store.RenamePasskey(ctx, p.AccountID, id, name)
	if errors.Is(err, storage.ErrNotFound) {
		return Credential{}, apperr.New(apperr.PasskeyNotFound).With("passkeyId", id)
	}
	return c, err
}

// Remove deletes one of the caller's passkeys (needs aal2 while the
// account has a factor): PASSKEY_NOT_FOUND for another's or an unknown
// one.
func (s *Service) Remove(ctx context.Context, p auth.Principal, id string) error {
	if err := s.mfa.RequireAAL2(ctx, p); err != nil {
		return err
	}
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		ok, err := s.store.DeletePasskey(ctx, p.AccountID, id)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.New(apperr.PasskeyNotFound).With("passkeyId", id)
		}
		return s.accounts.SecurityLog().Record(ctx, securitylog.Event{AccountID: p.AccountID, Kind: securitylog.PasskeyRemoved, Outcome: securitylog.OK,
			Detail: map[string]string{"passkeyId": id}})
	})
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "passkey removed", "account_id", p.AccountID, "passkey_id", id)
	return nil
}

// BeginLogin begins a passwordless sign-in: assertion options with no
// allowed credentials (the authenticator offers its discoverable ones).
func (s *Service) BeginLogin(ctx context.Context) (Begun, error) {
	if err := s.requireEnabled(); err != nil {
		return Begun{}, err
	}
	assertion, session, err := s.wa.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationPreferred))
	if err != nil {
		return Begun{}, err
	}
	return s.begin(ctx, CeremonyLogin, "", session, assertion.Response)
}

// FinishLogin verifies a passwordless sign-in's assertion and opens a
// session at aal2 proved by webauthn. PASSKEY_CHALLENGE_INVALID for a
// ceremony unknown, used or expired; PASSKEY_ASSERTION_FAILED
// (details.reason) for an assertion that does not verify or a credential
// unknown; PASSKEY_COUNTER_REGRESSION for a signature counter that went
// backwards (recorded on the passkey).
func (s *Service) FinishLogin(ctx context.Context, challengeID string, raw []byte, client sessions.Client) (sessions.Tokens, error) {
	if err := s.requireEnabled(); err != nil {
		return sessions.Tokens{}, err
	}
	id, err := ParseCeremonyID(challengeID)
	if err != nil {
		return sessions.Tokens{}, err
	}
	parsed, err := ParseAssertion(raw)
	if err != nil {
		return sessions.Tokens{}, err
	}
	var accountID string
	var failed error
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		c, err := s.take(ctx, id, "", CeremonyLogin, "")
		if err != nil {
			return err
		}
		cred, err := s.store.LockPasskeyByCredentialID(ctx, parsed.RawID)
		if errors.Is(err, storage.ErrNotFound) {
			failed = apperr.New(apperr.PasskeyAssertionFailed).With("reason", "unknown credential")
			return nil
		}
		if err != nil {
			return err
		}
		acct, err := s.accounts.ByID(ctx, cred.AccountID)
		if err != nil {
			return err
		}
		u := user{acct: acct, creds: []Credential{cred}}
		_, rec, err := s.wa.ValidatePasskeyLogin(func(rawID, handle []byte) (webauthn.User, error) {
			if !bytes.Equal(handle, u.WebAuthnID()) {
				return nil, errors.New("the user handle is not the credential's account")
			}
			return u, nil
		}, c.Session, parsed)
		accountID = acct.ID
		if failed, err = s.used(ctx, cred, rec, err); err != nil || failed == nil {
			return err
		}
		// A known passkey's assertion refused: logged with the refusal.
		return s.accounts.SecurityLog().Record(ctx, securitylog.Event{AccountID: acct.ID, Kind: securitylog.LoginFailed, Outcome: securitylog.Failed,
			Detail: map[string]string{"method": auth.AMRWebAuthn, "reason": "passkey", "passkeyId": cred.ID}})
	})
	if err != nil {
		return sessions.Tokens{}, err
	}
	if failed != nil {
		return sessions.Tokens{}, failed
	}
	acct, err := s.accounts.ByID(ctx, accountID)
	if err != nil {
		return sessions.Tokens{}, err
	}
	if acct.Disabled() {
		return sessions.Tokens{}, apperr.New(apperr.AccountDisabled)
	}
	return s.sessions.Open(ctx, acct, auth.AAL2, []string{auth.AMRWebAuthn}, client)
}

// used judges an assertion the library validated (verr its error) for
// the passkey cred, inside the unit of work: the refusal to answer (the
// passkey's counter regression recorded), or the passkey's use saved.
func (s *Service) used(ctx context.Context, cred Credential, rec *webauthn.Credential, verr error) (refused, err error) {
	if verr != nil {
		return apperr.New(apperr.PasskeyAssertionFailed).With("reason", reasonOf(verr)), nil
	}
	now := s.store.TxTime(ctx)
	if rec.Authenticator.CloneWarning {
		stored := cred.Record.Authenticator.SignCount
		cred.CounterRegressions++
		cred.LastRegressionAt = &now
		if err := s.store.SavePasskeyUse(ctx, cred); err != nil {
			return nil, err
		}
		s.log.WarnContext(ctx, "passkey signature counter went backwards: refused (a cloned authenticator?)", "account_id", cred.AccountID, "passkey_id", cred.ID, "stored", stored)
		return apperr.New(apperr.PasskeyCounterRegression).With("passkeyId", cred.ID), nil
	}
	cred.Record = *rec
	cred.LastUsedAt = &now
	return nil, s.store.SavePasskeyUse(ctx, cred)
}

// BeginMFA begins a passkey's assertion completing a login's challenge
// (MFA_CHALLENGE_INVALID for one that can no longer be completed): the
// options allow the account's passkeys.
func (s *Service) BeginMFA(ctx context.Context, challengeToken string) (Begun, error) {
	if err := s.requireEnabled(); err != nil {
		return Begun{}, err
	}
	accountID, err := s.mfa.ChallengeAccount(ctx, challengeToken)
	if err != nil {
		return Begun{}, err
	}
	acct, err := s.accounts.ByID(ctx, accountID)
	if err != nil {
		return Begun{}, err
	}
	creds, err := s.store.Passkeys(ctx, accountID)
	if err != nil {
		return Begun{}, err
	}
	if len(creds) == 0 {
		return Begun{}, apperr.New(apperr.MFANotEnabled)
	}
	assertion, session, err := s.wa.BeginLogin(user{acct: acct, creds: creds}, webauthn.WithUserVerification(protocol.VerificationPreferred))
	if err != nil {
		return Begun{}, err
	}
	return s.begin(ctx, CeremonyMFA, accountID, session, assertion.Response)
}

// FinishMFA completes a login's challenge with a passkey's assertion
// begun by BeginMFA: the session's tokens at aal2 (amr pwd and webauthn).
// A wrong assertion counts in the second-factor lockout.
func (s *Service) FinishMFA(ctx context.Context, challengeToken, challengeID string, raw []byte, client sessions.Client) (sessions.Tokens, error) {
	if err := s.requireEnabled(); err != nil {
		return sessions.Tokens{}, err
	}
	id, err := ParseCeremonyID(challengeID)
	if err != nil {
		return sessions.Tokens{}, err
	}
	parsed, err := ParseAssertion(raw)
	if err != nil {
		return sessions.Tokens{}, err
	}
	return s.mfa.CompleteLoginWith(ctx, challengeToken, s.assertionProof(id, CeremonyMFA, parsed), client)
}

// BeginStepUp begins a passkey's assertion stepping the caller's session
// up to aal2: options allowing the account's passkeys (MFA_NOT_ENABLED
// without one).
func (s *Service) BeginStepUp(ctx context.Context, p auth.Principal) (Begun, error) {
	if err := s.requireEnabled(); err != nil {
		return Begun{}, err
	}
	acct, err := s.accounts.ByID(ctx, p.AccountID)
	if err != nil {
		return Begun{}, err
	}
	creds, err := s.store.Passkeys(ctx, acct.ID)
	if err != nil {
		return Begun{}, err
	}
	if len(creds) == 0 {
		return Begun{}, apperr.New(apperr.MFANotEnabled)
	}
	assertion, session, err := s.wa.BeginLogin(user{acct: acct, creds: creds}, webauthn.WithUserVerification(protocol.VerificationPreferred))
	if err != nil {
		return Begun{}, err
	}
	return s.begin(ctx, CeremonyStepUp, acct.ID, session, assertion.Response)
}

// FinishStepUp steps the caller's session up with the assertion of a
// ceremony BeginStepUp began: new tokens for the same session at aal2
// (webauthn added to its amr). A wrong assertion counts in the lockout.
func (s *Service) FinishStepUp(ctx context.Context, p auth.Principal, challengeID string, raw []byte) (sessions.Tokens, error) {
	if err := s.requireEnabled(); err != nil {
		return sessions.Tokens{}, err
	}
	id, err := ParseCeremonyID(challengeID)
	if err != nil {
		return sessions.Tokens{}, err
	}
	parsed, err := ParseAssertion(raw)
	if err != nil {
		return sessions.Tokens{}, err
	}
	return s.mfa.VerifyWith(ctx, p, s.assertionProof(id, CeremonyStepUp, parsed))
}

// assertionProof is the mfa.Proof of an assertion answering the ceremony
// id of kind, begun for the proof's account with its passkeys allowed.
func (s *Service) assertionProof(id, kind string, parsed *protocol.ParsedCredentialAssertionData) mfa.Proof {
	return func(ctx context.Context, accountID string, _ time.Time) (string, bool, error) {
		c, err := s.take(ctx, id, "", kind, accountID)
		if err != nil {
			return "", false, err
		}
		acct, err := s.accounts.ByID(ctx, accountID)
		if err != nil {
			return "", false, err
		}
		cred, err := s.store.LockPasskeyByCredentialID(ctx, parsed.RawID)
		if errors.Is(err, storage.ErrNotFound) || err == nil && cred.AccountID != accountID {
			return "", true, apperr.New(apperr.PasskeyAssertionFailed).With("reason", "unknown credential")
		}
		if err != nil {
			return "", false, err
		}
		creds, err := s.store.Passkeys(ctx, accountID)
		if err != nil {
			return "", false, err
		}
		rec, verr := s.wa.ValidateLogin(user{acct: acct, creds: creds}, c.Session, parsed)
		refused, err := s.used(ctx, cred, rec, verr)
		if err != nil {
			return "", false, err
		}
		if refused != nil {
			return "", true, refused
		}
		return auth.AMRWebAuthn, false, nil
	}
}
