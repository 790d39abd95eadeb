// Package apikeys owns API keys, the credential of other services (a
// billing service, a support tool, the VPN fleet): their format, the rules
// of creating, using and revoking one, and verifying a key into an
// auth.Principal. A key is "hk_<id>_<secret>"; only an HMAC-SHA256 of the
// secret, keyed by a server secret, is stored, and a key is looked up by
// its id on every request, so a revocation holds at once on every replica.
package apikeys

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/storage"
)

// Key is an API key as Herald keeps it; the secret itself is never kept.
type Key struct {
	ID     string
	Name   string
	Scopes []string
	// RateLimit is the key's requests per rate-limit window; 0 is the
	// apikey tier's default (HERALD_RATE_LIMIT_APIKEY).
	RateLimit  int
	ExpiresAt  *time.Time
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	// SecretHash is HMAC-SHA256(server key, secret).
	SecretHash []byte
}

// NewKey is what an admin asks for.
type NewKey struct {
	Name      string
	Scopes    []string
	RateLimit *int       // nil: the tier's default
	ExpiresAt *time.Time // nil: never
}

// Store is the persistence the service needs; sqlstore implements it.
type Store interface {
	CreateAPIKey(ctx context.Context, k Key) error
	// APIKeyByID returns a key; storage.ErrNotFound when there is none.
	APIKeyByID(ctx context.Context, id string) (Key, error)
	// ListAPIKeys returns every key, revoked ones too, newest first.
	ListAPIKeys(ctx context.Context) ([]Key, error)
	// RevokeAPIKey sets revoked_at unless already set and returns the key;
	// storage.ErrNotFound when there is none.
	RevokeAPIKey(ctx context.Context, id string, at time.Time) (Key, error)
	// TouchAPIKey sets last_used_at to at when it is unset or before
	// staleBefore, so replicas together write it at most once a minute.
	TouchAPIKey(ctx context.Context, id string, at, staleBefore time.Time) error
	Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error)
}

// Config holds the service's settings.
type Config struct {
	// DefaultRateLimit is the apikey tier's limit, shown for keys created
	// without their own (HERALD_RATE_LIMIT_APIKEY).
	DefaultRateLimit int
	Logger           *slog.Logger
	// Now is the clock (default time.Now in UTC).
	Now func() time.Time
}

// Service is the API-key rules over a store.
type Service struct {
	store        Store
	hashKey      []byte
	defaultLimit int
	logger       *slog.Logger
	now          func() time.Time
	stepUp       auth.StepUp
	seclog       *securitylog.Log
}

// NewService loads the hashing key (created once, kept in the database so
// every replica shares it) and returns the service.
func NewService(ctx context.Context, store Store, cfg Config) (*Service, error) {
	hashKey, err := store.Secret(ctx, "api_key_hash_key", func() ([]byte, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("load API key hashing key: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, hashKey: hashKey, defaultLimit: cfg.DefaultRateLimit, logger: cfg.Logger, now: cfg.Now}, nil
}

// Limits of what a key may be created with.
const (
	MaxNameLength = 100
	MaxRateLimit  = 1_000_000
)

// TouchEvery is how often lastUsedAt is written at most.
const TouchEvery = time.Minute

// Validate checks a request for a key: a name of 1 to 100 characters, at
// least one scope, each one an API-key scope (admin is not: keys cannot
// manage keys), a positive rate limit, an expiry in the future.
func Validate(n NewKey, now time.Time) error {
	name := strings.TrimSpace(n.Name)
	switch {
	case name == "":
		return apperr.Invalid("name", "a name of 1 to 100 characters", "missing")
	case utf8.RuneCountInString(name) > MaxNameLength:
		return apperr.Invalid("name", "a name of 1 to 100 characters", "too long")
	case len(n.Scopes) == 0:
		return apperr.Invalid("scopes", "one or more of "+strings.Join(auth.KeyScopes, ", "), "missing")
	}
	for _, s := range n.Scopes {
		if !slices.Contains(auth.KeyScopes, s) {
			return apperr.Invalid("scopes", "one or more of "+strings.Join(auth.KeyScopes, ", "), fmt.Sprintf("unknown scope %q", s))
		}
	}
	if n.RateLimit != nil && (*n.RateLimit < 1 || *n.RateLimit > MaxRateLimit) {
		return apperr.Invalid("rateLimit", fmt.Sprintf("an integer from 1 to %d", MaxRateLimit), fmt.Sprint(*n.RateLimit))
	}
	if n.ExpiresAt != nil && !n.ExpiresAt.After(now) {
		return apperr.Invalid("expiresAt", "a time in the future", n.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// Usable is the rule for a stored key at now: TOKEN_INVALID once revoked
// or expired.
func Usable(k Key, now time.Time) error {
	switch {
	case k.RevokedAt != nil:
		return apperr.Newf(apperr.TokenInvalid, "This API key was revoked.")
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return apperr.Newf(apperr.TokenInvalid, "This API key expired.")
	}
	return nil
}

// idLength and secretLength are the lengths of a key's parts: 16 hex
// digits of id (64 random bits), 43 base62 digits of secret (256 bits).
const (
	idLength     = 16
	secretLength = 43
)

// Parse splits "hk_<id>_<secret>"; ok is false for anything else.
func Parse(raw string) (id, secret string, ok bool) {
	rest, found := strings.CutPrefix(raw, auth.APIKeyPrefix)
	if !found {
		return "", "", false
	}
	id, secret, found = strings.Cut(rest, "_")
	if !found || len(id) != idLength || len(secret) != secretLength || !isHex(id) || !isBase62(secret) {
		return "", "", false
	}
	return id, secret, true
}

// Format is the key a client sends.
func Format(id, secret string) string { return auth.APIKeyPrefix + id + "_" + secret }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isBase62(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

// newKeyParts draws a fresh id and secret.
func newKeyParts() (id, secret string, err error) {
	b := make([]byte, 8+32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	secret = new(big.Int).SetBytes(b[8:]).Text(62)
	secret = strings.Repeat("0", secretLength-len(secret)) + secret
	return hex.EncodeToString(b[:8]), secret, nil
}

func (s *Service) hash(secret string) []byte {
	m := hmac.New(sha256.New, s.hashKey)
	m.Write([]byte(secret))
	return m.Sum(nil)
}

// SetStepUp makes creating a key need a session at aal2 when the
// creating admin's account has a second factor (set once, before
// serving).
func (s *Service) SetStepUp(c auth.StepUp) { s.stepUp = c }

// SetSecurityLog records each key's creation and revocation: in the
// security log of the admin user who did it, or in the operators' log for
// the command line (set once, before serving).
func (s *Service) SetSecurityLog(l *securitylog.Log) { s.seclog = l }

// record writes kind to the log of the admin user calling (actor user),
// or, for the command line (no caller: the host's operator), to the
// operators' log (no account, actor cli). An API key never gets here:
// managing keys needs the admin scope, which no key holds. The key's row
// is already written, so a failure is logged, not returned.
func (s *Service) record(ctx context.Context, kind securitylog.Kind, keyID string) {
	e := securitylog.Event{Kind: kind, Outcome: securitylog.OK, Detail: map[string]string{"keyId": keyID}}
	switch by := auth.Caller(ctx); {
	case by.Kind == auth.User && by.AccountID != "":
		e.AccountID = by.AccountID
	case by.Kind == auth.Anonymous:
		e.Actor = securitylog.ActorCLI
	default:
		s.logger.WarnContext(ctx, "security log entry not written: an unexpected caller", "kind", kind, "key_id", keyID)
		return
	}
	if err := s.seclog.Record(context.WithoutCancel(ctx), e); err != nil {
		s.logger.WarnContext(ctx, "security log entry not written", "kind", kind, "key_id", keyID, "err", err)
	}
}

// Create makes a key for by and returns it with the key string, which is
// shown this once and never again: MFA_STEP_UP_REQUIRED when by's account
// has a second factor its session did not prove. The operator's command
// line passes an anonymous principal (the host's operator).
func (s *Service) Create(ctx context.Context, by auth.Principal, n NewKey) (Key, string, error) {
	if s.stepUp != nil {
		if err := s.stepUp.RequireAAL2(ctx, by); err != nil {
			return Key{}, "", err
		}
	}
	now := s.now()
	if err := Validate(n, now); err != nil {
		return Key{}, "", err
	}
	id, secret, err := newKeyParts()
	if err != nil {
		return Key{}, "", err
	}
	k := Key{
		ID:         id,
		Name:       strings.TrimSpace(n.Name),
		Scopes:     slices.Compact(slices.Sorted(slices.Values(n.Scopes))),
		CreatedAt:  now,
		SecretHash: s.hash(secret),
	}
	if n.RateLimit != nil {
		k.RateLimit = *n.RateLimit
	}
	if n.ExpiresAt != nil {
		e := n.ExpiresAt.UTC()
		k.ExpiresAt = &e
	}
	if err := s.store.CreateAPIKey(ctx, k); err != nil {
		return Key{}, "", err
	}
	s.logger.InfoContext(ctx, "API key created", "key_id", k.ID, "name", k.Name, "scopes", strings.Join(k.Scopes, " "))
	s.record(ctx, securitylog.APIKeyCreated, k.ID)
	return k, Format(id, secret), nil
}

// RateLimitOf is the key's limit per window: its own, or the default.
func (s *Service) RateLimitOf(k Key) int {
	if k.RateLimit > 0 {
		return k.RateLimit
	}
	return s.defaultLimit
}

// List returns every key, newest first.
func (s *Service) List(ctx context.Context) ([]Key, error) { return s.store.ListAPIKeys(ctx) }

// Revoke ends a key at once; revoking a revoked key changes nothing.
// NOT_FOUND for an unknown id.
func (s *Service) Revoke(ctx context.Context, id string) (Key, error) {
	k, err := s.store.RevokeAPIKey(ctx, id, s.now())
	if errors.Is(err, storage.ErrNotFound) {
		return Key{}, apperr.Newf(apperr.NotFound, "No API key with the id %q.", id)
	}
	if err == nil {
		s.logger.InfoContext(ctx, "API key revoked", "key_id", k.ID)
		s.record(ctx, securitylog.APIKeyRevoked, k.ID)
	}
	return k, err
}

// VerifyAPIKey implements auth.KeyVerifier: TOKEN_INVALID for a key that
// is malformed, unknown, wrong, revoked or expired. It writes nothing (see
// RecordUse).
func (s *Service) VerifyAPIKey(ctx context.Context, raw string) (auth.Principal, error) {
	id, secret, ok := Parse(raw)
	if !ok {
		return auth.Principal{}, apperr.Newf(apperr.TokenInvalid, "This is not a Herald API key.")
	}
	k, err := s.store.APIKeyByID(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return auth.Principal{}, apperr.Newf(apperr.TokenInvalid, "This API key is not valid.")
	}
	if err != nil {
		return auth.Principal{}, err
	}
	if !hmac.Equal(s.hash(secret), k.SecretHash) {
		return auth.Principal{}, apperr.Newf(apperr.TokenInvalid, "This API key is not valid.")
	}
	now := s.now()
	if err := Usable(k, now); err != nil {
		return auth.Principal{}, err
	}
	p := auth.Principal{Kind: auth.APIKey, KeyID: k.ID, RateLimit: k.RateLimit, Scopes: k.Scopes}
	if k.ExpiresAt != nil {
		p.ExpiresAt = *k.ExpiresAt
	}
	if k.LastUsedAt != nil {
		p.KeyUsedAt = *k.LastUsedAt
	}
	return p, nil
}

// RecordUse implements auth.KeyVerifier: the key's lastUsedAt becomes now
// when it is older than TouchEvery (or unset). The server calls it once a
// request is admitted, so a refused request leaves it as it was.
func (s *Service) RecordUse(ctx context.Context, p auth.Principal) {
	now := s.now()
	if !p.KeyUsedAt.IsZero() && now.Sub(p.KeyUsedAt) < TouchEvery {
		return
	}
	// Best effort: a failed write must not refuse a valid key.
	if err := s.store.TouchAPIKey(ctx, p.KeyID, now, now.Add(-TouchEvery)); err != nil {
		s.logger.WarnContext(ctx, "API key last use not recorded", "key_id", p.KeyID, "err", err)
	}
}
