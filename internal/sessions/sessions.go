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
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/storage"
)

// ScopeAdmin is the scope held by operators.
const ScopeAdmin = accounts.ScopeAdmin

// Session is one login.
type Session struct {
	ID        string
	AccountID string
	CreatedAt time.Time
	ExpiresAt time.Time // end of the refresh token's life
	RevokedAt *time.Time
}

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

// Store is the persistence sessions need.
type Store interface {
	CreateSession(ctx context.Context, s Session, refreshHash []byte) error
	SessionByID(ctx context.Context, id string) (Session, error)
	// RotateRefresh, in one transaction under a row lock, looks oldHash
	// up and either rotates it to newHash, issues newHash as a sibling
	// within grace, or revokes the session on reuse after grace.
	RotateRefresh(ctx context.Context, oldHash, newHash []byte, grace time.Duration) (RotateResult, error)
	RevokeSession(ctx context.Context, id string) error
	RevokeAccountSessions(ctx context.Context, accountID string) error
	Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error)
}

// Config holds token lifetimes.
type Config struct {
	AccessTTL  time.Duration
	RefreshTTL time.Duration
	Grace      time.Duration // reuse of a just-rotated refresh token tolerated
	Issuer     string
	Keys       *KeySet // nil: a key generated once and kept in the database
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
	accounts *accounts.Service
	cfg      Config
	signer   *signer
	hashKey  []byte
	now      func() time.Time
}

// NewService loads the keys (from cfg.Keys, or the database) and returns
// the service.
func NewService(ctx context.Context, store Store, accts *accounts.Service, cfg Config, now func() time.Time) (*Service, error) {
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
	return &Service{
		store:    store,
		accounts: accts,
		cfg:      cfg,
		signer:   &signer{keys: keys, issuer: cfg.Issuer, ttl: cfg.AccessTTL, now: now},
		hashKey:  hashKey,
		now:      now,
	}, nil
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

// Login checks the credentials and opens a session.
func (s *Service) Login(ctx context.Context, email, password string) (Tokens, error) {
	acct, err := s.accounts.CheckCredentials(ctx, email, password)
	if err != nil {
		return Tokens{}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Tokens{}, err
	}
	refresh, hash, err := s.newRefreshToken()
	if err != nil {
		return Tokens{}, err
	}
	now := s.now()
	sess := Session{ID: id.String(), AccountID: acct.ID, CreatedAt: now, ExpiresAt: now.Add(s.cfg.RefreshTTL)}
	if err := s.store.CreateSession(ctx, sess, hash); err != nil {
		return Tokens{}, err
	}
	return s.tokens(acct, sess.ID, refresh)
}

func (s *Service) tokens(acct accounts.Account, sessionID, refresh string) (Tokens, error) {
	access, _, err := s.signer.issue(acct.ID, sessionID, acct.Scopes())
	if err != nil {
		return Tokens{}, err
	}
	return Tokens{AccessToken: access, RefreshToken: refresh, TokenType: "Bearer", ExpiresIn: int(s.cfg.AccessTTL / time.Second)}, nil
}

// Refresh exchanges a refresh token for new tokens.
func (s *Service) Refresh(ctx context.Context, refreshToken string) (Tokens, error) {
	refreshToken = strings.TrimSpace(refreshToken)
	if refreshToken == "" {
		return Tokens{}, apperr.New(apperr.TokenInvalid)
	}
	next, nextHash, err := s.newRefreshToken()
	if err != nil {
		return Tokens{}, err
	}
	res, err := s.store.RotateRefresh(ctx, s.hashRefresh(refreshToken), nextHash, s.cfg.Grace)
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
	return s.tokens(acct, res.Session.ID, next)
}

// Logout revokes the caller's session: its refresh token and its access
// tokens stop working at once.
func (s *Service) Logout(ctx context.Context, id Identity) error {
	return s.store.RevokeSession(ctx, id.SessionID)
}

// Authenticate verifies an access token and that its session is live: one
// primary-key lookup per request, so a logout holds on every replica at once.
func (s *Service) Authenticate(ctx context.Context, token string) (Identity, error) {
	id, err := s.signer.verify(token)
	if err != nil {
		return Identity{}, err
	}
	sess, err := s.store.SessionByID(ctx, id.SessionID)
	if errors.Is(err, storage.ErrNotFound) {
		return Identity{}, apperr.New(apperr.TokenInvalid)
	}
	if err != nil {
		return Identity{}, err
	}
	if sess.RevokedAt != nil || sess.AccountID != id.AccountID {
		return Identity{}, apperr.New(apperr.TokenInvalid)
	}
	return id, nil
}

// Require is the auth check of both doors: it reads the bearer token of the request,
// authenticates it and checks scope.
func (s *Service) Require(ctx context.Context, scope string) (context.Context, error) {
	if id, ok := FromContext(ctx); ok {
		return ctx, checkScope(id, scope)
	}
	header := strings.TrimSpace(api.Info(ctx).Authorization)
	if header == "" {
		return ctx, apperr.New(apperr.AuthRequired)
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return ctx, apperr.New(apperr.TokenInvalid)
	}
	id, err := s.Authenticate(ctx, strings.TrimSpace(token))
	if err != nil {
		return ctx, err
	}
	return WithIdentity(ctx, id), checkScope(id, scope)
}

func checkScope(id Identity, scope string) error {
	if scope != "" && !id.Has(scope) {
		return apperr.Newf(apperr.InsufficientPermissions, "This operation needs the %q scope.", scope)
	}
	return nil
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

type identityKey struct{}

// WithIdentity returns ctx carrying the caller's identity.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the caller's identity, if authenticated.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}
