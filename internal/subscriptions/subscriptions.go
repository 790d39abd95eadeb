// Package subscriptions owns plans and subscriptions: the plan names and
// the active devices each allows, whether a subscription is active, how a
// bonus extends one, and changing an account's plan. Accounts hold a
// Subscription; devices ask AdmitDevice before adding one.
package subscriptions

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// Plans.
const (
	Trial   = "trial"
	Basic   = "basic"
	Premium = "premium"
)

// Subscription is an account's plan and when it ends.
type Subscription struct {
	Plan      string
	ExpiresAt time.Time
}

// Active reports whether the subscription runs at now.
func (s Subscription) Active(now time.Time) bool { return now.Before(s.ExpiresAt) }

// Status is "active" until ExpiresAt, "expired" from then on.
func (s Subscription) Status(now time.Time) string {
	if s.Active(now) {
		return "active"
	}
	return "expired"
}

// Extended is the expiry after a bonus of d: counted from now when the
// subscription has lapsed, so a bonus is never swallowed by the past.
func (s Subscription) Extended(d time.Duration, now time.Time) time.Time {
	from := s.ExpiresAt
	if from.Before(now) {
		from = now
	}
	return from.Add(d)
}

// DefaultDeviceLimits is trial 3, basic 5, premium 10 active devices.
func DefaultDeviceLimits() map[string]int {
	return map[string]int{Trial: 3, Basic: 5, Premium: 10}
}

// Config holds the plan rules an operator may tune.
type Config struct {
	// DeviceLimits maps each plan to its most active devices; a plan
	// missing from the map gets the trial's. Nil: DefaultDeviceLimits.
	DeviceLimits map[string]int
	// UpgradeURL and RenewURL are shown with DEVICE_LIMIT_REACHED and
	// SUBSCRIPTION_EXPIRED (HERALD_UPGRADE_URL, HERALD_RENEW_URL).
	UpgradeURL string
	RenewURL   string
	// Now is the clock (default time.Now in UTC).
	Now func() time.Time
}

// Store is the persistence the service needs; sqlstore implements it.
type Store interface {
	// The unit of work Set runs in: LockSubscription must be called
	// inside InTx.
	storage.Transactor
	// Emit writes a webhook event in the transaction ctx carries.
	Emit(ctx context.Context, p webhooks.Payload) error
	// LockSubscription reads a live account's subscription and holds its
	// row until the transaction ends. ErrNotFound for an unknown or
	// deleted account.
	LockSubscription(ctx context.Context, accountID string) (Subscription, error)
	// SaveSubscription replaces the account's plan and expiry.
	SaveSubscription(ctx context.Context, accountID string, sub Subscription) error
}

// Set replaces the account's plan and expiry in one unit of work of st,
// under the account's row lock, so that the same call twice changes once;
// a change has its user.subscription_changed event. It reports whether
// anything changed. ErrNotFound when the account does not exist.
func Set(ctx context.Context, st Store, accountID, plan string, expires time.Time) (Subscription, bool, error) {
	next := Subscription{Plan: plan, ExpiresAt: expires.UTC()}
	var changed bool
	err := st.InTx(ctx, func(ctx context.Context) error {
		cur, err := st.LockSubscription(ctx, accountID)
		if err != nil {
			return err
		}
		if cur.Plan == next.Plan && cur.ExpiresAt.Equal(next.ExpiresAt) {
			return nil
		}
		changed = true
		if err := st.SaveSubscription(ctx, accountID, next); err != nil {
			return err
		}
		return st.Emit(ctx, Changed(accountID, cur, next))
	})
	if err != nil {
		return Subscription{}, false, err
	}
	return next, changed, nil
}

// Service is the plan rules.
type Service struct {
	store Store
	cfg   Config
}

// NewService returns the service.
func NewService(store Store, cfg Config) *Service {
	if cfg.DeviceLimits == nil {
		cfg.DeviceLimits = DefaultDeviceLimits()
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	return &Service{store: store, cfg: cfg}
}

// Plans returns the plan names, sorted.
func (s *Service) Plans() []string { return slices.Sorted(maps.Keys(s.cfg.DeviceLimits)) }

// DeviceLimit returns the active-device limit of plan.
func (s *Service) DeviceLimit(plan string) int {
	if n, ok := s.cfg.DeviceLimits[plan]; ok {
		return n
	}
	return s.cfg.DeviceLimits[Trial]
}

// AdmitDevice is the rule for one more active device: SUBSCRIPTION_EXPIRED
// when the subscription has lapsed (checked first), DEVICE_LIMIT_REACHED
// when the plan's devices are all in use.
func (s *Service) AdmitDevice(sub Subscription, activeDevices int) error {
	if !sub.Active(s.cfg.Now()) {
		at := sub.ExpiresAt.UTC().Format(time.RFC3339)
		return apperr.Newf(apperr.SubscriptionExpired, "Your %s subscription expired on %s; renew it to add devices.", sub.Plan, at).
			With("expiredAt", at).
			With("plan", sub.Plan).
			With("renewUrl", s.cfg.RenewURL)
	}
	if limit := s.DeviceLimit(sub.Plan); activeDevices >= limit {
		return apperr.Newf(apperr.DeviceLimitReached, "Your %s plan allows %d active devices; remove one or upgrade.", sub.Plan, limit).
			With("currentDevices", activeDevices).
			With("maxDevices", limit).
			With("plan", sub.Plan).
			With("upgradeUrl", s.cfg.UpgradeURL)
	}
	return nil
}

// SetPlan changes an account's plan and expiry; the device limit follows
// at once (devices over a lowered limit stay, no new one is admitted).
// The expiry is kept to the second, so the same call twice is one change.
// VALIDATION_ERROR for an unknown plan or a zero expiry; USER_NOT_FOUND
// for an unknown or deleted account.
func (s *Service) SetPlan(ctx context.Context, accountID, plan string, expires time.Time) (Subscription, error) {
	if _, ok := s.cfg.DeviceLimits[plan]; !ok {
		return Subscription{}, apperr.Invalid("plan", "one of "+strings.Join(s.Plans(), ", "), plan)
	}
	if expires.IsZero() {
		return Subscription{}, apperr.Invalid("expires", "a time", "")
	}
	sub, _, err := Set(ctx, s.store, accountID, plan, expires.UTC().Truncate(time.Second))
	if errors.Is(err, storage.ErrNotFound) {
		return Subscription{}, apperr.New(apperr.UserNotFound)
	}
	return sub, err
}
