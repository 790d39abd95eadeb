// Package sessions owns logins and what proves them: access tokens (JWTs
// signed with Ed25519), rotating refresh tokens, logout and the check that
// every authenticated request makes.
package sessions

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// Session is one login.
type Session struct {
	ID        string
	AccountID string
	CreatedAt time.Time
	ExpiresAt time.Time // end of the refresh token's life
	RevokedAt *time.Time
	// LastUsedAt, UserAgent and IP are as seen at the login, then at each
	// refresh.
	LastUsedAt time.Time
	UserAgent  string
	IP         string
	// AAL and AMR are what the session's tokens carry: auth.AAL1 and
	// [pwd] after a password, auth.AAL2 and [pwd otp] (or recovery) once a
	// second factor proved it, at the login or by a step-up; a refresh
	// keeps them.
	AAL string
	AMR []string
}

// SecondFactor is asked, after the password of a login is checked,
// whether the account must prove a second factor (mfa.Service): nil lets
// the login open its session; an error (MFA_REQUIRED with the challenge)
// is the login's answer.
type SecondFactor interface {
	Challenge(ctx context.Context, acct accounts.Account, firstMethod string) error
}

// Client is who presented a credential, as the server saw them.
type Client struct {
	UserAgent string
	IP        string
}

// ClientAt is the client a door saw: its User-Agent and its address (none
// when the door knows none).
func ClientAt(userAgent string, ip netip.Addr) Client {
	c := Client{UserAgent: userAgent}
	if ip.IsValid() {
		c.IP = ip.String()
	}
	return c
}

// maxUserAgent bounds the user agent kept with a session.
const maxUserAgent = 512

func (c Client) normalized() Client {
	ua := strings.ToValidUTF8(c.UserAgent, "")
	if len(ua) > maxUserAgent {
		ua = strings.ToValidUTF8(ua[:maxUserAgent], "")
	}
	return Client{UserAgent: ua, IP: c.IP}
}

// ErrAccountClosed is the store's answer to a session for an account
// that is disabled or deleted.
var ErrAccountClosed = errors.New("sessions: the account is disabled or deleted")

// RotateOutcome says what presenting a refresh token did.
type RotateOutcome int

const (
	RefreshUnknown RotateOutcome = iota // no such token
	RefreshRotated                      // live token exchanged for a new one
	RefreshGrace                        // rotated moments ago (another tab): a sibling token is issued
	RefreshReused                       // rotated long ago: the session is revoked
	RefreshRevoked                      // the session was revoked already
	RefreshExpired
)

// RotateResult is the outcome with the session it concerns.
type RotateResult struct {
	Outcome RotateOutcome
	Session Session
}

// EndedRetention is how long an ended session (expired or revoked) is
// kept: long enough that every access token it issued has expired too.
const EndedRetention = 48 * time.Hour

// Store is the persistence sessions need.
type Store interface {
	// The unit of work a refresh runs in (Refresh).
	storage.Transactor
	// Emit writes a webhook event in the transaction ctx carries.
	Emit(ctx context.Context, p webhooks.Payload) error
	CreateSession(ctx context.Context, s Session, refreshHash []byte) error
	SessionByID(ctx context.Context, id string) (Session, error)
	// RotateRefresh, in one transaction under a row lock, looks oldHash
	// up and either rotates it to newHash, issues newHash as a sibling
	// within grace, or revokes the session on reuse after grace.
	// The session's last use becomes now and seen.
	RotateRefresh(ctx context.Context, oldHash, newHash []byte, grace time.Duration, seen Client) (RotateResult, error)
	// RevokeSession ends a session: false when it had ended already.
	RevokeSession(ctx context.Context, id string) (bool, error)
	// StepUpSession sets a live session's aal and amr, marks its live
	// refresh tokens rotated and issues newHash in their place, in one
	// transaction: storage.ErrNotFound for a session revoked or expired.
	StepUpSession(ctx context.Context, id, aal string, amr []string, newHash []byte) error
	// RevokeAccountSessions revokes every session of the account and
	// reports how many were live.
	RevokeAccountSessions(ctx context.Context, accountID string) (int, error)
	// LiveSessions are the account's sessions neither revoked nor
	// expired, newest first.
	LiveSessions(ctx context.Context, accountID string) ([]Session, error)
	// LiveSessionsOf is LiveSessions of many accounts at once, by account
	// id; an account without live sessions has no entry.
	LiveSessionsOf(ctx context.Context, accountIDs []string) (map[string][]Session, error)
	// OnRevocation tells f, in this process, of every revocation the store
	// commits (kind "session" with a session id, "account" with an
	// account id, anything else: forget everything).
	OnRevocation(f func(kind, id string))
	// WatchRevocations tells evict of revocations committed by any
	// process until ctx ends, and live whether it is listening.
	WatchRevocations(ctx context.Context, evict func(kind, id string), live func(bool)) error
	Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error)
}

// Config holds token lifetimes.
type Config struct {
	AccessTTL  time.Duration
	RefreshTTL time.Duration
	Grace      time.Duration // reuse of a just-rotated refresh token tolerated
	Issuer     string
	// Audience is the aud claim issued and required; "" issues none.
	Audience string
	Keys     *KeySet // nil: a key generated once and kept in the database
	// Now is the clock (default time.Now in UTC).
	Now func() time.Time
}

// Tokens is what login and refresh return.
type Tokens struct {
	AccessToken  string
	RefreshToken string
	TokenType    string
	ExpiresIn    int // seconds
}

// Service logs people in and checks their tokens.
type Service struct {
	store    Store
	live     *liveSessions
	accounts *accounts.Service
	cfg      Config
	signer   *signer
	hashKey  []byte
	now      func() time.Time
	second   SecondFactor
}

// SetSecondFactor makes every login ask f whether a second factor must
// complete it (set once, before serving).
func (s *Service) SetSecondFactor(f SecondFactor) { s.second = f }

// NewService loads the keys (from cfg.Keys, or the database) and returns
// the service.
func NewService(ctx context.Context, store Store, accts *accounts.Service, cfg Config) (*Service, error) {
	now := cfg.Now
	if now == nil {
		now = func() time.Time { return time.Now().UTC() }
	}
	if cfg.Issuer == "" {
		cfg.Issuer = "herald"
	}
	keys := cfg.Keys
	if keys == nil {
		seed, err := store.Secret(ctx, "jwt_ed25519_seed", randomBytes(32))
		if err != nil {
			return nil, fmt.Errorf("load signing key: %w", err)
		}
		k, err := KeyFromSeed(seed)
		if err != nil {
			return nil, err
		}
		if keys, err = NewKeySet(k); err != nil {
			return nil, err
		}
	}
	hashKey, err := store.Secret(ctx, "refresh_hash_key", randomBytes(32))
	if err != nil {
		return nil, fmt.Errorf("load refresh hashing key: %w", err)
	}
	s := &Service{
		store:    store,
		live:     newLiveSessions(now),
		accounts: accts,
		cfg:      cfg,
		signer:   &signer{keys: keys, issuer: cfg.Issuer, audience: cfg.Audience, ttl: cfg.AccessTTL, now: now},
		hashKey:  hashKey,
		now:      now,
	}
	store.OnRevocation(s.live.evict)
	return s, nil
}

func randomBytes(n int) func() ([]byte, error) {
	return func() ([]byte, error) {
		b := make([]byte, n)
		_, err := rand.Read(b)
		return b, err
	}
}

// JWKS is the public key set document.
func (s *Service) JWKS() []byte { return s.signer.keys.PublicJWKS() }

// Issuer is the iss claim of access tokens.
func (s *Service) Issuer() string { return s.signer.issuer }

// Login checks the credentials and opens a session, remembering the
// client's user agent and address.
func (s *Service) Login(ctx context.Context, email, password string, c Client) (Tokens, error) {
	acct, err := s.accounts.CheckCredentials(ctx, email, password)
	if err != nil {
		return Tokens{}, err
	}
	if s.second != nil {
		if err := s.second.Challenge(ctx, acct, auth.AMRPassword); err != nil {
			return Tokens{}, err
		}
	}
	return s.Open(ctx, acct, auth.AAL1, []string{auth.AMRPassword}, c)
}

// Open opens a session for an account whose credentials were checked, at
// assurance level aal proved by amr: Login after a password, mfa.Service
// after a second factor completed the login's challenge.
func (s *Service) Open(ctx context.Context, acct accounts.Account, aal string, amr []string, c Client) (Tokens, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Tokens{}, err
	}
	refresh, hash, err := s.newRefreshToken()
	if err != nil {
		return Tokens{}, err
	}
	now := s.now()
	c = c.normalized()
	sess := Session{ID: id.String(), AccountID: acct.ID, CreatedAt: now, ExpiresAt: now.Add(s.cfg.RefreshTTL), UserAgent: c.UserAgent, IP: c.IP, AAL: aal, AMR: amr}
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.CreateSession(ctx, sess, hash); err != nil {
			return err
		}
		e := securitylog.Event{AccountID: acct.ID, Kind: securitylog.LoginOK, Outcome: securitylog.OK, IP: c.IP, UserAgent: c.UserAgent,
			Detail: map[string]string{"method": strings.Join(amr, "+"), "aal": aal, "sessionId": sess.ID}}
		return s.accounts.SecurityLog().Record(ctx, e)
	})
	if errors.Is(err, ErrAccountClosed) {
		// Disabled (or deleted) between the password check and now.
		return Tokens{}, apperr.New(apperr.AccountDisabled)
	} else if err != nil {
		return Tokens{}, err
	}
	return s.tokens(acct, sess, refresh)
}

// StepUp raises the caller's session to aal2, adding method to its amr,
// once a second factor was proved (mfa.Service.Verify): a new token pair
// for the same session; the session's earlier refresh tokens count as
// rotated. TOKEN_INVALID when the session ended meanwhile.
func (s *Service) StepUp(ctx context.Context, p auth.Principal, method string) (Tokens, error) {
	acct, err := s.accounts.ByID(ctx, p.AccountID)
	if errors.Is(err, storage.ErrNotFound) {
		return Tokens{}, apperr.New(apperr.TokenInvalid)
	}
	if err != nil {
		return Tokens{}, err
	}
	// The session's own first step stays first (a provider, a guest, a
	// password); pwd only for a token from before amr was carried.
	var amr []string
	first := p.AMR
	if len(first) == 0 {
		first = []string{auth.AMRPassword}
	}
	for _, m := range append(slices.Clone(first), method) {
		if !slices.Contains(amr, m) {
			amr = append(amr, m)
		}
	}
	refresh, hash, err := s.newRefreshToken()
	if err != nil {
		return Tokens{}, err
	}
	if err := s.store.StepUpSession(ctx, p.SessionID, auth.AAL2, amr, hash); errors.Is(err, storage.ErrNotFound) {
		return Tokens{}, apperr.New(apperr.TokenInvalid)
	} else if err != nil {
		return Tokens{}, err
	}
	return s.tokens(acct, Session{ID: p.SessionID, AAL: auth.AAL2, AMR: amr}, refresh)
}

func (s *Service) tokens(acct accounts.Account, sess Session, refresh string) (Tokens, error) {
	aal, amr := sess.AAL, sess.AMR
	if aal == "" {
		aal = auth.AAL1
	}
	if len(amr) == 0 {
		amr = []string{auth.AMRPassword}
	}
	access, _, err := s.signer.issue(acct.ID, sess.ID, acct.Scopes(), aal, amr)
	if err != nil {
		return Tokens{}, err
	}
	return Tokens{AccessToken: access, RefreshToken: refresh, TokenType: "Bearer", ExpiresIn: int(s.cfg.AccessTTL / time.Second)}, nil
}

// Refresh exchanges a refresh token for new tokens.
func (s *Service) Refresh(ctx context.Context, refreshToken string, c Client) (Tokens, error) {
	refreshToken = strings.TrimSpace(refreshToken)
	if refreshToken == "" {
		return Tokens{}, apperr.New(apperr.TokenInvalid)
	}
	next, nextHash, err := s.newRefreshToken()
	if err != nil {
		return Tokens{}, err
	}
	var res RotateResult
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		var err error
		if res, err = s.store.RotateRefresh(ctx, s.hashRefresh(refreshToken), nextHash, s.cfg.Grace, c.normalized()); err != nil || res.Outcome != RefreshReused {
			return err
		}
		if err := s.store.Emit(ctx, ReuseDetected{UserID: res.Session.AccountID, SessionID: res.Session.ID, SessionRevoked: true}); err != nil {
			return err
		}
		return s.accounts.SecurityLog().Record(ctx, securitylog.Event{AccountID: res.Session.AccountID, Kind: securitylog.RefreshReuseDetected, Outcome: securitylog.Refused,
			Actor: securitylog.ActorSystem, Detail: map[string]string{"sessionId": res.Session.ID, "sessionRevoked": "true"}})
	})
	if err != nil {
		return Tokens{}, err
	}
	switch res.Outcome {
	case RefreshRotated, RefreshGrace:
	case RefreshExpired:
		return Tokens{}, tokenExpired(res.Session.ExpiresAt, "refresh")
	default: // unknown, revoked, reused
		return Tokens{}, apperr.New(apperr.TokenInvalid)
	}
	acct, err := s.accounts.ByID(ctx, res.Session.AccountID)
	if errors.Is(err, storage.ErrNotFound) {
		return Tokens{}, apperr.New(apperr.TokenInvalid)
	}
	if err != nil {
		return Tokens{}, err
	}
	if acct.Disabled() { // its sessions were revoked with it; a race lost
		return Tokens{}, apperr.New(apperr.TokenInvalid)
	}
	return s.tokens(acct, res.Session, next)
}

// RevokeAll ends every session of an account (an operator's call):
// USER_NOT_FOUND for an unknown account; an account holding admin needs a
// caller by holding admin (accounts.MayManage). It reports how many were
// live.
func (s *Service) RevokeAll(ctx context.Context, by auth.Principal, accountID string) (int, error) {
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
		if n, err = s.store.RevokeAccountSessions(ctx, accountID); err != nil {
			return err
		}
		return s.accounts.SecurityLog().Record(ctx, securitylog.Event{AccountID: accountID, Kind: securitylog.AdminAction, Outcome: securitylog.OK,
			Actor: accounts.AdminActor(by), Detail: map[string]string{"action": "sessions_revoked", "sessionsRevoked": strconv.Itoa(n)}})
	})
	return n, err
}

// List returns an account's live sessions, newest first.
func (s *Service) List(ctx context.Context, accountID string) ([]Session, error) {
	return s.store.LiveSessions(ctx, accountID)
}

// ListOf is List for many accounts at once (a page of them), by account
// id: an account without live sessions has no entry.
func (s *Service) ListOf(ctx context.Context, accountIDs []string) (map[string][]Session, error) {
	return s.store.LiveSessionsOf(ctx, accountIDs)
}

// RevokeOwn ends one of the account's own sessions: SESSION_NOT_FOUND for
// a session that is another account's, unknown or already ended.
func (s *Service) RevokeOwn(ctx context.Context, accountID, sessionID string) error {
	sess, err := s.store.SessionByID(ctx, sessionID)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && (sess.AccountID != accountID || sess.RevokedAt != nil || !s.now().Before(sess.ExpiresAt))) {
		return apperr.Newf(apperr.SessionNotFound, "You have no live session with the id %q.", sessionID)
	}
	if err != nil {
		return err
	}
	_, err = s.revoke(ctx, accountID, sessionID, securitylog.SessionRevoked)
	return err
}

// Logout revokes the caller's session: its refresh token and its access
// tokens stop working at once.
func (s *Service) Logout(ctx context.Context, by auth.Principal) error {
	_, err := s.revoke(ctx, by.AccountID, by.SessionID, securitylog.Logout)
	return err
}

// revoke ends one session of the account, recording kind when it ended
// it (false: it had ended already, and nothing is recorded).
func (s *Service) revoke(ctx context.Context, accountID, sessionID string, kind securitylog.Kind) (bool, error) {
	var ended bool
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		var err error
		if ended, err = s.store.RevokeSession(ctx, sessionID); err != nil || !ended {
			return err
		}
		return s.accounts.SecurityLog().Record(ctx, securitylog.Event{AccountID: accountID, Kind: kind, Outcome: securitylog.OK, Detail: map[string]string{"sessionId": sessionID}})
	})
	return ended, err
}

// WatchRevocations keeps this replica's cache of live sessions in step
// with revocations made anywhere, until ctx ends. Run it for the life of
// the server; without it cached answers last a second.
func (s *Service) WatchRevocations(ctx context.Context) error {
	return s.store.WatchRevocations(ctx, s.live.evict, s.live.listening.Store)
}

// VerifyAccessToken verifies an access token and that its session is live:
// neither revoked (TOKEN_INVALID) nor expired (TOKEN_EXPIRED, expiredAt the
// session's end, tokenType "access": the token ends with its session). The
// session is looked up by primary key, or answered from this replica's
// cache of live sessions, which every revocation evicts on every replica
// at once (WatchRevocations), so a logout holds everywhere; the cache keeps
// the session's end with it, so it never keeps an expired session alive.
// The principal's ExpiresAt is the token's or the session's end, whichever
// comes first. It implements auth.TokenVerifier.
func (s *Service) VerifyAccessToken(ctx context.Context, token string) (auth.Principal, error) {
	p, err := s.signer.verify(token)
	if err != nil {
		return auth.Principal{}, err
	}
	sessionEnd, ok := s.live.get(p.SessionID, p.AccountID)
	if !ok {
		gen := s.live.generation()
		sess, err := s.store.SessionByID(ctx, p.SessionID)
		if errors.Is(err, storage.ErrNotFound) {
			return auth.Principal{}, apperr.New(apperr.TokenInvalid)
		}
		if err != nil {
			return auth.Principal{}, err
		}
		if sess.RevokedAt != nil || sess.AccountID != p.AccountID {
			return auth.Principal{}, apperr.New(apperr.TokenInvalid)
		}
		sessionEnd = sess.ExpiresAt
		if s.now().Before(sessionEnd) {
			s.live.put(p.SessionID, p.AccountID, sessionEnd, gen)
		}
	}
	if !s.now().Before(sessionEnd) {
		return auth.Principal{}, tokenExpired(sessionEnd, "access")
	}
	if sessionEnd.Before(p.ExpiresAt) {
		p.ExpiresAt = sessionEnd.UTC()
	}
	return p, nil
}

// newRefreshToken returns an opaque token and its keyed hash; only the hash
// is stored.
func (s *Service) newRefreshToken() (string, []byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	tok := base64.RawURLEncoding.EncodeToString(b)
	return tok, s.hashRefresh(tok), nil
}

func (s *Service) hashRefresh(tok string) []byte {
	m := hmac.New(sha256.New, s.hashKey)
	m.Write([]byte(tok))
	return m.Sum(nil)
}

// EndLinkTTL is how long the link of a new-device alert ends its session.
const EndLinkTTL = 7 * 24 * time.Hour

// endLinkPurpose names the MAC key of end-session links
// (accounts.Service.LinkKey).
const endLinkPurpose = "session-end-link"

// EndLinkToken returns the token of the link, sent with a new-device
// alert, that ends sessionID of accountID (accounts.SignLinkToken: the
// account, the session and the expiry, EndLinkTTL from now).
func (s *Service) EndLinkToken(accountID, sessionID string) string {
	return accounts.SignLinkToken(s.accounts.LinkKey(endLinkPurpose), s.now().Add(EndLinkTTL), accountID, sessionID)
}

// EndByLink ends the session an EndLinkToken names, recording
// session_revoked as its owner's act. ended is false when the session had
// ended already (revoked, expired, or the account is gone); a token that
// is not the server's, or has expired, is VALIDATION_ERROR (field token).
func (s *Service) EndByLink(ctx context.Context, token string) (ended bool, err error) {
	f, err := accounts.ParseLinkToken(s.accounts.LinkKey(endLinkPurpose), token, s.now(), 2)
	if err != nil {
		return false, err
	}
	accountID, sessionID := f[0], f[1]
	sess, err := s.store.SessionByID(ctx, sessionID)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if sess.AccountID != accountID || sess.RevokedAt != nil || !s.now().Before(sess.ExpiresAt) {
		return false, nil
	}
	// Two clicks at once: the one that ends it says so.
	return s.revoke(ctx, accountID, sessionID, securitylog.SessionRevoked)
}

// SignInGuest opens a session for the guest of an app install, made now
// (created) or made before (accounts.Service.Guest): aal1, amr guest.
func (s *Service) SignInGuest(ctx context.Context, installID string, lang accounts.Language, c Client) (Tokens, bool, error) {
	acct, created, err := s.accounts.Guest(ctx, installID, lang)
	if err != nil {
		return Tokens{}, false, err
	}
	t, err := s.Open(ctx, acct, auth.AAL1, []string{AMRGuest}, c)
	return t, created, err
}

// AMRGuest is the amr of a guest's session.
const AMRGuest = "guest"
