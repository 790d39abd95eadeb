// Package provider speaks to the identity providers: it verifies their
// id_tokens with github.com/coreos/go-oidc (issuer, keys, audience,
// expiry, nonce) and, for Apple, exchanges an authorization code for a
// refresh token and revokes it.
package provider

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
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
	issuer    string
	clientIDs []string
	oidc      *oidc.IDTokenVerifier
}

// NewVerifier returns the verifier of p under cfg. The key set is fetched
// with client when a token names a key not yet seen, bounded by client's
// timeout; ctx must last as long as the verifier (the key set's fetches
// run under it).
func NewVerifier(ctx context.Context, p identities.Provider, cfg ProviderConfig, client *http.Client, now func() time.Time) *Verifier {
	keysClient := *client
	keysClient.Transport = keysTransport{next: cmp.Or[http.RoundTripper](client.Transport, http.DefaultTransport)}
	return newVerifier(p, cfg, oidc.NewRemoteKeySet(oidc.ClientContext(ctx, &keysClient), cfg.JWKSURL), now)
}

func newVerifier(p identities.Provider, cfg ProviderConfig, keys oidc.KeySet, now func() time.Time) *Verifier {
	return &Verifier{
		provider:  p,
		issuer:    cfg.Issuer,
		clientIDs: cfg.ClientIDs,
		oidc: oidc.NewVerifier(cfg.Issuer, signatureStage{keys}, &oidc.Config{
			SkipClientIDCheck:    true, // several client ids: checked below
			SkipIssuerCheck:      true, // checked below, to name the refusal without reading go-oidc's text
			SupportedSigningAlgs: signingAlgs,
			Now:                  now,
		}),
	}
}

var signingAlgs = []string{oidc.RS256, oidc.ES256}

// errKeysUnavailable marks a failure to fetch the provider's key set (the
// network, or an answer other than 200): not the token's fault.
var errKeysUnavailable = errors.New("the provider's keys cannot be fetched")

// keysTransport turns every failed fetch of the key set into an error
// wrapping errKeysUnavailable, which go-oidc passes up with %w to the key
// set (a status it would otherwise put in its text only).
type keysTransport struct{ next http.RoundTripper }

func (t keysTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errKeysUnavailable, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s", errKeysUnavailable, resp.Status)
	}
	return resp, nil
}

// signatureStage wraps the key set to tell Verify that the refusal came
// from the signature check, and whether the keys were out of reach:
// go-oidc flattens that error into text (%v) on its way out.
type signatureStage struct{ keys oidc.KeySet }

type signatureOutcome struct{ failed, keysUnavailable bool }

type signatureOutcomeKey struct{}

func (s signatureStage) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	payload, err := s.keys.VerifySignature(ctx, jwt)
	if o, ok := ctx.Value(signatureOutcomeKey{}).(*signatureOutcome); ok && err != nil {
		o.failed, o.keysUnavailable = true, errors.Is(err, errKeysUnavailable)
	}
	return payload, err
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
	if jws, err := jose.ParseSignedCompact(raw, joseAlgs); err != nil || len(jws.Signatures) != 1 {
		return identities.Claims{}, invalid("malformed")
	}
	var sig signatureOutcome
	tok, err := v.oidc.Verify(context.WithValue(ctx, signatureOutcomeKey{}, &sig), raw)
	var expired *oidc.TokenExpiredError
	switch {
	case sig.keysUnavailable:
		// Later, not the token's fault.
		return identities.Claims{}, apperr.Newf(apperr.ServiceUnavailable, "The identity provider's keys cannot be fetched; try again shortly.").WithRetryAfter(5)
	case sig.failed:
		return identities.Claims{}, invalid("signature")
	case errors.As(err, &expired):
		return identities.Claims{}, invalid("expired")
	case err != nil:
		// Claims that do not decode, or a token not valid yet (nbf).
		return identities.Claims{}, invalid("claims")
	case !issuedBy(tok.Issuer, v.issuer):
		return identities.Claims{}, invalid("issuer")
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

// issuedBy reports whether a token's iss is the configured issuer.
// Google's tokens may say "accounts.google.com" without the scheme, which
// Google documents as the same issuer (go-oidc allows it the same way).
func issuedBy(iss, want string) bool {
	return iss == want || (want == GoogleIssuer && iss == "accounts.google.com")
}

var joseAlgs = func() []jose.SignatureAlgorithm {
	out := make([]jose.SignatureAlgorithm, len(signingAlgs))
	for i, a := range signingAlgs {
		out[i] = jose.SignatureAlgorithm(a)
	}
	return out
}()

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
