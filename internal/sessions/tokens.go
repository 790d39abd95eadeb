package sessions

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/herald-vpn/herald/internal/apperr"
)

// Claims are the access token's claims.
type Claims struct {
	SessionID string `json:"sid"`
	Scope     string `json:"scope"`
	jwt.RegisteredClaims
}

// Identity is the caller proven by an access token.
type Identity struct {
	AccountID string
	SessionID string
	Scopes    []string
	ExpiresAt time.Time
}

// Has reports whether the identity holds scope s.
func (id Identity) Has(s string) bool {
	for _, x := range id.Scopes {
		if x == s {
			return true
		}
	}
	return false
}

// signer issues and verifies access tokens.
type signer struct {
	keys   *KeySet
	issuer string
	ttl    time.Duration
	now    func() time.Time
}

func (s *signer) issue(accountID, sessionID string, scopes []string) (string, time.Time, error) {
	now := s.now().Truncate(time.Second)
	exp := now.Add(s.ttl)
	claims := Claims{
		SessionID: sessionID,
		Scope:     strings.Join(scopes, " "),
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    s.issuer,
			Subject:   accountID,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
		},
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	tok.Header["kid"] = s.keys.active.ID
	signed, err := tok.SignedString(s.keys.active.Private)
	return signed, exp, err
}

// verify checks the signature, algorithm, key, issuer and expiry of raw.
// Only a token that verifies but has expired is TOKEN_EXPIRED; everything
// else is TOKEN_INVALID.
func (s *signer) verify(raw string) (Identity, error) {
	var claims Claims
	tok, err := jwt.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, ok := s.keys.byID[kid]
		if !ok {
			return nil, errors.New("unknown key")
		}
		return ed25519.PublicKey(k.Public), nil
	},
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithIssuer(s.issuer),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(s.now),
	)
	if err != nil {
		if errors.Is(err, jwt.ErrTokenExpired) && claims.ExpiresAt != nil {
			return Identity{}, tokenExpired(claims.ExpiresAt.Time, "access")
		}
		return Identity{}, apperr.New(apperr.TokenInvalid)
	}
	if !tok.Valid || claims.Subject == "" || claims.SessionID == "" {
		return Identity{}, apperr.New(apperr.TokenInvalid)
	}
	return Identity{
		AccountID: claims.Subject,
		SessionID: claims.SessionID,
		Scopes:    strings.Fields(claims.Scope),
		ExpiresAt: claims.ExpiresAt.Time.UTC(),
	}, nil
}

func tokenExpired(at time.Time, kind string) error {
	return apperr.New(apperr.TokenExpired).
		With("expiredAt", at.UTC().Format(time.RFC3339)).
		With("tokenType", kind)
}
