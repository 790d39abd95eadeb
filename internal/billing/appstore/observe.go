package appstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

// maxBody bounds a notification's body.
const maxBody = 1 << 20

// Notification is a verified App Store Server Notification V2.
type Notification struct {
	// UUID is notificationUUID: the key for idempotent ingestion.
	UUID          string
	Type, Subtype string
	SignedAt      time.Time
	Environment   string
	BundleID      string
	// Transaction is the notification's transaction (nil when it has none,
	// as TEST).
	Transaction *Transaction
	// Observation is nil when the type changes no entitlement (TEST,
	// CONSUMPTION_REQUEST, PRICE_INCREASE, ...).
	Observation *subscriptions.Observation
}

// Notification verifies and decodes the body Apple POSTs
// ({"signedPayload":"<JWS>"}), its signed transaction and renewal info.
func (c *Client) Notification(body []byte) (Notification, error) {
	if len(body) > maxBody {
		return Notification{}, fmt.Errorf("%w: a body of %d bytes", billing.ErrMalformed, len(body))
	}
	var b notificationBody
	if err := json.Unmarshal(body, &b); err != nil {
		return Notification{}, fmt.Errorf("%w: %v", billing.ErrMalformed, err)
	}
	if b.SignedPayload == "" {
		return Notification{}, fmt.Errorf("%w: no signedPayload", billing.ErrMalformed)
	}
	var p notificationPayload
	if err := c.verifyJSON(b.SignedPayload, &p); err != nil {
		return Notification{}, err
	}
	if p.NotificationType == "" || p.NotificationUUID == "" || p.SignedDate == 0 {
		return Notification{}, fmt.Errorf("%w: a notification without its type, uuid or date", billing.ErrMalformed)
	}
	n := Notification{UUID: p.NotificationUUID, Type: p.NotificationType, Subtype: p.Subtype, SignedAt: millis(p.SignedDate)}
	switch {
	case p.Data != nil:
		n.BundleID, n.Environment = p.Data.BundleID, p.Data.Environment
	case p.Summary != nil:
		n.BundleID, n.Environment = p.Summary.BundleID, p.Summary.Environment
	case p.ExternalPurchaseToken != nil:
		n.BundleID = p.ExternalPurchaseToken.BundleID
	default:
		return Notification{}, fmt.Errorf("%w: a notification without data", billing.ErrMalformed)
	}
	if n.Environment == "" && p.ExternalPurchaseToken != nil {
		// externalPurchaseToken names no environment: only the bundle.
		if err := c.checkAddress("notification", n.BundleID, c.cfg.Environment); err != nil {
			return Notification{}, err
		}
	} else if err := c.checkAddress("notification", n.BundleID, n.Environment); err != nil {
		return Notification{}, err
	}
	var ri *jwsRenewal
	if p.Data != nil && p.Data.SignedTransactionInfo != "" {
		tx, err := c.transaction(p.Data.SignedTransactionInfo)
		if err != nil {
			return Notification{}, err
		}
		n.Transaction = &tx
		if p.Data.SignedRenewalInfo != "" {
			if ri, err = c.renewal(p.Data.SignedRenewalInfo, tx.OriginalTransactionID); err != nil {
				return Notification{}, err
			}
		}
	}
	obs, err := notificationObservation(n, ri)
	if err != nil {
		return Notification{}, err
	}
	n.Observation = obs
	return n, nil
}

// notificationObservation maps a notification's type and subtype to what
// its subscription becomes; nil for a type that changes no entitlement.
func notificationObservation(n Notification, ri *jwsRenewal) (*subscriptions.Observation, error) {
	var state subscriptions.State
	autoRenew := ri != nil && ri.AutoRenewStatus == 1
	var grace *time.Time
	switch n.Type {
	case "SUBSCRIBED", "DID_RENEW", "OFFER_REDEEMED", "DID_CHANGE_RENEWAL_PREF":
		// DID_CHANGE_RENEWAL_PREF: an upgrade's transaction carries the new
		// product at once; a downgrade's the current one until renewal.
		state = running(n.Transaction, ri)
	case "DID_CHANGE_RENEWAL_STATUS":
		if n.Subtype == "AUTO_RENEW_DISABLED" {
			state, autoRenew = subscriptions.StateCancelled, false
		} else {
			state = running(n.Transaction, ri)
		}
	case "DID_FAIL_TO_RENEW":
		state = subscriptions.StateOnHold
		if n.Subtype == "GRACE_PERIOD" {
			state = subscriptions.StateGrace
			if ri != nil && ri.GracePeriodExpiresDate != 0 {
				g := millis(ri.GracePeriodExpiresDate)
				grace = &g
			}
		}
	case "GRACE_PERIOD_EXPIRED":
		state = subscriptions.StateOnHold
	case "EXPIRED":
		state, autoRenew = subscriptions.StateExpired, false
	case "REFUND":
		state, autoRenew = subscriptions.StateRefunded, false
	case "REVOKE":
		state, autoRenew = subscriptions.StateRevoked, false
	default:
		// TEST, CONSUMPTION_REQUEST, PRICE_INCREASE, REFUND_DECLINED,
		// REFUND_REVERSED, RENEWAL_EXTENDED, ...: stored by the caller,
		// reconciliation reads the store's state.
		return nil, nil
	}
	if n.Transaction == nil {
		return nil, fmt.Errorf("%w: %s without signedTransactionInfo", billing.ErrMalformed, n.Type)
	}
	obs := observation(*n.Transaction, state, autoRenew, n.SignedAt)
	obs.GraceEndsAt = grace
	obs.Environment = n.Environment
	return &obs, nil
}

// running is the state of a subscription in its period: a free trial or
// paid, or cancelled when it will not renew.
func running(tx *Transaction, ri *jwsRenewal) subscriptions.State {
	if ri != nil && ri.AutoRenewStatus == 0 {
		return subscriptions.StateCancelled
	}
	if tx != nil && tx.OfferDiscountType == "FREE_TRIAL" {
		return subscriptions.StateTrial
	}
	return subscriptions.StateActive
}

// revoked is the state of a transaction the App Store took back: a
// refund names its reason; Family Sharing withdrawn names none.
func revoked(tx Transaction) subscriptions.State {
	if tx.RevocationReason != nil && tx.InAppOwnershipType != "FAMILY_SHARED" {
		return subscriptions.StateRefunded
	}
	return subscriptions.StateRevoked
}

func observation(tx Transaction, state subscriptions.State, autoRenew bool, at time.Time) subscriptions.Observation {
	return subscriptions.Observation{
		Source:        subscriptions.AppStore,
		ExternalID:    tx.OriginalTransactionID,
		AccountHint:   tx.AppAccountToken,
		ProductID:     tx.ProductID,
		State:         state,
		StartedAt:     tx.OriginalPurchaseDate,
		ExpiresAt:     tx.ExpiresDate,
		AutoRenew:     autoRenew,
		Environment:   tx.Environment,
		ObservedAt:    at,
		TransactionID: tx.TransactionID,
	}
}

// Revocations reads the refunds and revocations of the subscription
// originalTransactionID the App Store changed after revision ("" from the
// start), by Get Transaction History (RevokedHistory: the customer's
// other subscriptions are read with their own), and the revision the next
// read goes on from.
func (c *Client) Revocations(ctx context.Context, originalTransactionID, revision string) ([]subscriptions.PastRevocation, string, error) {
	h, err := c.RevokedHistory(ctx, originalTransactionID, revision)
	if err != nil {
		return nil, "", err
	}
	var out []subscriptions.PastRevocation
	for _, tx := range h.Transactions {
		if tx.OriginalTransactionID != originalTransactionID || tx.RevocationDate.IsZero() {
			continue
		}
		out = append(out, pastRevocation(tx))
	}
	return out, h.Revision, nil
}

// pastRevocation is the refund or revocation of the transaction tx, its
// period and why.
func pastRevocation(tx Transaction) subscriptions.PastRevocation {
	return subscriptions.PastRevocation{
		TransactionID: tx.TransactionID, ProductID: tx.ProductID, StartedAt: tx.PurchaseDate, EndsAt: tx.ExpiresDate,
		RevokedAt: tx.RevocationDate, Reason: revoked(tx),
	}
}

// Revocation is the refund or revocation a REFUND or REVOKE notification
// tells of, as Get Transaction History gives it (Revocations); nil for
// another type. Whether it is of the current period or an earlier one
// is for the caller to tell from the entitlement it holds.
func (n Notification) Revocation() *subscriptions.PastRevocation {
	if (n.Type != "REFUND" && n.Type != "REVOKE") || n.Transaction == nil || n.Transaction.TransactionID == "" {
		return nil
	}
	tx := *n.Transaction
	if tx.RevocationDate.IsZero() {
		tx.RevocationDate = n.SignedAt
	}
	r := pastRevocation(tx)
	if n.Type == "REVOKE" {
		r.Reason = subscriptions.StateRevoked
	} else {
		r.Reason = subscriptions.StateRefunded
	}
	return &r
}

// Transaction verifies a StoreKit 2 signed transaction (JWS) the app
// posts after a purchase or a restore. A transaction carries no renewal
// info: a running auto-renewable subscription is taken to renew until
// the App Store says otherwise (a notification, Statuses).
func (c *Client) Transaction(signed string) (subscriptions.Observation, error) {
	tx, err := c.transaction(signed)
	if err != nil {
		return subscriptions.Observation{}, err
	}
	return fromTransaction(tx, nil, 0, c.now()), nil
}

// fromTransaction is a subscription's state from its latest transaction,
// its renewal info (nil when unknown) and its status in Get All
// Subscription Statuses (0 when unknown), at now.
func fromTransaction(tx Transaction, ri *jwsRenewal, status int, now time.Time) subscriptions.Observation {
	autoRenew := tx.Type == "Auto-Renewable Subscription"
	if ri != nil {
		autoRenew = ri.AutoRenewStatus == 1
	}
	retrying := ri != nil && ri.IsInBillingRetryPeriod
	var state subscriptions.State
	var grace *time.Time
	switch {
	case status == 5 || !tx.RevocationDate.IsZero():
		state, autoRenew = revoked(tx), false
	case status == 4:
		state = subscriptions.StateGrace
		if ri != nil && ri.GracePeriodExpiresDate != 0 {
			g := millis(ri.GracePeriodExpiresDate)
			grace = &g
		}
	case status == 3:
		state = subscriptions.StateOnHold
	case status == 2:
		state, autoRenew = subscriptions.StateExpired, false
	case !tx.ExpiresDate.IsZero() && !now.Before(tx.ExpiresDate):
		if retrying {
			state = subscriptions.StateOnHold
		} else {
			state, autoRenew = subscriptions.StateExpired, false
		}
	default:
		state = running(&tx, ri)
		if ri == nil && !autoRenew {
			state = subscriptions.StateCancelled
		}
	}
	at := tx.SignedAt
	if status != 0 {
		at = now
	}
	obs := observation(tx, state, autoRenew, at)
	obs.GraceEndsAt = grace
	return obs
}
