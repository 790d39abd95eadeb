package main

// Google Play purchases end to end (issue 24), through the real server on
// every database, against playfake: a fake Google Play that pushes
// real-time developer notifications as Pub/Sub pushes with OIDC tokens of
// its own issuer, answers purchases.subscriptionsv2.get (the truth each
// push makes Herald read) and acknowledge, and issues the service
// account's OAuth tokens. Each notification type Herald maps moves a
// purchase, and GET /api/v1/subscription must say what the store says;
// an app's own purchase token, a restore, and the refusals of a forged or
// misaddressed push. TestBillingGrantOverStoreE2E is an administrator's
// grant over a live store purchase.
//
// The helpers named bill* serve the Stripe tests too
// (billing_stripe_e2e_test.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/billing/play"
	"github.com/herald-vpn/herald/internal/billing/play/playfake"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/webhooks"
)

const (
	playPackage  = "com.herald.vpn"
	playBasic    = "vpn_basic_monthly"
	playPremium  = "vpn_premium_monthly"
	playUnmapped = "vpn_lifetime"
	playRenewURL = "https://play.google.com/store/account/subscriptions?package=com.herald.vpn"
	rtdnPath     = "/api/v1/billing/google/rtdn"
)

// The Stripe prices of the billing tests.
const (
	stripeBasic   = "price_basic_monthly"
	stripePremium = "price_premium_monthly"
)

// billProducts is the product map of the billing tests (default plans:
// trial 3 devices, basic 5, premium 10).
var billProducts = map[string]map[string]string{
	"google_play": {playBasic: "basic", playPremium: "premium"},
	"stripe":      {stripeBasic: "basic", stripePremium: "premium"},
}

// billEnv is sessionEnv (no rate limits) with the product map, and no
// signup trial: an account's subscription is then only what it bought
// or was granted, so that every answer names the store's entitlement.
func billEnv(t testing.TB, extra map[string]string) map[string]string {
	t.Helper()
	data, err := json.Marshal(billProducts)
	if err != nil {
		t.Fatal(err)
	}
	env := sessionEnv(map[string]string{"HERALD_TRIAL_PERIOD": "0", "HERALD_BILLING_PRODUCTS": writeTemp(t, "products.json", data)})
	maps.Copy(env, extra)
	return env
}

// playEnv connects Google Play, all of it pointed at fake.
func playEnv(t testing.TB, fake *playfake.Fake) map[string]string {
	t.Helper()
	key := writeTemp(t, "play-service-account.json", fake.ServiceAccountJSON())
	return map[string]string{
		"HERALD_GOOGLE_PACKAGE_NAME":         playPackage,
		"HERALD_GOOGLE_SERVICE_ACCOUNT_FILE": key,
		"HERALD_GOOGLE_PUSH_AUDIENCE":        playfake.Audience,
		"HERALD_GOOGLE_PUSH_SERVICE_ACCOUNT": playfake.PushServiceAccount,
		"HERALD_GOOGLE_PUSH_ISSUER":          fake.URL(),
		"HERALD_GOOGLE_JWKS_URL":             fake.JWKSURL(),
		"HERALD_GOOGLE_API_URL":              fake.URL(),
		"HERALD_RENEW_URL_GOOGLE_PLAY":       playRenewURL,
	}
}

// billSub is GET /api/v1/subscription reduced to what the tests compare:
// the subscription, and each entitlement as "source product state until".
type billSub struct {
	Plan, Status, Source, ExpiresAt, GraceEndsAt string
	AutoRenew                                    bool
	Entitlements                                 string
}

// noBillSub stands for SUBSCRIPTION_NOT_FOUND.
var noBillSub = billSub{Status: "SUBSCRIPTION_NOT_FOUND"}

// rfc is a time as the API writes it (UTC, to the second).
func rfc(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// ent is one entitlement as billSub lists it.
func ent(source subscriptions.Source, product string, state subscriptions.State, until time.Time) string {
	return fmt.Sprintf("%s %s %s until %s", source, product, state, rfc(until))
}

// sub is the expected subscription: plan from source, its status, until
// (and the grace end, when set), and the entitlements behind it.
func sub(plan, status string, source subscriptions.Source, until time.Time, autoRenew bool, grace *time.Time, ents ...string) billSub {
	s := billSub{Plan: plan, Status: status, Source: string(source), ExpiresAt: rfc(until), AutoRenew: autoRenew}
	if grace != nil {
		s.GraceEndsAt = rfc(*grace)
	}
	slices.Sort(ents)
	s.Entitlements = strings.Join(ents, "; ")
	return s
}

// billSubscription reads GET /api/v1/subscription with the user's token.
func billSubscription(t testing.TB, h *herald, access string) billSub {
	t.Helper()
	status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/subscription", nil, withBearer(access))
	r := envelopeResult(t, "GET /api/v1/subscription", status, env, hdr)
	if r.code != "" {
		if r.status != http.StatusNotFound || r.code != "SUBSCRIPTION_NOT_FOUND" {
			t.Fatalf("GET /api/v1/subscription: %d %s (%s)", r.status, r.code, r.message)
		}
		return noBillSub
	}
	return billSubOf(t, r.data)
}

// billSubOf reduces a SubscriptionDetail.
func billSubOf(t testing.TB, data any) billSub {
	t.Helper()
	str := func(v any, keys ...string) string {
		s, ok := jsonPath(v, keys...).(string)
		if !ok && jsonPath(v, keys...) != nil {
			t.Fatalf("subscription %v: %v is not a string", keys, data)
		}
		return s
	}
	s := billSub{
		Plan: str(data, "plan"), Status: str(data, "status"), Source: str(data, "source"),
		ExpiresAt: str(data, "expiresAt"), GraceEndsAt: str(data, "graceEndsAt"),
	}
	ar, ok := jsonPath(data, "autoRenew").(bool)
	if !ok {
		t.Fatalf("subscription: autoRenew is not a boolean: %v", data)
	}
	s.AutoRenew = ar
	list, ok := jsonPath(data, "entitlements").([]any)
	if !ok {
		t.Fatalf("subscription: entitlements is not an array: %v", data)
	}
	var ents []string
	for _, e := range list {
		ents = append(ents, fmt.Sprintf("%s %s %s until %s", str(e, "source"), str(e, "productId"), str(e, "state"), str(e, "expiresAt")))
	}
	slices.Sort(ents)
	s.Entitlements = strings.Join(ents, "; ")
	return s
}

// expectBillSub fails unless the user's subscription is want, and the
// account's own record (users/me) says the same of the plan.
func expectBillSub(t testing.TB, h *herald, what, access string, want billSub) {
	t.Helper()
	got := billSubscription(t, h, access)
	if got != want {
		t.Fatalf("%s: GET /api/v1/subscription\n got %+v\nwant %+v", what, got, want)
	}
	if want == noBillSub {
		return
	}
	r := me(t, h, restDoor.name, access)
	expectOK(t, what+": users/me", r, http.StatusOK)
	mine := billSubOf(t, withNoEntitlements(jsonPath(r.data, "subscription")))
	mine.Entitlements = want.Entitlements
	if mine != want {
		t.Fatalf("%s: users/me subscription\n got %+v\nwant %+v (as GET /api/v1/subscription)", what, mine, want)
	}
}

// withNoEntitlements gives users/me's subscription an empty entitlement
// list, so that billSubOf reads it.
func withNoEntitlements(v any) map[string]any {
	m, _ := v.(map[string]any)
	out := maps.Clone(m)
	if out == nil {
		out = map[string]any{}
	}
	out["entitlements"] = []any{}
	return out
}

// billProcessed waits until the server has worked the store's
// notification id, and returns it.
func billProcessed(t testing.TB, h *herald, source subscriptions.Source, id string) billing.Notification {
	t.Helper()
	var n billing.Notification
	eventually(t, func() bool {
		var err error
		n, err = h.store(t).BillingNotification(context.Background(), source, id)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("notification %s/%s: %v", source, id, err)
		}
		return err == nil && n.ProcessedAt != nil
	}, "the %s notification %s was never worked (last seen: %+v)", source, id, n)
	return n
}

// expectNotKept fails unless the server kept no notification id.
func expectNotKept(t testing.TB, h *herald, source subscriptions.Source, id, why string) {
	t.Helper()
	n, err := h.store(t).BillingNotification(context.Background(), source, id)
	switch {
	case err == nil:
		t.Fatalf("%s: the notification %s was kept (%+v), want refused", why, id, n)
	case !errors.Is(err, storage.ErrNotFound):
		t.Fatalf("%s: %v", why, err)
	}
}

// playTruth is what subscriptionsv2.get answers for a purchase.
type playTruth struct {
	state   string // play.State*
	product string
	expiry  time.Time
	renews  bool
	trial   bool   // the line item is in a free trial
	linked  string // linkedPurchaseToken (an upgrade or downgrade)
	anon    bool   // no obfuscatedExternalAccountId (else the user's id)
}

func (p playTruth) wire(start time.Time, account string) play.SubscriptionPurchaseV2 {
	li := play.LineItem{ProductID: p.product, ExpiryTime: p.expiry.UTC().Format("2006-01-02T15:04:05.000Z"), LatestSuccessfulOrderID: "GPA.0000-0000-0000-00001"}
	if p.renews || p.state != play.StateCanceled && p.state != play.StateExpired {
		li.AutoRenewingPlan = &play.AutoRenewingPlan{AutoRenewEnabled: p.renews}
	}
	if p.trial {
		li.OfferPhase = &play.OfferPhase{FreeTrial: &struct{}{}}
	} else {
		li.OfferPhase = &play.OfferPhase{BasePrice: &struct{}{}}
	}
	w := play.SubscriptionPurchaseV2{
		RegionCode: "DE", LineItems: []play.LineItem{li}, StartTime: start.UTC().Format(time.RFC3339),
		SubscriptionState: p.state, LatestOrderID: li.LatestSuccessfulOrderID, LinkedPurchaseToken: p.linked,
		AcknowledgementState: play.AcknowledgementPending,
	}
	if !p.anon {
		w.ExternalAccountIdentifiers = &play.ExternalAccountIdentifiers{ObfuscatedExternalAccountID: account}
	}
	if p.state == play.StatePaused {
		w.PausedStateContext = &play.PausedStateContext{AutoResumeTime: p.expiry.Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339)}
	}
	return w
}

// playNote is a subscriptionNotification; kind 0 is a
// voidedPurchaseNotification (a refund) of the subscription.
func playNote(kind int, token, product string) play.DeveloperNotification {
	if kind == 0 {
		return play.DeveloperNotification{VoidedPurchaseNotification: &play.VoidedPurchaseNotification{
			PurchaseToken: token, OrderID: "GPA.0000-0000-0000-00001", ProductType: 1, RefundType: 1,
		}}
	}
	return play.DeveloperNotification{SubscriptionNotification: &play.SubscriptionNotification{
		Version: "1.0", NotificationType: kind, PurchaseToken: token, SubscriptionID: product,
	}}
}

// playPush posts a Pub/Sub push (body, Authorization header) to the RTDN
// endpoint.
func playPush(t testing.TB, h *herald, body []byte, authorization string) result {
	t.Helper()
	return storePost(t, h, "RTDN push", rtdnPath, body, "Authorization", authorization)
}

// storePost posts a store's notification body to path, with its
// credential in the header unless value is "".
func storePost(t testing.TB, h *herald, what, path string, body []byte, header, value string) result {
	t.Helper()
	var opts []reqOption
	if value != "" {
		opts = append(opts, withHeader(header, value))
	}
	status, env, hdr := h.rest(t, http.MethodPost, path, body, opts...)
	return envelopeResult(t, what, status, env, hdr)
}

// playDeliver pushes n as message id, expects it received, and waits
// until it is worked.
func playDeliver(t testing.TB, h *herald, fake *playfake.Fake, id string, n play.DeveloperNotification) billing.Notification {
	t.Helper()
	body, auth := fake.Push(id, n)
	r := playPush(t, h, body, auth)
	expectOK(t, "push "+id, r, http.StatusOK)
	if jsonPath(r.data, "received") != true {
		t.Fatalf("push %s: answer %v, want received: true", id, r.data)
	}
	return billProcessed(t, h, subscriptions.GooglePlay, id)
}

// playStep is one notification of a scenario and what it must make of
// the user's subscription.
type playStep struct {
	kind    int    // the subscriptionNotification type; 0: a voided purchase
	token   string // the purchase, within the scenario
	truth   *playTruth
	outcome string // how the worked notification's outcome begins
	want    billSub
	acked   bool // the purchase acknowledged at the fake afterwards
	// events are the subscription.* events the step writes, each once.
	events []string
}

func TestBillingPlayE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := playfake.New(t, playPackage)
		h := startHerald(t, d, webhooksEnv(billEnv(t, playEnv(t, fake))))
		hooks := newBillHooks(t, h)
		t.Run("Notifications", func(t *testing.T) { testPlayNotifications(t, h, fake, hooks) })
		t.Run("OutOfOrder", func(t *testing.T) { testPlayOutOfOrder(t, h, fake, hooks) })
		t.Run("OneRead", func(t *testing.T) { testPlayOneRead(t, h, fake) })
		t.Run("Redelivery", func(t *testing.T) { testPlayRedelivery(t, h, fake) })
		t.Run("AppPurchase", func(t *testing.T) { testPlayAppPurchase(t, h, fake) })
		t.Run("Restore", func(t *testing.T) { testPlayRestore(t, h, fake) })
		t.Run("Refusals", func(t *testing.T) { testPlayRefusals(t, h, fake) })
	})
}

// testPlayNotifications runs each scenario for a user of its own: each
// step sets the store's truth, pushes a notification, waits until Herald
// has worked it, and reads the user's subscription.
func testPlayNotifications(t *testing.T, h *herald, fake *playfake.Fake, hooks *billHooks) {
	now := time.Now().UTC().Truncate(time.Second)
	start := now.Add(-time.Hour)
	day := func(n int) time.Time { return now.Add(time.Duration(n) * 24 * time.Hour) }
	past := now.Add(-time.Minute)
	ptr := func(t time.Time) *time.Time { return &t }
	gp := subscriptions.GooglePlay
	const (
		active, grace, onHold, paused = subscriptions.StateActive, subscriptions.StateGrace, subscriptions.StateOnHold, subscriptions.StatePaused
		cancelled, expired, revoked   = subscriptions.StateCancelled, subscriptions.StateExpired, subscriptions.StateRevoked
		refunded, trial               = subscriptions.StateRefunded, subscriptions.StateTrial
	)
	const (
		started, renewals, failed, recovers  = webhooks.SubscriptionStarted, webhooks.SubscriptionRenewed, webhooks.SubscriptionPaymentFailed, webhooks.SubscriptionRecovered
		ended, refunds, cancels, planChanged = webhooks.SubscriptionExpired, webhooks.SubscriptionRefunded, webhooks.SubscriptionCancelled, webhooks.SubscriptionPlanChanged
	)
	ev := func(types ...string) []string { return types }
	truth := func(state, product string, expiry time.Time, renews bool) *playTruth {
		return &playTruth{state: state, product: product, expiry: expiry, renews: renews}
	}
	premium := func(state subscriptions.State, status string, until time.Time, renews bool, g *time.Time) billSub {
		return sub("premium", status, gp, until, renews, g, ent(gp, playPremium, state, until))
	}
	scenarios := []struct {
		name  string
		steps []playStep
	}{
		{"lifecycle", []playStep{
			{kind: play.SubscriptionPurchased, token: "a", truth: truth(play.StateActive, playPremium, day(30), true),
				want: premium(active, "active", day(30), true, nil), acked: true, events: ev(started)},
			{kind: play.SubscriptionRenewed, token: "a", truth: truth(play.StateActive, playPremium, day(60), true),
				want: premium(active, "active", day(60), true, nil), acked: true, events: ev(renewals)},
			// Play extends expiryTime to the grace period's end.
			{kind: play.SubscriptionInGracePeriod, token: "a", truth: truth(play.StateInGracePeriod, playPremium, day(3), true),
				want: premium(grace, "active", day(3), true, ptr(day(3))), acked: true, events: ev(failed)},
			{kind: play.SubscriptionRecovered, token: "a", truth: truth(play.StateActive, playPremium, day(33), true),
				want: premium(active, "active", day(33), true, nil), acked: true, events: ev(recovers)},
			{kind: play.SubscriptionCanceled, token: "a", truth: truth(play.StateCanceled, playPremium, day(33), false),
				want: premium(cancelled, "active", day(33), false, nil), acked: true, events: ev(cancels)},
			{kind: play.SubscriptionRestarted, token: "a", truth: truth(play.StateActive, playPremium, day(33), true),
				want: premium(active, "active", day(33), true, nil), acked: true, events: ev(recovers)},
			// Account hold: the period ended unpaid, no access.
			{kind: play.SubscriptionOnHold, token: "a", truth: truth(play.StateOnHold, playPremium, past, true),
				want: premium(onHold, "expired", past, false, nil), acked: true, events: ev(failed)},
			{kind: play.SubscriptionRecovered, token: "a", truth: truth(play.StateActive, playPremium, day(30), true),
				want: premium(active, "active", day(30), true, nil), acked: true, events: ev(recovers)},
			{kind: play.SubscriptionPauseScheduleChanged, token: "a", truth: truth(play.StateActive, playPremium, day(30), true),
				want: premium(active, "active", day(30), true, nil), acked: true},
			{kind: play.SubscriptionPaused, token: "a", truth: truth(play.StatePaused, playPremium, past, true),
				want: premium(paused, "expired", past, false, nil), acked: true},
			{kind: play.SubscriptionRenewed, token: "a", truth: truth(play.StateActive, playPremium, day(31), true),
				want: premium(active, "active", day(31), true, nil), acked: true, events: ev(recovers)},
			{kind: play.SubscriptionDeferred, token: "a", truth: truth(play.StateActive, playPremium, day(90), true),
				want: premium(active, "active", day(90), true, nil), acked: true, events: ev(renewals)},
			{kind: play.SubscriptionPriceChangeConfirmed, token: "a", truth: truth(play.StateActive, playPremium, day(90), true),
				want: premium(active, "active", day(90), true, nil), acked: true},
			{kind: play.SubscriptionCanceled, token: "a", truth: truth(play.StateCanceled, playPremium, day(90), false),
				want: premium(cancelled, "active", day(90), false, nil), acked: true, events: ev(cancels)},
			{kind: play.SubscriptionExpired, token: "a", truth: truth(play.StateExpired, playPremium, past, false),
				want: premium(expired, "expired", past, false, nil), acked: true, events: ev(ended)},
		}},
		{"revoked", []playStep{
			{kind: play.SubscriptionPurchased, token: "r", truth: truth(play.StateActive, playPremium, day(30), true),
				want: premium(active, "active", day(30), true, nil), acked: true, events: ev(started)},
			// The API says EXPIRED; the notification makes it revoked.
			{kind: play.SubscriptionRevoked, token: "r", truth: truth(play.StateExpired, playPremium, past, false),
				want: premium(revoked, "expired", past, false, nil), acked: true, events: ev(ended)},
		}},
		{"refunded", []playStep{
			{kind: play.SubscriptionPurchased, token: "v", truth: truth(play.StateActive, playPremium, day(30), true),
				want: premium(active, "active", day(30), true, nil), acked: true, events: ev(started)},
			{kind: 0, token: "v", truth: truth(play.StateExpired, playPremium, past, false),
				want: premium(refunded, "expired", past, false, nil), acked: true, events: ev(refunds)},
		}},
		{"free trial", []playStep{
			{kind: play.SubscriptionPurchased, token: "f", truth: &playTruth{state: play.StateActive, product: playPremium, expiry: day(7), renews: true, trial: true},
				want: premium(trial, "active", day(7), true, nil), acked: true, events: ev(started)},
			{kind: play.SubscriptionRenewed, token: "f", truth: truth(play.StateActive, playPremium, day(37), true),
				want: premium(active, "active", day(37), true, nil), acked: true, events: ev(renewals)},
		}},
		{"pending", []playStep{
			// A purchase waiting for cash at a shop grants nothing yet.
			{kind: play.SubscriptionPurchased, token: "p", truth: truth(play.StatePending, playPremium, day(30), true),
				outcome: "ignored", want: noBillSub},
			{kind: play.SubscriptionPendingPurchaseCancel, token: "p", truth: truth(play.StatePendingPurchaseCanceled, playPremium, past, false),
				want: premium(expired, "expired", past, false, nil)},
		}},
		{"upgrade and downgrade", []playStep{
			{kind: play.SubscriptionPurchased, token: "u1", truth: truth(play.StateActive, playBasic, day(30), true),
				want: sub("basic", "active", gp, day(30), true, nil, ent(gp, playBasic, active, day(30))), acked: true, events: ev(started)},
			// The new purchase names the one it replaces, and no account:
			// it carries on the old one's.
			{kind: play.SubscriptionPurchased, token: "u2", truth: &playTruth{state: play.StateActive, product: playPremium, expiry: day(31), renews: true, linked: "u1", anon: true},
				want: sub("premium", "active", gp, day(31), true, nil, ent(gp, playBasic, expired, day(30)), ent(gp, playPremium, active, day(31))), acked: true, events: ev(renewals, planChanged)},
			{kind: play.SubscriptionPurchased, token: "u3", truth: &playTruth{state: play.StateActive, product: playBasic, expiry: day(32), renews: true, linked: "u2"},
				want: sub("basic", "active", gp, day(32), true, nil, ent(gp, playBasic, expired, day(30)), ent(gp, playPremium, expired, day(31)), ent(gp, playBasic, active, day(32))), acked: true, events: ev(renewals, planChanged)},
		}},
		{"unmapped product", []playStep{
			// Kept and refused, not retried: no plan, and not acknowledged.
			{kind: play.SubscriptionPurchased, token: "x", truth: truth(play.StateActive, playUnmapped, day(30), true),
				outcome: "refused", want: noBillSub},
		}},
		{"unknown to the store", []playStep{
			{kind: play.SubscriptionPurchased, token: "gone", outcome: "ignored", want: noBillSub},
		}},
	}
	for i, sc := range scenarios {
		t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) {
			access, id := newUserToken(t, h, restDoor.name, fmt.Sprintf("play-%d@example.com", i))
			events, seen := map[string]int{}, map[string]bool{}
			for j, s := range sc.steps {
				token := fmt.Sprintf("play-%d-%s", i, s.token)
				if s.truth != nil {
					w := *s.truth
					if w.linked != "" {
						w.linked = fmt.Sprintf("play-%d-%s", i, w.linked)
					}
					fake.SetPurchase(token, w.wire(start, id))
				}
				product := playPremium
				if s.truth != nil {
					product = s.truth.product
				}
				what := fmt.Sprintf("step %d (notification type %d, %s)", j+1, s.kind, token)
				n := playDeliver(t, h, fake, fmt.Sprintf("%s-m%d", token, j), playNote(s.kind, token, product))
				outcome := s.outcome
				if outcome == "" {
					outcome = "recorded"
				}
				if !strings.HasPrefix(n.Outcome, outcome) {
					t.Fatalf("%s: worked with outcome %q, want %s…", what, n.Outcome, outcome)
				}
				expectBillSub(t, h, what, access, s.want)
				if got := fake.Acknowledged(token); got != s.acked {
					t.Fatalf("%s: acknowledged at the store %t, want %t", what, got, s.acked)
				}
				for _, typ := range s.events {
					events[typ]++
				}
				hooks.eventsSince(t, what, id, events, seen)
			}
		})
	}
}

// testPlayRedelivery: Pub/Sub delivers a message again (the same
// messageId) after the store's truth moved on; the repeat is answered 200
// and changes nothing, while a new message reads the new truth.
func testPlayRedelivery(t *testing.T, h *herald, fake *playfake.Fake) {
	now := time.Now().UTC().Truncate(time.Second)
	access, id := newUserToken(t, h, restDoor.name, "play-redelivery@example.com")
	const token = "play-redelivery"
	fake.SetPurchase(token, playTruth{state: play.StateActive, product: playBasic, expiry: now.Add(30 * 24 * time.Hour), renews: true}.wire(now, id))
	body, auth := fake.Push("redelivered-1", playNote(play.SubscriptionPurchased, token, playBasic))
	expectOK(t, "first delivery", playPush(t, h, body, auth), http.StatusOK)
	first := billProcessed(t, h, subscriptions.GooglePlay, "redelivered-1")
	live := sub("basic", "active", subscriptions.GooglePlay, now.Add(30*24*time.Hour), true, nil,
		ent(subscriptions.GooglePlay, playBasic, subscriptions.StateActive, now.Add(30*24*time.Hour)))
	expectBillSub(t, h, "after the first delivery", access, live)

	fake.SetPurchase(token, playTruth{state: play.StateExpired, product: playBasic, expiry: now.Add(-time.Minute)}.wire(now, id))
	for i := range 2 {
		expectOK(t, fmt.Sprintf("redelivery %d", i+1), playPush(t, h, body, auth), http.StatusOK)
	}
	// A test notification after the repeats, worked once they would have
	// been: the repeats were not.
	playDeliver(t, h, fake, "redelivered-barrier", play.DeveloperNotification{TestNotification: &play.TestNotification{Version: "1.0"}})
	again := billProcessed(t, h, subscriptions.GooglePlay, "redelivered-1")
	if !again.ProcessedAt.Equal(*first.ProcessedAt) || again.Outcome != first.Outcome {
		t.Fatalf("the repeated message was worked again: %+v, first %+v", again, first)
	}
	expectBillSub(t, h, "after the repeats", access, live)

	playDeliver(t, h, fake, "redelivered-2", playNote(play.SubscriptionExpired, token, playBasic))
	expectBillSub(t, h, "after a new message", access, sub("basic", "expired", subscriptions.GooglePlay, now.Add(-time.Minute), false, nil,
		ent(subscriptions.GooglePlay, playBasic, subscriptions.StateExpired, now.Add(-time.Minute))))
}

// googlePurchase posts an app's purchase token.
func googlePurchase(t testing.TB, h *herald, access string, body any) result {
	t.Helper()
	status, env, hdr := h.rest(t, http.MethodPost, "/api/v1/billing/google/purchases", body, withBearer(access))
	return envelopeResult(t, "POST /api/v1/billing/google/purchases", status, env, hdr)
}

// testPlayAppPurchase: the app posts the purchase token after a purchase;
// the API's answer is recorded and acknowledged at once; the same token
// from another account, or a token naming another account, is
// PURCHASE_OWNED_ELSEWHERE and changes nothing.
func testPlayAppPurchase(t *testing.T, h *herald, fake *playfake.Fake) {
	now := time.Now().UTC().Truncate(time.Second)
	until := now.Add(30 * 24 * time.Hour)
	gp := subscriptions.GooglePlay
	ann, annID := newUserToken(t, h, restDoor.name, "play-ann@example.com")
	bob, _ := newUserToken(t, h, restDoor.name, "play-bob@example.com")

	// The app bought without obfuscatedExternalAccountId: the token is
	// the proof.
	const token = "play-app-token"
	fake.SetPurchase(token, playTruth{state: play.StateActive, product: playBasic, expiry: until, renews: true, anon: true}.wire(now, ""))
	want := sub("basic", "active", gp, until, true, nil, ent(gp, playBasic, subscriptions.StateActive, until))
	for i := range 2 { // the app's retry: the same answer
		r := googlePurchase(t, h, ann, map[string]any{"purchaseToken": token, "productId": playBasic})
		expectOK(t, fmt.Sprintf("Ann's purchase (%d)", i+1), r, http.StatusOK)
		if got := billSubOf(t, r.data); got != want {
			t.Fatalf("Ann's purchase (%d) answered\n got %+v\nwant %+v", i+1, got, want)
		}
		if !fake.Acknowledged(token) {
			t.Fatalf("Ann's purchase (%d) was not acknowledged at the store", i+1)
		}
	}
	expectBillSub(t, h, "Ann after her purchase", ann, want)

	expectError(t, "Ann's token from Bob", googlePurchase(t, h, bob, map[string]any{"purchaseToken": token, "productId": playBasic}),
		http.StatusConflict, "PURCHASE_OWNED_ELSEWHERE")
	// A purchase whose obfuscatedExternalAccountId is Ann's.
	const named = "play-app-named"
	fake.SetPurchase(named, playTruth{state: play.StateActive, product: playPremium, expiry: until, renews: true}.wire(now, annID))
	expectError(t, "a purchase naming Ann, from Bob", googlePurchase(t, h, bob, map[string]any{"purchaseToken": named, "productId": playPremium}),
		http.StatusConflict, "PURCHASE_OWNED_ELSEWHERE")
	if fake.Acknowledged(named) {
		t.Fatal("a purchase refused as another account's was acknowledged")
	}
	expectBillSub(t, h, "Bob after the refusals", bob, noBillSub)
	expectBillSub(t, h, "Ann after Bob's tries", ann, want)

	const pending = "play-app-pending"
	fake.SetPurchase(pending, playTruth{state: play.StatePending, product: playBasic, expiry: until, renews: true, anon: true}.wire(now, ""))
	for _, c := range []struct {
		what   string
		body   map[string]any
		status int
		code   string
	}{
		{"an unknown token", map[string]any{"purchaseToken": "play-nobody-bought-this", "productId": playBasic}, http.StatusNotFound, "PURCHASE_NOT_FOUND"},
		{"another product than the token's", map[string]any{"purchaseToken": token, "productId": playPremium}, http.StatusForbidden, "BILLING_WRONG_APP"},
		{"no product", map[string]any{"purchaseToken": token}, http.StatusBadRequest, "VALIDATION_ERROR"},
		{"no token", map[string]any{"productId": playBasic}, http.StatusBadRequest, "VALIDATION_ERROR"},
		{"a pending purchase", map[string]any{"purchaseToken": pending, "productId": playBasic}, http.StatusBadRequest, "PAYMENT_FAILED"},
	} {
		expectError(t, c.what, googlePurchase(t, h, bob, c.body), c.status, c.code)
	}
	expectBillSub(t, h, "Bob after the refused purchases", bob, noBillSub)
}

// testPlayRestore: a notification for a purchase that names no account is
// kept unlinked; the account that posts the token gets it.
func testPlayRestore(t *testing.T, h *herald, fake *playfake.Fake) {
	now := time.Now().UTC().Truncate(time.Second)
	until := now.Add(30 * 24 * time.Hour)
	gp := subscriptions.GooglePlay
	const token = "play-restore"
	fake.SetPurchase(token, playTruth{state: play.StateActive, product: playPremium, expiry: until, renews: true, anon: true}.wire(now, ""))
	n := playDeliver(t, h, fake, "restore-1", playNote(play.SubscriptionPurchased, token, playPremium))
	if !strings.HasPrefix(n.Outcome, "recorded") {
		t.Fatalf("a purchase of nobody yet: outcome %q, want recorded", n.Outcome)
	}
	if !fake.Acknowledged(token) {
		t.Fatal("a purchase kept for a restore must be acknowledged all the same (Play refunds it otherwise)")
	}
	cat, _ := newUserToken(t, h, restDoor.name, "play-cat@example.com")
	expectBillSub(t, h, "Cat before the restore", cat, noBillSub)
	r := googlePurchase(t, h, cat, map[string]any{"purchaseToken": token, "productId": playPremium})
	expectOK(t, "Cat's restore", r, http.StatusOK)
	expectBillSub(t, h, "Cat after the restore", cat, sub("premium", "active", gp, until, true, nil, ent(gp, playPremium, subscriptions.StateActive, until)))
	// The store's next word reaches her.
	fake.SetPurchase(token, playTruth{state: play.StateCanceled, product: playPremium, expiry: until, anon: true}.wire(now, ""))
	playDeliver(t, h, fake, "restore-2", playNote(play.SubscriptionCanceled, token, playPremium))
	expectBillSub(t, h, "Cat after a cancel", cat, sub("premium", "active", gp, until, false, nil, ent(gp, playPremium, subscriptions.StateCancelled, until)))
}

// testPlayRefusals: a push whose OIDC token does not prove it comes from
// the configured push subscription is 401 BILLING_SIGNATURE_INVALID, one
// for another audience or another app 403 BILLING_WRONG_APP, one that is
// not a push 400; none is kept, none changes the purchase it names, and
// none is a 5xx.
func testPlayRefusals(t *testing.T, h *herald, fake *playfake.Fake) {
	now := time.Now().UTC().Truncate(time.Second)
	until := now.Add(30 * 24 * time.Hour)
	dan, danID := newUserToken(t, h, restDoor.name, "play-dan@example.com")
	const token = "play-refusals"
	fake.SetPurchase(token, playTruth{state: play.StateActive, product: playBasic, expiry: until, renews: true}.wire(now, danID))
	note := playNote(play.SubscriptionPurchased, token, playBasic)

	signed := func(tok playfake.Token) func(id string) ([]byte, string) {
		return func(id string) ([]byte, string) { return fake.PushWith(id, note, tok) }
	}
	header := func(auth string) func(id string) ([]byte, string) {
		return func(id string) ([]byte, string) { body, _ := fake.Push(id, note); return body, auth }
	}
	valid := func(id string) string { _, auth := fake.Push(id, note); return auth }
	cases := []struct {
		what   string
		push   func(id string) ([]byte, string)
		status int
		code   string
	}{
		{"no Authorization", header(""), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"not a bearer", header("Basic cnRkbjpwdXNo"), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"not a JWT", header("Bearer not.a.jwt"), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"signed by a key the JWKS does not hold", signed(playfake.Token{ForeignKey: true}), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"unsigned (alg none)", signed(playfake.Token{Alg: "none"}), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"HMAC-signed", signed(playfake.Token{Alg: "HS256"}), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"another issuer", signed(playfake.Token{Issuer: "https://accounts.evil.example"}), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		// A token of the push subscription of another endpoint
		// (docs/billing.md: meant for another audience).
		{"another audience", signed(playfake.Token{Audience: "https://other.example/push"}), http.StatusForbidden, "BILLING_WRONG_APP"},
		{"another service account", signed(playfake.Token{Email: "attacker@evil-project.iam.gserviceaccount.com"}), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"email not verified", signed(playfake.Token{EmailUnverified: true}), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"expired", signed(playfake.Token{IssuedAt: time.Now().Add(-2 * time.Hour)}), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"issued in the future", signed(playfake.Token{IssuedAt: time.Now().Add(10 * time.Minute)}), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"another app's package", func(id string) ([]byte, string) {
			other := note
			other.PackageName = "com.other.app"
			return fake.Push(id, other)
		}, http.StatusForbidden, "BILLING_WRONG_APP"},
		{"not a push", func(id string) ([]byte, string) { return []byte(`{"hello":"world"}`), valid(id) }, http.StatusBadRequest, "VALIDATION_ERROR"},
		{"not JSON", func(id string) ([]byte, string) { return []byte(`message=1`), valid(id) }, http.StatusBadRequest, "VALIDATION_ERROR"},
		{"data not a notification", func(id string) ([]byte, string) {
			return playfake.Envelope(id, time.Now(), []byte(`"just a string"`)), valid(id)
		}, http.StatusBadRequest, "VALIDATION_ERROR"},
	}
	for i, c := range cases {
		id := fmt.Sprintf("refused-%d", i)
		body, auth := c.push(id)
		r := playPush(t, h, body, auth)
		expectError(t, c.what, r, c.status, c.code)
		expectNotKept(t, h, subscriptions.GooglePlay, id, c.what)
	}
	expectBillSub(t, h, "Dan after the refused pushes", dan, noBillSub)
	if fake.Acknowledged(token) {
		t.Fatal("a refused push had the purchase acknowledged")
	}
	// The same push, properly signed, is taken.
	playDeliver(t, h, fake, "refusals-valid", note)
	expectBillSub(t, h, "Dan after the valid push", dan, sub("basic", "active", subscriptions.GooglePlay, until, true, nil,
		ent(subscriptions.GooglePlay, playBasic, subscriptions.StateActive, until)))
}

// TestBillingGrantOverStoreE2E: an administrator grants plans over a live
// Google Play purchase. The account's plan is the best live entitlement
// (subscriptions.Effective): the plan allowing the most devices, then the
// one lasting longest; when the grant ends, the purchase is the plan
// again.
func TestBillingGrantOverStoreE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := playfake.New(t, playPackage)
		h := startHerald(t, d, billEnv(t, playEnv(t, fake)))
		admin := newAdminToken(t, h, "ops@example.com")
		access, id := newUserToken(t, h, restDoor.name, "grant@example.com")
		now := time.Now().UTC().Truncate(time.Second)
		day := func(n int) time.Time { return now.Add(time.Duration(n) * 24 * time.Hour) }
		gp, adm := subscriptions.GooglePlay, subscriptions.Admin
		const token = "play-grant"
		fake.SetPurchase(token, playTruth{state: play.StateActive, product: playBasic, expiry: day(30), renews: true}.wire(now, id))
		playDeliver(t, h, fake, "grant-1", playNote(play.SubscriptionPurchased, token, playBasic))
		store := ent(gp, playBasic, subscriptions.StateActive, day(30))
		storePlan := func(grant string) billSub { return sub("basic", "active", gp, day(30), true, nil, store, grant) }
		expectBillSub(t, h, "the store purchase", access, sub("basic", "active", gp, day(30), true, nil, store))

		grant := func(what, plan string, until time.Time) billSub {
			t.Helper()
			status, env, hdr := h.rest(t, http.MethodPut, "/api/v1/admin/users/"+id+"/subscription",
				map[string]any{"plan": plan, "expiresAt": rfc(until)}, withBearer(admin))
			r := envelopeResult(t, what, status, env, hdr)
			expectOK(t, what, r, http.StatusOK)
			return billSubOf(t, withNoEntitlements(jsonPath(r.data, "subscription")))
		}
		steps := []struct {
			what  string
			plan  string
			until time.Time
			want  billSub
		}{
			// More devices wins, though it ends sooner.
			{"premium for 10 days", "premium", day(10), sub("premium", "active", adm, day(10), false, nil, store, ent(adm, "", subscriptions.StateActive, day(10)))},
			// The same devices: the longer wins.
			{"basic for 60 days", "basic", day(60), sub("basic", "active", adm, day(60), false, nil, store, ent(adm, "", subscriptions.StateActive, day(60)))},
			{"basic for 20 days", "basic", day(20), storePlan(ent(adm, "", subscriptions.StateActive, day(20)))},
			// Fewer devices loses, however long.
			{"trial for 90 days", "trial", day(90), storePlan(ent(adm, "", subscriptions.StateActive, day(90)))},
			// A grant that is over already ends at once.
			{"premium until yesterday", "premium", day(-1), storePlan(ent(adm, "", subscriptions.StateExpired, day(-1)))},
		}
		for _, s := range steps {
			got := grant(s.what, s.plan, s.until)
			want := s.want
			want.Entitlements = got.Entitlements // the record has no entitlements
			if got != want {
				t.Fatalf("grant %s: the record's subscription\n got %+v\nwant %+v", s.what, got, want)
			}
			expectBillSub(t, h, "after the grant of "+s.what, access, s.want)
		}

		// A grant of premium that ends in a few seconds: premium while it
		// lasts, then the store's basic again without anyone doing a thing.
		soon := time.Now().UTC().Add(5 * time.Second).Truncate(time.Second)
		got := grant("premium for a few seconds", "premium", soon)
		if got.Plan != "premium" || got.Source != string(adm) || got.ExpiresAt != rfc(soon) {
			t.Fatalf("a short grant of premium: the record's subscription %+v, want premium from admin until %s", got, rfc(soon))
		}
		// (The account's record catches up at the next sweep; the
		// subscription is derived as of each read.)
		var last billSub
		eventually(t, func() bool {
			last = billSubscription(t, h, access)
			return last.Source == string(gp)
		}, "the store purchase never became the plan again after the grant ended at %s: %+v", rfc(soon), last)
		want := storePlan("")
		got = last
		got.Entitlements, want.Entitlements = "", ""
		if got != want {
			t.Fatalf("after the grant ended\n got %+v\nwant %+v", got, want)
		}
		// The grant's entitlement is over (the sweep may have marked it
		// expired already); the store's is untouched.
		ended := []string{
			sub("", "", gp, now, false, nil, store, ent(adm, "", subscriptions.StateActive, soon)).Entitlements,
			sub("", "", gp, now, false, nil, store, ent(adm, "", subscriptions.StateExpired, soon)).Entitlements,
		}
		if !slices.Contains(ended, last.Entitlements) {
			t.Fatalf("after the grant ended, entitlements %q, want one of %q", last.Entitlements, ended)
		}
		// The store's word still moves the plan: it renews.
		fake.SetPurchase(token, playTruth{state: play.StateActive, product: playBasic, expiry: day(61), renews: true}.wire(now, id))
		playDeliver(t, h, fake, "grant-2", playNote(play.SubscriptionRenewed, token, playBasic))
		if got := billSubscription(t, h, access); got.Plan != "basic" || got.Source != string(gp) || got.ExpiresAt != rfc(day(61)) || !got.AutoRenew {
			t.Fatalf("after the store renewed: %+v, want basic from google_play until %s", got, rfc(day(61)))
		}
	})
}

// billHistory is the causes of the account's history, newest first, as
// the admin API shows them.
func billHistory(t testing.TB, hooks *billHooks, id string) []string {
	t.Helper()
	r := userSubscription(t, hooks.h, hooks.admin, id)
	expectOK(t, "GET the user's subscription", r, http.StatusOK)
	var causes []string
	for _, c := range asObjects(t, jsonPath(r.data, "history")) {
		cause, _ := c["cause"].(string)
		causes = append(causes, cause)
	}
	return causes
}

// testPlayOutOfOrder: Pub/Sub delivers the notifications of one purchase
// out of order, the renewal before the purchase and the purchase last,
// after the cancellation. Each makes Herald read the purchase, so the
// subscription is the store's newest truth after every one; the late
// purchase notification changes nothing, and each change is one history
// row and one event.
func testPlayOutOfOrder(t *testing.T, h *herald, fake *playfake.Fake, hooks *billHooks) {
	now := time.Now().UTC().Truncate(time.Second)
	day := func(n int) time.Time { return now.Add(time.Duration(n) * 24 * time.Hour) }
	gp := subscriptions.GooglePlay
	access, id := newUserToken(t, h, restDoor.name, "play-ooo@example.com")
	const token = "play-out-of-order"
	deliver := func(what string, body []byte, auth, msg string) {
		t.Helper()
		expectOK(t, what, playPush(t, h, body, auth), http.StatusOK)
		if n := billProcessed(t, h, gp, msg); !strings.HasPrefix(n.Outcome, "recorded") {
			t.Fatalf("%s: worked with outcome %q, want recorded…", what, n.Outcome)
		}
	}
	// The store's story: bought, renewed, cancelled; each notification
	// made (published) when it happened.
	fake.SetPurchase(token, playTruth{state: play.StateActive, product: playBasic, expiry: day(30), renews: true}.wire(now, id))
	purchased, purchasedAuth := fake.Push("ooo-purchased", playNote(play.SubscriptionPurchased, token, playBasic))
	fake.SetPurchase(token, playTruth{state: play.StateActive, product: playBasic, expiry: day(60), renews: true}.wire(now, id))
	renewed, renewedAuth := fake.Push("ooo-renewed", playNote(play.SubscriptionRenewed, token, playBasic))

	seen := map[string]bool{}
	deliver("the renewal, first", renewed, renewedAuth, "ooo-renewed")
	active := sub("basic", "active", gp, day(60), true, nil, ent(gp, playBasic, subscriptions.StateActive, day(60)))
	expectBillSub(t, h, "after the renewal, first", access, active)
	hooks.eventsSince(t, "after the renewal, first", id, map[string]int{webhooks.SubscriptionStarted: 1}, seen)

	fake.SetPurchase(token, playTruth{state: play.StateCanceled, product: playBasic, expiry: day(60)}.wire(now, id))
	cancelled, cancelledAuth := fake.Push("ooo-cancelled", playNote(play.SubscriptionCanceled, token, playBasic))
	deliver("the cancellation", cancelled, cancelledAuth, "ooo-cancelled")
	ending := sub("basic", "active", gp, day(60), false, nil, ent(gp, playBasic, subscriptions.StateCancelled, day(60)))
	expectBillSub(t, h, "after the cancellation", access, ending)

	deliver("the purchase, last", purchased, purchasedAuth, "ooo-purchased")
	expectBillSub(t, h, "after the purchase, last", access, ending)
	hooks.eventsSince(t, "after the purchase, last", id, map[string]int{webhooks.SubscriptionStarted: 1, webhooks.SubscriptionCancelled: 1}, seen)
	want := []string{
		fmt.Sprintf("google_play:subscription:%d", play.SubscriptionCanceled),
		fmt.Sprintf("google_play:subscription:%d", play.SubscriptionRenewed),
	}
	if got := billHistory(t, hooks, id); !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
}

// testPlayOneRead: working a notification reads the purchase from Play
// once; its acknowledgement state comes with that read, so settling it
// asks Play only to acknowledge it, and nothing at all once it is.
func testPlayOneRead(t *testing.T, h *herald, fake *playfake.Fake) {
	now := time.Now().UTC().Truncate(time.Second)
	_, id := newUserToken(t, h, restDoor.name, "play-one-read@example.com")
	const token = "play-one-read"
	fake.SetPurchase(token, playTruth{state: play.StateActive, product: playBasic, expiry: now.Add(30 * 24 * time.Hour), renews: true}.wire(now, id))
	for _, c := range []struct {
		what  string
		kind  int
		calls int
	}{
		{"a new purchase: read, then acknowledged", play.SubscriptionPurchased, 2},
		{"an acknowledged purchase: read only", play.SubscriptionRenewed, 1},
	} {
		before := fake.Calls()
		playDeliver(t, h, fake, "one-read-"+strconv.Itoa(c.kind), playNote(c.kind, token, playBasic))
		if n := fake.Calls() - before; n != c.calls {
			t.Fatalf("%s: %d calls to the Play API, want %d", c.what, n, c.calls)
		}
		if !fake.Acknowledged(token) {
			t.Fatalf("%s: not acknowledged at the store", c.what)
		}
	}
}
