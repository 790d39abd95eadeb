package main

// The stores' word that no notification brings (issue 24): Google Play's
// acknowledgement of an app's purchase retried until Play takes it, and
// the scheduled reconciliation (HERALD_BILLING_RECONCILE_INTERVAL, the
// periodic billing_reconcile job) correcting a missed notification in
// each store, on every database.

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/billing/appstore/appstorefake"
	"github.com/herald-vpn/herald/internal/billing/play"
	"github.com/herald-vpn/herald/internal/billing/play/playfake"
	"github.com/herald-vpn/herald/internal/billing/stripebill"
	"github.com/herald-vpn/herald/internal/billing/stripebill/stripefake"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

// TestBillingPlayAckRetriedE2E: the app posts a Play purchase and Play's
// acknowledge fails, then Play keeps failing a while: the purchase is
// recorded and answered all the same, and its settle job acknowledges it
// once Play answers again (Play refunds a purchase not acknowledged
// within three days). A server of its own, so that no other work of the
// server takes the injected failures.
func TestBillingPlayAckRetriedE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := playfake.New(t, playPackage)
		h := startHerald(t, d, billEnv(t, playEnv(t, fake)))
		now := time.Now().UTC().Truncate(time.Second)
		until := now.Add(30 * day)
		gp := subscriptions.GooglePlay
		access, id := newUserToken(t, h, restDoor.name, "play-ack@example.com")
		const token = "play-ack-retried"
		fake.SetPurchase(token, playTruth{state: play.StateActive, product: playBasic, expiry: until, renews: true}.wire(now, id))
		// The purchase's read and the acknowledgement's read pass; the
		// acknowledge and the next five calls fail.
		fake.Fail(0, 0, http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusInternalServerError,
			http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadGateway)
		r := googlePurchase(t, h, access, map[string]any{"purchaseToken": token, "productId": playBasic})
		expectOK(t, "the purchase", r, http.StatusOK)
		want := sub("basic", "active", gp, until, true, nil, ent(gp, playBasic, subscriptions.StateActive, until))
		if got := billSubOf(t, r.data); got != want {
			t.Fatalf("the purchase answered\n got %+v\nwant %+v", got, want)
		}
		eventually(t, func() bool { return fake.Acknowledged(token) },
			"the purchase was never acknowledged at Play (%s API calls)", lazy(func() string { return fmt.Sprint(fake.Calls()) }))
		expectBillSub(t, h, "after the acknowledgement", access, want)
	})
}

// TestBillingReconcileE2E: a purchase in each store moves on at the
// store (Play renews, Stripe ends, the App Store refunds) and no
// notification tells Herald; the scheduled reconciliation, here every
// second, reads each from its store's API and corrects the account.
func TestBillingReconcileE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		pf := playfake.New(t, playPackage)
		sf := stripefake.New(t)
		af := appstorefake.New(t, appleBundle)
		env := playEnv(t, pf)
		maps.Copy(env, stripeEnv(sf))
		maps.Copy(env, appleConfig(t, af, true))
		products := map[string]map[string]string{"app_store": {appleBasic: "basic", applePremium: "premium"}}
		maps.Copy(products, billProducts)
		data, err := json.Marshal(products)
		if err != nil {
			t.Fatal(err)
		}
		env["HERALD_BILLING_PRODUCTS"] = writeTemp(t, "all-products.json", data)
		env["HERALD_BILLING_RECONCILE_INTERVAL"] = "1s"
		h := startHerald(t, d, billEnv(t, env))

		now := time.Now().UTC().Truncate(time.Second)
		until, renewed := now.Add(30*day), now.Add(60*day)
		gp, as := subscriptions.GooglePlay, subscriptions.AppStore

		// Google Play: the app's purchase, then a renewal nobody pushes.
		pat, patID := newUserToken(t, h, restDoor.name, "reconcile-pat@example.com")
		const token = "play-reconcile"
		pf.SetPurchase(token, playTruth{state: play.StateActive, product: playPremium, expiry: until, renews: true}.wire(now, patID))
		expectOK(t, "Pat's purchase", googlePurchase(t, h, pat, map[string]any{"purchaseToken": token, "productId": playPremium}), http.StatusOK)
		expectBillSub(t, h, "Pat after the purchase", pat, sub("premium", "active", gp, until, true, nil, ent(gp, playPremium, subscriptions.StateActive, until)))

		// Stripe: a checkout told by its webhook, then the subscription
		// deleted with no webhook.
		sam, samID := newUserToken(t, h, restDoor.name, "reconcile-sam@example.com")
		ss := stripefake.Subscription{ID: "sub_reconcile", Customer: "cus_reconcile", Status: "active", PriceID: stripeBasic,
			StartDate: now, CurrentPeriodStart: now, CurrentPeriodEnd: until}
		sf.SetSubscription(ss)
		payload, sig := sf.Event(stripebill.EventCheckoutCompleted, stripefake.CheckoutSession{ID: "cs_reconcile", ClientReferenceID: samID, Customer: ss.Customer, Subscription: ss.ID})
		if out := stripeDeliver(t, h, payload, sig); !strings.HasPrefix(out, "recorded") {
			t.Fatalf("Sam's checkout: outcome %q", out)
		}
		expectBillSub(t, h, "Sam after the checkout", sam, stripeSub("basic", stripeBasic, subscriptions.StateActive, until, true, nil))

		// App Store: the app's signed transaction, then a refund nobody
		// notifies.
		ann, annID := newUserToken(t, h, restDoor.name, "reconcile-ann@example.com")
		tx := appstorefake.TransactionFields{OriginalTransactionID: "9100000000000001", ProductID: appleBasic, AppAccountToken: annID,
			OriginalPurchaseDate: now.Add(-time.Hour), ExpiresDate: until}
		af.SetSubscription(appstorefake.StatusActive, tx, appstorefake.RenewalFields{AutoRenewStatus: 1})
		res := restCall(t, h, http.MethodPost, appleTxPath, map[string]any{"signedTransaction": af.SignedTransaction(tx)}, withBearer(ann))
		expectOK(t, "Ann's transaction", noServerError(t, "Ann's transaction", res), http.StatusOK)
		expectBillSub(t, h, "Ann after the transaction", ann, sub("basic", "active", as, until, true, nil, ent(as, appleBasic, subscriptions.StateActive, until)))

		// The stores move on, and nothing tells Herald.
		pf.SetPurchase(token, playTruth{state: play.StateActive, product: playPremium, expiry: renewed, renews: true}.wire(now, patID))
		ended := now.Add(-time.Minute)
		ss.Status, ss.EndedAt = "canceled", &ended
		sf.SetSubscription(ss)
		refunded := tx
		refunded.RevocationDate, refunded.RevocationReason = now, new(int)
		af.SetSubscription(appstorefake.StatusRevoked, refunded, appstorefake.RenewalFields{})

		wantPat := sub("premium", "active", gp, renewed, true, nil, ent(gp, playPremium, subscriptions.StateActive, renewed))
		wantSam := stripeSub("basic", stripeBasic, subscriptions.StateExpired, ended, false, nil)
		var gotPat, gotSam, gotAnn billSub
		eventually(t, func() bool {
			gotPat, gotSam, gotAnn = billSubscription(t, h, pat), billSubscription(t, h, sam), billSubscription(t, h, ann)
			return gotPat == wantPat && gotSam == wantSam &&
				gotAnn.Status == "expired" && !gotAnn.AutoRenew && strings.HasPrefix(gotAnn.Entitlements, fmt.Sprintf("%s %s %s until ", as, appleBasic, subscriptions.StateRefunded))
		}, "the reconciliation did not correct the missed notifications:\n%s", lazy(func() string {
			return fmt.Sprintf("Pat %+v\nwant %+v\nSam %+v\nwant %+v\nAnn %+v (want refunded)", gotPat, wantPat, gotSam, wantSam, gotAnn)
		}))
		expectBillSub(t, h, "Pat after the reconciliation", pat, wantPat)
		expectBillSub(t, h, "Sam after the reconciliation", sam, wantSam)
		// Each change is the reconciliation's.
		for who, id := range map[string]string{"Pat": patID, "Sam": samID, "Ann": annID} {
			changes, err := h.store(t).EntitlementChanges(t.Context(), id, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(changes) == 0 || changes[0].Cause != "reconcile" {
				t.Fatalf("%s's last change %+v, want the reconciliation's", who, changes)
			}
		}
	})
}
