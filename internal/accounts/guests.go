package accounts

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/storage"
)

// Guest accounts: an app install signs in without an email ("try first,
// sign up later"), gets the trial and the free device allowance, and
// upgrades in place, keeping its devices, subscription and history.

// GuestDomain is the placeholder addresses' domain: .invalid is reserved
// (RFC 2606), so no mail can ever reach one, and no signup can take one.
// The store leaves placeholders out of the admin's email search with it.
const GuestDomain = "@guest.invalid"

// MaxInstallIDLen bounds an app install's id.
const MaxInstallIDLen = 128

// DefaultGuestRetention is HERALD_GUEST_RETENTION's default.
const DefaultGuestRetention = 30 * 24 * time.Hour

// IsGuestPlaceholder reports whether email is a guest's placeholder.
func IsGuestPlaceholder(email string) bool { return strings.HasSuffix(email, GuestDomain) }

// address is a stored email as shown anywhere: "" for a placeholder.
func address(email string) string {
	if IsGuestPlaceholder(email) {
		return ""
	}
	return email
}

// wireAddress is a stored email as an answer or an event says it: null
// (nil) for a placeholder, as the API's email.
func wireAddress(email string) *string {
	if a := address(email); a != "" {
		return &a
	}
	return nil
}

// ValidateInstallID checks an install id: 8 to 128 characters of letters,
// digits, '-', '_' and '.' (a UUID, an Android ID, an identifierForVendor).
func ValidateInstallID(id string) error {
	if len(id) < 8 || len(id) > MaxInstallIDLen {
		return apperr.Invalid("installId", "8 to 128 letters, digits, '-', '_' or '.'", "of another length")
	}
	for _, r := range id {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return apperr.Invalid("installId", "8 to 128 letters, digits, '-', '_' or '.'", "other characters")
		}
	}
	return nil
}

// Guest is the guest account of an app install: the live one when the
// install has one (created false), else a new one with the trial. One
// live guest per install (the store's unique index) bounds what one
// device can make; the auth tier's rate limit and a CAPTCHA (when
// configured) bound an address.
func (s *Service) Guest(ctx context.Context, installID string, lang Language) (Account, bool, error) {
	if err := ValidateInstallID(installID); err != nil {
		return Account{}, false, err
	}
	if acct, err := s.store.GuestByInstall(ctx, installID); err == nil {
		if acct.Disabled() {
			return Account{}, false, apperr.New(apperr.AccountDisabled)
		}
		return acct, false, nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return Account{}, false, err
	}
	if err := s.requireCaptcha(ctx, "guest"); err != nil {
		return Account{}, false, err
	}
	locale, err := s.chooseLocale(lang)
	if err != nil {
		return Account{}, false, err
	}
	res, err := s.createGuest(ctx, installID, locale)
	if errors.Is(err, storage.ErrConflict) {
		// Another call for this install won the race: its guest.
		acct, err := s.store.GuestByInstall(ctx, installID)
		return acct, false, err
	}
	return res.Account, true, err
}

// UpgradeGuest gives the caller's guest account an email and password:
// it stops being a guest, keeps everything it has, and its address is
// verified by the usual emailed code (EMAIL_NOT_VERIFIED at a password
// login until then). NOT_A_GUEST for an account that is not one,
// EMAIL_EXISTS for an address in use.
func (s *Service) UpgradeGuest(ctx context.Context, accountID, rawEmail, plain string) (Account, error) {
	email, err := NormalizeEmail(rawEmail)
	if err != nil {
		return Account{}, err
	}
	if err := s.validateNewPassword(ctx, plain); err != nil {
		return Account{}, err
	}
	acct, err := s.ByID(ctx, accountID)
	if err != nil {
		return Account{}, err
	}
	if !acct.Guest {
		return Account{}, apperr.New(apperr.NotAGuest)
	}
	if _, err := s.store.AccountByEmail(ctx, email); err == nil {
		return Account{}, apperr.New(apperr.EmailExists)
	} else if !errors.Is(err, storage.ErrNotFound) {
		return Account{}, err
	}
	hash, err := s.hasher.Hash(ctx, plain)
	if err != nil {
		return Account{}, err
	}
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		ok, err := s.store.UpgradeGuest(ctx, accountID, email, hash, false)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.New(apperr.NotAGuest)
		}
		if err := s.store.EnqueueJob(ctx, CodeEmailArgs{AccountID: accountID, Purpose: PurposeVerify}); err != nil {
			return err
		}
		return s.seclog.Record(ctx, securitylog.Event{AccountID: accountID, Kind: securitylog.GuestUpgraded, Outcome: securitylog.OK, Detail: map[string]string{"method": "password"}})
	})
	if errors.Is(err, storage.ErrConflict) {
		return Account{}, apperr.New(apperr.EmailExists)
	}
	if err != nil {
		return Account{}, err
	}
	return s.Profile(ctx, accountID)
}

// EndGuest is a guest upgraded by another way in, inside the caller's
// unit of work: a passkey (email "": it keeps its placeholder until it
// changes its address) or a provider identity whose verified email it
// takes when that address is free. Nothing for an account that is not a
// guest.
func (s *Service) EndGuest(ctx context.Context, accountID, method, verifiedEmail string) error {
	acct, err := s.ByID(ctx, accountID)
	if err != nil || !acct.Guest {
		return err
	}
	email := ""
	if verifiedEmail != "" {
		if norm, err := NormalizeEmail(verifiedEmail); err == nil {
			if _, err := s.store.AccountByEmail(ctx, norm); errors.Is(err, storage.ErrNotFound) {
				email = norm
			}
		}
	}
	if _, err := s.store.UpgradeGuest(ctx, accountID, email, "", email != ""); err != nil {
		return err
	}
	return s.seclog.Record(ctx, securitylog.Event{AccountID: accountID, Kind: securitylog.GuestUpgraded, Outcome: securitylog.OK, Detail: map[string]string{"method": method}})
}

// PurgeGuests deletes the guests made longer than retention ago and not
// used since (their sessions neither opened nor refreshed), as an
// account is deleted; it reports how many went.
func (s *Service) PurgeGuests(ctx context.Context, retention time.Duration) (int, error) {
	n := 0
	for {
		ids, err := s.store.StaleGuests(ctx, s.now().Add(-retention), 100)
		if err != nil || len(ids) == 0 {
			return n, err
		}
		for _, id := range ids {
			if err := s.delete(ctx, id, nil); err != nil && !apperr.Is(err, apperr.UserNotFound) {
				return n, err
			}
			n++
		}
	}
}
