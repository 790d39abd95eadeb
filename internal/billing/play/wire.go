package play

import (
	"encoding/json"
	"strconv"
)

// The Google Play wire formats this package reads, as Play sends them
// (JSON field names of the Android Publisher API v3 and of real-time
// developer notifications). playfake writes the same types.

// SubscriptionPurchaseV2 is the answer of purchases.subscriptionsv2.get.
// Times are RFC 3339 strings, as on the wire.
type SubscriptionPurchaseV2 struct {
	Kind                       string                      `json:"kind,omitempty"`
	RegionCode                 string                      `json:"regionCode,omitempty"`
	LineItems                  []LineItem                  `json:"lineItems,omitempty"`
	StartTime                  string                      `json:"startTime,omitempty"`
	SubscriptionState          string                      `json:"subscriptionState,omitempty"`
	LatestOrderID              string                      `json:"latestOrderId,omitempty"`
	LinkedPurchaseToken        string                      `json:"linkedPurchaseToken,omitempty"`
	PausedStateContext         *PausedStateContext         `json:"pausedStateContext,omitempty"`
	CanceledStateContext       *CanceledStateContext       `json:"canceledStateContext,omitempty"`
	TestPurchase               *struct{}                   `json:"testPurchase,omitempty"`
	AcknowledgementState       string                      `json:"acknowledgementState,omitempty"`
	ExternalAccountIdentifiers *ExternalAccountIdentifiers `json:"externalAccountIdentifiers,omitempty"`
}

// Subscription states (SubscriptionPurchaseV2.subscriptionState).
const (
	StateUnspecified             = "SUBSCRIPTION_STATE_UNSPECIFIED"
	StatePending                 = "SUBSCRIPTION_STATE_PENDING"
	StateActive                  = "SUBSCRIPTION_STATE_ACTIVE"
	StatePaused                  = "SUBSCRIPTION_STATE_PAUSED"
	StateInGracePeriod           = "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"
	StateOnHold                  = "SUBSCRIPTION_STATE_ON_HOLD"
	StateCanceled                = "SUBSCRIPTION_STATE_CANCELED"
	StateExpired                 = "SUBSCRIPTION_STATE_EXPIRED"
	StatePendingPurchaseCanceled = "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED"
)

// Acknowledgement states (SubscriptionPurchaseV2.acknowledgementState).
const (
	AcknowledgementPending      = "ACKNOWLEDGEMENT_STATE_PENDING"
	AcknowledgementAcknowledged = "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
)

// LineItem is one product of a subscription purchase.
type LineItem struct {
	ProductID        string            `json:"productId,omitempty"`
	ExpiryTime       string            `json:"expiryTime,omitempty"`
	AutoRenewingPlan *AutoRenewingPlan `json:"autoRenewingPlan,omitempty"`
	PrepaidPlan      *PrepaidPlan      `json:"prepaidPlan,omitempty"`
	OfferDetails     *OfferDetails     `json:"offerDetails,omitempty"`
	OfferPhase       *OfferPhase       `json:"offerPhase,omitempty"`
	// LatestSuccessfulOrderID is the order of the period being served.
	LatestSuccessfulOrderID string `json:"latestSuccessfulOrderId,omitempty"`
}

// AutoRenewingPlan is the renewal of an auto-renewing line item.
type AutoRenewingPlan struct {
	AutoRenewEnabled bool `json:"autoRenewEnabled,omitempty"`
}

// PrepaidPlan is a line item that does not renew.
type PrepaidPlan struct {
	AllowExtendAfterTime string `json:"allowExtendAfterTime,omitempty"`
}

// OfferDetails names the base plan and offer bought.
type OfferDetails struct {
	BasePlanID string   `json:"basePlanId,omitempty"`
	OfferID    string   `json:"offerId,omitempty"`
	OfferTags  []string `json:"offerTags,omitempty"`
}

// OfferPhase is the phase of the offer the line item is in; exactly one
// field is set (each an empty object on the wire).
type OfferPhase struct {
	BasePrice         *struct{} `json:"basePrice,omitempty"`
	FreeTrial         *struct{} `json:"freeTrial,omitempty"`
	IntroductoryPrice *struct{} `json:"introductoryPrice,omitempty"`
	ProrationPeriod   *struct{} `json:"prorationPeriod,omitempty"`
}

// PausedStateContext is set while the subscription is paused.
type PausedStateContext struct {
	AutoResumeTime string `json:"autoResumeTime,omitempty"`
}

// CanceledStateContext says who cancelled; one field is set.
type CanceledStateContext struct {
	UserInitiatedCancellation      *json.RawMessage `json:"userInitiatedCancellation,omitempty"`
	SystemInitiatedCancellation    *json.RawMessage `json:"systemInitiatedCancellation,omitempty"`
	DeveloperInitiatedCancellation *json.RawMessage `json:"developerInitiatedCancellation,omitempty"`
	ReplacementCancellation        *json.RawMessage `json:"replacementCancellation,omitempty"`
}

// ExternalAccountIdentifiers carries the ids the app set at purchase.
type ExternalAccountIdentifiers struct {
	ExternalAccountID           string `json:"externalAccountId,omitempty"`
	ObfuscatedExternalAccountID string `json:"obfuscatedExternalAccountId,omitempty"`
	ObfuscatedExternalProfileID string `json:"obfuscatedExternalProfileId,omitempty"`
}

// DeveloperNotification is a real-time developer notification, the data
// of a Pub/Sub message (base64 in the push).
type DeveloperNotification struct {
	Version                    string                      `json:"version,omitempty"`
	PackageName                string                      `json:"packageName,omitempty"`
	EventTimeMillis            Millis                      `json:"eventTimeMillis,omitempty"`
	SubscriptionNotification   *SubscriptionNotification   `json:"subscriptionNotification,omitempty"`
	OneTimeProductNotification *OneTimeProductNotification `json:"oneTimeProductNotification,omitempty"`
	VoidedPurchaseNotification *VoidedPurchaseNotification `json:"voidedPurchaseNotification,omitempty"`
	TestNotification           *TestNotification           `json:"testNotification,omitempty"`
}

// SubscriptionNotification signals a change of a subscription purchase.
type SubscriptionNotification struct {
	Version          string `json:"version,omitempty"`
	NotificationType int    `json:"notificationType,omitempty"`
	PurchaseToken    string `json:"purchaseToken,omitempty"`
	SubscriptionID   string `json:"subscriptionId,omitempty"`
}

// OneTimeProductNotification signals a change of a one-time purchase.
type OneTimeProductNotification struct {
	Version          string `json:"version,omitempty"`
	NotificationType int    `json:"notificationType,omitempty"`
	PurchaseToken    string `json:"purchaseToken,omitempty"`
	SKU              string `json:"sku,omitempty"`
}

// VoidedPurchaseNotification signals a refund, chargeback or revocation.
type VoidedPurchaseNotification struct {
	PurchaseToken string `json:"purchaseToken,omitempty"`
	OrderID       string `json:"orderId,omitempty"`
	// ProductType: 1 subscription, 2 one-time.
	ProductType int `json:"productType,omitempty"`
	// RefundType: 1 full refund, 2 quantity-based partial refund.
	RefundType int `json:"refundType,omitempty"`
}

// TestNotification is sent from the Play Console's "send test
// notification".
type TestNotification struct {
	Version string `json:"version,omitempty"`
}

// Subscription notification types (subscriptionNotification.notificationType).
const (
	SubscriptionRecovered             = 1
	SubscriptionRenewed               = 2
	SubscriptionCanceled              = 3
	SubscriptionPurchased             = 4
	SubscriptionOnHold                = 5
	SubscriptionInGracePeriod         = 6
	SubscriptionRestarted             = 7
	SubscriptionPriceChangeConfirmed  = 8
	SubscriptionDeferred              = 9
	SubscriptionPaused                = 10
	SubscriptionPauseScheduleChanged  = 11
	SubscriptionRevoked               = 12
	SubscriptionExpired               = 13
	SubscriptionItemsChanged          = 17
	SubscriptionCancellationScheduled = 18
	SubscriptionPriceChangeUpdated    = 19
	SubscriptionPendingPurchaseCancel = 20
)

// Millis is milliseconds since the epoch. Play writes int64 as a JSON
// string ("1503349566168"); a bare number is accepted too.
type Millis int64

// MarshalJSON writes the string form, as Play does.
func (m Millis) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(m), 10) + `"`), nil
}

// UnmarshalJSON reads a string or a number.
func (m *Millis) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if s == "null" {
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return err
	}
	*m = Millis(v)
	return nil
}
