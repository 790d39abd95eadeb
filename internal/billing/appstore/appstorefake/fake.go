// Package appstorefake is a fake App Store for tests: it signs App Store
// Server Notifications V2 and StoreKit 2 transactions with its own root,
// intermediate and leaf certificates (carrying Apple's marker
// extensions), and serves the App Store Server API's Get All Subscription
// Statuses and Get Transaction History, checking the bearer JWT of the
// in-app purchase key it hands out.
package appstorefake

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Fake is a fake App Store for one app. As and Addressed return views
// that sign otherwise and share the rest.
type Fake struct {
	*state
	signer      Signer
	bundleID    string
	environment string
}

type state struct {
	t          testing.TB
	pki        pki
	srv        *httptest.Server
	key        *ecdsa.PrivateKey
	keyID      string
	issuerID   string
	bundleID   string
	appAppleID int64

	mu       sync.Mutex
	now      func() time.Time
	env      string
	pageSize int
	// seq orders the changes of transactions (the history's "recently
	// modified" order and its revisions).
	seq      int
	subs     map[string]*subscription // by originalTransactionId
	order    []string                 // originalTransactionIds as set
	requests int
	pages    int
}

type subscription struct {
	status  int
	renewal RenewalFields
	history []TransactionFields
	// meta is, for each transaction of history, who signs it in the
	// history and when it last changed.
	meta []txMeta
}

type txMeta struct {
	signer   Signer
	modified int
}

// New starts a fake App Store for bundleID (environment Production); it
// stops with the test.
func New(t testing.TB, bundleID string) *Fake {
	t.Helper()
	s := &state{
		t:          t,
		pki:        newPKI(t, time.Now()),
		key:        newKey(t),
		keyID:      "FAKEKEY123",
		issuerID:   "57246542-96fe-1a63-e053-0824d011072a",
		bundleID:   bundleID,
		appAppleID: 1234567890,
		now:        time.Now,
		env:        "Production",
		pageSize:   20,
		subs:       map[string]*subscription{},
	}
	s.srv = httptest.NewServer(s.handler())
	t.Cleanup(s.srv.Close)
	return &Fake{state: s, signer: Apple, bundleID: bundleID, environment: "Production"}
}

// Roots is a pool of the fake's root certificate (Config.Roots).
func (f *Fake) Roots() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(f.pki.root)
	return p
}

// RootPEM is the fake's root certificate as PEM, for a server that reads
// its trust anchor from a file (HERALD_APPLE_ROOT_CERT_FILE).
func (f *Fake) RootPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.pki.root.Raw})
}

// URL is the App Store Server API's base (Config.APIBase).
func (f *Fake) URL() string { return f.srv.URL }

// Key is the in-app purchase key the API accepts.
func (f *Fake) Key() *ecdsa.PrivateKey { return f.key }

// KeyPEM is Key as App Store Connect hands it out (.p8, PKCS#8 PEM).
func (f *Fake) KeyPEM() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(f.key)
	if err != nil {
		f.t.Fatalf("appstorefake: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// KeyID is the key's id (the JWT's kid).
func (f *Fake) KeyID() string { return f.keyID }

// IssuerID is the team's issuer id (the JWT's iss).
func (f *Fake) IssuerID() string { return f.issuerID }

// SetClock sets the fake's clock: signedDate and the bearer token's
// validity (certificates are valid around the real time of New).
func (f *Fake) SetClock(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = now
}

// SetEnvironment sets the environment of the API's answers
// ("Production" by default); Addressed sets it for signed payloads.
func (f *Fake) SetEnvironment(env string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.env = env
}

// SetPageSize sets how many transactions a history page holds (20, as
// the App Store).
func (f *Fake) SetPageSize(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pageSize = max(n, 1)
}

// HistoryPages is how many pages of Get Transaction History the fake
// answered 200.
func (f *Fake) HistoryPages() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pages
}

// Requests is how many API requests the fake answered 200.
func (f *Fake) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// As is a view of f that signs with s.
func (f *Fake) As(s Signer) *Fake {
	v := *f
	v.signer = s
	return &v
}

// Addressed is a view of f whose payloads name bundleID and environment.
func (f *Fake) Addressed(bundleID, environment string) *Fake {
	v := *f
	v.bundleID, v.environment = bundleID, environment
	return &v
}

func (s *state) clock() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now()
}

// TransactionFields are a transaction's (JWSTransactionDecodedPayload);
// zero fields take defaults.
type TransactionFields struct {
	// TransactionID defaults to OriginalTransactionID.
	TransactionID         string
	OriginalTransactionID string
	ProductID             string
	// SubscriptionGroupID defaults to "21000000".
	SubscriptionGroupID string
	// AppAccountToken: the Herald user id (a UUID); "" for none.
	AppAccountToken string
	// PurchaseDate defaults to OriginalPurchaseDate.
	PurchaseDate         time.Time
	OriginalPurchaseDate time.Time
	ExpiresDate          time.Time
	OfferType            int
	OfferDiscountType    string
	// InAppOwnershipType defaults to PURCHASED.
	InAppOwnershipType string
	RevocationDate     time.Time
	RevocationReason   *int
	IsUpgraded         bool
	// Type defaults to "Auto-Renewable Subscription".
	Type string
	// TransactionReason defaults to PURCHASE.
	TransactionReason string
}

// RenewalFields are a subscription's renewal info
// (JWSRenewalInfoDecodedPayload).
type RenewalFields struct {
	// AutoRenewStatus: 1 on, 0 off.
	AutoRenewStatus int
	// AutoRenewProductID defaults to the transaction's product.
	AutoRenewProductID     string
	IsInBillingRetryPeriod bool
	GracePeriodExpiresDate time.Time
	ExpirationIntent       int
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func (f *Fake) txPayload(tx TransactionFields, signedAt time.Time) map[string]any {
	def := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	purchase := tx.PurchaseDate
	if purchase.IsZero() {
		purchase = tx.OriginalPurchaseDate
	}
	p := map[string]any{
		"transactionId":               def(tx.TransactionID, tx.OriginalTransactionID),
		"originalTransactionId":       tx.OriginalTransactionID,
		"webOrderLineItemId":          def(tx.TransactionID, tx.OriginalTransactionID) + "0",
		"bundleId":                    f.bundleID,
		"productId":                   tx.ProductID,
		"subscriptionGroupIdentifier": def(tx.SubscriptionGroupID, "21000000"),
		"purchaseDate":                ms(purchase),
		"originalPurchaseDate":        ms(tx.OriginalPurchaseDate),
		"quantity":                    1,
		"type":                        def(tx.Type, "Auto-Renewable Subscription"),
		"inAppOwnershipType":          def(tx.InAppOwnershipType, "PURCHASED"),
		"signedDate":                  ms(signedAt),
		"environment":                 f.environment,
		"transactionReason":           def(tx.TransactionReason, "PURCHASE"),
		"storefront":                  "USA",
		"storefrontId":                "143441",
		"price":                       4990,
		"currency":                    "USD",
	}
	if !tx.ExpiresDate.IsZero() {
		p["expiresDate"] = ms(tx.ExpiresDate)
	}
	if tx.AppAccountToken != "" {
		p["appAccountToken"] = tx.AppAccountToken
	}
	if tx.OfferType != 0 {
		p["offerType"] = tx.OfferType
	}
	if tx.OfferDiscountType != "" {
		p["offerDiscountType"] = tx.OfferDiscountType
	}
	if !tx.RevocationDate.IsZero() {
		p["revocationDate"] = ms(tx.RevocationDate)
	}
	if tx.RevocationReason != nil {
		p["revocationReason"] = *tx.RevocationReason
	}
	if tx.IsUpgraded {
		p["isUpgraded"] = true
	}
	return p
}

func (f *Fake) renewalPayload(tx TransactionFields, r RenewalFields, signedAt time.Time) map[string]any {
	next := r.AutoRenewProductID
	if next == "" {
		next = tx.ProductID
	}
	p := map[string]any{
		"originalTransactionId":       tx.OriginalTransactionID,
		"productId":                   tx.ProductID,
		"autoRenewProductId":          next,
		"autoRenewStatus":             r.AutoRenewStatus,
		"isInBillingRetryPeriod":      r.IsInBillingRetryPeriod,
		"signedDate":                  ms(signedAt),
		"environment":                 f.environment,
		"recentSubscriptionStartDate": ms(tx.OriginalPurchaseDate),
		"renewalDate":                 ms(tx.ExpiresDate),
	}
	if !r.GracePeriodExpiresDate.IsZero() {
		p["gracePeriodExpiresDate"] = ms(r.GracePeriodExpiresDate)
	}
	if r.ExpirationIntent != 0 {
		p["expirationIntent"] = r.ExpirationIntent
	}
	return p
}

// sign makes a compact JWS of payload with f's signer, as the App Store
// does: header {"alg":"ES256","x5c":[leaf, intermediate, root]}.
func (f *Fake) sign(payload any) string {
	// The API's handlers sign too: a failure is reported with Errorf,
	// which (unlike Fatalf) may be called from the server's goroutines.
	c := f.pki.chains[f.signer]
	x5c := make([]string, len(c.x5c))
	for i, der := range c.x5c {
		x5c[i] = base64.StdEncoding.EncodeToString(der)
	}
	header, err := json.Marshal(map[string]any{"alg": "ES256", "x5c": x5c})
	if err != nil {
		f.t.Errorf("appstorefake: %v", err)
		return ""
	}
	body, err := json.Marshal(payload)
	if err != nil {
		f.t.Errorf("appstorefake: %v", err)
		return ""
	}
	input := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(body)
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, c.key, digest[:])
	if err != nil {
		f.t.Errorf("appstorefake: %v", err)
		return ""
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// SignedTransaction is tx as StoreKit 2 hands it to the app (a JWS).
func (f *Fake) SignedTransaction(tx TransactionFields) string {
	return f.sign(f.txPayload(tx, f.clock()))
}

// SignedRenewal is renewal info as the App Store signs it.
func (f *Fake) SignedRenewal(tx TransactionFields, r RenewalFields) string {
	return f.sign(f.renewalPayload(tx, r, f.clock()))
}

// Notification is the body the App Store POSTs for a notification of typ
// and subtype ("" for none), with a fresh notificationUUID and signedDate.
// tx with no OriginalTransactionID (as for TEST) leaves out the
// transaction and the renewal info.
func (f *Fake) Notification(typ, subtype string, tx TransactionFields, renewal RenewalFields) []byte {
	return f.NotificationWithUUID(uuid.NewString(), typ, subtype, tx, renewal)
}

// NotificationWithUUID is Notification with the given notificationUUID
// (a retry of the same notification).
func (f *Fake) NotificationWithUUID(id, typ, subtype string, tx TransactionFields, renewal RenewalFields) []byte {
	now := f.clock()
	data := map[string]any{
		"appAppleId":    f.appAppleID,
		"bundleId":      f.bundleID,
		"bundleVersion": "1",
		"environment":   f.environment,
	}
	if tx.OriginalTransactionID != "" {
		data["signedTransactionInfo"] = f.sign(f.txPayload(tx, now))
		data["signedRenewalInfo"] = f.sign(f.renewalPayload(tx, renewal, now))
	}
	p := map[string]any{
		"notificationType": typ,
		"notificationUUID": id,
		"data":             data,
		"version":          "2.0",
		"signedDate":       ms(now),
	}
	if subtype != "" {
		p["subtype"] = subtype
	}
	body, err := json.Marshal(map[string]string{"signedPayload": f.sign(p)})
	if err != nil {
		f.t.Fatalf("appstorefake: %v", err)
	}
	return body
}
