package play

import (
	"errors"
	"time"

	"github.com/herald-vpn/herald/internal/subscriptions"
)

// ErrPending: the purchase waits for a payment (SUBSCRIPTION_STATE_PENDING,
// e.g. cash at a shop). It grants nothing yet and Herald records no
// entitlement; Play sends SUBSCRIPTION_PURCHASED when it clears, or
// SUBSCRIPTION_PENDING_PURCHASE_CANCELED.
var ErrPending = errors.New("play: purchase is pending")

// Observe maps a SubscriptionPurchaseV2 read for token at observedAt to
// the Observation of its entitlement.
//
//   - The line item with the latest expiryTime is the one served: its
//     productId, expiryTime and autoRenewingPlan.autoRenewEnabled.
//   - ACTIVE is active, or trial while the item's offerPhase is freeTrial.
//   - IN_GRACE_PERIOD is grace. Play gives no grace end: it extends the
//     item's expiryTime to the end of the grace period, so GraceEndsAt is
//     that expiryTime (and so is ExpiresAt).
//   - ON_HOLD, PAUSED, CANCELED (access until expiryTime) and EXPIRED map
//     to on_hold, paused, cancelled and expired;
//     PENDING_PURCHASE_CANCELED is expired.
//   - PENDING answers ErrPending.
//
// A revocation reads as EXPIRED; StateFor turns it into revoked given the
// notification.
func Observe(p SubscriptionPurchaseV2, token string, observedAt time.Time) (subscriptions.Observation, error) {
	obs := subscriptions.Observation{
		Source:       subscriptions.GooglePlay,
		ExternalID:   token,
		Replaces:     p.LinkedPurchaseToken,
		ObservedAt:   observedAt.UTC(),
		Environment:  "Production",
		Acknowledged: p.AcknowledgementState == AcknowledgementAcknowledged,
	}
	if p.TestPurchase != nil {
		obs.Environment = "Sandbox"
	}
	if token == "" {
		return obs, malformed("purchase without token")
	}
	if p.ExternalAccountIdentifiers != nil {
		obs.AccountHint = p.ExternalAccountIdentifiers.ObfuscatedExternalAccountID
	}
	var state subscriptions.State
	switch p.SubscriptionState {
	case StatePending:
		return obs, ErrPending
	case StateActive:
		state = subscriptions.StateActive
	case StateInGracePeriod:
		state = subscriptions.StateGrace
	case StateOnHold:
		state = subscriptions.StateOnHold
	case StatePaused:
		state = subscriptions.StatePaused
	case StateCanceled:
		state = subscriptions.StateCancelled
	case StateExpired, StatePendingPurchaseCanceled:
		state = subscriptions.StateExpired
	default:
		return obs, malformed("subscriptionState %q", p.SubscriptionState)
	}
	if p.StartTime != "" {
		t, err := time.Parse(time.RFC3339Nano, p.StartTime)
		if err != nil {
			return obs, malformed("startTime: %v", err)
		}
		obs.StartedAt = t.UTC()
	}
	var item *LineItem
	for i := range p.LineItems {
		li := &p.LineItems[i]
		exp, err := time.Parse(time.RFC3339Nano, li.ExpiryTime)
		if err != nil {
			return obs, malformed("lineItems[%d].expiryTime: %v", i, err)
		}
		if item == nil || exp.After(obs.ExpiresAt) {
			item, obs.ExpiresAt = li, exp.UTC()
		}
	}
	if item == nil || item.ProductID == "" {
		return obs, malformed("purchase without a line item")
	}
	obs.ProductID = item.ProductID
	obs.AutoRenew = item.AutoRenewingPlan != nil && item.AutoRenewingPlan.AutoRenewEnabled
	if state == subscriptions.StateActive && item.OfferPhase != nil && item.OfferPhase.FreeTrial != nil {
		state = subscriptions.StateTrial
	}
	if state == subscriptions.StateGrace {
		g := obs.ExpiresAt
		obs.GraceEndsAt = &g
	}
	obs.State = state
	return obs, nil
}

// StateFor is the state of purchase after push: the API's answer, except
// that a SUBSCRIPTION_REVOKED notification for the purchase's token makes
// it revoked (the API only says EXPIRED), and a voided purchase of a
// subscription the API no longer grants makes it refunded (a voided
// renewal order of a subscription still active changes nothing).
func StateFor(push Push, purchase Purchase) subscriptions.State {
	obs := purchase.Observation
	if push.PurchaseToken != obs.ExternalID {
		return obs.State
	}
	switch {
	case push.Kind == KindSubscription && push.NotificationType == SubscriptionRevoked:
		return subscriptions.StateRevoked
	case push.Kind == KindVoided && obs.State == subscriptions.StateExpired:
		return subscriptions.StateRefunded
	}
	return obs.State
}
