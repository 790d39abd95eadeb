package provider

import (
	"context"
	"crypto"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/identities"
	"github.com/herald-vpn/herald/internal/identities/provider/providertest"
)

// FuzzVerifyIDToken: whatever a client sends as an id_token and nonce,
// verification answers claims with a subject, IDENTITY_TOKEN_INVALID or
// VALIDATION_ERROR; never a panic or another error.
func FuzzVerifyIDToken(f *testing.F) {
	iss := providertest.NewIssuer(f)
	v := newVerifier(identities.Apple, ProviderConfig{Issuer: iss.URL, ClientIDs: []string{"com.example.vpn"}},
		&oidc.StaticKeySet{PublicKeys: []crypto.PublicKey{iss.PublicKey()}}, time.Now)
	good := iss.Mint(f, providertest.Token{Audience: "com.example.vpn", Subject: "001.abc", Email: "a@privaterelay.appleid.com", EmailVerified: "true", Nonce: providertest.AppleNonce("n")})
	f.Add(good, "n")
	f.Add(good, "")
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "n")
	f.Add("a.b.c", "n")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, raw, nonce string) {
		c, err := v.Verify(context.Background(), raw, nonce)
		if err == nil {
			if c.Subject == "" {
				t.Fatalf("verified claims without a subject: %+v", c)
			}
			return
		}
		if !apperr.Is(err, apperr.IdentityTokenInvalid) && !apperr.Is(err, apperr.ValidationError) {
			t.Fatalf("Verify(%q, %q): %v, want IDENTITY_TOKEN_INVALID or VALIDATION_ERROR", raw, nonce, err)
		}
	})
}
