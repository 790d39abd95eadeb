// Package audience is the segment a broadcast goes to: accounts by the
// platforms of their devices, their plan and their subscription's status.
// Push broadcasts and messenger broadcasts (to linked chats) share it.
package audience

import (
	"regexp"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/push"
)

// Audience narrows a broadcast's recipients: devices of these platforms,
// of accounts on these plans, whose subscription has this status (as of
// the job's creation). An empty field does not narrow.
type Audience struct {
	Platforms          []string `json:"platforms,omitempty"`
	Plans              []string `json:"plans,omitempty"`
	SubscriptionStatus string   `json:"subscriptionStatus,omitempty"` // "", active or expired
}

// planPattern is what a plan name of an audience may be.
var planPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Validate refuses an audience naming an unknown platform, a malformed
// plan or an unknown subscription status (VALIDATION_ERROR).
func (a Audience) Validate() error {
	for _, p := range a.Platforms {
		if p != push.PlatformAndroid && p != push.PlatformIOS && p != push.PlatformWeb && p != push.PlatformHuawei {
			return apperr.Invalid("audience.platforms", "each one of android, ios, web, huawei", p)
		}
	}
	for _, p := range a.Plans {
		if !planPattern.MatchString(p) {
			return apperr.Invalid("audience.plans", "plan names of letters, digits, - and _", p)
		}
	}
	switch a.SubscriptionStatus {
	case "", "active", "expired":
	default:
		return apperr.Invalid("audience.subscriptionStatus", "one of active, expired", a.SubscriptionStatus)
	}
	return nil
}
