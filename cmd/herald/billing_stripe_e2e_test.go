package main

// Stripe purchases end to end (issue 24), through the real server on every
// database, against stripefake: a fake Stripe that answers the API
// stripe-go calls (Checkout Sessions, customer portal sessions,
// subscriptions) for the key it issued and signs webhook events as Stripe
// does. Checkout and the portal for the signed-in user; each event type
// Herald handles moves the subscription as the store says; forged, stale,
// misaddressed and replayed events change nothing. Helpers named bill*
// are in billing_play_e2e_test.go.

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/billing/stripebill"
	"github.com/herald-vpn/herald/internal/billing/stripebill/stripefake"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// The subscription.* events of the Stripe steps.
const (
	evStarted, evRenewed, evFailed, evRecovered = webhooks.SubscriptionStarted, webhooks.SubscriptionRenewed, webhooks.SubscriptionPaymentFailed, webhooks.SubscriptionRecovered
	evExpired, evCancelled, evPlanChanged       = webhooks.SubscriptionExpired, webhooks.SubscriptionCancelled, webhooks.SubscriptionPlanChanged
)

const (
	stripeSuccessURL  = "https://vpn.example.test/billing/done"
	stripeCancelURL   = "https://vpn.example.test/billing"
	stripeReturnURL   = "https://vpn.example.test/account"
	stripeRenewURL    = "https://vpn.example.test/billing/renew"
	stripeWebhookPath = "/api/v1/billing/stripe/webhook"
)

// stripeEnv connects Stripe, pointed at fake.
func stripeEnv(fake *stripefake.Fake) map[string]string {
	return map[string]string{
		"HERALD_STRIPE_SECRET_KEY":        fake.SecretKey(),
		"HERALD_STRIPE_WEBHOOK_SECRET":    fake.WebhookSecret(),
		"HERALD_STRIPE_API_URL":           fake.URL(),
		"HERALD_STRIPE_SUCCESS_URL":       stripeSuccessURL,
		"HERALD_STRIPE_CANCEL_URL":        stripeCancelURL,
		"HERALD_STRIPE_PORTAL_RETURN_URL": stripeReturnURL,
		"HERALD_RENEW_URL_STRIPE":         stripeRenewURL,
	}
}

// stripePost posts a webhook delivery (payload, Stripe-Signature).
func stripePost(t testing.TB, h *herald, payload []byte, signature string) result {
	t.Helper()
	return storePost(t, h, "Stripe webhook", stripeWebhookPath, payload, "Stripe-Signature", signature)
}

// stripeEventID reads a payload's event id.
func stripeEventID(t testing.TB, payload []byte) string {
	t.Helper()
	id, _ := jsonPath(decodeObject(t, "event", payload), "id").(string)
	if id == "" {
		t.Fatalf("event without an id: %s", payload)
	}
	return id
}

// stripeDeliver posts a signed delivery, expects it received, and waits
// until it is worked; it returns the outcome.
func stripeDeliver(t testing.TB, h *herald, payload []byte, signature string) string {
	t.Helper()
	id := stripeEventID(t, payload)
	r := stripePost(t, h, payload, signature)
	expectOK(t, "event "+id, r, http.StatusOK)
	if jsonPath(r.data, "received") != true {
		t.Fatalf("event %s: answer %v, want received: true", id, r.data)
	}
	return billProcessed(t, h, subscriptions.Stripe, id).Outcome
}

// stripeRedirect posts to checkout or portal and returns the URL answered.
func stripeRedirect(t testing.TB, h *herald, path, access string, body any) (string, result) {
	t.Helper()
	status, env, hdr := h.rest(t, http.MethodPost, path, body, withBearer(access))
	r := envelopeResult(t, "POST "+path, status, env, hdr)
	u, _ := jsonPath(r.data, "url").(string)
	return u, r
}

func TestBillingStripeE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := stripefake.New(t)
		h := startHerald(t, d, webhooksEnv(billEnv(t, stripeEnv(fake))))
		hooks := newBillHooks(t, h)
		t.Run("Lifecycle", func(t *testing.T) { testStripeLifecycle(t, h, fake, hooks) })
		t.Run("TrialAndPause", func(t *testing.T) { testStripeTrial(t, h, fake, hooks) })
		t.Run("OutOfOrder", func(t *testing.T) { testStripeOutOfOrder(t, h, fake, hooks) })
		t.Run("Refusals", func(t *testing.T) { testStripeRefusals(t, h, fake) })
	})
}

// stripeStep is one event of the lifecycle: the subscription as Stripe
// has it from then on (the API's answer and, for customer.subscription.*,
// the event's object), and what the user's subscription must be.
type stripeStep struct {
	event   string
	sub     func(s *stripefake.Subscription) // changes the subscription
	outcome string                           // how the worked event's outcome begins
	want    billSub
	// observed: the subscription's expiresAt is when Herald took the
	// store's word (access ended then), not a time the test set.
	observed bool
	// events are the subscription.* events the step writes, each once.
	events []string
}

func testStripeLifecycle(t *testing.T, h *herald, fake *stripefake.Fake, hooks *billHooks) {
	now := time.Now().UTC().Truncate(time.Second)
	day := func(n int) time.Time { return now.Add(time.Duration(n) * 24 * time.Hour) }
	email := "stripe-eve@example.com"
	access, id := newUserToken(t, h, restDoor.name, email)

	// Nothing bought on the web yet: no portal.
	if _, r := stripeRedirect(t, h, "/api/v1/billing/stripe/portal", access, nil); r.code != "SUBSCRIPTION_NOT_FOUND" || r.status != http.StatusNotFound {
		t.Fatalf("portal before a purchase: %d %s (%s), want 404 SUBSCRIPTION_NOT_FOUND", r.status, r.code, r.message)
	}
	if n := len(fake.Portals()); n != 0 {
		t.Fatalf("the fake made %d portal sessions for a user with no customer", n)
	}

	// Checkout: the fake's session URL, for this user, by email.
	u, r := stripeRedirect(t, h, "/api/v1/billing/stripe/checkout", access, map[string]any{"productId": stripeBasic})
	expectOK(t, "checkout", r, http.StatusOK)
	cs := fake.Checkouts()
	if len(cs) != 1 {
		t.Fatalf("checkout made %d sessions at the fake, want 1", len(cs))
	}
	c := cs[0]
	if u != c.URL || c.Mode != "subscription" || c.Price != stripeBasic || c.Quantity != "1" || c.ClientReferenceID != id ||
		c.CustomerEmail != email || c.Customer != "" || c.SuccessURL != stripeSuccessURL || c.CancelURL != stripeCancelURL ||
		c.Metadata[stripebill.MetadataUserID] != id || c.SubscriptionMetadata[stripebill.MetadataUserID] != id {
		t.Fatalf("checkout answered %q; the session at the fake: %+v", u, c)
	}
	for _, bad := range []struct {
		what   string
		body   map[string]any
		status int
		code   string
	}{
		{"a price no plan is mapped to", map[string]any{"productId": "price_nobody_sells"}, http.StatusUnprocessableEntity, "PRODUCT_UNKNOWN"},
		{"a Play product", map[string]any{"productId": playBasic}, http.StatusUnprocessableEntity, "PRODUCT_UNKNOWN"},
		{"no product", map[string]any{}, http.StatusBadRequest, "VALIDATION_ERROR"},
	} {
		_, r := stripeRedirect(t, h, "/api/v1/billing/stripe/checkout", access, bad.body)
		expectError(t, "checkout of "+bad.what, r, bad.status, bad.code)
	}
	if n := len(fake.Checkouts()); n != 1 {
		t.Fatalf("refused checkouts made sessions at the fake: %d in all", n)
	}

	// The purchase: the subscription as Stripe creates it from the
	// session, here without the user in its metadata (the session's
	// client_reference_id names her), then each event.
	st := stripefake.Subscription{
		ID: "sub_eve", Customer: "cus_eve", Status: "active", PriceID: stripeBasic,
		StartDate: now, CurrentPeriodStart: now, CurrentPeriodEnd: day(30),
	}
	steps := []stripeStep{
		{event: stripebill.EventCheckoutCompleted, want: stripeSub("basic", stripeBasic, subscriptions.StateActive, day(30), true, nil), events: []string{evStarted}},
		{event: stripebill.EventSubscriptionCreated, outcome: "recorded", want: stripeSub("basic", stripeBasic, subscriptions.StateActive, day(30), true, nil)},
		{event: stripebill.EventInvoicePaid, sub: func(s *stripefake.Subscription) {
			s.CurrentPeriodStart, s.CurrentPeriodEnd = day(30), day(60)
		}, want: stripeSub("basic", stripeBasic, subscriptions.StateActive, day(60), true, nil), events: []string{evRenewed}},
		{event: stripebill.EventSubscriptionUpdated, sub: func(s *stripefake.Subscription) { s.CancelAtPeriodEnd = true },
			want: stripeSub("basic", stripeBasic, subscriptions.StateCancelled, day(60), false, nil), events: []string{evCancelled}},
		{event: stripebill.EventSubscriptionUpdated, sub: func(s *stripefake.Subscription) { s.CancelAtPeriodEnd = false },
			want: stripeSub("basic", stripeBasic, subscriptions.StateActive, day(60), true, nil), events: []string{evRecovered}},
		// An upgrade in the portal: the same subscription, another price.
		{event: stripebill.EventSubscriptionUpdated, sub: func(s *stripefake.Subscription) { s.PriceID = stripePremium },
			want: stripeSub("premium", stripePremium, subscriptions.StateActive, day(60), true, nil), events: []string{evPlanChanged}},
		// The renewal fails: Stripe retries it (past_due), access goes on.
		{event: stripebill.EventInvoicePaymentFailed, sub: func(s *stripefake.Subscription) {
			s.Status, s.CurrentPeriodStart, s.CurrentPeriodEnd = "past_due", day(60), day(90)
		}, want: stripeSub("premium", stripePremium, subscriptions.StateGrace, day(90), true, ptr(day(90))), events: []string{evFailed}},
		{event: stripebill.EventInvoicePaid, sub: func(s *stripefake.Subscription) { s.Status = "active" },
			want: stripeSub("premium", stripePremium, subscriptions.StateActive, day(90), true, nil), events: []string{evRecovered}},
		{event: stripebill.EventInvoicePaymentFailed, sub: func(s *stripefake.Subscription) { s.Status = "past_due" },
			want: stripeSub("premium", stripePremium, subscriptions.StateGrace, day(90), true, ptr(day(90))), events: []string{evFailed}},
		// The retries end unpaid: no access from then on.
		{event: stripebill.EventSubscriptionUpdated, sub: func(s *stripefake.Subscription) { s.Status = "unpaid" },
			want: stripeSub("premium", stripePremium, subscriptions.StateOnHold, day(90), false, nil), observed: true},
		{event: stripebill.EventSubscriptionDeleted, sub: func(s *stripefake.Subscription) {
			s.Status, s.EndedAt = "canceled", &now
		}, want: stripeSub("premium", stripePremium, subscriptions.StateExpired, now, false, nil), events: []string{evExpired}},
		// Not an event Herald acts on: kept, and nothing changes.
		{event: "charge.refunded", outcome: "ignored", want: stripeSub("premium", stripePremium, subscriptions.StateExpired, now, false, nil)},
	}
	stripeSteps(t, h, fake, hooks, access, id, &st, steps)

	// The portal, for the customer of her purchase.
	u, r = stripeRedirect(t, h, "/api/v1/billing/stripe/portal", access, nil)
	expectOK(t, "portal", r, http.StatusOK)
	ps := fake.Portals()
	if len(ps) != 1 || u != ps[0].URL || ps[0].Customer != "cus_eve" || ps[0].ReturnURL != stripeReturnURL {
		t.Fatalf("portal answered %q; sessions at the fake: %+v", u, ps)
	}
	// A new checkout goes to the same customer.
	u, r = stripeRedirect(t, h, "/api/v1/billing/stripe/checkout", access, map[string]any{"productId": stripePremium})
	expectOK(t, "second checkout", r, http.StatusOK)
	cs = fake.Checkouts()
	if c := cs[len(cs)-1]; len(cs) != 2 || u != c.URL || c.Customer != "cus_eve" || c.CustomerEmail != "" || c.Price != stripePremium {
		t.Fatalf("second checkout answered %q; sessions at the fake: %+v", u, cs)
	}
}

// stripeSteps runs the steps on the subscription st of the user (access,
// id): each changes st, sets it at the fake (the API's answer), delivers
// the event, waits until it is worked and reads the user's subscription.
func stripeSteps(t *testing.T, h *herald, fake *stripefake.Fake, hooks *billHooks, access, id string, st *stripefake.Subscription, steps []stripeStep) {
	t.Helper()
	events, seen := map[string]int{}, map[string]bool{}
	for i, step := range steps {
		if step.sub != nil {
			step.sub(st)
		}
		fake.SetSubscription(*st)
		var object any = *st
		switch step.event {
		case stripebill.EventCheckoutCompleted:
			// The session names the user; the subscription is read.
			object = stripefake.CheckoutSession{ID: "cs_" + st.ID, ClientReferenceID: id, Customer: st.Customer, Subscription: st.ID}
		case stripebill.EventInvoicePaid, stripebill.EventInvoicePaymentFailed:
			inv := stripefake.Invoice{ID: fmt.Sprintf("in_%s_%d", st.ID, i), Customer: st.Customer, Subscription: st.ID}
			if step.event == stripebill.EventInvoicePaymentFailed {
				inv.Status = "open"
			}
			object = inv
		case "charge.refunded":
			object = map[string]any{"id": "ch_" + st.ID, "object": "charge", "customer": st.Customer, "refunded": true, "livemode": false}
		}
		what := fmt.Sprintf("step %d (%s)", i+1, step.event)
		before := time.Now().UTC().Truncate(time.Second)
		payload, sig := fake.Event(step.event, object)
		outcome := stripeDeliver(t, h, payload, sig)
		after := time.Now().UTC()
		wantOutcome := step.outcome
		if wantOutcome == "" {
			wantOutcome = "recorded"
		}
		if !strings.HasPrefix(outcome, wantOutcome) {
			t.Fatalf("%s: worked with outcome %q, want %s…", what, outcome, wantOutcome)
		}
		want := step.want
		if step.observed {
			got := billSubscription(t, h, access)
			at, err := time.Parse(time.RFC3339, got.ExpiresAt)
			if err != nil || at.Before(before) || at.After(after) {
				t.Fatalf("%s: expiresAt %q, want when Herald took the word (between %s and %s)", what, got.ExpiresAt, rfc(before), rfc(after))
			}
			want.ExpiresAt = got.ExpiresAt
		}
		expectBillSub(t, h, what, access, want)
		for _, typ := range step.events {
			events[typ]++
		}
		hooks.eventsSince(t, what, id, events, seen)
	}
}

// testStripeTrial: a subscription that starts with a trial, pauses when
// the trial ends without a payment method, and resumes once paid.
func testStripeTrial(t *testing.T, h *herald, fake *stripefake.Fake, hooks *billHooks) {
	now := time.Now().UTC().Truncate(time.Second)
	day := func(n int) time.Time { return now.Add(time.Duration(n) * 24 * time.Hour) }
	access, id := newUserToken(t, h, restDoor.name, "stripe-gil@example.com")
	st := stripefake.Subscription{
		ID: "sub_gil", Customer: "cus_gil", Status: "trialing", PriceID: stripePremium,
		StartDate: now, CurrentPeriodStart: now, CurrentPeriodEnd: day(7), TrialEnd: ptr(day(7)),
		Metadata: map[string]string{stripebill.MetadataUserID: id},
	}
	stripeSteps(t, h, fake, hooks, access, id, &st, []stripeStep{
		{event: stripebill.EventSubscriptionCreated, want: stripeSub("premium", stripePremium, subscriptions.StateTrial, day(7), true, nil), events: []string{evStarted}},
		{event: stripebill.EventSubscriptionUpdated, sub: func(s *stripefake.Subscription) { s.Status = "paused" },
			want: stripeSub("premium", stripePremium, subscriptions.StatePaused, day(7), false, nil), observed: true},
		{event: stripebill.EventInvoicePaid, sub: func(s *stripefake.Subscription) {
			s.Status, s.CurrentPeriodStart, s.CurrentPeriodEnd = "active", day(7), day(37)
		}, want: stripeSub("premium", stripePremium, subscriptions.StateActive, day(37), true, nil), events: []string{evRecovered}},
	})
}

// stripeSub is the expected subscription of a Stripe purchase of price
// (plan) in state until: active while the state grants access, renewing
// when renews and active.
func stripeSub(plan, price string, state subscriptions.State, until time.Time, renews bool, grace *time.Time) billSub {
	status := "active"
	switch state {
	case subscriptions.StateOnHold, subscriptions.StatePaused, subscriptions.StateExpired, subscriptions.StateRefunded, subscriptions.StateRevoked:
		status = "expired"
	}
	return sub(plan, status, subscriptions.Stripe, until, renews && status == "active", grace, ent(subscriptions.Stripe, price, state, until))
}

// testStripeRefusals: a delivery whose signature does not verify (another
// secret, none, a timestamp outside the tolerance) is 401
// BILLING_SIGNATURE_INVALID, a live-mode event at a test key 403
// BILLING_WRONG_APP; none is kept or changes anything. A verified event
// delivered again changes nothing, even after the subscription moved on.
func testStripeRefusals(t *testing.T, h *herald, fake *stripefake.Fake) {
	now := time.Now().UTC().Truncate(time.Second)
	until := now.Add(30 * 24 * time.Hour)
	access, id := newUserToken(t, h, restDoor.name, "stripe-fay@example.com")
	st := stripefake.Subscription{
		ID: "sub_fay", Customer: "cus_fay", Status: "active", PriceID: stripeBasic,
		StartDate: now, CurrentPeriodStart: now, CurrentPeriodEnd: until,
		Metadata: map[string]string{stripebill.MetadataUserID: id},
	}
	fake.SetSubscription(st)
	live := st
	live.Livemode = true
	signedLive := func() ([]byte, string) { return fake.Event(stripebill.EventSubscriptionCreated, live) }
	for _, c := range []struct {
		what     string
		delivery func() ([]byte, string)
		status   int
		code     string
	}{
		{"signed with another secret", func() ([]byte, string) { return fake.ForgedEvent(stripebill.EventSubscriptionCreated, st) }, http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"without Stripe-Signature", func() ([]byte, string) {
			p, _ := fake.Event(stripebill.EventSubscriptionCreated, st)
			return p, ""
		}, http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"a signature of another payload", func() ([]byte, string) {
			p, _ := fake.Event(stripebill.EventSubscriptionCreated, st)
			_, sig := fake.Event(stripebill.EventSubscriptionCreated, st)
			return p, sig
		}, http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"replayed outside the tolerance", func() ([]byte, string) {
			return fake.StaleEvent(stripebill.EventSubscriptionCreated, st, 10*time.Minute)
		}, http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"signed in the future", func() ([]byte, string) {
			p := fake.Envelope(stripebill.EventSubscriptionCreated, st)
			return p, stripefake.Sign(p, time.Now().Add(10*time.Minute), fake.WebhookSecret())
		}, http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"a live-mode event at a test key", signedLive, http.StatusForbidden, "BILLING_WRONG_APP"},
		{"signed, but not an event", func() ([]byte, string) {
			p := []byte(`{"id":"sub_fay","object":"subscription"}`)
			return p, stripefake.Sign(p, time.Now(), fake.WebhookSecret())
		}, http.StatusBadRequest, "VALIDATION_ERROR"},
	} {
		payload, sig := c.delivery()
		expectError(t, c.what, stripePost(t, h, payload, sig), c.status, c.code)
		if evt, _ := jsonPath(decodeObject(t, c.what, payload), "id").(string); strings.HasPrefix(evt, "evt_") {
			expectNotKept(t, h, subscriptions.Stripe, evt, c.what)
		}
	}
	expectBillSub(t, h, "Fay after the refused events", access, noBillSub)

	// Replays within the tolerance: the same delivery again.
	created, createdSig := fake.Event(stripebill.EventSubscriptionCreated, st)
	stripeDeliver(t, h, created, createdSig)
	active := sub("basic", "active", subscriptions.Stripe, until, true, nil, ent(subscriptions.Stripe, stripeBasic, subscriptions.StateActive, until))
	expectBillSub(t, h, "Fay subscribed", access, active)
	st.Status, st.EndedAt = "canceled", &now
	fake.SetSubscription(st)
	deleted, deletedSig := fake.Event(stripebill.EventSubscriptionDeleted, st)
	stripeDeliver(t, h, deleted, deletedSig)
	ended := sub("basic", "expired", subscriptions.Stripe, now, false, nil, ent(subscriptions.Stripe, stripeBasic, subscriptions.StateExpired, now))
	expectBillSub(t, h, "Fay's subscription deleted", access, ended)
	for i := range 2 {
		r := stripePost(t, h, created, createdSig)
		expectOK(t, fmt.Sprintf("replay %d of the creation", i+1), r, http.StatusOK)
	}
	// An event after the replays, worked once they would have been.
	barrier, barrierSig := fake.Event("customer.updated", map[string]any{"id": "cus_fay", "object": "customer", "livemode": false})
	stripeDeliver(t, h, barrier, barrierSig)
	expectBillSub(t, h, "Fay after the replays", access, ended)
}

// testStripeOutOfOrder: Stripe delivers the events of one subscription out
// of order, the renewal's invoice.paid before customer.subscription.created
// and the creation last, after the cancellation. Each has the subscription
// read from the API, so the subscription is Stripe's newest truth after
// every one, whatever the event's own (older) object says; the late
// creation changes nothing, and each change is one history row and one
// event.
func testStripeOutOfOrder(t *testing.T, h *herald, fake *stripefake.Fake, hooks *billHooks) {
	now := time.Now().UTC().Truncate(time.Second)
	day := func(n int) time.Time { return now.Add(time.Duration(n) * 24 * time.Hour) }
	access, id := newUserToken(t, h, restDoor.name, "stripe-ooo@example.com")
	// Stripe's story: created, renewed, cancelled at the period's end;
	// each event made (signed) when it happened, with the object as it
	// was then.
	st := stripefake.Subscription{
		ID: "sub_ooo", Customer: "cus_ooo", Status: "active", PriceID: stripeBasic,
		StartDate: now, CurrentPeriodStart: now, CurrentPeriodEnd: day(30),
		Metadata: map[string]string{stripebill.MetadataUserID: id},
	}
	fake.SetSubscription(st)
	created, createdSig := fake.Event(stripebill.EventSubscriptionCreated, st)
	st.CurrentPeriodStart, st.CurrentPeriodEnd = day(30), day(60)
	fake.SetSubscription(st)
	paid, paidSig := fake.Event(stripebill.EventInvoicePaid, stripefake.Invoice{ID: "in_ooo_2", Customer: st.Customer, Subscription: st.ID})

	seen := map[string]bool{}
	if out := stripeDeliver(t, h, paid, paidSig); !strings.HasPrefix(out, "recorded") {
		t.Fatalf("the renewal, first: outcome %q", out)
	}
	expectBillSub(t, h, "after the renewal, first", access, stripeSub("basic", stripeBasic, subscriptions.StateActive, day(60), true, nil))
	hooks.eventsSince(t, "after the renewal, first", id, map[string]int{evStarted: 1}, seen)

	st.CancelAtPeriodEnd = true
	fake.SetSubscription(st)
	updated, updatedSig := fake.Event(stripebill.EventSubscriptionUpdated, st)
	stripeDeliver(t, h, updated, updatedSig)
	ending := stripeSub("basic", stripeBasic, subscriptions.StateCancelled, day(60), false, nil)
	expectBillSub(t, h, "after the cancellation", access, ending)

	if out := stripeDeliver(t, h, created, createdSig); !strings.HasPrefix(out, "recorded") {
		t.Fatalf("the creation, last: outcome %q", out)
	}
	expectBillSub(t, h, "after the creation, last", access, ending)
	hooks.eventsSince(t, "after the creation, last", id, map[string]int{evStarted: 1, evCancelled: 1}, seen)
	want := []string{"stripe:" + stripebill.EventSubscriptionUpdated, "stripe:" + stripebill.EventInvoicePaid}
	if got := billHistory(t, hooks, id); !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
}
