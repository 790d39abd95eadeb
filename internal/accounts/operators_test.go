package accounts_test

import (
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
)

// Only a caller holding admin manages an account holding admin; a key
// holds every other scope at most.
func TestMayManage(t *testing.T) {
	adminUser := auth.Principal{Kind: auth.User, AccountID: "ops", Scopes: []string{auth.ScopeAdmin}}
	keyAll := auth.Principal{Kind: auth.APIKey, KeyID: "k", Scopes: auth.KeyScopes}
	user := auth.Principal{Kind: auth.User, AccountID: "ann"}
	operator := accounts.Account{ID: "ops", Scope: "admin"}
	disabledOperator := accounts.Account{ID: "ops2", Scope: "other admin", DisabledAt: &time.Time{}}
	plain := accounts.Account{ID: "ann"}
	for _, c := range []struct {
		name    string
		by      auth.Principal
		target  accounts.Account
		refused bool
	}{
		{"admin on an admin", adminUser, operator, false},
		{"admin on a user", adminUser, plain, false},
		{"key with every key scope on an admin", keyAll, operator, true},
		{"key with every key scope on a disabled admin", keyAll, disabledOperator, true},
		{"key on a user", keyAll, plain, false},
		{"user on an admin", user, operator, true},
	} {
		err := accounts.MayManage(c.by, c.target)
		if !c.refused {
			if err != nil {
				t.Errorf("%s: %v, want allowed", c.name, err)
			}
			continue
		}
		if e := apperr.As(err); !apperr.Is(err, apperr.InsufficientPermissions) || e.Details["scope"] != auth.ScopeAdmin {
			t.Errorf("%s: %v, want INSUFFICIENT_PERMISSIONS naming admin", c.name, err)
		}
	}
}
