package devices

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/storage"
)

// Field limits.
const (
	MaxNameLen      = 100  // characters
	MaxPushTokenLen = 4096 // bytes; FCM tokens are ~160, APNs tokens 64
)

// Admin listing page sizes.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// Config holds the device rules an operator may tune.
type Config struct {
	// PlanLimits maps a plan to its maximum of active devices. A plan
	// missing from the map gets the trial limit. Nil: DefaultPlanLimits.
	PlanLimits map[string]int
	// UpgradeURL and RenewURL are shown in DEVICE_LIMIT_REACHED and
	// SUBSCRIPTION_EXPIRED (HERALD_UPGRADE_URL, HERALD_RENEW_URL).
	UpgradeURL string
	RenewURL   string
	// ImportBatchSize is the number of lines per import transaction
	// (default 1000).
	ImportBatchSize int
	// MaxImportErrors bounds ImportResult.Errors (default 10,000); every
	// rejected line is still counted in Rejected.
	MaxImportErrors int
	// Now is the clock (default time.Now in UTC).
	Now func() time.Time
}

// Service is the device rules.
type Service struct {
	store Store
	cfg   Config
}

// NewService returns the service.
func NewService(store Store, cfg Config) *Service {
	if cfg.PlanLimits == nil {
		cfg.PlanLimits = DefaultPlanLimits()
	}
	if cfg.ImportBatchSize <= 0 {
		cfg.ImportBatchSize = 1000
	}
	if cfg.MaxImportErrors <= 0 {
		cfg.MaxImportErrors = 10_000
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	return &Service{store: store, cfg: cfg}
}

// Plans returns the configured plan names, sorted.
func (s *Service) Plans() []string { return slices.Sorted(maps.Keys(s.cfg.PlanLimits)) }

// Limit returns the active-device limit of plan.
func (s *Service) Limit(plan string) int {
	if n, ok := s.cfg.PlanLimits[plan]; ok {
		return n
	}
	return s.cfg.PlanLimits[PlanTrial]
}

// List returns the account's active devices, oldest first.
func (s *Service) List(ctx context.Context, accountID string) ([]Device, error) {
	return s.store.ListDevices(ctx, accountID)
}

// Register adds a device to the account: VALIDATION_ERROR for a bad
// platform, token or name; SUBSCRIPTION_EXPIRED when the plan has lapsed;
// DEVICE_LIMIT_REACHED past the plan's active devices. A token another
// device holds moves to the new device. Registering again a token that an
// active device of the same account holds returns that device (refreshed)
// instead of creating a second one, so an app that re-registers on every
// start does not use up the plan.
func (s *Service) Register(ctx context.Context, accountID, platform, pushToken, name string) (Device, error) {
	if err := ValidatePlatform(platform); err != nil {
		return Device{}, err
	}
	token, err := normalizeToken(pushToken)
	if err != nil {
		return Device{}, err
	}
	name, err = normalizeName(name)
	if err != nil {
		return Device{}, err
	}
	allow := func(q Quota) error {
		now := s.cfg.Now()
		if !now.Before(q.ExpiresAt) {
			return apperr.Newf(apperr.SubscriptionExpired, "Your %s subscription expired on %s; renew it to add devices.", q.Plan, q.ExpiresAt.UTC().Format(time.RFC3339)).
				With("expiredAt", q.ExpiresAt.UTC().Format(time.RFC3339)).
				With("plan", q.Plan).
				With("renewUrl", s.cfg.RenewURL)
		}
		limit := s.Limit(q.Plan)
		if q.ActiveDevices >= limit {
			return apperr.Newf(apperr.DeviceLimitReached, "Your %s plan allows %d active devices; remove one or upgrade.", q.Plan, limit).
				With("currentDevices", q.ActiveDevices).
				With("maxDevices", limit).
				With("plan", q.Plan).
				With("upgradeUrl", s.cfg.UpgradeURL)
		}
		return nil
	}
	// Two registrations racing for one token: the loser retries and then
	// sees the winner's device, from which it takes the token.
	d, err := retryConflict(func() (Device, error) {
		id, err := newID()
		if err != nil {
			return Device{}, err
		}
		return s.store.RegisterDevice(ctx, NewDevice{ID: id, AccountID: accountID, Platform: platform, Name: name, NewName: orDefaultName(name, platform), PushToken: token}, allow)
	})
	if errors.Is(err, storage.ErrNotFound) {
		return Device{}, apperr.New(apperr.UserNotFound)
	}
	return d, err
}

// UpdatePushToken gives one of the account's active devices a new token and
// marks it valid again; another device holding that token loses it.
// DEVICE_NOT_FOUND for an unknown, inactive or another account's device.
func (s *Service) UpdatePushToken(ctx context.Context, accountID, deviceID, pushToken string) (Device, error) {
	token, err := normalizeToken(pushToken)
	if err != nil {
		return Device{}, err
	}
	d, err := retryConflict(func() (Device, error) {
		return s.store.UpdatePushToken(ctx, accountID, deviceID, token)
	})
	if errors.Is(err, storage.ErrNotFound) {
		return Device{}, deviceNotFound(deviceID)
	}
	return d, err
}

// retryConflict calls op until it returns something other than
// storage.ErrConflict (a concurrent write took the token first), at most
// four times in all, and returns its last result.
func retryConflict[T any](op func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		v, err := op()
		if errors.Is(err, storage.ErrConflict) && attempt < 3 {
			continue
		}
		return v, err
	}
}

// Remove makes one of the account's devices inactive: it no longer counts
// against the plan and receives no pushes. DEVICE_NOT_FOUND for an
// unknown, already removed or another account's device.
func (s *Service) Remove(ctx context.Context, accountID, deviceID string) error {
	err := s.store.DeactivateDevice(ctx, accountID, deviceID)
	if errors.Is(err, storage.ErrNotFound) {
		return deviceNotFound(deviceID)
	}
	return err
}

// Page is one page of the administrators' device listing.
type Page struct {
	Devices     []Device
	EndCursor   string // pass as after for the next page; "" when empty
	HasNextPage bool
}

// AdminList lists devices, active or not, of one account (accountID
// non-nil) or of all, in a stable order, first at a time (default 50, at
// most 500) after the opaque cursor after. USER_NOT_FOUND for an unknown
// account; VALIDATION_ERROR for a bad first or cursor.
func (s *Service) AdminList(ctx context.Context, accountID *string, first int, after string) (Page, error) {
	if first == 0 {
		first = DefaultPageSize
	}
	if first < 0 || first > MaxPageSize {
		return Page{}, apperr.Invalid("first", fmt.Sprintf("between 1 and %d", MaxPageSize), fmt.Sprint(first))
	}
	afterID, err := DecodeCursor(after)
	if err != nil {
		return Page{}, apperr.Invalid("after", "a cursor from an earlier page", after)
	}
	acct := ""
	if accountID != nil {
		if _, err := s.store.AccountByID(ctx, *accountID); errors.Is(err, storage.ErrNotFound) {
			return Page{}, apperr.New(apperr.UserNotFound)
		} else if err != nil {
			return Page{}, err
		}
		acct = *accountID
	}
	ds, err := s.store.AdminDevices(ctx, acct, afterID, first+1)
	if err != nil {
		return Page{}, err
	}
	p := Page{Devices: ds}
	if len(ds) > first {
		p.Devices, p.HasNextPage = ds[:first], true
	}
	if len(p.Devices) > 0 {
		p.EndCursor = EncodeCursor(p.Devices[len(p.Devices)-1].ID)
	}
	return p, nil
}

// SetPlan changes the plan and expiry of the account with this email (the
// `herald users set-plan` command, until payments exist). VALIDATION_ERROR
// for an unknown plan or a zero expiry; USER_NOT_FOUND for an unknown email.
func (s *Service) SetPlan(ctx context.Context, email, plan string, expires time.Time) (accounts.Subscription, error) {
	email, err := accounts.NormalizeEmail(email)
	if err != nil {
		return accounts.Subscription{}, err
	}
	if _, ok := s.cfg.PlanLimits[plan]; !ok {
		return accounts.Subscription{}, apperr.Invalid("plan", "one of "+strings.Join(s.Plans(), ", "), plan)
	}
	if expires.IsZero() {
		return accounts.Subscription{}, apperr.Invalid("expires", "a time", "")
	}
	a, err := s.store.SetPlan(ctx, email, plan, expires.UTC())
	if errors.Is(err, storage.ErrNotFound) {
		return accounts.Subscription{}, apperr.Newf(apperr.UserNotFound, "No account has the email %s.", email)
	}
	return a.Subscription, err
}

// ValidatePlatform returns VALIDATION_ERROR unless p is android or ios.
func ValidatePlatform(p string) error {
	if p != PlatformAndroid && p != PlatformIOS {
		return apperr.Invalid("platform", "one of android, ios", p)
	}
	return nil
}

func normalizeToken(t string) (string, error) {
	t = strings.TrimSpace(t)
	if t == "" {
		return "", apperr.Invalid("pushToken", "required", "empty")
	}
	if len(t) > MaxPushTokenLen {
		return "", apperr.Invalid("pushToken", fmt.Sprintf("at most %d bytes", MaxPushTokenLen), fmt.Sprintf("%d bytes", len(t)))
	}
	if !utf8.ValidString(t) || strings.IndexFunc(t, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "", apperr.Invalid("pushToken", "no spaces or control characters", "invalid characters")
	}
	return t, nil
}

func normalizeName(n string) (string, error) {
	n = strings.TrimSpace(n)
	if !utf8.ValidString(n) || strings.IndexFunc(n, unicode.IsControl) >= 0 {
		return "", apperr.Invalid("name", "no control characters", "invalid characters")
	}
	if c := utf8.RuneCountInString(n); c > MaxNameLen {
		return "", apperr.Invalid("name", fmt.Sprintf("at most %d characters", MaxNameLen), fmt.Sprintf("%d characters", c))
	}
	return n, nil
}

// orDefaultName names an unnamed device after its platform.
func orDefaultName(name, platform string) string {
	if name != "" {
		return name
	}
	if platform == PlatformIOS {
		return "iOS device"
	}
	return "Android device"
}

func deviceNotFound(id string) error {
	return apperr.Newf(apperr.DeviceNotFound, "No device with the id %q.", id)
}

// newID is a device ID: a UUIDv7, random in its last 74 bits and ordered by
// creation, which keeps index inserts (a million-line import) local.
func newID() (string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	return id.String(), nil
}

// EncodeCursor makes an opaque cursor of a device ID.
func EncodeCursor(id string) string { return base64.RawURLEncoding.EncodeToString([]byte("d:" + id)) }

// DecodeCursor reads a cursor of EncodeCursor; "" is the start.
func DecodeCursor(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", err
	}
	id, ok := strings.CutPrefix(string(b), "d:")
	if !ok || id == "" {
		return "", errors.New("not a device cursor")
	}
	return id, nil
}
