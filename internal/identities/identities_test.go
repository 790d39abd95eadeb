package identities_test

import (
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/identities"
	"github.com/herald-vpn/herald/internal/identities/provider/providertest"
)

func TestDecide(t *testing.T) {
	known := &identities.Identity{ID: "i1", AccountID: "a1"}
	verified := identities.Claims{Subject: "s", Email: "a@example.com", EmailVerified: true}
	unverified := identities.Claims{Subject: "s", Email: "a@example.com"}
	for _, c := range []struct {
		what   string
		claims identities.Claims
		e      identities.Existing
		want   identities.Outcome
		code   apperr.Code
	}{
		{"a known identity signs in", unverified, identities.Existing{Identity: known}, identities.SignIn, ""},
		{"both verified: link", verified, identities.Existing{AccountID: "a1", AccountVerified: true}, identities.Link, ""},
		{"the account unverified: refused", verified, identities.Existing{AccountID: "a1"}, 0, apperr.IdentityEmailUnverified},
		{"the provider unverified: refused", unverified, identities.Existing{AccountID: "a1", AccountVerified: true}, 0, apperr.IdentityEmailUnverified},
		{"the account disabled", verified, identities.Existing{AccountID: "a1", AccountVerified: true, AccountDisabled: true}, 0, apperr.AccountDisabled},
		{"a new verified address: create", verified, identities.Existing{}, identities.Create, ""},
		{"a new unverified address: refused", unverified, identities.Existing{}, 0, apperr.IdentityEmailUnverified},
		{"no email: refused", identities.Claims{Subject: "s", EmailVerified: true}, identities.Existing{}, 0, apperr.IdentityTokenInvalid},
	} {
		got, err := identities.Decide(c.claims, c.e)
		if c.code != "" {
			if !apperr.Is(err, c.code) {
				t.Errorf("%s: %v, want %s", c.what, err, c.code)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %v %v, want %v", c.what, got, err, c.want)
		}
	}
}

func TestNonceMatches(t *testing.T) {
	for _, c := range []struct {
		p             identities.Provider
		claimed, sent string
		want          bool
	}{
		{identities.Apple, providertest.AppleNonce("raw"), "raw", true},
		{identities.Apple, providertest.AppleNonce("raw"), "other", false},
		{identities.Apple, "raw", "raw", true}, // Apple's web flow: the nonce as sent
		{identities.Google, "raw", "raw", true},
		{identities.Google, providertest.AppleNonce("raw"), "raw", false},
		{identities.Google, "", "", false},
		{identities.Google, "raw", "", false},
		{identities.Apple, "", "raw", false},
	} {
		if got := identities.NonceMatches(c.p, c.claimed, c.sent); got != c.want {
			t.Errorf("NonceMatches(%s, %q, %q) = %v, want %v", c.p, c.claimed, c.sent, got, c.want)
		}
	}
}

// The ways left after an identity went.
func TestRemain(t *testing.T) {
	for _, c := range []struct {
		w  identities.WaysIn
		ok bool
	}{
		{identities.WaysIn{}, false},
		{identities.WaysIn{Identities: 1}, true},
		{identities.WaysIn{Password: true}, true},
		{identities.WaysIn{Passkeys: 1}, true},
	} {
		if err := c.w.Remain(); (err == nil) != c.ok {
			t.Errorf("%+v: %v, want ok %v", c.w, err, c.ok)
		}
	}
}

func TestIsPrivateRelay(t *testing.T) {
	if !identities.IsPrivateRelay("x7k2@PrivateRelay.AppleID.com") || identities.IsPrivateRelay("ann@example.com") {
		t.Fatal("private relay addresses told apart wrongly")
	}
}
