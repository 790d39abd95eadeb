// Package auth is who calls Herald and what an operation asks of them: the
// Principal a credential proves, the one Authenticator that checks
// credentials, and the Rule each operation declares once — the tier it is
// charged to and the scope it needs — which the rate limiter and the
// permission check both read. It knows no HTTP: the server parses headers
// into a Credential at the edge.
package auth

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/policy"
)

// Kind is what proved a principal.
type Kind int

const (
	Anonymous Kind = iota // no credential
	User                  // an access token of a user's session
	APIKey                // an API key of another service
)

// Principal is the caller of a request.
type Principal struct {
	Kind      Kind
	AccountID string // User
	SessionID string // User
	KeyID     string // APIKey
	// RateLimit is an API key's own limit per rate-limit window; 0 is the
	// apikey tier's default.
	RateLimit int
	Scopes    []string
	ExpiresAt time.Time // of the credential; zero when it does not expire
	// KeyUsedAt is an API key's last recorded use (zero: never), for
	// RecordUse to write it again only when it is stale.
	KeyUsedAt time.Time
	// AAL is a user's authenticator assurance level (AAL1 or AAL2, the
	// token's aal claim) and AMR the methods that proved the session (the
	// amr claim: AMRPassword, AMROTP, AMRRecovery).
	AAL string
	AMR []string
	// AdminMFAMissing marks a user holding admin whose token is below
	// AAL2 while HERALD_ADMIN_MFA=required: Permit refuses them every
	// scoped (admin) operation with ADMIN_MFA_REQUIRED.
	AdminMFAMissing bool
}

// Assurance levels and authentication methods (RFC 8176 names where one
// fits) of a user's session.
const (
	AAL1 = "aal1" // a password alone
	AAL2 = "aal2" // a password and a second factor
	// AMRPassword, AMROTP and AMRRecovery are the amr values: a password,
	// a TOTP code, a recovery code.
	AMRPassword = "pwd"
	AMROTP      = "otp"
	AMRRecovery = "recovery"
	// AMRWebAuthn is a passkey's assertion (WebAuthn).
	AMRWebAuthn = "webauthn"
)

// StepUp checks, before a sensitive operation, that a user whose account
// has a second factor proved it in this session (AAL2):
// MFA_STEP_UP_REQUIRED otherwise (mfa.Service).
type StepUp interface {
	RequireAAL2(ctx context.Context, p Principal) error
}

// Subject is who the caller is, as counts per caller key it: "user:<id>"
// for a user (all their sessions together), "key:<id>" for an API key.
func (p Principal) Subject() string {
	if p.Kind == APIKey {
		return "key:" + p.KeyID
	}
	return "user:" + p.AccountID
}

// Has reports whether the principal holds scope s. A user holding admin
// holds every scope; an API key holds only the scopes it was given, and
// never admin.
func (p Principal) Has(s string) bool {
	if slices.Contains(p.Scopes, s) {
		return true
	}
	return p.Kind == User && slices.Contains(p.Scopes, ScopeAdmin) && slices.Contains(KeyScopes, s)
}

// Credential is what a request presented, as the edge parsed it.
type Credential struct {
	// Bearer is the token of an "Authorization: Bearer <token>" header.
	Bearer string
	// Present: an Authorization header was sent. Present with an empty
	// Bearer is a header of another scheme, or a bearer without a token.
	Present bool
	// APIKey is the value of an X-API-Key header.
	APIKey string
}

// APIKeyPrefix begins every API key, so that it is told from an access
// token at a glance (and by secret scanners).
const APIKeyPrefix = "hk_"

// TokenVerifier verifies access tokens (sessions.Service).
type TokenVerifier interface {
	VerifyAccessToken(ctx context.Context, token string) (Principal, error)
}

// KeyVerifier verifies API keys (apikeys.Service). Verifying reads and
// writes nothing but the key; RecordUse writes its last use, once the
// request that presented it has been admitted.
type KeyVerifier interface {
	VerifyAPIKey(ctx context.Context, key string) (Principal, error)
	RecordUse(ctx context.Context, p Principal)
}

// Authenticator is the one place a credential is checked.
type Authenticator struct {
	tokens TokenVerifier
	keys   KeyVerifier
	// adminMFA: HERALD_ADMIN_MFA=required (RequireAdminMFA).
	adminMFA bool
}

// RequireAdminMFA makes every user holding admin need a token at AAL2 for
// the admin operations (HERALD_ADMIN_MFA=required).
func (a *Authenticator) RequireAdminMFA(on bool) { a.adminMFA = on }

// NewAuthenticator returns an authenticator over the verifiers; keys may
// be nil, and then no API key is accepted.
func NewAuthenticator(tokens TokenVerifier, keys KeyVerifier) *Authenticator {
	return &Authenticator{tokens: tokens, keys: keys}
}

// Authenticate proves c: AUTH_REQUIRED without a credential, TOKEN_INVALID
// for a malformed one or for two at once, and the verifier's answer
// otherwise. A bearer that begins hk_ is an API key.
func (a *Authenticator) Authenticate(ctx context.Context, c Credential) (Principal, error) {
	switch {
	case c.APIKey != "" && c.Present:
		return Principal{}, apperr.Newf(apperr.TokenInvalid, "Send either an Authorization header or an X-API-Key header, not both.")
	case c.APIKey != "":
		return a.verifyKey(ctx, c.APIKey)
	case !c.Present:
		return Principal{}, apperr.New(apperr.AuthRequired)
	case c.Bearer == "":
		return Principal{}, apperr.New(apperr.TokenInvalid)
	case strings.HasPrefix(c.Bearer, APIKeyPrefix):
		return a.verifyKey(ctx, c.Bearer)
	}
	p, err := a.tokens.VerifyAccessToken(ctx, c.Bearer)
	if err == nil && a.adminMFA && p.AAL != AAL2 && slices.Contains(p.Scopes, ScopeAdmin) {
		p.AdminMFAMissing = true
	}
	return p, err
}

// RecordUse records that p's credential was used by a request admitted
// past the rate limits: an API key's last use (written at most once a
// minute). A refused request records nothing.
func (a *Authenticator) RecordUse(ctx context.Context, p Principal) {
	if p.Kind == APIKey && a.keys != nil {
		a.keys.RecordUse(ctx, p)
	}
}

func (a *Authenticator) verifyKey(ctx context.Context, key string) (Principal, error) {
	if a.keys == nil {
		return Principal{}, apperr.New(apperr.TokenInvalid)
	}
	return a.keys.VerifyAPIKey(ctx, key)
}

// Rule is what one operation (a REST route, a GraphQL root field) declares:
// the rate-limit tier it is charged to besides global, and the scope it
// needs. Tiers protected and admin need an authenticated caller.
type Rule struct {
	Tier  string // "", policy.TierAuth, policy.TierProtected or policy.TierAdmin
	Scope string // "" or a scope the caller must hold
}

// Public, ForAuthTier, Protected and Admin are the rules in use, with
// Scoped(s) for the operations other services may call.
var (
	Public      = Rule{}
	ForAuthTier = Rule{Tier: policy.TierAuth}
	Protected   = Rule{Tier: policy.TierProtected}
	Admin       = Scoped(ScopeAdmin)
)

// Scoped is the rule of an operation that needs scope s: charged to the
// admin tier for a user, to the key's own apikey tier for an API key.
func Scoped(s string) Rule { return Rule{Tier: policy.TierAdmin, Scope: s} }

// Scopes. Admin is the operators' scope: a user holding it holds every
// other scope too, and only it manages API keys and bans. The others are
// what an API key may be given.
const (
	ScopeAdmin             = "admin"
	ScopeAccountsRead      = "accounts:read"
	ScopeAccountsWrite     = "accounts:write"
	ScopeNotificationsSend = "notifications:send"
	ScopeMessengerSend     = "messenger:send"
	ScopeWebhooksManage    = "webhooks:manage"
)

// KeyScopes are the scopes an API key can hold, in documentation order.
var KeyScopes = []string{ScopeAccountsRead, ScopeAccountsWrite, ScopeNotificationsSend, ScopeMessengerSend, ScopeWebhooksManage}

// NeedsCaller reports whether the operation needs an authenticated caller.
func (r Rule) NeedsCaller() bool {
	return r.Tier == policy.TierProtected || r.Tier == policy.TierAdmin || r.Scope != ""
}

// Permit is the permission check: nil when the operation needs no caller
// or the request's caller qualifies; else the authentication error, or
// INSUFFICIENT_PERMISSIONS naming the scope (details.scope). An operation
// that acts for a signed-in user (no scope) refuses an API key.
func (r Rule) Permit(res Result) error {
	if !r.NeedsCaller() {
		return nil
	}
	if res.Err != nil {
		return res.Err
	}
	if r.Scope == "" && res.Principal.Kind == APIKey {
		return apperr.Newf(apperr.InsufficientPermissions, "This operation acts for a signed-in user; an API key cannot call it.")
	}
	if r.Scope != "" && res.Principal.Kind == User && res.Principal.AdminMFAMissing {
		return apperr.Newf(apperr.AdminMFARequired, "Admin operations need a session signed in with a second factor: enroll one (POST /api/v1/users/me/mfa/totp) and sign in with it, or step up this session (POST /api/v1/auth/mfa/verify).").With("requiredAal", AAL2)
	}
	if r.Scope != "" && !res.Principal.Has(r.Scope) {
		return apperr.Newf(apperr.InsufficientPermissions, "This operation needs the %q scope.", r.Scope).With("scope", r.Scope)
	}
	return nil
}

// Units is what a request with these rules costs the caller: one global
// unit per operation, one of each operation's tier; the per-caller tiers
// are charged only to an authenticated caller (a request whose credential
// failed is charged to its address alone, and refused by Permit).
func Units(rules []Rule, p Principal) policy.Units {
	u := policy.Units{Global: max(len(rules), 1)}
	for _, r := range rules {
		switch r.Tier {
		case policy.TierAuth:
			u.Auth++
		case policy.TierProtected:
			u.Protected++
		case policy.TierAdmin:
			u.Admin++
		}
	}
	switch p.Kind {
	case User:
		u.UserID = p.AccountID
	case APIKey:
		// A key's calls count against its own limit, not a user's.
		u.APIKey, u.APIKeyLimit = p.KeyID, p.RateLimit
		u.APIKeyUnits = u.Protected + u.Admin
		u.Protected, u.Admin = 0, 0
	default:
		u.Protected, u.Admin = 0, 0
	}
	return u
}

// Result is the outcome of authenticating a request, kept with it so that
// every operation of the request reads the same one.
type Result struct {
	Principal Principal
	Err       error // nil when Principal is authenticated
}

type resultKey struct{}

// WithResult returns ctx carrying the request's authentication.
func WithResult(ctx context.Context, r Result) context.Context {
	return context.WithValue(ctx, resultKey{}, r)
}

// ResultOf returns the request's authentication; AUTH_REQUIRED when the
// request was not authenticated.
func ResultOf(ctx context.Context) Result {
	if r, ok := ctx.Value(resultKey{}).(Result); ok {
		return r
	}
	return Result{Err: apperr.New(apperr.AuthRequired)}
}

// Caller is the request's authenticated principal (Anonymous when none).
func Caller(ctx context.Context) Principal {
	r := ResultOf(ctx)
	if r.Err != nil {
		return Principal{}
	}
	return r.Principal
}
