package appstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/billing/appstore"
	"github.com/herald-vpn/herald/internal/billing/appstore/appstorefake"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

const bundle = "net.herald.vpn"

// The user id as the app sets appAccountToken (Apple hands it back
// uppercase or not; Herald's ids are lowercase).
const (
	userToken = "6F9619FF-8B86-D011-B42D-00CF4FC964FF"
	userID    = "6f9619ff-8b86-d011-b42d-00cf4fc964ff"
)

type env struct {
	fake  *appstorefake.Fake
	c     *appstore.Client
	clock time.Time
}

func setup(t testing.TB, mod func(*appstore.Config)) env {
	t.Helper()
	clock := time.Now().UTC().Truncate(time.Millisecond)
	f := appstorefake.New(t, bundle)
	f.SetClock(func() time.Time { return clock })
	key, err := appstore.ParsePrivateKey(f.KeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	cfg := appstore.Config{
		BundleID:    bundle,
		Environment: appstore.Production,
		Roots:       f.Roots(),
		IssuerID:    f.IssuerID(),
		KeyID:       f.KeyID(),
		PrivateKey:  key,
		APIBase:     f.URL(),
		Now:         func() time.Time { return clock },
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := appstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return env{fake: f, c: c, clock: clock}
}

func day(n int) time.Duration { return time.Duration(n) * 24 * time.Hour }

func ptr[T any](v T) *T { return &v }

func baseTx(clock time.Time) appstorefake.TransactionFields {
	return appstorefake.TransactionFields{
		OriginalTransactionID: "2000000000000001",
		TransactionID:         "2000000000000005",
		ProductID:             "herald.pro.monthly",
		AppAccountToken:       userToken,
		OriginalPurchaseDate:  clock.Add(-day(30)),
		PurchaseDate:          clock.Add(-day(2)),
		ExpiresDate:           clock.Add(day(28)),
	}
}

func baseObs(clock time.Time) subscriptions.Observation {
	return subscriptions.Observation{
		Source:      subscriptions.AppStore,
		ExternalID:  "2000000000000001",
		AccountHint: userID,
		ProductID:   "herald.pro.monthly",
		State:       subscriptions.StateActive,
		StartedAt:   clock.Add(-day(30)),
		ExpiresAt:   clock.Add(day(28)),
		AutoRenew:   true,
		Environment: appstore.Production,
		ObservedAt:  clock,
		// The transaction the word is about (baseTx's).
		TransactionID: "2000000000000005",
	}
}

func TestNotificationTypes(t *testing.T) {
	e := setup(t, nil)
	clock := e.clock
	on := appstorefake.RenewalFields{AutoRenewStatus: 1}
	off := appstorefake.RenewalFields{AutoRenewStatus: 0}
	grace := clock.Add(day(16))
	cases := []struct {
		typ, subtype string
		tx           func(*appstorefake.TransactionFields)
		renewal      appstorefake.RenewalFields
		want         func(*subscriptions.Observation) // nil: no observation
	}{
		{"SUBSCRIBED", "INITIAL_BUY", nil, on, func(o *subscriptions.Observation) {}},
		{"SUBSCRIBED", "INITIAL_BUY", func(tx *appstorefake.TransactionFields) {
			tx.OfferType, tx.OfferDiscountType = 1, "FREE_TRIAL"
		}, on, func(o *subscriptions.Observation) { o.State = subscriptions.StateTrial }},
		{"SUBSCRIBED", "RESUBSCRIBE", nil, on, func(o *subscriptions.Observation) {}},
		{"DID_RENEW", "", nil, on, func(o *subscriptions.Observation) {}},
		{"DID_RENEW", "BILLING_RECOVERY", nil, on, func(o *subscriptions.Observation) {}},
		{"DID_FAIL_TO_RENEW", "GRACE_PERIOD", nil,
			appstorefake.RenewalFields{AutoRenewStatus: 1, IsInBillingRetryPeriod: true, GracePeriodExpiresDate: grace},
			func(o *subscriptions.Observation) { o.State, o.GraceEndsAt = subscriptions.StateGrace, &grace }},
		{"DID_FAIL_TO_RENEW", "", nil,
			appstorefake.RenewalFields{AutoRenewStatus: 1, IsInBillingRetryPeriod: true},
			func(o *subscriptions.Observation) { o.State = subscriptions.StateOnHold }},
		{"GRACE_PERIOD_EXPIRED", "", nil,
			appstorefake.RenewalFields{AutoRenewStatus: 1, IsInBillingRetryPeriod: true},
			func(o *subscriptions.Observation) { o.State = subscriptions.StateOnHold }},
		{"EXPIRED", "VOLUNTARY", nil, appstorefake.RenewalFields{ExpirationIntent: 1},
			func(o *subscriptions.Observation) { o.State, o.AutoRenew = subscriptions.StateExpired, false }},
		{"EXPIRED", "BILLING_RETRY", nil, appstorefake.RenewalFields{AutoRenewStatus: 1, ExpirationIntent: 2},
			func(o *subscriptions.Observation) { o.State, o.AutoRenew = subscriptions.StateExpired, false }},
		{"EXPIRED", "PRICE_INCREASE", nil, off,
			func(o *subscriptions.Observation) { o.State, o.AutoRenew = subscriptions.StateExpired, false }},
		{"EXPIRED", "PRODUCT_NOT_FOR_SALE", nil, off,
			func(o *subscriptions.Observation) { o.State, o.AutoRenew = subscriptions.StateExpired, false }},
		{"DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", nil, off,
			func(o *subscriptions.Observation) { o.State, o.AutoRenew = subscriptions.StateCancelled, false }},
		{"DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", nil, on, func(o *subscriptions.Observation) {}},
		// An upgrade takes effect at once: the transaction is the new product's.
		{"DID_CHANGE_RENEWAL_PREF", "UPGRADE", func(tx *appstorefake.TransactionFields) {
			tx.TransactionID, tx.ProductID = "2000000000000006", "herald.family.monthly"
		}, on, func(o *subscriptions.Observation) {
			o.ProductID, o.TransactionID = "herald.family.monthly", "2000000000000006"
		}},
		// A downgrade waits for the renewal: the product stays.
		{"DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", nil,
			appstorefake.RenewalFields{AutoRenewStatus: 1, AutoRenewProductID: "herald.basic.monthly"},
			func(o *subscriptions.Observation) {}},
		{"DID_CHANGE_RENEWAL_PREF", "", nil, on, func(o *subscriptions.Observation) {}},
		{"REFUND", "", func(tx *appstorefake.TransactionFields) {
			tx.RevocationDate, tx.RevocationReason = clock.Add(-time.Hour), ptr(0)
		}, on, func(o *subscriptions.Observation) { o.State, o.AutoRenew = subscriptions.StateRefunded, false }},
		{"REVOKE", "", func(tx *appstorefake.TransactionFields) {
			tx.InAppOwnershipType, tx.RevocationDate = "FAMILY_SHARED", clock.Add(-time.Hour)
		}, on, func(o *subscriptions.Observation) { o.State, o.AutoRenew = subscriptions.StateRevoked, false }},
		{"OFFER_REDEEMED", "UPGRADE", nil, on, func(o *subscriptions.Observation) {}},
		{"OFFER_REDEEMED", "", func(tx *appstorefake.TransactionFields) {
			tx.OfferType, tx.OfferDiscountType = 2, "FREE_TRIAL"
		}, on, func(o *subscriptions.Observation) { o.State = subscriptions.StateTrial }},
		{"TEST", "", func(tx *appstorefake.TransactionFields) { *tx = appstorefake.TransactionFields{} }, on, nil},
		{"CONSUMPTION_REQUEST", "", nil, on, nil},
		{"PRICE_INCREASE", "ACCEPTED", nil, on, nil},
		{"REFUND_DECLINED", "", nil, on, nil},
		{"REFUND_REVERSED", "", nil, on, nil},
		{"RENEWAL_EXTENDED", "", nil, on, nil},
	}
	for _, tc := range cases {
		t.Run(tc.typ+"/"+tc.subtype, func(t *testing.T) {
			tx := baseTx(clock)
			if tc.tx != nil {
				tc.tx(&tx)
			}
			n, err := e.c.Notification(e.fake.Notification(tc.typ, tc.subtype, tx, tc.renewal))
			if err != nil {
				t.Fatal(err)
			}
			if n.UUID == "" || n.Type != tc.typ || n.Subtype != tc.subtype || !n.SignedAt.Equal(clock) ||
				n.BundleID != bundle || n.Environment != appstore.Production {
				t.Errorf("notification = %+v", n)
			}
			if tc.want == nil {
				if n.Observation != nil {
					t.Errorf("observation = %+v, want none", *n.Observation)
				}
				return
			}
			want := baseObs(clock)
			tc.want(&want)
			if n.Observation == nil {
				t.Fatal("no observation")
			}
			assertObs(t, *n.Observation, want)
		})
	}
}

func assertObs(t *testing.T, got, want subscriptions.Observation) {
	t.Helper()
	if !reflect.DeepEqual(norm(got), norm(want)) {
		t.Errorf("observation\n got %+v\nwant %+v", norm(got), norm(want))
	}
}

// norm makes times comparable with DeepEqual.
func norm(o subscriptions.Observation) subscriptions.Observation {
	o.StartedAt, o.ExpiresAt, o.ObservedAt = o.StartedAt.UTC(), o.ExpiresAt.UTC(), o.ObservedAt.UTC()
	if o.GraceEndsAt != nil {
		g := o.GraceEndsAt.UTC()
		o.GraceEndsAt = &g
	}
	return o
}

func TestNotificationRetryKeepsUUID(t *testing.T) {
	e := setup(t, nil)
	body := e.fake.NotificationWithUUID("b9b5b7c2-2f4e-4c8e-9f3a-1c2d3e4f5a6b", "DID_RENEW", "", baseTx(e.clock), appstorefake.RenewalFields{AutoRenewStatus: 1})
	a, err := e.c.Notification(body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.c.Notification(body)
	if err != nil {
		t.Fatal(err)
	}
	if a.UUID != "b9b5b7c2-2f4e-4c8e-9f3a-1c2d3e4f5a6b" || a.UUID != b.UUID {
		t.Errorf("uuids %q, %q", a.UUID, b.UUID)
	}
}

func TestNotificationRefused(t *testing.T) {
	e := setup(t, nil)
	tx := baseTx(e.clock)
	on := appstorefake.RenewalFields{AutoRenewStatus: 1}
	valid := string(e.fake.Notification("DID_RENEW", "", tx, on))
	payload := func(body string) string {
		return strings.TrimSuffix(strings.TrimPrefix(body, `{"signedPayload":"`), `"}`)
	}
	parts := strings.Split(payload(valid), ".")
	other := strings.Split(payload(string(e.fake.Notification("EXPIRED", "VOLUNTARY", tx, on))), ".")
	cases := []struct {
		name string
		body string
		want error
	}{
		{"foreign key", string(e.fake.As(appstorefake.ForeignKey).Notification("DID_RENEW", "", tx, on)), billing.ErrForged},
		{"chain to another root", string(e.fake.As(appstorefake.ForeignRoot).Notification("DID_RENEW", "", tx, on)), billing.ErrForged},
		{"expired leaf", string(e.fake.As(appstorefake.ExpiredLeaf).Notification("DID_RENEW", "", tx, on)), billing.ErrForged},
		{"leaf without Apple's marker", string(e.fake.As(appstorefake.NoMarkers).Notification("DID_RENEW", "", tx, on)), billing.ErrForged},
		{"payload swapped", `{"signedPayload":"` + parts[0] + "." + other[1] + "." + parts[2] + `"}`, billing.ErrForged},
		{"signature cut", `{"signedPayload":"` + parts[0] + "." + parts[1] + "." + parts[2][:40] + `"}`, billing.ErrForged},
		{"alg none", `{"signedPayload":"eyJhbGciOiJub25lIn0.` + parts[1] + `."}`, billing.ErrForged},
		{"wrong bundle", string(e.fake.Addressed("com.example.other", appstore.Production).Notification("DID_RENEW", "", tx, on)), billing.ErrMisaddressed},
		{"wrong environment", string(e.fake.Addressed(bundle, appstore.Sandbox).Notification("DID_RENEW", "", tx, on)), billing.ErrMisaddressed},
		{"not JSON", "signedPayload=x", billing.ErrMalformed},
		{"empty object", "{}", billing.ErrMalformed},
		{"not a JWS", `{"signedPayload":"abc"}`, billing.ErrMalformed},
		{"bad base64", `{"signedPayload":"a.b.c"}`, billing.ErrMalformed},
		{"header not JSON", `{"signedPayload":"bm90IGpzb24.` + parts[1] + "." + parts[2] + `"}`, billing.ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, err := e.c.Notification([]byte(tc.body))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v (notification %+v)", err, tc.want, n)
			}
		})
	}
}

func TestEnvironmentUnset(t *testing.T) {
	e := setup(t, func(c *appstore.Config) { c.Environment = "" })
	tx := baseTx(e.clock)
	on := appstorefake.RenewalFields{AutoRenewStatus: 1}
	for _, env := range []string{appstore.Production, appstore.Sandbox} {
		n, err := e.c.Notification(e.fake.Addressed(bundle, env).Notification("DID_RENEW", "", tx, on))
		if err != nil || n.Observation == nil || n.Observation.Environment != env {
			t.Errorf("%s: %+v, %v", env, n, err)
		}
	}
	if _, err := e.c.Notification(e.fake.Addressed(bundle, "Xcode").Notification("DID_RENEW", "", tx, on)); !errors.Is(err, billing.ErrMisaddressed) {
		t.Errorf("Xcode: %v", err)
	}
}

func TestDefaultRootsRefuseTheFake(t *testing.T) {
	e := setup(t, func(c *appstore.Config) { c.Roots = nil })
	_, err := e.c.Notification(e.fake.Notification("DID_RENEW", "", baseTx(e.clock), appstorefake.RenewalFields{}))
	if !errors.Is(err, billing.ErrForged) {
		t.Fatalf("err = %v", err)
	}
}

func TestNew(t *testing.T) {
	key, err := appstore.ParsePrivateKey(appstorefake.New(t, bundle).KeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []appstore.Config{
		{},
		{BundleID: bundle, Environment: "Xcode"},
		{BundleID: bundle, PrivateKey: key},
	} {
		if _, err := appstore.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	if _, err := appstore.ParsePrivateKey([]byte("not a key")); err == nil {
		t.Error("ParsePrivateKey accepted garbage")
	}
}

func TestTransaction(t *testing.T) {
	e := setup(t, nil)
	clock := e.clock
	cases := []struct {
		name string
		tx   func(*appstorefake.TransactionFields)
		want func(*subscriptions.Observation)
	}{
		{"purchase", nil, func(o *subscriptions.Observation) {}},
		{"free trial", func(tx *appstorefake.TransactionFields) { tx.OfferType, tx.OfferDiscountType = 1, "FREE_TRIAL" },
			func(o *subscriptions.Observation) { o.State = subscriptions.StateTrial }},
		{"ended", func(tx *appstorefake.TransactionFields) { tx.ExpiresDate = clock.Add(-time.Hour) },
			func(o *subscriptions.Observation) {
				o.State, o.AutoRenew, o.ExpiresAt = subscriptions.StateExpired, false, clock.Add(-time.Hour)
			}},
		{"refunded", func(tx *appstorefake.TransactionFields) {
			tx.RevocationDate, tx.RevocationReason = clock.Add(-time.Hour), ptr(1)
		}, func(o *subscriptions.Observation) { o.State, o.AutoRenew = subscriptions.StateRefunded, false }},
		{"family sharing withdrawn", func(tx *appstorefake.TransactionFields) {
			tx.InAppOwnershipType, tx.RevocationDate = "FAMILY_SHARED", clock.Add(-time.Hour)
		}, func(o *subscriptions.Observation) { o.State, o.AutoRenew = subscriptions.StateRevoked, false }},
		{"no account token", func(tx *appstorefake.TransactionFields) { tx.AppAccountToken = "" },
			func(o *subscriptions.Observation) { o.AccountHint = "" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tx := baseTx(clock)
			if tc.tx != nil {
				tc.tx(&tx)
			}
			got, err := e.c.Transaction(e.fake.SignedTransaction(tx))
			if err != nil {
				t.Fatal(err)
			}
			want := baseObs(clock)
			tc.want(&want)
			assertObs(t, got, want)
		})
	}
	refusals := []struct {
		name   string
		signed string
		want   error
	}{
		{"foreign key", e.fake.As(appstorefake.ForeignKey).SignedTransaction(baseTx(clock)), billing.ErrForged},
		{"expired leaf", e.fake.As(appstorefake.ExpiredLeaf).SignedTransaction(baseTx(clock)), billing.ErrForged},
		{"another root", e.fake.As(appstorefake.ForeignRoot).SignedTransaction(baseTx(clock)), billing.ErrForged},
		{"wrong bundle", e.fake.Addressed("com.example.other", appstore.Production).SignedTransaction(baseTx(clock)), billing.ErrMisaddressed},
		{"wrong environment", e.fake.Addressed(bundle, appstore.Sandbox).SignedTransaction(baseTx(clock)), billing.ErrMisaddressed},
		{"renewal info, not a transaction", e.fake.SignedRenewal(baseTx(clock), appstorefake.RenewalFields{}), billing.ErrMalformed},
		{"garbage", "garbage", billing.ErrMalformed},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := e.c.Transaction(tc.signed); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestStatuses(t *testing.T) {
	e := setup(t, nil)
	clock := e.clock
	grace := clock.Add(day(6))
	cases := []struct {
		name    string
		status  int
		tx      func(*appstorefake.TransactionFields)
		renewal appstorefake.RenewalFields
		want    func(*subscriptions.Observation)
	}{
		{"active", appstorefake.StatusActive, nil, appstorefake.RenewalFields{AutoRenewStatus: 1}, func(o *subscriptions.Observation) {}},
		{"trial", appstorefake.StatusActive, func(tx *appstorefake.TransactionFields) { tx.OfferDiscountType = "FREE_TRIAL" },
			appstorefake.RenewalFields{AutoRenewStatus: 1}, func(o *subscriptions.Observation) { o.State = subscriptions.StateTrial }},
		{"cancelled", appstorefake.StatusActive, nil, appstorefake.RenewalFields{},
			func(o *subscriptions.Observation) { o.State, o.AutoRenew = subscriptions.StateCancelled, false }},
		{"expired", appstorefake.StatusExpired, func(tx *appstorefake.TransactionFields) { tx.ExpiresDate = clock.Add(-day(1)) },
			appstorefake.RenewalFields{}, func(o *subscriptions.Observation) {
				o.State, o.AutoRenew, o.ExpiresAt = subscriptions.StateExpired, false, clock.Add(-day(1))
			}},
		{"billing retry", appstorefake.StatusBillingRetry, func(tx *appstorefake.TransactionFields) { tx.ExpiresDate = clock.Add(-day(1)) },
			appstorefake.RenewalFields{AutoRenewStatus: 1, IsInBillingRetryPeriod: true}, func(o *subscriptions.Observation) {
				o.State, o.ExpiresAt = subscriptions.StateOnHold, clock.Add(-day(1))
			}},
		{"grace", appstorefake.StatusGrace, func(tx *appstorefake.TransactionFields) { tx.ExpiresDate = clock.Add(-day(1)) },
			appstorefake.RenewalFields{AutoRenewStatus: 1, IsInBillingRetryPeriod: true, GracePeriodExpiresDate: grace},
			func(o *subscriptions.Observation) {
				o.State, o.ExpiresAt, o.GraceEndsAt = subscriptions.StateGrace, clock.Add(-day(1)), &grace
			}},
		{"refunded", appstorefake.StatusRevoked, func(tx *appstorefake.TransactionFields) {
			tx.RevocationDate, tx.RevocationReason = clock.Add(-time.Hour), ptr(0)
		}, appstorefake.RenewalFields{}, func(o *subscriptions.Observation) { o.State, o.AutoRenew = subscriptions.StateRefunded, false }},
		{"revoked", appstorefake.StatusRevoked, func(tx *appstorefake.TransactionFields) {
			tx.InAppOwnershipType, tx.RevocationDate, tx.RevocationReason = "FAMILY_SHARED", clock.Add(-time.Hour), ptr(0)
		}, appstorefake.RenewalFields{}, func(o *subscriptions.Observation) { o.State, o.AutoRenew = subscriptions.StateRevoked, false }},
		{"active past its end, no retry", appstorefake.StatusActive, func(tx *appstorefake.TransactionFields) { tx.ExpiresDate = clock.Add(-time.Minute) },
			appstorefake.RenewalFields{AutoRenewStatus: 1}, func(o *subscriptions.Observation) {
				o.State, o.AutoRenew, o.ExpiresAt = subscriptions.StateExpired, false, clock.Add(-time.Minute)
			}},
	}
	// Another subscription of the same customer shares the answer.
	e.fake.SetSubscription(appstorefake.StatusExpired, appstorefake.TransactionFields{
		OriginalTransactionID: "3000000000000001", ProductID: "herald.basic.monthly", SubscriptionGroupID: "21000001",
		AppAccountToken: userToken, OriginalPurchaseDate: clock.Add(-day(90)), ExpiresDate: clock.Add(-day(60)),
	}, appstorefake.RenewalFields{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tx := baseTx(clock)
			if tc.tx != nil {
				tc.tx(&tx)
			}
			e.fake.SetSubscription(tc.status, tx, tc.renewal)
			got, err := e.c.Statuses(context.Background(), tx.OriginalTransactionID)
			if err != nil {
				t.Fatal(err)
			}
			want := baseObs(clock)
			tc.want(&want)
			assertObs(t, got, want)
		})
	}
	if _, err := e.c.Statuses(context.Background(), "9999"); !errors.Is(err, appstore.ErrNotFound) {
		t.Errorf("unknown transaction: %v", err)
	}
	e.fake.SetEnvironment(appstore.Sandbox)
	if _, err := e.c.Statuses(context.Background(), "2000000000000001"); !errors.Is(err, billing.ErrMisaddressed) {
		t.Errorf("sandbox answer: %v", err)
	}
}

// TestRevokedHistory: Get Transaction History gives the refunded and
// revoked transactions of the customer, every one verified, following
// hasMore over the pages; a read from the revision it ended at gives only
// what changed since (a later refund); a forged transaction in a page
// fails the whole read.
func TestRevokedHistory(t *testing.T) {
	e := setup(t, nil)
	clock := e.clock
	e.fake.SetPageSize(2)
	first := baseTx(clock)
	var refunds []string
	for i := range 5 {
		tx := first
		tx.TransactionID = "200000000000001" + string(rune('0'+i))
		tx.PurchaseDate = first.OriginalPurchaseDate.Add(day(30 * i))
		tx.ExpiresDate = tx.PurchaseDate.Add(day(30))
		if i%2 == 0 { // three refunded periods, two not
			tx.RevocationDate, tx.RevocationReason = tx.PurchaseDate.Add(day(3)), ptr(0)
			refunds = append(refunds, tx.TransactionID)
		}
		e.fake.AddTransaction(tx)
	}
	h, err := e.c.RevokedHistory(context.Background(), first.OriginalTransactionID, "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tx := range h.Transactions {
		ids = append(ids, tx.TransactionID)
		if tx.OriginalTransactionID != first.OriginalTransactionID || tx.AppAccountToken != userID || tx.RevocationDate.IsZero() || tx.RevocationReason == nil {
			t.Errorf("transaction %+v", tx)
		}
	}
	if !reflect.DeepEqual(ids, refunds) || h.More || h.Revision == "" {
		t.Fatalf("history %v (more %v, revision %q), want %v", ids, h.More, h.Revision, refunds)
	}
	if n := e.fake.HistoryPages(); n != 2 {
		t.Errorf("%d pages read, want 2 (three refunds, two a page)", n)
	}

	// Nothing changed: the revision gives nothing. A later refund of the
	// second period: the revision gives it alone.
	if again, err := e.c.RevokedHistory(context.Background(), first.OriginalTransactionID, h.Revision); err != nil || len(again.Transactions) != 0 || again.Revision != h.Revision {
		t.Fatalf("read again from %q: %+v, %v", h.Revision, again, err)
	}
	late := first
	late.TransactionID = "2000000000000011"
	late.PurchaseDate = first.OriginalPurchaseDate.Add(day(30))
	late.ExpiresDate = late.PurchaseDate.Add(day(30))
	late.RevocationDate, late.RevocationReason = clock, ptr(1)
	e.fake.AddTransaction(late)
	next, err := e.c.RevokedHistory(context.Background(), first.OriginalTransactionID, h.Revision)
	if err != nil || len(next.Transactions) != 1 || next.Transactions[0].TransactionID != late.TransactionID || next.Revision == h.Revision {
		t.Fatalf("read from %q after a refund: %+v, %v", h.Revision, next, err)
	}

	// A forged transaction among them fails the read.
	forged := first
	forged.TransactionID = "2000000000000099"
	forged.RevocationDate, forged.RevocationReason = clock, ptr(0)
	e.fake.As(appstorefake.ForeignKey).AddTransaction(forged)
	if _, err := e.c.RevokedHistory(context.Background(), first.OriginalTransactionID, next.Revision); !errors.Is(err, billing.ErrForged) {
		t.Errorf("a forged transaction in the history: %v, want ErrForged", err)
	}
	if _, err := e.c.RevokedHistory(context.Background(), "9999", ""); !errors.Is(err, appstore.ErrNotFound) {
		t.Errorf("unknown transaction: %v", err)
	}
}

// TestRevokedHistoryBounded: a read stops at MaxHistoryPages, says there
// is more, and the next goes on from its revision.
func TestRevokedHistoryBounded(t *testing.T) {
	e := setup(t, nil)
	e.fake.SetPageSize(1)
	first := baseTx(e.clock)
	n := appstore.MaxHistoryPages + 1
	for i := range n {
		tx := first
		tx.TransactionID = fmt.Sprintf("30000000000%05d", i)
		tx.RevocationDate, tx.RevocationReason = e.clock, ptr(0)
		e.fake.AddTransaction(tx)
	}
	h, err := e.c.RevokedHistory(context.Background(), first.OriginalTransactionID, "")
	if err != nil || !h.More || len(h.Transactions) != appstore.MaxHistoryPages {
		t.Fatalf("the bounded read: %d transactions, more %v, %v", len(h.Transactions), h.More, err)
	}
	rest, err := e.c.RevokedHistory(context.Background(), first.OriginalTransactionID, h.Revision)
	if err != nil || rest.More || len(rest.Transactions) != n-appstore.MaxHistoryPages {
		t.Fatalf("the rest: %d transactions, more %v, %v", len(rest.Transactions), rest.More, err)
	}
}

func TestBearerToken(t *testing.T) {
	f := appstorefake.New(t, bundle)
	other := appstorefake.New(t, bundle)
	f.SetSubscription(appstorefake.StatusActive, baseTx(time.Now()), appstorefake.RenewalFields{AutoRenewStatus: 1})
	cases := []struct {
		name string
		mod  func(*appstore.Config)
		want error
	}{
		{"accepted", func(*appstore.Config) {}, nil},
		{"another key", func(c *appstore.Config) { c.PrivateKey = other.Key() }, appstore.ErrUnauthorized},
		{"another key id", func(c *appstore.Config) { c.KeyID = "OTHERKEY99" }, appstore.ErrUnauthorized},
		{"another issuer", func(c *appstore.Config) { c.IssuerID = "00000000-0000-0000-0000-000000000000" }, appstore.ErrUnauthorized},
		{"another bundle", func(c *appstore.Config) { c.BundleID = "com.example.other" }, appstore.ErrUnauthorized},
		{"expired token", func(c *appstore.Config) {
			c.Now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
		}, appstore.ErrUnauthorized},
		{"issued in the future", func(c *appstore.Config) {
			c.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
		}, appstore.ErrUnauthorized},
		{"no key", func(c *appstore.Config) { c.PrivateKey = nil }, appstore.ErrNotConfigured},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := appstore.Config{
				BundleID: bundle, Environment: appstore.Production, Roots: f.Roots(),
				IssuerID: f.IssuerID(), KeyID: f.KeyID(), PrivateKey: f.Key(), APIBase: f.URL(),
			}
			tc.mod(&cfg)
			c, err := appstore.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Statuses(context.Background(), "2000000000000001")
			if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Fatalf("Statuses: %v, want %v", err, tc.want)
			}
			_, err = c.RevokedHistory(context.Background(), "2000000000000001", "")
			if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Fatalf("RevokedHistory: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestUpstreamUnavailable(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
		}))
		e := setup(t, func(c *appstore.Config) { c.APIBase = srv.URL })
		if _, err := e.c.Statuses(context.Background(), "1"); !errors.Is(err, billing.ErrUpstream) {
			t.Errorf("%d: %v", status, err)
		}
		srv.Close()
		if _, err := e.c.Statuses(context.Background(), "1"); !errors.Is(err, billing.ErrUpstream) {
			t.Errorf("closed: %v", err)
		}
	}
}

func FuzzNotification(f *testing.F) {
	e := setup(f, func(c *appstore.Config) { c.Environment = "" })
	tx := baseTx(e.clock)
	on := appstorefake.RenewalFields{AutoRenewStatus: 1}
	f.Add(e.fake.Notification("SUBSCRIBED", "INITIAL_BUY", tx, on))
	f.Add(e.fake.Notification("TEST", "", appstorefake.TransactionFields{}, on))
	f.Add(e.fake.As(appstorefake.ForeignKey).Notification("DID_RENEW", "", tx, on))
	f.Add([]byte(`{"signedPayload":"a.b.c"}`))
	f.Add([]byte(`{"signedPayload":"eyJhbGciOiJFUzI1NiIsIng1YyI6W119.e30.AA"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := e.c.Notification(body)
		if err != nil {
			if !errors.Is(err, billing.ErrMalformed) && !errors.Is(err, billing.ErrForged) && !errors.Is(err, billing.ErrMisaddressed) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if n.UUID == "" || n.BundleID != bundle {
			t.Fatalf("accepted %+v", n)
		}
		if n.Observation != nil && (n.Observation.ExternalID == "" || !n.Observation.State.Valid()) {
			t.Fatalf("observation %+v", *n.Observation)
		}
	})
}
