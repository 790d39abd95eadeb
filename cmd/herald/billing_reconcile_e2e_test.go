package main

// The stores' word that no notification brings (issue 24): Google Play's
// acknowledgement of an app's purchase retried until Play takes it, and
// the scheduled reconciliation (HERALD_BILLING_RECONCILE_INTERVAL, the
// periodic billing_reconcile job) correcting a missed notification in
// each store, on every database.

import (
	"net/http"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/billing/play"
	"github.com/herald-vpn/herald/internal/billing/play/playfake"
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
			"the purchase was never acknowledged at Play (%d API calls)", fake.Calls())
		expectBillSub(t, h, "after the acknowledgement", access, want)
	})
}
