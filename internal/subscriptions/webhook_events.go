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

// Lifecycle is the data of the subscription.* events: what happened to
// one entitlement, and the account's subscription after it (fields in the
// order of their JSON names).
type Lifecycle struct {
	AutoRenew     bool       `json:"autoRenew"`
	EntitlementID string     `json:"entitlementId"`
	ExpiresAt     time.Time  `json:"expiresAt"`
	GraceEndsAt   *time.Time `json:"graceEndsAt"`
	Plan          string     `json:"plan"`
	// PreviousPlan is set on subscription.plan_changed only.
	PreviousPlan string `json:"previousPlan,omitempty"`
	ProductID    string `json:"productId"`
	// RefundedPeriod is set on a subscription.refunded of an earlier
	// period only (RecordPastRevocation): the entitlement's state, its
	// expiresAt and the account's subscription are unchanged.
	RefundedPeriod   *RefundedPeriod `json:"refundedPeriod,omitempty"`
	Source           Source          `json:"source"`
	State            State           `json:"state"`
	SubscriptionEnds time.Time       `json:"subscriptionExpiresAt"`
	SubscriptionPlan string          `json:"subscriptionPlan"`
	UserID           string          `json:"userId"`

	event string
}

// RefundedPeriod is the period a subscription.refunded of an earlier
// period took back (fields in the order of their JSON names).
type RefundedPeriod struct {
	EndsAt    time.Time `json:"endsAt"`
	ProductID string    `json:"productId"`
	// Reason is "refunded" or "revoked" (Family Sharing withdrawn).
	Reason        State     `json:"reason"`
	RevokedAt     time.Time `json:"revokedAt"`
	StartsAt      time.Time `json:"startsAt"`
	TransactionID string    `json:"transactionId"`
}

func (l Lifecycle) EventType() string { return l.event }

func (l Lifecycle) withPrevious(plan string) Lifecycle { l.PreviousPlan = plan; return l }

// LifecycleEvent is event (EventStarted …) of entitlement e of the
// account, whose subscription is now sub.
func LifecycleEvent(event, accountID string, e Entitlement, sub Subscription) Lifecycle {
	return Lifecycle{
		event: event, UserID: accountID, EntitlementID: e.ID, Source: e.Source, ProductID: e.ProductID,
		Plan: e.Plan, State: e.State, ExpiresAt: e.ExpiresAt.UTC(), GraceEndsAt: graceEnd(e), AutoRenew: e.AutoRenew,
		SubscriptionPlan: sub.Plan, SubscriptionEnds: sub.ExpiresAt.UTC(),
	}
}
