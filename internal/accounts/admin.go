package accounts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"cmp"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/cursor"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/shed"
	"github.com/herald-vpn/herald/internal/storage"
)

// Record is an account as the admin API shows it: the account and what
// an operator needs to know about its use.
type Record struct {
	Account
	DeviceCount  int // active devices
	SessionCount int // sessions neither revoked nor expired
}

// Filter narrows the admin search; zero fields do not filter.
type Filter struct {
	// EmailPrefix matches the beginning of the (lower-case) email, never
	// a guest's placeholder; ID matches the id exactly. Both set: either
	// matches.
	EmailPrefix string
	ID          string
	Plan        string
	// Active filters on the subscription: true active, false expired (at Now).
	Active   *bool
	Verified *bool
	Disabled *bool
	// Guest filters on the record's guest: true the guest accounts (not
	// upgraded yet), false the others.
	Guest *bool
	Now   time.Time
}

// Search is what the admin listing asks for.
type Search struct {
	Query    string // an email prefix or an id
	Plan     string
	Status   string // "", active or expired (the subscription's status)
	Verified *bool
	Disabled *bool
	Guest    *bool // guest accounts (true) or the others (false)
}

// Paging of the admin listing.
const (
	DefaultUsersPage = 50
	MaxUsersPage     = 500
	MaxReasonLen     = 500
)

// UserPage is one page of the admin listing.
type UserPage struct {
	Users       []Record
	EndCursor   string
	HasNextPage bool
}

// userCursor's payload is the id of the last account of a page.
var userCursor = cursor.New[string]("user")

// Users lists accounts, newest first, first at a time (default 50, at most
// 500). VALIDATION_ERROR for a bad first, status or cursor.
func (s *Service) Users(ctx context.Context, q Search, first int, after string) (UserPage, error) {
	first, err := cursor.PageSize(first, DefaultUsersPage, MaxUsersPage)
	if err != nil {
		return UserPage{}, err
	}
	afterID, err := userCursor.After(after)
	if err != nil {
		return UserPage{}, apperr.Invalid("after", "a cursor from an earlier page", after)
	}
	f := Filter{Plan: strings.TrimSpace(q.Plan), Verified: q.Verified, Disabled: q.Disabled, Guest: q.Guest, Now: s.now()}
	if query := strings.TrimSpace(q.Query); query != "" {
		if len(query) > MaxEmailLen || !utf8.ValidString(query) {
			return UserPage{}, apperr.Invalid("query", "an email prefix or a user id", "too long or not UTF-8")
		}
		f.EmailPrefix, f.ID = strings.ToLower(query), query
	}
	switch q.Status {
	case "":
	case "active", "expired":
		active := q.Status == "active"
		f.Active = &active
	default:
		return UserPage{}, apperr.Invalid("status", "one of active, expired", q.Status)
	}
	recs, err := s.store.SearchAccounts(ctx, f, afterID, first+1)
	if err != nil {
		return UserPage{}, err
	}
	p, err := cursor.Cut(userCursor, recs, first, func(r Record) string { return r.ID })
	if err != nil {
		return UserPage{}, err
	}
	return UserPage{Users: p.Items, EndCursor: p.EndCursor, HasNextPage: p.HasNextPage}, nil
}

// User returns an account's record; USER_NOT_FOUND when unknown or deleted.
func (s *Service) User(ctx context.Context, id string) (Record, error) {
	r, err := s.store.AccountRecord(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return Record{}, apperr.New(apperr.UserNotFound)
	}
	return r, err
}

// UserByEmail returns the record of the account with this email.
func (s *Service) UserByEmail(ctx context.Context, email string) (Record, error) {
	acct, _, found, err := s.lookup(ctx, email)
	if err != nil {
		return Record{}, err
	}
	if !found {
		return Record{}, apperr.New(apperr.UserNotFound)
	}
	return s.User(ctx, acct.ID)
}

// Disable stops the account: it cannot log in (ACCOUNT_DISABLED once its
// password is right), its sessions end and its devices get no pushes.
// Disabling a disabled account changes nothing (its first reason stays).
// by is the caller: an account holding admin needs a caller holding admin
// (MayManage), and the last enabled admin is LAST_ADMIN.
func (s *Service) Disable(ctx context.Context, by auth.Principal, id, reason string) (Record, error) {
	reason = strings.TrimSpace(reason)
	if utf8.RuneCountInString(reason) > MaxReasonLen || !utf8.ValidString(reason) || strings.IndexFunc(reason, unicode.IsControl) >= 0 {
		return Record{}, apperr.Invalid("reason", fmt.Sprintf("at most %d characters, no control characters", MaxReasonLen), "invalid")
	}
	return s.setDisabled(ctx, id, true, reason, AdminActor(by), removal(by))
}

// Enable lets a disabled account log in again (its old sessions stay
// ended). Enabling an enabled account changes nothing. An account holding
// admin needs a caller holding admin (MayManage).
func (s *Service) Enable(ctx context.Context, by auth.Principal, id string) (Record, error) {
	return s.setDisabled(ctx, id, false, "", AdminActor(by), func(st Standing) error { return MayManage(by, st.Account) })
}

// EnableByEmail is Enable for the CLI, whose operator holds the
// database's credentials and so is asked for no scope.
func (s *Service) EnableByEmail(ctx context.Context, email string) (Record, error) {
	acct, _, found, err := s.lookup(ctx, email)
	if err != nil {
		return Record{}, err
	}
	if !found {
		return Record{}, apperr.New(apperr.UserNotFound)
	}
	return s.setDisabled(ctx, acct.ID, false, "", securitylog.ActorSystem, nil)
}

func (s *Service) setDisabled(ctx context.Context, id string, disabled bool, reason, actor string, allow func(Standing) error) (Record, error) {
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		changed, err := SetDisabled(ctx, s.store, id, disabled, reason, allow)
		if err != nil || !changed {
			return err
		}
		e := securitylog.Event{AccountID: id, Kind: securitylog.AdminAction, Outcome: securitylog.OK, Actor: actor, Detail: map[string]string{"action": "enable"}}
		if disabled {
			e.Detail = map[string]string{"action": "disable", "reason": reason}
		}
		return s.seclog.Record(ctx, e)
	})
	if errors.Is(err, storage.ErrNotFound) {
		return Record{}, apperr.New(apperr.UserNotFound)
	} else if err != nil {
		return Record{}, err
	}
	return s.User(ctx, id)
}

// AdminActor is the security log's actor of an operator's call: the admin
// user's account id or the API key's id.
func AdminActor(by auth.Principal) string {
	if by.Kind == auth.APIKey {
		return securitylog.AdminActor(by.KeyID)
	}
	return securitylog.AdminActor(by.AccountID)
}

// Delete deletes an account for good (see DeleteAccount): its
// sessions end, its devices, codes and subscription go, and only a
// tombstone of its id remains, so the email can sign up again.
// USER_NOT_FOUND when unknown or deleted already. by is the caller, held
// to the rules of Disable.
func (s *Service) Delete(ctx context.Context, by auth.Principal, id string) error {
	return s.delete(ctx, id, removal(by))
}

func (s *Service) delete(ctx context.Context, id string, allow func(Standing) error) error {
	err := DeleteAccount(ctx, s.store, id, allow)
	if errors.Is(err, storage.ErrNotFound) {
		return apperr.New(apperr.UserNotFound)
	}
	return err
}

// DeleteOwn is a user deleting their own account, which their password
// confirms: INVALID_CREDENTIALS when it is wrong, LAST_ADMIN when it is
// the last enabled admin, MFA_STEP_UP_REQUIRED when the account has a
// second factor the session did not prove (SetStepUp). An account without
// a password (made by Apple or Google, a passkey-only guest upgrade, a
// guest) confirms by its session's sign-in instead: made within
// Config.RecentSignIn (a refresh does not renew it), else
// RECENT_SIGN_IN_REQUIRED; the password field is then not read.
func (s *Service) DeleteOwn(ctx context.Context, by auth.Principal, plain string) error {
	if err := s.requireStepUp(ctx, by); err != nil {
		return err
	}
	hash, err := s.store.AccountPasswordHash(ctx, by.AccountID)
	if errors.Is(err, storage.ErrNotFound) {
		return apperr.New(apperr.UserNotFound)
	}
	if err != nil {
		return err
	}
	if hash == "" {
		err = s.confirmRecentSignIn(ctx, by.SessionID)
	} else {
		err = s.confirmPassword(ctx, by.AccountID, plain)
	}
	if err != nil {
		return err
	}
	return s.delete(ctx, by.AccountID, keepAnAdmin)
}

// confirmRecentSignIn is RECENT_SIGN_IN_REQUIRED unless the session was
// signed in within Config.RecentSignIn.
func (s *Service) confirmRecentSignIn(ctx context.Context, sessionID string) error {
	at, err := s.store.SessionSignedInAt(ctx, sessionID)
	if errors.Is(err, storage.ErrNotFound) {
		return apperr.New(apperr.RecentSignInRequired)
	}
	if err != nil {
		return err
	}
	if window := cmp.Or(s.cfg.RecentSignIn, DefaultRecentSignIn); s.now().Sub(at) > window {
		return apperr.New(apperr.RecentSignInRequired)
	}
	return nil
}

// requireStepUp is MFA_STEP_UP_REQUIRED for a session below aal2 whose
// account has a second factor (nil without a checker).
func (s *Service) requireStepUp(ctx context.Context, by auth.Principal) error {
	if s.stepUp == nil {
		return nil
	}
	return s.stepUp.RequireAAL2(ctx, by)
}

// confirmPassword checks that plain is the signed-in account's password:
// INVALID_CREDENTIALS when it is not, the hashing queue's 503 when full.
func (s *Service) confirmPassword(ctx context.Context, id, plain string) error {
	hash, err := s.store.AccountPasswordHash(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return apperr.New(apperr.UserNotFound)
	}
	if err != nil {
		return err
	}
	if plain == "" || len(plain) > 4*MaxPasswordLen {
		if err := s.hasher.VerifyDummy(ctx, plain); err != nil {
			return err
		}
		return apperr.Newf(apperr.InvalidCredentials, "The password is wrong.")
	}
	ok, _, err := s.hasher.Verify(ctx, plain, hash)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if busy, isBusy := errors.AsType[*shed.Refused](err); isBusy {
		return busy
	}
	if err != nil || !ok {
		return apperr.Newf(apperr.InvalidCredentials, "The password is wrong.")
	}
	return nil
}

// SetDisabled disables (with reason) or enables the account in one unit
// of work of st (Store.SetDisabled), with the user.disabled event of a
// change that disables it. It reports whether anything changed.
func SetDisabled(ctx context.Context, st Store, id string, disabled bool, reason string, allow func(Standing) error) (bool, error) {
	var changed bool
	err := st.InTx(ctx, func(ctx context.Context) error {
		var err error
		if changed, err = st.SetDisabled(ctx, id, disabled, reason, allow); err != nil || !changed || !disabled {
			return err
		}
		return st.Emit(ctx, UserDisabled{UserID: id, Reason: reason})
	})
	return changed, err
}
