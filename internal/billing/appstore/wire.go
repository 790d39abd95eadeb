package appstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/billing"
)

// The App Store's wire format: ResponseBodyV2 and its decoded payloads.
// Dates are milliseconds since the epoch.

type notificationBody struct {
	SignedPayload string `json:"signedPayload"`
}

type notificationPayload struct {
	NotificationType string            `json:"notificationType"`
	Subtype          string            `json:"subtype"`
	NotificationUUID string            `json:"notificationUUID"`
	Version          string            `json:"version"`
	SignedDate       int64             `json:"signedDate"`
	Data             *notificationData `json:"data"`
	// summary (RENEWAL_EXTENSION) and externalPurchaseToken
	// (EXTERNAL_PURCHASE_TOKEN) replace data in some types.
	Summary *struct {
		BundleID    string `json:"bundleId"`
		Environment string `json:"environment"`
	} `json:"summary"`
	ExternalPurchaseToken *struct {
		BundleID string `json:"bundleId"`
	} `json:"externalPurchaseToken"`
}

type notificationData struct {
	AppAppleID            int64  `json:"appAppleId"`
	BundleID              string `json:"bundleId"`
	BundleVersion         string `json:"bundleVersion"`
	Environment           string `json:"environment"`
	SignedTransactionInfo string `json:"signedTransactionInfo"`
	SignedRenewalInfo     string `json:"signedRenewalInfo"`
	Status                int    `json:"status"`
}

// jwsTransaction is JWSTransactionDecodedPayload.
type jwsTransaction struct {
	TransactionID               string `json:"transactionId"`
	OriginalTransactionID       string `json:"originalTransactionId"`
	WebOrderLineItemID          string `json:"webOrderLineItemId"`
	BundleID                    string `json:"bundleId"`
	ProductID                   string `json:"productId"`
	SubscriptionGroupIdentifier string `json:"subscriptionGroupIdentifier"`
	PurchaseDate                int64  `json:"purchaseDate"`
	OriginalPurchaseDate        int64  `json:"originalPurchaseDate"`
	ExpiresDate                 int64  `json:"expiresDate"`
	Quantity                    int    `json:"quantity"`
	Type                        string `json:"type"`
	AppAccountToken             string `json:"appAccountToken"`
	InAppOwnershipType          string `json:"inAppOwnershipType"`
	SignedDate                  int64  `json:"signedDate"`
	RevocationReason            *int   `json:"revocationReason"`
	RevocationDate              int64  `json:"revocationDate"`
	IsUpgraded                  bool   `json:"isUpgraded"`
	OfferType                   int    `json:"offerType"`
	OfferIdentifier             string `json:"offerIdentifier"`
	OfferDiscountType           string `json:"offerDiscountType"`
	Environment                 string `json:"environment"`
	TransactionReason           string `json:"transactionReason"`
	Storefront                  string `json:"storefront"`
}

// jwsRenewal is JWSRenewalInfoDecodedPayload.
type jwsRenewal struct {
	OriginalTransactionID  string `json:"originalTransactionId"`
	ProductID              string `json:"productId"`
	AutoRenewProductID     string `json:"autoRenewProductId"`
	AutoRenewStatus        int    `json:"autoRenewStatus"`
	IsInBillingRetryPeriod bool   `json:"isInBillingRetryPeriod"`
	GracePeriodExpiresDate int64  `json:"gracePeriodExpiresDate"`
	ExpirationIntent       int    `json:"expirationIntent"`
	Environment            string `json:"environment"`
	SignedDate             int64  `json:"signedDate"`
}

// statusResponse is StatusResponse (Get All Subscription Statuses).
type statusResponse struct {
	Environment string `json:"environment"`
	BundleID    string `json:"bundleId"`
	AppAppleID  int64  `json:"appAppleId"`
	Data        []struct {
		SubscriptionGroupIdentifier string `json:"subscriptionGroupIdentifier"`
		LastTransactions            []struct {
			Status                int    `json:"status"`
			OriginalTransactionID string `json:"originalTransactionId"`
			SignedTransactionInfo string `json:"signedTransactionInfo"`
			SignedRenewalInfo     string `json:"signedRenewalInfo"`
		} `json:"lastTransactions"`
	} `json:"data"`
}

// historyResponse is HistoryResponse (Get Transaction History).
type historyResponse struct {
	Revision           string   `json:"revision"`
	HasMore            bool     `json:"hasMore"`
	BundleID           string   `json:"bundleId"`
	AppAppleID         int64    `json:"appAppleId"`
	Environment        string   `json:"environment"`
	SignedTransactions []string `json:"signedTransactions"`
}

// apiError is the App Store Server API's error body.
type apiError struct {
	ErrorCode    int64  `json:"errorCode"`
	ErrorMessage string `json:"errorMessage"`
}

// Transaction is a verified, decoded App Store transaction.
type Transaction struct {
	TransactionID         string
	OriginalTransactionID string
	WebOrderLineItemID    string
	BundleID              string
	ProductID             string
	SubscriptionGroupID   string
	// Type: "Auto-Renewable Subscription", "Non-Renewing Subscription",
	// "Consumable", "Non-Consumable".
	Type string
	// AppAccountToken is the app's account token, lowercased (Herald's
	// user id); "" when none.
	AppAccountToken      string
	PurchaseDate         time.Time
	OriginalPurchaseDate time.Time
	ExpiresDate          time.Time
	// OfferType: 1 introductory, 2 promotional, 3 offer code, 4 win-back;
	// 0 none. OfferDiscountType: FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT.
	OfferType         int
	OfferDiscountType string
	// InAppOwnershipType: PURCHASED or FAMILY_SHARED.
	InAppOwnershipType string
	// RevocationDate is zero unless refunded or revoked; RevocationReason
	// is nil unless refunded (0 other, 1 an issue in the app).
	RevocationDate    time.Time
	RevocationReason  *int
	IsUpgraded        bool
	TransactionReason string
	Environment       string
	SignedAt          time.Time
}

func millis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func (t jwsTransaction) decode() Transaction {
	return Transaction{
		TransactionID:         t.TransactionID,
		OriginalTransactionID: t.OriginalTransactionID,
		WebOrderLineItemID:    t.WebOrderLineItemID,
		BundleID:              t.BundleID,
		ProductID:             t.ProductID,
		SubscriptionGroupID:   t.SubscriptionGroupIdentifier,
		Type:                  t.Type,
		AppAccountToken:       strings.ToLower(t.AppAccountToken),
		PurchaseDate:          millis(t.PurchaseDate),
		OriginalPurchaseDate:  millis(t.OriginalPurchaseDate),
		ExpiresDate:           millis(t.ExpiresDate),
		OfferType:             t.OfferType,
		OfferDiscountType:     t.OfferDiscountType,
		InAppOwnershipType:    t.InAppOwnershipType,
		RevocationDate:        millis(t.RevocationDate),
		RevocationReason:      t.RevocationReason,
		IsUpgraded:            t.IsUpgraded,
		TransactionReason:     t.TransactionReason,
		Environment:           t.Environment,
		SignedAt:              millis(t.SignedDate),
	}
}

// checkAddress refuses what is meant for another app or environment.
func (c *Client) checkAddress(what, bundleID, environment string) error {
	if bundleID != c.cfg.BundleID {
		return fmt.Errorf("%w: %s for bundle %q, not %q", billing.ErrMisaddressed, what, bundleID, c.cfg.BundleID)
	}
	if c.cfg.Environment != "" && environment != c.cfg.Environment {
		return fmt.Errorf("%w: %s of environment %q, not %q", billing.ErrMisaddressed, what, environment, c.cfg.Environment)
	}
	if c.cfg.Environment == "" && environment != Production && environment != Sandbox {
		return fmt.Errorf("%w: %s of environment %q", billing.ErrMisaddressed, what, environment)
	}
	return nil
}

// transaction verifies a signed transaction, checks its address and
// decodes it.
func (c *Client) transaction(signed string) (Transaction, error) {
	var t jwsTransaction
	if err := c.verifyJSON(signed, &t); err != nil {
		return Transaction{}, err
	}
	if t.OriginalTransactionID == "" || t.TransactionID == "" {
		return Transaction{}, fmt.Errorf("%w: a transaction without its ids", billing.ErrMalformed)
	}
	if err := c.checkAddress("transaction", t.BundleID, t.Environment); err != nil {
		return Transaction{}, err
	}
	return t.decode(), nil
}

// renewal verifies signed renewal info of the subscription originalID.
func (c *Client) renewal(signed, originalID string) (*jwsRenewal, error) {
	var r jwsRenewal
	if err := c.verifyJSON(signed, &r); err != nil {
		return nil, err
	}
	if r.OriginalTransactionID != originalID {
		return nil, fmt.Errorf("%w: renewal info of %q with a transaction of %q", billing.ErrMalformed, r.OriginalTransactionID, originalID)
	}
	if c.cfg.Environment != "" && r.Environment != c.cfg.Environment {
		return nil, fmt.Errorf("%w: renewal info of environment %q", billing.ErrMisaddressed, r.Environment)
	}
	return &r, nil
}
