// Package provider speaks to the identity providers: it verifies their
// id_tokens with github.com/coreos/go-oidc (issuer, keys, audience,
// expiry, nonce) and, for Apple, exchanges an authorization code for a
// refresh token and revokes it.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/identities"
)

// The providers' real issuers and key sets.
const (
	AppleIssuer  = "https://appleid.apple.com"
	AppleJWKS    = "https://appleid.apple.com/auth/keys"
	GoogleIssuer = "https://accounts.google.com"
	GoogleJWKS   = "https://www.googleapis.com/oauth2/v3/certs"
)

// ProviderConfig is one provider's verification: the issuer its tokens
// name, where its signing keys are, and the client ids (Apple: the app's
// bundle id and the web service id; Google: the Android, iOS and web
// client ids) a token's audience must hold one of. Off while ClientIDs is
// empty.
type ProviderConfig struct {
	Issuer    string
	JWKSURL   string
	ClientIDs []string
}

// Verifier checks one provider's id_tokens.
type Verifier struct {
	provider  identities.Provider
	clientIDs []string
	oidc      *oidc.IDTokenVerifier
}

// NewVerifier returns the verifier of p under cfg. The key set is fetched
// with client when a token names a key not yet seen, bounded by client's
// timeout; ctx must last as long as the verifier (the key set's fetches
// run under it).
func NewVerifier(ctx context.Context, p identities.Provider, cfg ProviderConfig, client *http.Client, now func() time.Time) *Verifier {
	return newVerifier(p, cfg, oidc.NewRemoteKeySet(oidc.ClientContext(ctx, client), cfg.JWKSURL), now)
}

func newVerifier(p identities.Provider, cfg ProviderConfig, keys oidc.KeySet, now func() time.Time) *Verifier {
	return &Verifier{
		provider:  p,
		clientIDs: cfg.ClientIDs,
		oidc: oidc.NewVerifier(cfg.Issuer, keys, &oidc.Config{
			SkipClientIDCheck:    true, // several client ids: checked below
			SupportedSigningAlgs: []string{oidc.RS256, oidc.ES256},
			Now:                  now,
		}),
	}
}

// Verify checks raw: signed by the provider's key, its issuer, its
// audience one of the client ids, not expired, its nonce the one the
// client sent. IDENTITY_TOKEN_INVALID (details.reason) otherwise.
func (v *Verifier) Verify(ctx context.Context, raw, nonce string) (identities.Claims, error) {
	if raw == "" || len(raw) > identities.MaxTokenLen {
		return identities.Claims{}, invalid("malformed")
	}
	if nonce == "" {
		return identities.Claims{}, apperr.Invalid("nonce", "the nonce the app sent the provider", "nothing")
	}
	tok, err := v.oidc.Verify(ctx, raw)
	if err != nil {
		if r := reasonOf(err); r != "keys unavailable" {
			return identities.Claims{}, invalid(r)
		}
		// The provider's keys cannot be fetched: later, not the token's fault.
		return identities.Claims{}, apperr.Newf(apperr.ServiceUnavailable, "The identity provider's keys cannot be fetched; try again shortly.").WithRetryAfter(5)
	}
	if !slices.ContainsFunc(tok.Audience, func(a string) bool { return slices.Contains(v.clientIDs, a) }) {
		return identities.Claims{}, invalid("audience")
	}
	var c struct {
		Email         string `json:"email"`
		EmailVerified any    `json:"email_verified"`   // Apple: "true" or true
		PrivateEmail  any    `json:"is_private_email"` // Apple only
	}
	if err := tok.Claims(&c); err != nil {
		return identities.Claims{}, invalid("claims")
	}
	if !identities.NonceMatches(v.provider, tok.Nonce, nonce) {
		return identities.Claims{}, invalid("nonce")
	}
	out := identities.Claims{Subject: tok.Subject, Email: strings.TrimSpace(c.Email), EmailVerified: truthy(c.EmailVerified), Nonce: tok.Nonce}
	out.PrivateRelay = truthy(c.PrivateEmail) || identities.IsPrivateRelay(out.Email)
	if out.Subject == "" {
		return identities.Claims{}, invalid("subject")
	}
	return out, nil
}

func invalid(reason string) error {
	return apperr.New(apperr.IdentityTokenInvalid).With("reason", reason)
}

// reasonOf names what go-oidc refused, for details.reason.
func reasonOf(err error) string {
	var expired *oidc.TokenExpiredError
	switch msg := err.Error(); {
	case errors.As(err, &expired):
		return "expired"
	case strings.Contains(msg, "issuer") || strings.Contains(msg, "different provider"):
		return "issuer"
	case strings.Contains(msg, "malformed") || strings.Contains(msg, "parse"):
		return "malformed"
	case strings.Contains(msg, "fetching keys") || strings.Contains(msg, "get keys"):
		return "keys unavailable"
	default:
		return "signature"
	}
}

// truthy reads a claim Apple sends as a string and Google as a boolean.
func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		return x == "true"
	case json.Number:
		return x.String() == "1"
	}
	return false
}
