package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/billing/play"
	"github.com/herald-vpn/herald/internal/billing/play/playfake"
	"github.com/herald-vpn/herald/internal/billing/stripebill"
	"github.com/herald-vpn/herald/internal/billing/stripebill/stripefake"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

// TestBillingStoreOutageE2E: a store's API is down when its notification
// arrives. The notification is verified without the API, kept and
// answered 200 at once (the store has nothing to retry), and its job
// retries the API until it answers: the entitlement is right as soon as
// the store is back. An app's purchase posted while Play's API is down is
// 502 UPSTREAM_ERROR with Retry-After, and records nothing. On every
// database; a server of its own, so that no other work takes the
// injected failures.
func TestBillingStoreOutageE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		pf := playfake.New(t, playPackage)
		sf := stripefake.New(t)
		env := playEnv(t, pf)
		for k, v := range stripeEnv(sf) {
			env[k] = v
		}
		h := startHerald(t, d, billEnv(t, env))
		now := time.Now().UTC().Truncate(time.Second)
		until := now.Add(30 * day)
		gp := subscriptions.GooglePlay
		down := func(n int, status int) []int {
			s := make([]int, n)
			for i := range s {
				s[i] = status
			}
			return s
		}
		// kept fails unless the notification is kept and not yet worked.
		kept := func(source subscriptions.Source, id string) {
			t.Helper()
			n, err := h.store(t).BillingNotification(context.Background(), source, id)
			if err != nil {
				t.Fatalf("the %s notification %s was answered 200 but not kept: %v", source, id, err)
			}
			if n.ProcessedAt != nil {
				t.Fatalf("the %s notification %s was worked (%q) while the store's API was down", source, id, n.Outcome)
			}
		}

		// Google Play: an app's purchase while the API is down.
		pat, patID := newUserToken(t, h, restDoor.name, "outage-pat@example.com")
		const token = "play-outage"
		pf.SetPurchase(token, playTruth{state: play.StateActive, product: playPremium, expiry: until, renews: true}.wire(now, patID))
		pf.Fail(http.StatusServiceUnavailable)
		r := googlePurchase(t, h, pat, map[string]any{"purchaseToken": token, "productId": playPremium})
		expectError(t, "a purchase posted while Play is down", r, http.StatusBadGateway, "UPSTREAM_ERROR")
		if r.header.Get("Retry-After") == "" {
			t.Fatalf("UPSTREAM_ERROR without Retry-After: %v (details %v)", r.header, r.details)
		}
		expectBillSub(t, h, "Pat after the refused purchase", pat, noBillSub)

		// Its notification while the API is down: kept, answered, worked
		// once Play answers again.
		pf.Fail(down(8, http.StatusServiceUnavailable)...)
		body, auth := pf.Push("outage-m1", playNote(play.SubscriptionPurchased, token, playPremium))
		res := playPush(t, h, body, auth)
		expectOK(t, "the push while Play is down", res, http.StatusOK)
		kept(gp, "outage-m1")
		n := billProcessed(t, h, gp, "outage-m1")
		if !strings.HasPrefix(n.Outcome, "recorded") {
			t.Fatalf("the push worked after the outage: outcome %q", n.Outcome)
		}
		expectBillSub(t, h, "Pat after Play is back", pat, sub("premium", "active", gp, until, true, nil, ent(gp, playPremium, subscriptions.StateActive, until)))
		eventually(t, func() bool { return pf.Acknowledged(token) }, "the purchase was not acknowledged after the outage")

		// Stripe: a checkout's event while the API is down (each read
		// fails; stripe-go's own retries take some of the failures).
		sam, samID := newUserToken(t, h, restDoor.name, "outage-sam@example.com")
		ss := stripefake.Subscription{ID: "sub_outage", Customer: "cus_outage", Status: "active", PriceID: stripeBasic,
			StartDate: now, CurrentPeriodStart: now, CurrentPeriodEnd: until}
		sf.SetSubscription(ss)
		sf.FailNext(append(down(6, http.StatusInternalServerError), http.StatusTooManyRequests, http.StatusServiceUnavailable)...)
		payload, sig := sf.Event(stripebill.EventCheckoutCompleted, stripefake.CheckoutSession{ID: "cs_outage", ClientReferenceID: samID, Customer: ss.Customer, Subscription: ss.ID})
		id := stripeEventID(t, payload)
		expectOK(t, "the event while Stripe is down", stripePost(t, h, payload, sig), http.StatusOK)
		kept(subscriptions.Stripe, id)
		if out := billProcessed(t, h, subscriptions.Stripe, id).Outcome; !strings.HasPrefix(out, "recorded") {
			t.Fatalf("the event worked after the outage: outcome %q", out)
		}
		expectBillSub(t, h, "Sam after Stripe is back", sam, stripeSub("basic", stripeBasic, subscriptions.StateActive, until, true, nil))
	})
}
