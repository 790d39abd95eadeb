package view

import (
	"time"

	"github.com/herald-vpn/herald/internal/subscriptions"
)

// Entitlement is one right to a plan (a store purchase, an
// administrator's grant, the trial, a referral bonus), as its owner and
// the admin API see it.
type Entitlement struct {
	ID        string `json:"id"`
	Source    string `json:"source"`
	ProductID string `json:"productId"`
	Plan      string `json:"plan"`
	// State: trial, active, grace, on_hold, paused, cancelled, expired,
	// refunded or revoked.
	State       string     `json:"state"`
	StartedAt   time.Time  `json:"startedAt"`
	ExpiresAt   time.Time  `json:"expiresAt"`
	GraceEndsAt *time.Time `json:"graceEndsAt"`
	AutoRenew   bool       `json:"autoRenew"`
	// Environment is the store's (Production, Sandbox); nil otherwise.
	Environment *string   `json:"environment"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// NewEntitlement renders e.
func NewEntitlement(e subscriptions.Entitlement) Entitlement {
	return Entitlement{
		ID: e.ID, Source: string(e.Source), ProductID: e.ProductID, Plan: e.Plan, State: string(e.State),
		StartedAt: seconds(e.StartedAt), ExpiresAt: seconds(e.ExpiresAt), GraceEndsAt: optionalSeconds(e.GraceEndsAt),
		AutoRenew: e.AutoRenew, Environment: nonEmpty(e.Environment), UpdatedAt: seconds(e.ChangedAt),
	}
}

// NewEntitlements renders a list, never nil.
func NewEntitlements(es []subscriptions.Entitlement) []Entitlement {
	out := make([]Entitlement, 0, len(es))
	for _, e := range es {
		out = append(out, NewEntitlement(e))
	}
	return out
}

// SubscriptionDetail is GET /api/v1/subscription: the account's
// subscription and the entitlements it comes from.
type SubscriptionDetail struct {
	UserSubscription
	Entitlements []Entitlement `json:"entitlements"`
}

// NewSubscriptionDetail renders the account's subscription as of now and
// the entitlements it comes from.
func NewSubscriptionDetail(sub subscriptions.Subscription, ents []subscriptions.Entitlement, now time.Time) SubscriptionDetail {
	return SubscriptionDetail{UserSubscription: NewUserSubscription(sub, now), Entitlements: NewEntitlements(ents)}
}

// EntitlementChange is one row of an account's subscription history (the
// admin API).
type EntitlementChange struct {
	ID            string `json:"id"`
	EntitlementID string `json:"entitlementId"`
	Source        string `json:"source"`
	// Cause is what made the change: a store's notification
	// ("app_store:DID_RENEW"), purchase, restore, reconcile, admin,
	// signup, referral, expiry, replaced.
	Cause string `json:"cause"`
	// From is the state before; nil for a new entitlement.
	From      *string   `json:"from"`
	To        string    `json:"to"`
	Plan      string    `json:"plan"`
	ExpiresAt time.Time `json:"expiresAt"`
	At        time.Time `json:"at"`
}

// NewEntitlementChanges renders a history, never nil.
func NewEntitlementChanges(cs []subscriptions.Change) []EntitlementChange {
	out := make([]EntitlementChange, 0, len(cs))
	for _, c := range cs {
		out = append(out, EntitlementChange{
			ID: c.ID, EntitlementID: c.EntitlementID, Source: string(c.Source), Cause: c.Cause,
			From: nonEmpty(string(c.FromState)), To: string(c.ToState), Plan: c.Plan, ExpiresAt: seconds(c.ExpiresAt), At: seconds(c.At),
		})
	}
	return out
}

// UserSubscriptionDetail is GET /api/v1/admin/users/{id}/subscription:
// the account's subscription, its entitlements and their history.
type UserSubscriptionDetail struct {
	SubscriptionDetail
	History []EntitlementChange `json:"history"`
}

// NewUserSubscriptionDetail renders the detail with the account's
// history.
func NewUserSubscriptionDetail(detail SubscriptionDetail, history []subscriptions.Change) UserSubscriptionDetail {
	return UserSubscriptionDetail{SubscriptionDetail: detail, History: NewEntitlementChanges(history)}
}

// Received is a store's notification's answer.
type Received struct {
	Received bool `json:"received"`
}

// RedirectURL is where to send the user (Stripe Checkout, the customer
// portal).
type RedirectURL struct {
	URL string `json:"url"`
}
