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
)

// Plans.
const (
	Trial   = "trial"
	Basic   = "basic"
	Premium = "premium"
)

// Subscription is an account's plan and when it ends: what its
// entitlements add up to (Effective), kept on the account's row.
type Subscription struct {
	Plan      string
	ExpiresAt time.Time
	// Source is the entitlement the plan comes from; AutoRenew whether it
	// renews; GraceEndsAt, during a billing grace period, when access ends
	// unless billing recovers (ExpiresAt is then the same time).
	Source        Source
	AutoRenew     bool
	GraceEndsAt   *time.Time
	EntitlementID string
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
	// RenewURLs are the renewUrl of plans from a store (the App Store's
	// manage-subscriptions page for a plan bought there); a source
	// without one gets RenewURL.
	RenewURLs map[Source]string
	// Now is the clock (default time.Now in UTC).
	Now func() time.Time
}

// Set gives the account plan until expires as an administrator's grant
// (Grant) in one unit of work of st, and reads the account's subscription
// after it; the same call twice changes once. It reports whether the
// account's subscription changed. ErrNotFound when the account does not
// exist. devices ranks plans (nil: alike).
func Set(ctx context.Context, st Ledger, accountID, plan string, expires time.Time, devices func(string) int) (Subscription, bool, error) {
	var before, after Subscription
	err := st.InTx(ctx, func(ctx context.Context) error {
		var err error
		if before, err = st.LockSubscription(ctx, accountID); err != nil {
			return err
		}
		if _, err := Grant(ctx, st, accountID, Admin, plan, expires.UTC(), "admin", devices); err != nil {
			return err
		}
		after, err = st.LockSubscription(ctx, accountID)
		return err
	})
	if err != nil {
		return Subscription{}, false, err
	}
	return after, !sameSubscription(before, after), nil
}

// Service is the plan rules.
type Service struct {
	store Ledger
	cfg   Config
}

// NewService returns the service.
func NewService(store Ledger, cfg Config) *Service {
	if cfg.DeviceLimits == nil {
		cfg.DeviceLimits = DefaultDeviceLimits()
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	return &Service{store: store, cfg: cfg}
}

// RenewURL is where the owner of a plan from source renews it.
func (s *Service) RenewURL(source Source) string {
	if u := s.cfg.RenewURLs[source]; u != "" {
		return u
	}
	return s.cfg.RenewURL
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

// AdmitDevice is the rule for one more active device: SUBSCRIPTION_NOT_FOUND
// when the account never had a subscription (no trial, nothing bought),
// SUBSCRIPTION_EXPIRED when it has lapsed, DEVICE_LIMIT_REACHED
// when the plan's devices are all in use.
func (s *Service) AdmitDevice(sub Subscription, activeDevices int) error {
	if sub.Plan == "" {
		return apperr.Newf(apperr.SubscriptionNotFound, "This account has no subscription; buy one to add devices.").With("renewUrl", s.cfg.RenewURL)
	}
	if !sub.Active(s.cfg.Now()) {
		at := sub.ExpiresAt.UTC().Format(time.RFC3339)
		return apperr.Newf(apperr.SubscriptionExpired, "Your %s subscription expired on %s; renew it to add devices.", sub.Plan, at).
			With("expiredAt", at).
			With("plan", sub.Plan).
			With("renewUrl", s.RenewURL(sub.Source))
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

// SetPlan gives the account plan until expires as an administrator's
// grant (Grant: it ends the trial and referral bonuses; a store purchase
// stays, and the better of the two is the account's plan). The device
// limit follows at once (devices over a lowered limit stay, no new one is
// admitted). The expiry is kept to the second, so the same call twice is
// one change. VALIDATION_ERROR for an unknown plan or a zero expiry;
// USER_NOT_FOUND for an unknown or deleted account.
func (s *Service) SetPlan(ctx context.Context, accountID, plan string, expires time.Time) (Subscription, error) {
	if _, ok := s.cfg.DeviceLimits[plan]; !ok {
		return Subscription{}, apperr.Invalid("plan", "one of "+strings.Join(s.Plans(), ", "), plan)
	}
	if expires.IsZero() {
		return Subscription{}, apperr.Invalid("expires", "a time", "")
	}
	sub, _, err := Set(ctx, s.store, accountID, plan, expires.UTC().Truncate(time.Second), s.DeviceLimit)
	if errors.Is(err, storage.ErrNotFound) {
		return Subscription{}, apperr.New(apperr.UserNotFound)
	}
	return sub, err
}

// Entitlements are the account's subscription and the entitlements it
// comes from, as of now. SUBSCRIPTION_NOT_FOUND when the account has none
// (an unknown account has none).
func (s *Service) Entitlements(ctx context.Context, accountID string) (Subscription, []Entitlement, error) {
	ents, err := s.store.AccountEntitlements(ctx, accountID)
	if err != nil {
		return Subscription{}, nil, err
	}
	sub, ok := Effective(ents, s.cfg.Now(), s.DeviceLimit)
	if !ok {
		return Subscription{}, nil, apperr.New(apperr.SubscriptionNotFound)
	}
	return sub, ents, nil
}

// HistoryLimit is how many changes History returns.
const HistoryLimit = 100

// History is the account's last HistoryLimit entitlement changes, newest
// first.
func (s *Service) History(ctx context.Context, accountID string) ([]Change, error) {
	return s.store.EntitlementChanges(ctx, accountID, HistoryLimit)
}

// Now is the service's clock.
func (s *Service) Now() time.Time { return s.cfg.Now() }
