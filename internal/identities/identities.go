// Package identities owns sign-in with a provider's identity (Sign in
// with Apple, Google): the id_token a native app got from the provider,
// verified against the provider's keys, its nonce and audience; the rules
// that decide whether it signs in to an account, links to one, creates
// one or is refused; and the identities an account holds. Verification
// is github.com/coreos/go-oidc's.
package identities

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
)

// Provider names an identity provider.
type Provider string

const (
	Apple  Provider = "apple"
	Google Provider = "google"
)

// Providers is every provider Herald knows, in a stable order.
var Providers = []Provider{Apple, Google}

// ParseProvider is the provider a path or argument names:
// VALIDATION_ERROR for another.
func ParseProvider(s string) (Provider, error) {
	for _, p := range Providers {
		if string(p) == s {
			return p, nil
		}
	}
	return "", apperr.Invalid("provider", "apple or google", s)
}

// Identity is one provider identity an account holds.
type Identity struct {
	ID        string
	AccountID string
	Provider  Provider
	Subject   string // the provider's stable user id (sub)
	Email     string // the address the provider gave, as given
	// PrivateRelay marks an Apple private relay address
	// (…@privaterelay.appleid.com): mail to it is forwarded by Apple.
	PrivateRelay bool
	// HasRevokeToken: Apple's refresh token was obtained from an
	// authorization code and is kept (sealed) for the revocation Apple
	// requires when the identity or its account goes.
	HasRevokeToken bool
	CreatedAt      time.Time
	LastUsedAt     *time.Time
}

// Claims are what a verified id_token says about its user.
type Claims struct {
	Subject       string
	Email         string
	EmailVerified bool
	PrivateRelay  bool
	Nonce         string
}

// RevokeArgs is the job that revokes a removed identity's token at its
// provider (Apple's /auth/revoke). Sealed is the token as the store keeps
// it, sealed and bound to the identity's id: the job table never holds it
// in clear.
type RevokeArgs struct {
	IdentityID string   `json:"identity_id"`
	Provider   Provider `json:"provider"`
	Sealed     []byte   `json:"sealed"`
}

func (RevokeArgs) Kind() string { return "identity_revoke_token" }

// MaxTokenLen bounds an id_token or authorization code a client sends.
const MaxTokenLen = 16 << 10

// NonceMatches reports whether the id_token's nonce claim is the one the
// client says it sent: Apple's native flow puts the SHA-256 (hex) of the
// app's nonce in the token, Google's the nonce itself. An empty nonce
// never matches: it is required.
func NonceMatches(p Provider, claimed, sent string) bool {
	if sent == "" || claimed == "" {
		return false
	}
	want := sent
	if p == Apple {
		sum := sha256.Sum256([]byte(sent))
		want = hex.EncodeToString(sum[:])
	}
	return subtle.ConstantTimeCompare([]byte(strings.ToLower(claimed)), []byte(strings.ToLower(want))) == 1 ||
		(p == Apple && subtle.ConstantTimeCompare([]byte(claimed), []byte(sent)) == 1)
}

// IsPrivateRelay reports whether email is an Apple private relay address.
func IsPrivateRelay(email string) bool {
	return strings.HasSuffix(strings.ToLower(email), "@privaterelay.appleid.com")
}

// Existing is what the store knows when a verified token arrives: the
// identity of its (provider, subject), if any, and the account holding
// the token's email, if any.
type Existing struct {
	Identity *Identity
	// Account is the account whose email is the token's, with whether
	// that email is verified.
	AccountID       string
	AccountVerified bool
	AccountDisabled bool
}

// Outcome is what a sign-in with a provider does.
type Outcome int

const (
	SignIn Outcome = iota // the identity is known: sign in to its account
	Link                  // the same verified email on both sides: link, then sign in
	Create                // a new account, verified, holding the identity
)

// Decide is the sign-in rule. A known identity signs in to its account.
// An unknown one links to the account holding its email only when both
// sides verified that email; an account whose email is unverified, or a
// token whose email the provider did not verify, is refused
// (IDENTITY_EMAIL_UNVERIFIED), because linking there would hand the
// account to whoever controls the unverified side. Otherwise a new
// account is created. A token with no email cannot create an account.
func Decide(c Claims, e Existing) (Outcome, error) {
	if e.Identity != nil {
		return SignIn, nil
	}
	if e.AccountID != "" {
		if e.AccountDisabled {
			return 0, apperr.New(apperr.AccountDisabled)
		}
		if !c.EmailVerified || !e.AccountVerified {
			return 0, apperr.New(apperr.IdentityEmailUnverified)
		}
		return Link, nil
	}
	if c.Email == "" {
		return 0, apperr.Newf(apperr.IdentityTokenInvalid, "The id_token carries no email address: ask the provider for the email scope.").With("reason", "no email")
	}
	if !c.EmailVerified {
		return 0, apperr.New(apperr.IdentityEmailUnverified)
	}
	return Create, nil
}

// WaysIn counts an account's ways to sign in, for the rule that a user
// never removes the last one.
type WaysIn struct {
	Password   bool
	Passkeys   int
	Identities int
}

// Remain is the rule on the ways left after one went: LAST_SIGN_IN_METHOD
// when none is.
func (w WaysIn) Remain() error {
	if w.Password || w.Passkeys > 0 || w.Identities > 0 {
		return nil
	}
	return apperr.New(apperr.LastSignInMethod)
}
