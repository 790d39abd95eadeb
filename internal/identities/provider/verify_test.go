package provider

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
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

// Each refusal names its cause in details.reason, read from go-oidc's
// typed outcomes and Herald's own checks, not from its error text; the
// provider's keys out of reach is 503, whether the key set answers an
// error or nothing at all.
func TestVerifyRefusalReasons(t *testing.T) {
	iss := providertest.NewIssuer(t)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const client = "web-client"
	v := NewVerifier(t.Context(), identities.Google, ProviderConfig{Issuer: iss.URL, JWKSURL: iss.JWKSURL(), ClientIDs: []string{client}}, &http.Client{Timeout: 5 * time.Second}, time.Now)
	tok := func(mod func(*providertest.Token)) string {
		tk := providertest.Token{Audience: client, Subject: "g-1", Email: "a@example.com", EmailVerified: true, Nonce: "n"}
		if mod != nil {
			mod(&tk)
		}
		return iss.Mint(t, tk)
	}
	if c, err := v.Verify(t.Context(), tok(nil), "n"); err != nil || c.Subject != "g-1" {
		t.Fatalf("a good token: %+v, %v", c, err)
	}
	for _, c := range []struct {
		what, raw, nonce, reason string
	}{
		{"not a JWT", "not.a.jwt", "n", "malformed"},
		{"three empty segments", "..", "n", "malformed"},
		{"unsigned (alg none)", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "n", "malformed"},
		{"another key", tok(func(tk *providertest.Token) { tk.SignWith = other }), "n", "signature"},
		{"another issuer", tok(func(tk *providertest.Token) { tk.Issuer = "https://issuer.example" }), "n", "issuer"},
		{"another audience", tok(func(tk *providertest.Token) { tk.Audience = "someone-else" }), "n", "audience"},
		{"expired", tok(func(tk *providertest.Token) { tk.ExpiresAt = time.Now().Add(-time.Hour) }), "n", "expired"},
		{"another nonce", tok(nil), "not-n", "nonce"},
		{"no subject", tok(func(tk *providertest.Token) { tk.Subject = "" }), "n", "subject"},
	} {
		_, err := v.Verify(t.Context(), c.raw, c.nonce)
		if !apperr.Is(err, apperr.IdentityTokenInvalid) {
			t.Errorf("%s: %v, want IDENTITY_TOKEN_INVALID", c.what, err)
			continue
		}
		if got := apperr.As(err).Details["reason"]; got != c.reason {
			t.Errorf("%s: reason %v, want %s", c.what, got, c.reason)
		}
	}

	// A key the verifier has not seen makes it fetch the set again: an
	// outage then is the provider's, not the token's.
	rotated := providertest.NewIssuer(t)
	w := NewVerifier(t.Context(), identities.Google, ProviderConfig{Issuer: rotated.URL, JWKSURL: rotated.JWKSURL(), ClientIDs: []string{client}}, &http.Client{Timeout: 5 * time.Second}, time.Now)
	rotated.SetKeysFailing(true)
	mint := rotated.Mint(t, providertest.Token{Audience: client, Subject: "g-2", Nonce: "n"})
	if _, err := w.Verify(t.Context(), mint, "n"); !apperr.Is(err, apperr.ServiceUnavailable) {
		t.Errorf("the key set answering 503: %v, want SERVICE_UNAVAILABLE", err)
	}
	gone := NewVerifier(t.Context(), identities.Google, ProviderConfig{Issuer: rotated.URL, JWKSURL: "http://127.0.0.1:1/keys", ClientIDs: []string{client}}, &http.Client{Timeout: 5 * time.Second}, time.Now)
	if _, err := gone.Verify(t.Context(), mint, "n"); !apperr.Is(err, apperr.ServiceUnavailable) {
		t.Errorf("the key set out of reach: %v, want SERVICE_UNAVAILABLE", err)
	}
	rotated.SetKeysFailing(false)
	if _, err := w.Verify(t.Context(), mint, "n"); err != nil {
		t.Errorf("the key set back: %v", err)
	}
}
