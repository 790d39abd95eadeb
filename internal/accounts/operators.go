package accounts

import (
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
)

// Standing is what the store finds about an account a change is about to
// disable, enable, delete or strip of admin, read under the store's lock
// of the operators (so that two such changes are decided one after the
// other): the account as it is, and how many other enabled admins there
// are.
type Standing struct {
	Account     Account
	OtherAdmins int // accounts holding admin, neither disabled nor deleted, besides Account
}

// EnabledAdmin reports whether the account is an operator who can work:
// it holds admin and is not disabled.
func (a Account) EnabledAdmin() bool { return a.HasScope(auth.ScopeAdmin) && !a.Disabled() }

// MayManage is the rule of the operations on another account that can
// lock its owner out (disable, enable, delete, end its sessions): an
// account holding admin is managed only by a caller holding admin, so an
// API key (which never holds it) cannot lock an operator out.
// INSUFFICIENT_PERMISSIONS naming admin otherwise.
func MayManage(by auth.Principal, a Account) error {
	if a.HasScope(auth.ScopeAdmin) && !by.Has(auth.ScopeAdmin) {
		return apperr.Newf(apperr.InsufficientPermissions, "This account holds the %q scope: only a caller holding it may disable, enable or delete it, or end its sessions.", auth.ScopeAdmin).
			With("scope", auth.ScopeAdmin)
	}
	return nil
}

// keepAnAdmin is the rule of a change that takes the account out of the
// enabled admins (disabling it, deleting it, revoking its admin): the last
// enabled admin stays, or nobody could manage the service but through
// the database. LAST_ADMIN otherwise.
func keepAnAdmin(st Standing) error {
	if st.Account.EnabledAdmin() && st.OtherAdmins == 0 {
		return apperr.Newf(apperr.LastAdmin, "%s is the last enabled admin account; make another admin first (herald admin create).", st.Account.Email)
	}
	return nil
}

// removal is the guard of a change by a caller that takes the account out
// of the enabled admins: MayManage, then keepAnAdmin.
func removal(by auth.Principal) func(Standing) error {
	return func(st Standing) error {
		if err := MayManage(by, st.Account); err != nil {
			return err
		}
		return keepAnAdmin(st)
	}
}
