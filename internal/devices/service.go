package devices

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/cursor"
	"github.com/herald-vpn/herald/internal/push/webpush"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

// Field limits.
const (
	MaxNameLen      = 100  // characters
	MaxPushTokenLen = 4096 // bytes; FCM tokens are ~160, APNs tokens 64, web subscriptions at most ~1,200 (webpush.MaxEndpointLen)
)

// Admin listing page sizes.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// Config holds the device rules an operator may tune.
type Config struct {
	// ImportBatchSize is the number of lines per import transaction
	// (default 1000).
	ImportBatchSize int
	// MaxImportErrors bounds ImportResult.Errors (default 10,000); every
	// rejected line is still counted in Rejected.
	MaxImportErrors int
	// Now is the clock (default time.Now in UTC).
	Now func() time.Time
	// Tokens are the push-token rules.
	Tokens TokenRules
}

// Plans is the plan rule devices need (subscriptions.Service).
type Plans interface {
	// AdmitDevice refuses one more active device on sub, with the
	// subscription's error.
	AdmitDevice(sub subscriptions.Subscription, activeDevices int) error
}

// Service is the device rules.
type Service struct {
	store Store
	plans Plans
	cfg   Config
}

// NewService returns the service.
func NewService(store Store, plans Plans, cfg Config) *Service {
	if cfg.ImportBatchSize <= 0 {
		cfg.ImportBatchSize = 1000
	}
	if cfg.MaxImportErrors <= 0 {
		cfg.MaxImportErrors = 10_000
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	return &Service{store: store, plans: plans, cfg: cfg}
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
	token, err := s.cfg.Tokens.Normalize(platform, pushToken)
	if err != nil {
		return Device{}, err
	}
	name, err = normalizeName(name)
	if err != nil {
		return Device{}, err
	}
	allow := func(q Quota) error { return s.plans.AdmitDevice(q.Subscription, q.ActiveDevices) }
	// Two registrations racing for one token: the loser retries and then
	// sees the winner's device, from which it takes the token.
	d, err := retryConflict(func() (Device, error) {
		id, err := newID()
		if err != nil {
			return Device{}, err
		}
		return Register(ctx, s.store, NewDevice{ID: id, AccountID: accountID, Platform: platform, Name: name, NewName: orDefaultName(name, platform), PushToken: token}, allow)
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
	// The token's rule is its device's platform's.
	list, err := s.store.ListDevices(ctx, accountID)
	if err != nil {
		return Device{}, err
	}
	platform := ""
	if i := slices.IndexFunc(list, func(d Device) bool { return d.ID == deviceID }); i >= 0 {
		platform = list[i].Platform
	}
	token, err := s.cfg.Tokens.Normalize(platform, pushToken)
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
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.DeactivateDevice(ctx, accountID, deviceID); err != nil {
			return err
		}
		return s.store.Emit(ctx, Removed{DeviceID: deviceID, UserID: accountID})
	})
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
	first, err := cursor.PageSize(first, DefaultPageSize, MaxPageSize)
	if err != nil {
		return Page{}, err
	}
	afterID, err := deviceCursor.After(after)
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
	p, err := cursor.Cut(deviceCursor, ds, first, func(d Device) string { return d.ID })
	if err != nil {
		return Page{}, err
	}
	return Page{Devices: p.Items, EndCursor: p.EndCursor, HasNextPage: p.HasNextPage}, nil
}

// ValidatePlatform returns VALIDATION_ERROR unless p is android, ios, web
// or huawei.
func ValidatePlatform(p string) error {
	if p != PlatformAndroid && p != PlatformIOS && p != PlatformWeb && p != PlatformHuawei {
		return apperr.Invalid("platform", "one of android, ios, web, huawei", p)
	}
	return nil
}

// TokenRules check a push token by its device's platform.
type TokenRules struct {
	// AllowLoopbackWebPush admits web subscriptions whose endpoint is
	// plain http on a loopback host (HERALD_WEBPUSH_ALLOW_PRIVATE:
	// development, tests); otherwise it must be https.
	AllowLoopbackWebPush bool
}

// Normalize trims a push token and checks it (VALIDATION_ERROR naming
// pushToken): a web token must be a Web Push subscription, which becomes
// its canonical JSON (webpush.Subscription.String), so one subscription
// is one token however the browser spelled it; every token is at most
// MaxPushTokenLen bytes without spaces or control characters.
func (r TokenRules) Normalize(platform, t string) (string, error) {
	if platform == PlatformWeb && strings.TrimSpace(t) != "" {
		var opts []webpush.ParseOption
		if r.AllowLoopbackWebPush {
			opts = append(opts, webpush.AllowLoopbackHTTP())
		}
		canon, err := webpush.CanonicalSubscription(strings.TrimSpace(t), opts...)
		if err != nil {
			return "", apperr.Invalid("pushToken", "a Web Push subscription: the PushSubscription JSON with an https endpoint, keys.p256dh and keys.auth", err.Error())
		}
		t = canon
	}
	return normalizeToken(t)
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
	switch platform {
	case PlatformIOS:
		return "iOS device"
	case PlatformWeb:
		return "Web browser"
	case PlatformHuawei:
		return "Huawei device"
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

// deviceCursor's payload is the ID of the last device of a page.
var deviceCursor = cursor.New[string]("device")
