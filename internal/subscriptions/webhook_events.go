package subscriptions

import (
	"time"

	"github.com/herald-vpn/herald/internal/webhooks"
)

// SubscriptionChanged is user.subscription_changed: an administrator set
// the account's plan or expiry (its JSON is the event's data, fields in
// the order of their JSON names).
type SubscriptionChanged struct {
	ExpiresAt         time.Time `json:"expiresAt"`
	Plan              string    `json:"plan"`
	PreviousExpiresAt time.Time `json:"previousExpiresAt"`
	PreviousPlan      string    `json:"previousPlan"`
	UserID            string    `json:"userId"`
}

func (SubscriptionChanged) EventType() string { return webhooks.UserSubscriptionChanged }

// Changed is the event of the account's subscription going from prev to
// next.
func Changed(accountID string, prev, next Subscription) SubscriptionChanged {
	return SubscriptionChanged{UserID: accountID, Plan: next.Plan, ExpiresAt: next.ExpiresAt.UTC(), PreviousPlan: prev.Plan, PreviousExpiresAt: prev.ExpiresAt.UTC()}
}
