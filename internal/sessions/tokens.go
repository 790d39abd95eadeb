package sessions

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
)

// Claims are the access token's claims.
type Claims struct {
	SessionID string `json:"sid"`
	Scope     string `json:"scope"`
	// AAL is the session's assurance level (auth.AAL1, auth.AAL2) and AMR
	// the methods that proved it (auth.AMRPassword …).
	AAL string   `json:"aal,omitempty"`
	AMR []string `json:"amr,omitempty"`
	jwt.RegisteredClaims
}

// signer issues and verifies access tokens.
type signer struct {
	keys     *KeySet
	issuer   string
	audience string // "": no aud issued or required
	ttl      time.Duration
	now      func() time.Time

	parserOnce sync.Once
	parser     *jwt.Parser

	verified verifiedTokens
}

// jwtParser is the parser of access tokens, built once: the algorithm,
// the issuer, the audience (when configured) and a required expiry.
func (s *signer) jwtParser() *jwt.Parser {
	s.parserOnce.Do(func() {
		opts := []jwt.ParserOption{
			jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
			jwt.WithIssuer(s.issuer),
			jwt.WithExpirationRequired(),
			jwt.WithTimeFunc(s.now),
		}
		if s.audience != "" {
			opts = append(opts, jwt.WithAudience(s.audience))
		}
		s.parser = jwt.NewParser(opts...)
	})
	return s.parser
}

// publicKey finds the key a token names.
func (s *signer) publicKey(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	k, ok := s.keys.byID[kid]
	if !ok {
		return nil, errors.New("unknown key")
	}
	return ed25519.PublicKey(k.Public), nil
}

func (s *signer) issue(accountID, sessionID string, scopes []string, aal string, amr []string) (string, time.Time, error) {
	now := s.now().Truncate(time.Second)
	exp := now.Add(s.ttl)
	claims := Claims{
		SessionID: sessionID,
		Scope:     strings.Join(scopes, " "),
		AAL:       aal,
		AMR:       amr,
		RegisteredClaims: jwt.RegisteredClaims{
			ID:        uuid.NewString(),
			Issuer:    s.issuer,
			Subject:   accountID,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
		},
	}
	if s.audience != "" {
		claims.Audience = jwt.ClaimStrings{s.audience}
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	tok.Header["kid"] = s.keys.active.ID
	signed, err := tok.SignedString(s.keys.active.Private)
	return signed, exp, err
}

// verify checks the signature, algorithm, key, issuer, audience (when one
// is configured) and expiry of raw, once per token on this replica: a
// token seen before is answered from verified, its expiry checked again.
// Only a token that verifies but has expired is TOKEN_EXPIRED; everything
// else is TOKEN_INVALID.
func (s *signer) verify(raw string) (auth.Principal, error) {
	if p, ok := s.verified.get(raw); ok {
		if !s.now().Before(p.ExpiresAt) {
			s.verified.drop(raw)
			return auth.Principal{}, tokenExpired(p.ExpiresAt, "access")
		}
		return p, nil
	}
	p, err := s.check(raw)
	if err == nil {
		s.verified.put(raw, p)
	}
	return p, err
}

// check is verify without the memory of tokens seen.
func (s *signer) check(raw string) (auth.Principal, error) {
	var claims Claims
	tok, err := s.jwtParser().ParseWithClaims(raw, &claims, s.publicKey)
	if err != nil {
		if errors.Is(err, jwt.ErrTokenExpired) && claims.ExpiresAt != nil {
			return auth.Principal{}, tokenExpired(claims.ExpiresAt.Time, "access")
		}
		return auth.Principal{}, apperr.New(apperr.TokenInvalid)
	}
	if !tok.Valid || claims.Subject == "" || claims.SessionID == "" {
		return auth.Principal{}, apperr.New(apperr.TokenInvalid)
	}
	aal, amr := claims.AAL, claims.AMR
	if aal != auth.AAL2 {
		aal = auth.AAL1 // tokens issued before aal existed: a password
	}
	if len(amr) == 0 {
		amr = []string{auth.AMRPassword}
	}
	return auth.Principal{
		Kind:      auth.User,
		AccountID: claims.Subject,
		SessionID: claims.SessionID,
		Scopes:    strings.Fields(claims.Scope),
		ExpiresAt: claims.ExpiresAt.Time.UTC(),
		AAL:       aal,
		AMR:       amr,
	}, nil
}

// verifiedTokens remembers, on this replica, the access tokens whose
// signature and claims it has checked, each until it expires. A client
// sends the same token with every request for its lifetime, and checking
// an Ed25519 signature (and decoding the token) is about half of an
// authenticated read's CPU. The keys, issuer and audience a token was
// checked against do not change while the process runs, and the key is
// the whole token, so an entry answers only for the exact bytes checked.
// Whether the session is still live is not its business: that is checked
// on every request (VerifyAccessToken). Only tokens that verified are
// kept, and a token costs a login, so the map grows only as fast as
// logins do; past verifiedMaxEntries an arbitrary entry makes room.
type verifiedTokens struct {
	mu      sync.RWMutex
	entries map[string]auth.Principal // by the whole token
}

// verifiedMaxEntries bounds the memory of tokens seen: about 5 MB.
const verifiedMaxEntries = 10_000

func (v *verifiedTokens) get(raw string) (auth.Principal, bool) {
	v.mu.RLock()
	p, ok := v.entries[raw]
	v.mu.RUnlock()
	return p, ok
}

func (v *verifiedTokens) put(raw string, p auth.Principal) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.entries == nil {
		v.entries = map[string]auth.Principal{}
	}
	makeRoom(v.entries, verifiedMaxEntries)
	v.entries[raw] = p
}

func (v *verifiedTokens) drop(raw string) {
	v.mu.Lock()
	delete(v.entries, raw)
	v.mu.Unlock()
}

func tokenExpired(at time.Time, kind string) error {
	return apperr.New(apperr.TokenExpired).
		With("expiredAt", at.UTC().Format(time.RFC3339)).
		With("tokenType", kind)
}
