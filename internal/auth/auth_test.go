package auth_test

import (
	"errors"
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/policy"
)

var (
	user     = auth.Principal{Kind: auth.User, AccountID: "u1", SessionID: "s1"}
	admin    = auth.Principal{Kind: auth.User, AccountID: "a1", SessionID: "s2", Scopes: []string{auth.ScopeAdmin}}
	billing  = auth.Principal{Kind: auth.APIKey, KeyID: "k1", RateLimit: 7, Scopes: []string{auth.ScopeAccountsWrite}}
	anyScope = auth.Principal{Kind: auth.APIKey, KeyID: "k2", Scopes: []string{auth.ScopeAdmin}} // never issued; must not pass as admin
)

func TestPermit(t *testing.T) {
	cases := []struct {
		name  string
		rule  auth.Rule
		p     auth.Principal
		code  apperr.Code // "" when permitted
		scope string      // details.scope of the refusal
	}{
		{"public needs no one", auth.Public, auth.Principal{}, "", ""},
		{"user on a user operation", auth.Protected, user, "", ""},
		{"admin on a user operation", auth.Protected, admin, "", ""},
		{"key on a user operation", auth.Protected, billing, apperr.InsufficientPermissions, ""},
		{"user on a scoped operation", auth.Scoped(auth.ScopeAccountsWrite), user, apperr.InsufficientPermissions, auth.ScopeAccountsWrite},
		{"admin holds every key scope", auth.Scoped(auth.ScopeAccountsWrite), admin, "", ""},
		{"admin on admin", auth.Admin, admin, "", ""},
		{"key with its scope", auth.Scoped(auth.ScopeAccountsWrite), billing, "", ""},
		{"key without the scope", auth.Scoped(auth.ScopeNotificationsSend), billing, apperr.InsufficientPermissions, auth.ScopeNotificationsSend},
		{"key on admin", auth.Admin, billing, apperr.InsufficientPermissions, auth.ScopeAdmin},
		{"a key never holds more than it lists", auth.Scoped(auth.ScopeWebhooksManage), anyScope, apperr.InsufficientPermissions, auth.ScopeWebhooksManage},
	}
	for _, c := range cases {
		err := c.rule.Permit(auth.Result{Principal: c.p})
		var e *apperr.Error
		switch {
		case c.code == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.code != "" && (!errors.As(err, &e) || e.Code != c.code):
			t.Errorf("%s: got %v, want %s", c.name, err, c.code)
		case c.scope != "" && e.Details["scope"] != c.scope:
			t.Errorf("%s: details.scope = %v, want %s", c.name, e.Details["scope"], c.scope)
		}
	}
	failed := apperr.New(apperr.TokenInvalid)
	if err := auth.Protected.Permit(auth.Result{Err: failed}); err != failed {
		t.Errorf("a failed credential must be refused with its own error, got %v", err)
	}
}

func TestUnits(t *testing.T) {
	rules := []auth.Rule{auth.Protected, auth.Scoped(auth.ScopeAccountsRead), auth.ForAuthTier}
	cases := []struct {
		name string
		p    auth.Principal
		want policy.Units
	}{
		{"anonymous pays global and auth only", auth.Principal{}, policy.Units{Global: 3, Auth: 1}},
		{"a user pays protected and admin", user, policy.Units{Global: 3, Auth: 1, Protected: 1, Admin: 1, UserID: "u1"}},
		{"a key pays its own tier at its own limit", billing, policy.Units{Global: 3, Auth: 1, APIKeyUnits: 2, APIKey: "k1", APIKeyLimit: 7}},
	}
	for _, c := range cases {
		if got := auth.Units(rules, c.p); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}
