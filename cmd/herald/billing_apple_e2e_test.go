package main

// App Store purchases end to end. A fake App Store (appstorefake) signs
// App Store Server Notifications V2 and StoreKit 2 transactions with its
// own root, intermediate and leaf, and serves the App Store Server API;
// the server trusts its root (HERALD_APPLE_ROOT_CERT_FILE) and, with the
// fake's in-app purchase key, reads the purchase a notification names from
// its API (HERALD_APPLE_API_URL). Every check goes through the API: the
// subscription its owner sees, the history the admin API shows, the
// device admission, the webhook events a receiver gets.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/billing/appstore/appstorefake"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/webhooks"
)

const (
	appleBundle  = "com.herald.vpn.e2e"
	appleBasic   = "com.herald.vpn.basic.monthly"
	applePremium = "com.herald.vpn.premium.monthly"
	// appleRenewURL is HERALD_RENEW_URL_APP_STORE; appleOtherRenewURL
	// HERALD_RENEW_URL, which a plan bought in the App Store must not show.
	appleRenewURL      = "https://apps.apple.test/account/subscriptions"
	appleOtherRenewURL = "https://vpn.example.test/renew-on-the-web"
	appleNotifyPath    = "/api/v1/billing/apple/notifications"
	appleTxPath        = "/api/v1/billing/apple/transactions"
	appleHookPath      = "/subscriptions"
	day                = 24 * time.Hour
)

// subscriptionEventTypes are the lifecycle events of store purchases.
var subscriptionEventTypes = []string{
	webhooks.SubscriptionStarted, webhooks.SubscriptionRenewed, webhooks.SubscriptionPaymentFailed, webhooks.SubscriptionRecovered,
	webhooks.SubscriptionExpired, webhooks.SubscriptionRefunded, webhooks.SubscriptionCancelled, webhooks.SubscriptionPlanChanged,
}

// appleConfig is the configuration connecting the App Store as fake: its
// root, the bundle, the product map (basic and premium monthly) and the
// renew links; withAPI adds the in-app purchase key and the fake's Server
// API, without it the server has only the notifications' own word.
func appleConfig(t testing.TB, fake *appstorefake.Fake, withAPI bool) map[string]string {
	t.Helper()
	products, err := json.Marshal(map[string]map[string]string{"app_store": {appleBasic: "basic", applePremium: "premium"}})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"HERALD_APPLE_BUNDLE_ID":      appleBundle,
		"HERALD_APPLE_ENVIRONMENT":    "Production",
		"HERALD_APPLE_ROOT_CERT_FILE": writeTemp(t, "root.pem", fake.RootPEM()),
		"HERALD_BILLING_PRODUCTS":     writeTemp(t, "products.json", products),
		"HERALD_RENEW_URL":            appleOtherRenewURL,
		"HERALD_RENEW_URL_APP_STORE":  appleRenewURL,
	}
	if withAPI {
		env["HERALD_APPLE_PRIVATE_KEY_FILE"] = writeTemp(t, "SubscriptionKey.p8", fake.KeyPEM())
		env["HERALD_APPLE_ISSUER_ID"] = fake.IssuerID()
		env["HERALD_APPLE_KEY_ID"] = fake.KeyID()
		env["HERALD_APPLE_API_URL"] = fake.URL()
	}
	return env
}

// appleRig is a server connected to a fake App Store, an operator, and a
// webhook receiver of the subscription events.
type appleRig struct {
	*billHooks
	h     *herald
	fake  *appstorefake.Fake
	api   bool
	admin string
}

// billHooks is a webhook receiver of the subscription events of the
// server h, registered by an operator whose token is admin.
type billHooks struct {
	h      *herald
	admin  string
	hooks  *hookReceiver
	secret string
}

// newBillHooks signs in an operator and registers a receiver of every
// subscription.* event (the server must run with webhooksEnv).
func newBillHooks(t *testing.T, h *herald) *billHooks {
	t.Helper()
	hooks := newHookReceiver(t, nil)
	admin := newAdminToken(t, h, "ops@example.com")
	key, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "hooks", "scopes": []string{"webhooks:manage"}})
	_, secret := createHook(t, h, key, hooks.srv.URL+appleHookPath, subscriptionEventTypes)
	return &billHooks{h: h, admin: admin, hooks: hooks, secret: secret}
}

// startAppleRig starts the server with no signup trial, so that an
// account's subscription is its purchases alone.
func startAppleRig(t *testing.T, d sqlstoretest.Dialect, withAPI bool) *appleRig {
	t.Helper()
	fake := appstorefake.New(t, appleBundle)
	env := webhooksEnv(map[string]string{"HERALD_TRIAL_PERIOD": "0"})
	maps.Copy(env, appleConfig(t, fake, withAPI))
	h := startHerald(t, d, env)
	hooks := newBillHooks(t, h)
	return &appleRig{billHooks: hooks, h: h, fake: fake, api: withAPI, admin: hooks.admin}
}

// noServerError fails on a 5xx: a store's notification or an app's proof
// gets 2xx or 4xx, never an internal error.
func noServerError(t testing.TB, what string, r result) result {
	t.Helper()
	if r.status >= 500 {
		t.Fatalf("%s: %d %s (%s)", what, r.status, r.code, r.message)
	}
	return r
}

// notify posts a notification's body as the App Store does.
func (r *appleRig) notify(t testing.TB, what string, body []byte) result {
	t.Helper()
	return noServerError(t, what, restCall(t, r.h, http.MethodPost, appleNotifyPath, body))
}

// deliver posts a notification twice (the App Store retries one it
// thinks lost): both are answered 200, and the repeat is not kept again.
func (r *appleRig) deliver(t testing.TB, what string, body []byte) {
	t.Helper()
	for try := 1; try <= 2; try++ {
		res := r.notify(t, fmt.Sprintf("%s (delivery %d)", what, try), body)
		expectOK(t, fmt.Sprintf("%s (delivery %d)", what, try), res, http.StatusOK)
		if jsonPath(res.data, "received") != true {
			t.Fatalf("%s: answer %v, want {received: true}", what, res.data)
		}
	}
}

// processed waits until the notification's job has worked it and returns
// it as kept.
func (r *appleRig) processed(t testing.TB, id string) billing.Notification {
	t.Helper()
	return billProcessed(t, r.h, subscriptions.AppStore, id)
}

// expectNotKept fails unless no notification with the id was kept.
func (r *appleRig) expectNotKept(t testing.TB, what, id string) {
	t.Helper()
	expectNotKept(t, r.h, subscriptions.AppStore, id, what)
}

// prove posts a StoreKit 2 signed transaction as the app does.
func (r *appleRig) prove(t testing.TB, what, access string, signed any) result {
	t.Helper()
	return noServerError(t, what, restCall(t, r.h, http.MethodPost, appleTxPath, map[string]any{"signedTransaction": signed}, withBearer(access)))
}

// mySubscription is GET /api/v1/subscription.
func mySubscription(t testing.TB, h *herald, access string) result {
	t.Helper()
	return restCall(t, h, http.MethodGet, "/api/v1/subscription", nil, withBearer(access))
}

// userSubscription is the admin's GET /api/v1/admin/users/{id}/subscription.
func userSubscription(t testing.TB, h *herald, admin, id string) result {
	t.Helper()
	return restCall(t, h, http.MethodGet, "/api/v1/admin/users/"+id+"/subscription", nil, withBearer(admin))
}

// detail reads the account's subscription as its owner and as the admin
// API see it, checks they agree, and returns the owner's and the history.
func (r *appleRig) detail(t testing.TB, access, id string) (sub map[string]any, history []map[string]any) {
	t.Helper()
	mine := mySubscription(t, r.h, access)
	expectOK(t, "GET /api/v1/subscription", mine, http.StatusOK)
	adm := userSubscription(t, r.h, r.admin, id)
	expectOK(t, "GET the user's subscription", adm, http.StatusOK)
	sub, _ = mine.data.(map[string]any)
	full, _ := adm.data.(map[string]any)
	rest := maps.Clone(full)
	delete(rest, "history")
	if !reflect.DeepEqual(sub, rest) {
		t.Fatalf("the owner sees %v, the admin API %v", sub, rest)
	}
	return sub, asObjects(t, full["history"])
}

func asObjects(t testing.TB, v any) []map[string]any {
	t.Helper()
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("%v (%T) is not an array", v, v)
	}
	out := make([]map[string]any, len(arr))
	for i, e := range arr {
		if out[i], ok = e.(map[string]any); !ok {
			t.Fatalf("element %d of %v is not an object", i, v)
		}
	}
	return out
}

// entitlement is the entitlement id in the subscription's entitlements.
func entitlement(t testing.TB, sub map[string]any, id string) map[string]any {
	t.Helper()
	for _, e := range asObjects(t, sub["entitlements"]) {
		if e["id"] == id {
			return e
		}
	}
	t.Fatalf("no entitlement %s in %v", id, sub["entitlements"])
	return nil
}

// timeOf parses a JSON time (nil for null).
func timeOf(t testing.TB, what string, v any) *time.Time {
	t.Helper()
	if v == nil {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%s: %v (%T) is not a time", what, v, v)
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s: %q: %v", what, s, err)
	}
	at = at.UTC()
	return &at
}

// expectTime fails unless the JSON time v is want (nil: null).
func expectTime(t testing.TB, what string, v any, want *time.Time) {
	t.Helper()
	got := timeOf(t, what, v)
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil || !got.Equal(*want):
		t.Fatalf("%s = %v, want %v", what, v, want)
	}
}

// userEvents are the subscription.* deliveries about the account.
func (r *billHooks) userEvents(userID string) []hookDelivery {
	var out []hookDelivery
	for _, d := range r.hooks.at(appleHookPath) {
		var p struct {
			Data struct {
				UserID string `json:"userId"`
			} `json:"data"`
		}
		if json.Unmarshal(d.body, &p) == nil && p.Data.UserID == userID {
			out = append(out, d)
		}
	}
	return out
}

func countOf(types []string) map[string]int {
	out := map[string]int{}
	for _, typ := range types {
		out[typ]++
	}
	return out
}

func countTypes(ds []hookDelivery) map[string]int {
	out := map[string]int{}
	for _, d := range ds {
		out[d.typ()]++
	}
	return out
}

// outboxOf counts the subscription.* events the server wrote about the
// account, by type: written with the change, so final once the change is.
func (r *billHooks) outboxOf(t testing.TB, userID string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, typ := range subscriptionEventTypes {
		evs, err := r.h.store(t).WebhookEvents(t.Context(), typ)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			var p struct {
				Data struct {
					UserID string `json:"userId"`
				} `json:"data"`
			}
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				t.Fatalf("event %s: %v", ev.ID, err)
			}
			if p.Data.UserID == userID {
				out[typ]++
			}
		}
	}
	return out
}

// eventsSince checks the account's events: the outbox holds exactly want
// (every event so far, by type), the receiver gets each once, and the
// deliveries not in seen are returned (and added to seen).
func (r *billHooks) eventsSince(t testing.TB, what, userID string, want map[string]int, seen map[string]bool) []hookDelivery {
	t.Helper()
	want = maps.Clone(want)
	maps.DeleteFunc(want, func(_ string, n int) bool { return n == 0 })
	if got := r.outboxOf(t, userID); !maps.Equal(got, want) {
		t.Fatalf("%s: the outbox holds %v for the account, want %v", what, got, want)
	}
	eventually(t, func() bool { return maps.Equal(countTypes(r.userEvents(userID)), want) },
		"%s: the receiver got %v for the account, want %v", what, countTypesLazy{r, userID}, want)
	var fresh []hookDelivery
	ids := map[string]bool{}
	for _, d := range r.userEvents(userID) {
		if ids[d.id()] {
			t.Fatalf("%s: event %s delivered twice", what, d.id())
		}
		ids[d.id()] = true
		if !seen[d.id()] {
			seen[d.id()] = true
			fresh = append(fresh, d)
		}
	}
	return fresh
}

// countTypesLazy prints the receiver's count when a wait fails.
type countTypesLazy struct {
	r      *billHooks
	userID string
}

func (c countTypesLazy) String() string { return fmt.Sprint(countTypes(c.r.userEvents(c.userID))) }

// lifecycle is what a subscription.* event's data must say.
type lifecycle struct {
	userID, entitlementID, productID, plan, state string
	expires                                       time.Time
	grace                                         *time.Time
	autoRenew                                     bool
	sub                                           map[string]any // the account's subscription after it
	previousPlan                                  string         // plan_changed only
}

// checkLifecycle checks a delivery's signature and its data's shape
// (internal/subscriptions.Lifecycle) and values.
func (r *appleRig) checkLifecycle(t testing.TB, what string, d hookDelivery, want lifecycle) {
	t.Helper()
	p := verifyHook(t, r.secret, d)
	data, _ := p["data"].(map[string]any)
	keys := []string{"autoRenew", "entitlementId", "expiresAt", "graceEndsAt", "plan", "productId", "source", "state", "subscriptionExpiresAt", "subscriptionPlan", "userId"}
	if d.typ() == webhooks.SubscriptionPlanChanged {
		keys = append(keys, "previousPlan")
	}
	slices.Sort(keys)
	if got := slices.Sorted(maps.Keys(data)); !slices.Equal(got, keys) {
		t.Fatalf("%s: %s data has %v, want %v", what, d.typ(), got, keys)
	}
	for k, v := range map[string]any{
		"userId": want.userID, "entitlementId": want.entitlementID, "source": "app_store", "productId": want.productID,
		"plan": want.plan, "state": want.state, "autoRenew": want.autoRenew, "subscriptionPlan": want.sub["plan"],
	} {
		if data[k] != v {
			t.Fatalf("%s: %s data %s = %v, want %v (data %v)", what, d.typ(), k, data[k], v, data)
		}
	}
	if d.typ() == webhooks.SubscriptionPlanChanged && data["previousPlan"] != want.previousPlan {
		t.Fatalf("%s: plan_changed previousPlan = %v, want %s", what, data["previousPlan"], want.previousPlan)
	}
	expectTime(t, what+": "+d.typ()+" expiresAt", data["expiresAt"], &want.expires)
	expectTime(t, what+": "+d.typ()+" graceEndsAt", data["graceEndsAt"], want.grace)
	// The subscription's end as the event has it, to the second the API
	// shows.
	ends := timeOf(t, what+": subscriptionExpiresAt", data["subscriptionExpiresAt"])
	if ends == nil || !ends.Truncate(time.Second).Equal(*timeOf(t, "expiresAt", want.sub["expiresAt"])) {
		t.Fatalf("%s: %s subscriptionExpiresAt %v, the subscription's expiresAt %v", what, d.typ(), data["subscriptionExpiresAt"], want.sub["expiresAt"])
	}
}

// expectExpiredAdmission registers a device for the account and expects
// SUBSCRIPTION_EXPIRED naming the subscription's end and plan, and the App
// Store's renew link.
func expectExpiredAdmission(t testing.TB, h *herald, what, access string, sub map[string]any) {
	t.Helper()
	r := registerDevice(t, h, restDoor.name, access, "ios", "apns-"+uuid.NewString(), "iPhone")
	expectError(t, what+": register a device", r, http.StatusForbidden, "SUBSCRIPTION_EXPIRED")
	want := map[string]any{"expiredAt": sub["expiresAt"], "plan": sub["plan"], "renewUrl": appleRenewURL}
	if !reflect.DeepEqual(r.details, want) {
		t.Fatalf("%s: SUBSCRIPTION_EXPIRED details %v, want %v", what, r.details, want)
	}
}

// appleStep is one notification of the lifecycle table and what it does.
type appleStep struct {
	name         string
	typ, subtype string
	// status is the purchase's status in Get All Subscription Statuses
	// (appstorefake.StatusActive …) as the fake's API answers it from
	// this step on; tx and renewal are its latest transaction and renewal
	// info, in the API and in the notification. tx without an original
	// transaction id is a notification without one (TEST).
	status  int
	tx      appstorefake.TransactionFields
	renewal appstorefake.RenewalFields

	// What the purchase's entitlement becomes; state "" when the
	// notification changes nothing.
	state     string
	plan      string
	expires   time.Time
	grace     *time.Time
	autoRenew bool
	// events are the subscription.* events the step emits; previousPlan
	// the plan a plan_changed names.
	events       []string
	previousPlan string
}

func (s appleStep) kind() string {
	if s.subtype == "" {
		return s.typ
	}
	return s.typ + "/" + s.subtype
}

// grants reports whether state gives access (until the period's end).
func grants(state string) bool {
	return state == "trial" || state == "active" || state == "grace" || state == "cancelled"
}

// appleLifecycle is one account's life in the App Store from now (whole
// seconds): a subscription bought, renewed, failing into grace and
// recovering, failing without grace, failing into grace that runs out,
// turned off and on, upgraded, downgraded at renewal, expired,
// resubscribed with an offer code and refunded; then a purchase shared by
// the family and revoked; and a TEST notification.
func appleLifecycle(now time.Time, userID string) []appleStep {
	const orig, family = "2000000000000001", "2000000000000100"
	tx := func(id, product string, bought time.Time, period time.Duration) appstorefake.TransactionFields {
		return appstorefake.TransactionFields{
			OriginalTransactionID: orig, TransactionID: id, ProductID: product, AppAccountToken: userID,
			OriginalPurchaseDate: now.Add(-time.Hour), PurchaseDate: bought, ExpiresDate: now.Add(period),
		}
	}
	first := tx(orig, appleBasic, now.Add(-60*time.Minute), 30*day)
	renewed := tx("2000000000000002", appleBasic, now.Add(-50*time.Minute), 60*day)
	recovered := tx("2000000000000003", appleBasic, now.Add(-40*time.Minute), 90*day)
	recovered2 := tx("2000000000000004", appleBasic, now.Add(-30*time.Minute), 120*day)
	recovered3 := tx("2000000000000005", appleBasic, now.Add(-20*time.Minute), 150*day)
	// An upgrade takes effect at once: a new period of the new product.
	upgraded := tx("2000000000000006", applePremium, now.Add(-10*time.Minute), 30*day)
	offer := tx("2000000000000007", appleBasic, now.Add(-5*time.Minute), 200*day)
	offer.OfferType = 3 // an offer code
	refunded := offer
	refunded.RevocationDate, refunded.RevocationReason = now.Add(-time.Minute), new(int)
	shared := appstorefake.TransactionFields{
		OriginalTransactionID: family, ProductID: applePremium, AppAccountToken: userID, InAppOwnershipType: "FAMILY_SHARED",
		OriginalPurchaseDate: now.Add(-3 * time.Minute), ExpiresDate: now.Add(30 * day),
	}
	revoked := shared
	revoked.RevocationDate = now.Add(-2 * time.Minute)

	on := appstorefake.RenewalFields{AutoRenewStatus: 1}
	off := appstorefake.RenewalFields{AutoRenewStatus: 0}
	grace1, grace2 := now.Add(76*day), now.Add(136*day)
	retrying := appstorefake.RenewalFields{AutoRenewStatus: 1, IsInBillingRetryPeriod: true}
	inGrace := func(until time.Time) appstorefake.RenewalFields {
		r := retrying
		r.GracePeriodExpiresDate = until
		return r
	}
	const (
		started, renewals, failed, recovers  = webhooks.SubscriptionStarted, webhooks.SubscriptionRenewed, webhooks.SubscriptionPaymentFailed, webhooks.SubscriptionRecovered
		expired, refunds, cancelled, changed = webhooks.SubscriptionExpired, webhooks.SubscriptionRefunded, webhooks.SubscriptionCancelled, webhooks.SubscriptionPlanChanged
	)
	const active, grace, onHold = appstorefake.StatusActive, appstorefake.StatusGrace, appstorefake.StatusBillingRetry
	return []appleStep{
		{name: "bought", typ: "SUBSCRIBED", subtype: "INITIAL_BUY", status: active, tx: first, renewal: on,
			state: "active", plan: "basic", expires: first.ExpiresDate, autoRenew: true, events: []string{started}},
		{name: "renewed", typ: "DID_RENEW", status: active, tx: renewed, renewal: on,
			state: "active", plan: "basic", expires: renewed.ExpiresDate, autoRenew: true, events: []string{renewals}},
		{name: "renewal fails, in grace", typ: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", status: grace, tx: renewed, renewal: inGrace(grace1),
			state: "grace", plan: "basic", expires: renewed.ExpiresDate, grace: &grace1, autoRenew: true, events: []string{failed}},
		{name: "billing recovers", typ: "DID_RENEW", subtype: "BILLING_RECOVERY", status: active, tx: recovered, renewal: on,
			state: "active", plan: "basic", expires: recovered.ExpiresDate, autoRenew: true, events: []string{recovers}},
		{name: "renewal fails, no grace", typ: "DID_FAIL_TO_RENEW", status: onHold, tx: recovered, renewal: retrying,
			state: "on_hold", plan: "basic", expires: recovered.ExpiresDate, autoRenew: true, events: []string{failed}},
		{name: "billing recovers again", typ: "DID_RENEW", subtype: "BILLING_RECOVERY", status: active, tx: recovered2, renewal: on,
			state: "active", plan: "basic", expires: recovered2.ExpiresDate, autoRenew: true, events: []string{recovers}},
		{name: "renewal fails into grace again", typ: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", status: grace, tx: recovered2, renewal: inGrace(grace2),
			state: "grace", plan: "basic", expires: recovered2.ExpiresDate, grace: &grace2, autoRenew: true, events: []string{failed}},
		{name: "grace runs out", typ: "GRACE_PERIOD_EXPIRED", status: onHold, tx: recovered2, renewal: retrying,
			state: "on_hold", plan: "basic", expires: recovered2.ExpiresDate, autoRenew: true},
		{name: "billing recovers a third time", typ: "DID_RENEW", subtype: "BILLING_RECOVERY", status: active, tx: recovered3, renewal: on,
			state: "active", plan: "basic", expires: recovered3.ExpiresDate, autoRenew: true, events: []string{recovers}},
		{name: "auto-renew turned off", typ: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", status: active, tx: recovered3, renewal: off,
			state: "cancelled", plan: "basic", expires: recovered3.ExpiresDate, events: []string{cancelled}},
		{name: "auto-renew turned on", typ: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_ENABLED", status: active, tx: recovered3, renewal: on,
			state: "active", plan: "basic", expires: recovered3.ExpiresDate, autoRenew: true, events: []string{recovers}},
		{name: "upgraded", typ: "DID_CHANGE_RENEWAL_PREF", subtype: "UPGRADE", status: active, tx: upgraded, renewal: on,
			state: "active", plan: "premium", expires: upgraded.ExpiresDate, autoRenew: true, events: []string{changed}, previousPlan: "basic"},
		{name: "downgrade at the next renewal", typ: "DID_CHANGE_RENEWAL_PREF", subtype: "DOWNGRADE", status: active, tx: upgraded,
			renewal: appstorefake.RenewalFields{AutoRenewStatus: 1, AutoRenewProductID: appleBasic}},
		{name: "expired", typ: "EXPIRED", subtype: "VOLUNTARY", status: appstorefake.StatusExpired, tx: upgraded, renewal: appstorefake.RenewalFields{ExpirationIntent: 1},
			state: "expired", plan: "premium", expires: upgraded.ExpiresDate, events: []string{expired}},
		{name: "resubscribed with an offer code", typ: "OFFER_REDEEMED", subtype: "RESUBSCRIBE", status: active, tx: offer, renewal: on,
			state: "active", plan: "basic", expires: offer.ExpiresDate, autoRenew: true, events: []string{started, changed}, previousPlan: "premium"},
		{name: "refunded", typ: "REFUND", status: appstorefake.StatusRevoked, tx: refunded, renewal: off,
			state: "refunded", plan: "basic", expires: refunded.ExpiresDate, events: []string{refunds}},
		{name: "shared by the family", typ: "SUBSCRIBED", subtype: "INITIAL_BUY", status: active, tx: shared, renewal: on,
			state: "active", plan: "premium", expires: shared.ExpiresDate, autoRenew: true, events: []string{started, changed}, previousPlan: "basic"},
		{name: "family sharing revoked", typ: "REVOKE", status: appstorefake.StatusRevoked, tx: revoked, renewal: off,
			state: "revoked", plan: "premium", expires: revoked.ExpiresDate, events: []string{expired}},
		{name: "test", typ: "TEST"},
	}
}

// testAppleLifecycle posts each notification of appleLifecycle (twice,
// as a retrying App Store would) and checks, once it is worked, the
// history row it wrote, the subscription and entitlement the owner and
// the admin API see, the device admission, and the events.
func testAppleLifecycle(t *testing.T, r *appleRig) {
	access, userID := newUserToken(t, r.h, restDoor.name, "ann@example.com")
	expectError(t, "before any purchase", mySubscription(t, r.h, access), http.StatusNotFound, "SUBSCRIPTION_NOT_FOUND")
	var (
		entIDs     = map[string]string{} // by original transaction id
		states     = map[string]string{} // the entitlement's state, by original transaction id
		events     = map[string]int{}
		seen       = map[string]bool{}
		prevSub    map[string]any
		prevRows   int
		admissions int
	)
	for _, s := range appleLifecycle(time.Now().UTC().Truncate(time.Second), userID) {
		ok := t.Run(s.name, func(t *testing.T) {
			from := time.Now().UTC().Truncate(time.Second)
			orig := s.tx.OriginalTransactionID
			if r.api && orig != "" {
				r.fake.SetSubscription(s.status, s.tx, s.renewal)
			}
			id := uuid.NewString()
			r.deliver(t, s.kind(), r.fake.NotificationWithUUID(id, s.typ, s.subtype, s.tx, s.renewal))
			n := r.processed(t, id)
			wantOutcome := "recorded: "
			if orig == "" {
				wantOutcome = "ignored"
			}
			if n.Kind != s.kind() || !strings.HasPrefix(n.Outcome, wantOutcome) {
				t.Fatalf("kept as %q, worked %q; want %q, %q…", n.Kind, n.Outcome, s.kind(), wantOutcome)
			}
			sub, history := r.detail(t, access, userID)
			to := time.Now().UTC()

			if s.state == "" {
				// Stored, and nothing changed: no history row, the same
				// subscription (but for when the store last said so).
				if len(history) != prevRows {
					t.Fatalf("%d history rows, want %d: %v", len(history), prevRows, history[0])
				}
				if !reflect.DeepEqual(withoutUpdatedAt(sub), withoutUpdatedAt(prevSub)) {
					t.Fatalf("subscription %v, want it unchanged: %v", sub, prevSub)
				}
				r.eventsSince(t, s.name, userID, events, seen)
				return
			}

			// One history row, whatever the repeat.
			if len(history) != prevRows+1 {
				t.Fatalf("%d history rows after %d, want one more: %v", len(history), prevRows, history)
			}
			row := history[0]
			if entIDs[orig] == "" {
				entIDs[orig] = fmt.Sprint(row["entitlementId"])
			}
			var wantFrom any
			if st, ok := states[orig]; ok {
				wantFrom = st
			}
			if row["entitlementId"] != entIDs[orig] || row["source"] != "app_store" || row["cause"] != "app_store:"+s.kind() ||
				row["from"] != wantFrom || row["to"] != s.state || row["plan"] != s.plan {
				t.Fatalf("history row %v, want entitlement %s, cause app_store:%s, from %v to %s, plan %s", row, entIDs[orig], s.kind(), wantFrom, s.state, s.plan)
			}
			expectTime(t, "history expiresAt", row["expiresAt"], &s.expires)
			states[orig] = s.state

			// The entitlement.
			e := entitlement(t, sub, entIDs[orig])
			if e["source"] != "app_store" || e["productId"] != s.tx.ProductID || e["plan"] != s.plan || e["state"] != s.state ||
				e["autoRenew"] != s.autoRenew || e["environment"] != "Production" {
				t.Fatalf("entitlement %v, want app_store %s (%s) %s, autoRenew %v, Production", e, s.tx.ProductID, s.plan, s.state, s.autoRenew)
			}
			expectTime(t, "entitlement expiresAt", e["expiresAt"], &s.expires)
			expectTime(t, "entitlement graceEndsAt", e["graceEndsAt"], s.grace)

			// The subscription: the step's purchase is the account's best.
			status, ends := "expired", (*time.Time)(nil)
			switch {
			case s.grace != nil:
				status, ends = "active", s.grace
			case grants(s.state):
				status, ends = "active", &s.expires
			}
			if sub["plan"] != s.plan || sub["status"] != status || sub["source"] != "app_store" || sub["autoRenew"] != (s.autoRenew && grants(s.state)) {
				t.Fatalf("subscription %v, want %s %s from app_store, autoRenew %v", sub, s.plan, status, s.autoRenew && grants(s.state))
			}
			expectTime(t, "subscription graceEndsAt", sub["graceEndsAt"], s.grace)
			if ends != nil {
				expectTime(t, "subscription expiresAt", sub["expiresAt"], ends)
			} else {
				// Access ended when the store said so: during this step.
				at := timeOf(t, "subscription expiresAt", sub["expiresAt"])
				if at == nil || at.Before(from) || at.After(to) {
					t.Fatalf("subscription expiresAt %v, want the moment of this step (%s … %s)", sub["expiresAt"], from, to)
				}
			}
			if status == "expired" {
				expectExpiredAdmission(t, r.h, s.name, access, sub)
				admissions++
			}

			// The events.
			for _, ev := range s.events {
				events[ev]++
			}
			fresh := r.eventsSince(t, s.name, userID, events, seen)
			if got, want := countTypes(fresh), countOf(s.events); !maps.Equal(got, want) {
				t.Fatalf("new events %v, want %v", got, want)
			}
			for _, d := range fresh {
				r.checkLifecycle(t, s.name, d, lifecycle{
					userID: userID, entitlementID: entIDs[orig], productID: s.tx.ProductID, plan: s.plan, state: s.state,
					expires: s.expires, grace: s.grace, autoRenew: s.autoRenew, sub: sub, previousPlan: s.previousPlan,
				})
			}
			prevSub, prevRows = sub, len(history)
		})
		if !ok {
			return
		}
	}
	// on hold twice, expired, refunded, revoked
	if admissions != 5 {
		t.Fatalf("%d device admissions checked, want 5", admissions)
	}
}

// withoutUpdatedAt is a subscription without its entitlements' updatedAt
// (which moves with every word of the store, changed or not).
func withoutUpdatedAt(sub map[string]any) map[string]any {
	out := maps.Clone(sub)
	var ents []any
	for _, e := range sub["entitlements"].([]any) {
		m := maps.Clone(e.(map[string]any))
		delete(m, "updatedAt")
		ents = append(ents, m)
	}
	out["entitlements"] = ents
	return out
}

// testAppleTransactions: an app posts the StoreKit 2 signed transaction
// after a purchase or a restore. The purchase's appAccountToken names its
// owner: the owner's subscription starts, another account's claim is
// PURCHASE_OWNED_ELSEWHERE. A purchase naming nobody is the first
// claimant's. A product no plan is mapped to is PRODUCT_UNKNOWN; a forged
// or misaddressed transaction is refused and changes nothing.
func testAppleTransactions(t *testing.T, r *appleRig) {
	bob, bobID := newUserToken(t, r.h, restDoor.name, "bob@example.com")
	cat, catID := newUserToken(t, r.h, restDoor.name, "cat@example.com")
	now := time.Now().UTC().Truncate(time.Second)
	purchase := func(orig, product, token string) appstorefake.TransactionFields {
		return appstorefake.TransactionFields{
			OriginalTransactionID: orig, ProductID: product, AppAccountToken: token,
			OriginalPurchaseDate: now.Add(-time.Minute), ExpiresDate: now.Add(30 * day),
		}
	}
	seen := map[string]bool{}
	expectActive := func(what string, res result, plan string, expires time.Time) map[string]any {
		t.Helper()
		expectOK(t, what, res, http.StatusOK)
		sub, _ := res.data.(map[string]any)
		if sub["plan"] != plan || sub["status"] != "active" || sub["source"] != "app_store" || sub["autoRenew"] != true || sub["graceEndsAt"] != nil {
			t.Fatalf("%s: subscription %v, want %s active from app_store, renewing", what, sub, plan)
		}
		expectTime(t, what+": expiresAt", sub["expiresAt"], &expires)
		ents := asObjects(t, sub["entitlements"])
		if len(ents) != 1 || ents[0]["state"] != "active" || ents[0]["plan"] != plan {
			t.Fatalf("%s: entitlements %v, want one, active %s", what, ents, plan)
		}
		return sub
	}

	bobs := purchase("3000000000000001", appleBasic, bobID)
	signed := r.fake.SignedTransaction(bobs)
	sub := expectActive("bob's purchase", r.prove(t, "bob's purchase", bob, signed), "basic", bobs.ExpiresDate)
	if mine := mySubscription(t, r.h, bob); !reflect.DeepEqual(mine.data, sub) {
		t.Fatalf("GET /api/v1/subscription %v, the purchase answered %v", mine.data, sub)
	}
	_, history := r.detail(t, bob, bobID)
	if len(history) != 1 || history[0]["cause"] != "purchase" || history[0]["from"] != nil || history[0]["to"] != "active" {
		t.Fatalf("history %v, want one purchase row", history)
	}
	started := map[string]int{webhooks.SubscriptionStarted: 1}
	for _, d := range r.eventsSince(t, "bob's purchase", bobID, started, seen) {
		r.checkLifecycle(t, "bob's purchase", d, lifecycle{
			userID: bobID, entitlementID: fmt.Sprint(history[0]["entitlementId"]), productID: appleBasic, plan: "basic", state: "active",
			expires: bobs.ExpiresDate, autoRenew: true, sub: sub,
		})
	}
	// A restore posts it again: the same subscription, no new row, no event.
	expectActive("bob's restore", r.prove(t, "bob's restore", bob, signed), "basic", bobs.ExpiresDate)
	if _, again := r.detail(t, bob, bobID); len(again) != 1 {
		t.Fatalf("history after the restore %v, want the one row", again)
	}
	expectError(t, "bob's purchase claimed by cat", r.prove(t, "cat's claim", cat, signed), http.StatusConflict, "PURCHASE_OWNED_ELSEWHERE")
	expectError(t, "cat after her claim", mySubscription(t, r.h, cat), http.StatusNotFound, "SUBSCRIPTION_NOT_FOUND")

	// Bought without an account token: the first to prove it owns it.
	nobodys := purchase("3000000000000002", applePremium, "")
	unnamed := r.fake.SignedTransaction(nobodys)
	expectActive("cat restores a purchase naming nobody", r.prove(t, "cat's restore", cat, unnamed), "premium", nobodys.ExpiresDate)
	expectError(t, "bob claims cat's", r.prove(t, "bob's claim", bob, unnamed), http.StatusConflict, "PURCHASE_OWNED_ELSEWHERE")
	r.eventsSince(t, "cat's restore", catID, started, seen)

	// Refusals: nothing changes for bob.
	before, _ := r.detail(t, bob, bobID)
	unknown := purchase("3000000000000003", "com.herald.vpn.lifetime", bobID)
	expectError(t, "an unmapped product", r.prove(t, "an unmapped product", bob, r.fake.SignedTransaction(unknown)), http.StatusUnprocessableEntity, "PRODUCT_UNKNOWN")
	other := purchase("3000000000000004", appleBasic, bobID)
	for _, c := range []struct {
		name   string
		signed any
		status int
		code   string
	}{
		{"signed by a chain to another root", r.fake.As(appstorefake.ForeignRoot).SignedTransaction(other), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"signed by another key", r.fake.As(appstorefake.ForeignKey).SignedTransaction(other), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"another app's", r.fake.Addressed("com.other.app", "Production").SignedTransaction(other), http.StatusForbidden, "BILLING_WRONG_APP"},
		{"the sandbox's", r.fake.Addressed(appleBundle, "Sandbox").SignedTransaction(other), http.StatusForbidden, "BILLING_WRONG_APP"},
		{"not a JWS", "not-a-jws", http.StatusBadRequest, "VALIDATION_ERROR"},
		{"empty", "", http.StatusBadRequest, "VALIDATION_ERROR"},
		{"not a string", 42, http.StatusBadRequest, "VALIDATION_ERROR"},
	} {
		expectError(t, c.name, r.prove(t, c.name, bob, c.signed), c.status, c.code)
	}
	after, history := r.detail(t, bob, bobID)
	if !reflect.DeepEqual(after, before) || len(history) != 1 {
		t.Fatalf("after the refusals: %v (history %v), want %v and one row", after, history, before)
	}
	r.eventsSince(t, "after the refusals", bobID, started, seen)
	expectError(t, "without a token", restCall(t, r.h, http.MethodPost, appleTxPath, map[string]any{"signedTransaction": signed}), http.StatusUnauthorized, "AUTH_REQUIRED")
}

// testApplePurchaseBeforeAccount: the App Store tells of a purchase that
// names no account (bought before signing in): it is kept, unlinked, and
// becomes the account's that proves it, as a purchase started for it.
func testApplePurchaseBeforeAccount(t *testing.T, r *appleRig) {
	dan, danID := newUserToken(t, r.h, restDoor.name, "dan@example.com")
	now := time.Now().UTC().Truncate(time.Second)
	tx := appstorefake.TransactionFields{
		OriginalTransactionID: "6000000000000001", ProductID: appleBasic,
		OriginalPurchaseDate: now.Add(-time.Minute), ExpiresDate: now.Add(30 * day),
	}
	on := appstorefake.RenewalFields{AutoRenewStatus: 1}
	if r.api {
		r.fake.SetSubscription(appstorefake.StatusActive, tx, on)
	}
	id := uuid.NewString()
	r.deliver(t, "SUBSCRIBED naming nobody", r.fake.NotificationWithUUID(id, "SUBSCRIBED", "INITIAL_BUY", tx, on))
	if n := r.processed(t, id); !strings.HasPrefix(n.Outcome, "recorded: ") {
		t.Fatalf("worked %q, want it recorded", n.Outcome)
	}
	expectError(t, "dan before proving it", mySubscription(t, r.h, dan), http.StatusNotFound, "SUBSCRIPTION_NOT_FOUND")

	res := r.prove(t, "dan restores", dan, r.fake.SignedTransaction(tx))
	expectOK(t, "dan restores", res, http.StatusOK)
	sub, history := r.detail(t, dan, danID)
	if sub["plan"] != "basic" || sub["status"] != "active" || sub["source"] != "app_store" {
		t.Fatalf("dan's subscription %v, want basic active from app_store", sub)
	}
	expectTime(t, "dan's expiresAt", sub["expiresAt"], &tx.ExpiresDate)
	if len(history) == 0 || history[0]["to"] != "active" {
		t.Fatalf("dan's history %v, want the purchase linked", history)
	}
	seen := map[string]bool{}
	for _, d := range r.eventsSince(t, "dan restores", danID, map[string]int{webhooks.SubscriptionStarted: 1}, seen) {
		r.checkLifecycle(t, "dan restores", d, lifecycle{
			userID: danID, entitlementID: fmt.Sprint(history[0]["entitlementId"]), productID: appleBasic, plan: "basic", state: "active",
			expires: tx.ExpiresDate, autoRenew: true, sub: sub,
		})
	}
}

// subscribedBasic signs up email, whose basic monthly subscription
// (originalID, bought an hour before now, renewing in 30 days) the App
// Store's API knows and a SUBSCRIBED notification has told.
func (r *appleRig) subscribedBasic(t *testing.T, email, originalID string) (access, userID string, now time.Time, tx appstorefake.TransactionFields, on appstorefake.RenewalFields) {
	t.Helper()
	access, userID = newUserToken(t, r.h, restDoor.name, email)
	now = time.Now().UTC().Truncate(time.Second)
	tx = appstorefake.TransactionFields{
		OriginalTransactionID: originalID, ProductID: appleBasic, AppAccountToken: userID,
		OriginalPurchaseDate: now.Add(-time.Hour), ExpiresDate: now.Add(30 * day),
	}
	on = appstorefake.RenewalFields{AutoRenewStatus: 1}
	r.fake.SetSubscription(appstorefake.StatusActive, tx, on)
	id := uuid.NewString()
	r.deliver(t, "SUBSCRIBED", r.fake.NotificationWithUUID(id, "SUBSCRIBED", "INITIAL_BUY", tx, on))
	r.processed(t, id)
	return access, userID, now, tx, on
}

// testAppleReconcile: the App Store renews and then refunds a purchase and
// no notification tells; the admin's reconcile reads the Server API and
// records each, as "reconcile".
func testAppleReconcile(t *testing.T, r *appleRig) {
	eve, eveID, now, tx, on := r.subscribedBasic(t, "eve@example.com", "4000000000000001")
	seen := map[string]bool{}
	events := map[string]int{webhooks.SubscriptionStarted: 1}
	r.eventsSince(t, "subscribed", eveID, events, seen)
	reconcile := func(what string) (map[string]any, []map[string]any) {
		t.Helper()
		res := noServerError(t, what, restCall(t, r.h, http.MethodPost, "/api/v1/admin/users/"+eveID+"/subscription/reconcile", nil, withBearer(r.admin)))
		expectOK(t, what, res, http.StatusOK)
		sub, history := r.detail(t, eve, eveID)
		answered, _ := res.data.(map[string]any)
		answered = maps.Clone(answered)
		delete(answered, "history")
		if !reflect.DeepEqual(answered, sub) {
			t.Fatalf("%s answered %v, the subscription is %v", what, answered, sub)
		}
		return sub, history
	}

	renewal := tx
	renewal.TransactionID, renewal.PurchaseDate, renewal.ExpiresDate = "4000000000000002", now.Add(-time.Minute), now.Add(60*day)
	r.fake.SetSubscription(appstorefake.StatusActive, renewal, on)
	if sub, _ := r.detail(t, eve, eveID); !timeOf(t, "expiresAt", sub["expiresAt"]).Equal(tx.ExpiresDate) {
		t.Fatalf("the renewal shows before anything told of it: %v", sub)
	}
	sub, history := reconcile("reconcile a missed renewal")
	expectTime(t, "expiresAt after the reconcile", sub["expiresAt"], &renewal.ExpiresDate)
	if sub["status"] != "active" || len(history) != 2 || history[0]["cause"] != "reconcile" || history[0]["from"] != "active" || history[0]["to"] != "active" {
		t.Fatalf("after reconciling the renewal: %v, history %v", sub, history)
	}
	events[webhooks.SubscriptionRenewed]++
	r.eventsSince(t, "reconciled renewal", eveID, events, seen)

	refunded := renewal
	refunded.RevocationDate, refunded.RevocationReason = now, new(int)
	r.fake.SetSubscription(appstorefake.StatusRevoked, refunded, appstorefake.RenewalFields{})
	from := time.Now().UTC().Truncate(time.Second)
	sub, history = reconcile("reconcile a missed refund")
	if sub["status"] != "expired" || sub["autoRenew"] != false || len(history) != 3 || history[0]["cause"] != "reconcile" || history[0]["to"] != "refunded" {
		t.Fatalf("after reconciling the refund: %v, history %v", sub, history)
	}
	if at := timeOf(t, "expiresAt", sub["expiresAt"]); at.Before(from) || at.After(time.Now()) {
		t.Fatalf("refunded subscription expiresAt %v, want the reconcile's moment", at)
	}
	events[webhooks.SubscriptionRefunded]++
	r.eventsSince(t, "reconciled refund", eveID, events, seen)

	// Nothing new in the store: nothing new here.
	if _, again := reconcile("reconcile again"); len(again) != 3 {
		t.Fatalf("history after a reconcile with nothing new: %v", again)
	}
	r.eventsSince(t, "reconcile again", eveID, events, seen)

	expectError(t, "reconcile an unknown user", restCall(t, r.h, http.MethodPost, "/api/v1/admin/users/"+uuid.NewString()+"/subscription/reconcile", nil, withBearer(r.admin)),
		http.StatusNotFound, "USER_NOT_FOUND")
	_, fredID := newUserToken(t, r.h, restDoor.name, "fred@example.com")
	expectError(t, "reconcile a user with no purchase", restCall(t, r.h, http.MethodPost, "/api/v1/admin/users/"+fredID+"/subscription/reconcile", nil, withBearer(r.admin)),
		http.StatusNotFound, "SUBSCRIPTION_NOT_FOUND")
	expectError(t, "reconcile as the user", restCall(t, r.h, http.MethodPost, "/api/v1/admin/users/"+eveID+"/subscription/reconcile", nil, withBearer(eve)),
		http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
}

// testApplePastRefund: the App Store refunds an earlier period of a
// purchase that has renewed since, and the REFUND notification is lost;
// the statuses show only the latest transaction, still paid. The
// reconciliation reads the transaction history's revoked transactions and
// records the refund once: one history row (cause past_refund, the state
// unchanged, expiresAt the refunded period's end) and one
// subscription.refunded naming the period, the access unchanged. A
// forged transaction in the history is refused and records nothing; a
// history of two pages is read whole, and the next run reads only what
// changed since (one page).
func testApplePastRefund(t *testing.T, r *appleRig) {
	hal, halID, now, tx, on := r.subscribedBasic(t, "hal@example.com", "4100000000000001")
	seen := map[string]bool{}
	events := map[string]int{webhooks.SubscriptionStarted: 1}
	r.eventsSince(t, "subscribed", halID, events, seen)
	reconcile := func(what string, access, id string) (map[string]any, []map[string]any) {
		t.Helper()
		res := noServerError(t, what, restCall(t, r.h, http.MethodPost, "/api/v1/admin/users/"+id+"/subscription/reconcile", nil, withBearer(r.admin)))
		expectOK(t, what, res, http.StatusOK)
		return r.detail(t, access, id)
	}

	// The first period renews, and Herald hears of it.
	renewal := tx
	renewal.TransactionID, renewal.PurchaseDate, renewal.ExpiresDate = "4100000000000002", tx.ExpiresDate, now.Add(60*day)
	r.fake.SetSubscription(appstorefake.StatusActive, renewal, on)
	before, history := reconcile("the renewal", hal, halID)
	events[webhooks.SubscriptionRenewed]++
	r.eventsSince(t, "the renewal", halID, events, seen)

	// The first period is refunded; no notification arrives.
	refunded := tx
	refunded.TransactionID = tx.OriginalTransactionID
	refunded.RevocationDate, refunded.RevocationReason = now.Add(time.Minute), new(int)
	r.fake.AddTransaction(refunded)
	base := history
	for run := 1; run <= 3; run++ {
		what := fmt.Sprintf("reconcile %d after the missed refund", run)
		if run == 3 {
			// The App Store changes the refunded transaction again: the
			// history gives it anew, and its transaction id records
			// nothing twice.
			r.fake.AddTransaction(refunded)
		}
		sub, got := reconcile(what, hal, halID)
		if !sameAccess(sub, before) {
			t.Fatalf("%s: the subscription became %v, was %v (access must not change)", what, sub, before)
		}
		if len(got) != len(base)+1 {
			t.Fatalf("%s: history %v, want one row more than %v", what, got, base)
		}
		row := got[0]
		if row["cause"] != "past_refund" || row["from"] != "active" || row["to"] != "active" || row["plan"] != "basic" {
			t.Fatalf("%s: the refund's row %v", what, row)
		}
		expectTime(t, what+": the row's expiresAt", row["expiresAt"], &tx.ExpiresDate)
		if run == 1 {
			events[webhooks.SubscriptionRefunded]++
		}
		fresh := r.eventsSince(t, what, halID, events, seen)
		if run > 1 {
			if len(fresh) != 0 {
				t.Fatalf("%s: new events %v", what, fresh)
			}
			continue
		}
		if len(fresh) != 1 || fresh[0].typ() != webhooks.SubscriptionRefunded {
			t.Fatalf("%s: events %v, want one subscription.refunded", what, fresh)
		}
		data, _ := verifyHook(t, r.secret, fresh[0])["data"].(map[string]any)
		period, _ := data["refundedPeriod"].(map[string]any)
		if data["state"] != "active" || data["userId"] != halID || data["subscriptionPlan"] != "basic" || period == nil ||
			period["transactionId"] != refunded.TransactionID || period["reason"] != "refunded" || period["productId"] != appleBasic {
			t.Fatalf("%s: subscription.refunded data %v", what, data)
		}
		expectTime(t, what+": the event's expiresAt", data["expiresAt"], &renewal.ExpiresDate)
		expectTime(t, what+": refundedPeriod.startsAt", period["startsAt"], &tx.OriginalPurchaseDate)
		expectTime(t, what+": refundedPeriod.endsAt", period["endsAt"], &tx.ExpiresDate)
		expectTime(t, what+": refundedPeriod.revokedAt", period["revokedAt"], &refunded.RevocationDate)
	}
	_, history = r.detail(t, hal, halID)

	// A forged refund in the history: refused, nothing recorded; the
	// account keeps its access.
	forged := renewal
	forged.TransactionID, forged.PurchaseDate, forged.ExpiresDate = "4100000000000009", tx.OriginalPurchaseDate, tx.OriginalPurchaseDate.Add(time.Hour)
	forged.RevocationDate, forged.RevocationReason = now, new(int)
	r.fake.As(appstorefake.ForeignKey).AddTransaction(forged)
	// The store's answer is at fault: 502 UPSTREAM_ERROR, not a 500 nor
	// the 401 of a forged notification (the admin did nothing wrong).
	res := restCall(t, r.h, http.MethodPost, "/api/v1/admin/users/"+halID+"/subscription/reconcile", nil, withBearer(r.admin))
	expectError(t, "reconcile a forged history", res, http.StatusBadGateway, "UPSTREAM_ERROR")
	if sub, got := r.detail(t, hal, halID); !sameAccess(sub, before) || !reflect.DeepEqual(got, history) {
		t.Fatalf("after a forged history: %v, history %v", sub, got)
	}
	r.eventsSince(t, "a forged history", halID, events, seen)

	// A refund Herald was told of (REFUND of the current period), then
	// the customer subscribes again in the same group: the refunded
	// transaction is now an earlier period's in the history, and is not
	// told a second time.
	jo, joID, now2, joTx, _ := r.subscribedBasic(t, "jo@example.com", "4300000000000001")
	joSeen := map[string]bool{}
	joEvents := map[string]int{webhooks.SubscriptionStarted: 1}
	joRefund := joTx
	joRefund.TransactionID = joTx.OriginalTransactionID
	joRefund.RevocationDate, joRefund.RevocationReason = now2, new(int)
	r.fake.SetSubscription(appstorefake.StatusRevoked, joRefund, appstorefake.RenewalFields{})
	refundID := uuid.NewString()
	r.deliver(t, "jo's REFUND", r.fake.NotificationWithUUID(refundID, "REFUND", "", joRefund, appstorefake.RenewalFields{}))
	r.processed(t, refundID)
	joEvents[webhooks.SubscriptionRefunded]++
	r.eventsSince(t, "jo's refund", joID, joEvents, joSeen)
	again := joTx
	again.TransactionID, again.PurchaseDate, again.ExpiresDate = "4300000000000002", now2.Add(time.Minute), joTx.ExpiresDate.Add(time.Minute)
	r.fake.SetSubscription(appstorefake.StatusActive, again, on)
	if sub, got := reconcile("jo subscribes again", jo, joID); sub["status"] != "active" || slices.ContainsFunc(got, func(c map[string]any) bool { return c["cause"] == "past_refund" }) {
		t.Fatalf("jo subscribes again: %v, history %v (the refund told already)", sub, got)
	}
	joEvents[webhooks.SubscriptionStarted]++
	r.eventsSince(t, "jo subscribes again", joID, joEvents, joSeen)

	// Three earlier periods refunded, two a page: both pages are read,
	// each refund recorded once; the next run reads one page, from where
	// the last ended.
	r.fake.SetPageSize(2)
	t.Cleanup(func() { r.fake.SetPageSize(20) })
	ivy, ivyID, _, first, _ := r.subscribedBasic(t, "ivy@example.com", "4200000000000001")
	ivySeen := map[string]bool{}
	ivyEvents := map[string]int{webhooks.SubscriptionStarted: 1}
	r.eventsSince(t, "ivy subscribed", ivyID, ivyEvents, ivySeen)
	var periods []appstorefake.TransactionFields
	for i := range 4 {
		p := first
		p.TransactionID = fmt.Sprintf("420000000000001%d", i)
		p.PurchaseDate = first.OriginalPurchaseDate.Add(time.Duration(i) * 30 * day)
		p.ExpiresDate = p.PurchaseDate.Add(30 * day)
		periods = append(periods, p)
	}
	r.fake.SetSubscription(appstorefake.StatusActive, periods[3], on)
	ivyBefore, ivyHistory := reconcile("ivy's renewals", ivy, ivyID)
	ivyEvents[webhooks.SubscriptionRenewed]++
	r.eventsSince(t, "ivy's renewals", ivyID, ivyEvents, ivySeen)
	for _, p := range periods[:3] {
		p.RevocationDate, p.RevocationReason = now, new(int)
		r.fake.AddTransaction(p)
	}
	pages := r.fake.HistoryPages()
	sub, got := reconcile("ivy's refunds", ivy, ivyID)
	if n := r.fake.HistoryPages() - pages; n != 2 {
		t.Fatalf("ivy's refunds: %d history pages read, want 2", n)
	}
	if !sameAccess(sub, ivyBefore) || len(got) != len(ivyHistory)+3 {
		t.Fatalf("ivy's refunds: %v, history %v (was %v)", sub, got, ivyHistory)
	}
	var refundedIDs []string
	ivyEvents[webhooks.SubscriptionRefunded] += 3
	for _, d := range r.eventsSince(t, "ivy's refunds", ivyID, ivyEvents, ivySeen) {
		data, _ := verifyHook(t, r.secret, d)["data"].(map[string]any)
		period, _ := data["refundedPeriod"].(map[string]any)
		refundedIDs = append(refundedIDs, fmt.Sprint(period["transactionId"]))
	}
	slices.Sort(refundedIDs)
	if want := []string{periods[0].TransactionID, periods[1].TransactionID, periods[2].TransactionID}; !slices.Equal(refundedIDs, want) {
		t.Fatalf("ivy's refunds told %v, want %v", refundedIDs, want)
	}
	pages = r.fake.HistoryPages()
	if _, again := reconcile("ivy again", ivy, ivyID); len(again) != len(got) {
		t.Fatalf("ivy again: history %v, was %v", again, got)
	}
	if n := r.fake.HistoryPages() - pages; n != 1 {
		t.Fatalf("ivy again: %d history pages read, want 1 (from the last revision)", n)
	}
	r.eventsSince(t, "ivy again", ivyID, ivyEvents, ivySeen)
}

// testApplePastRefundNotified: the App Store refunds an earlier period of
// a purchase that has renewed since, and tells it by a REFUND
// notification of that period's transaction. Its ingestion records it at
// once as the reconciliation would (one past_refund history row, one
// subscription.refunded naming the period, the access unchanged), with or
// without the Server API; the same REFUND delivered again, under its own
// uuid or another, and the reconciliation after it record nothing more;
// nor does a REFUND arriving after the reconciliation recorded it.
func testApplePastRefundNotified(t *testing.T, r *appleRig) {
	type account struct {
		access, id string
		tx         appstorefake.TransactionFields
		renewal    appstorefake.TransactionFields
		refunded   appstorefake.TransactionFields
		before     map[string]any
		history    []map[string]any
		events     map[string]int
		seen       map[string]bool
		reason     string
	}
	renewed := func(email, originalID string) *account {
		t.Helper()
		a := &account{events: map[string]int{webhooks.SubscriptionStarted: 1}, seen: map[string]bool{}, reason: "refunded"}
		var now time.Time
		var on appstorefake.RenewalFields
		a.access, a.id, now, a.tx, on = r.subscribedBasic(t, email, originalID)
		a.renewal = a.tx
		a.renewal.TransactionID = originalID[:len(originalID)-1] + "2"
		a.renewal.PurchaseDate, a.renewal.ExpiresDate = a.tx.ExpiresDate, now.Add(60*day)
		r.fake.SetSubscription(appstorefake.StatusActive, a.renewal, on)
		id := uuid.NewString()
		r.deliver(t, email+"'s DID_RENEW", r.fake.NotificationWithUUID(id, "DID_RENEW", "", a.renewal, on))
		r.processed(t, id)
		a.events[webhooks.SubscriptionRenewed]++
		r.eventsSince(t, email+" renewed", a.id, a.events, a.seen)
		a.before, a.history = r.detail(t, a.access, a.id)
		a.refunded = a.tx
		a.refunded.TransactionID = originalID
		a.refunded.RevocationDate, a.refunded.RevocationReason = now.Add(time.Minute), new(int)
		if r.api {
			r.fake.AddTransaction(a.refunded)
		}
		return a
	}
	// recordedOnce checks the refund was recorded once, just now.
	recordedOnce := func(what string, a *account) {
		t.Helper()
		sub, got := r.detail(t, a.access, a.id)
		if !sameAccess(sub, a.before) {
			t.Fatalf("%s: the subscription became %v, was %v (access must not change)", what, sub, a.before)
		}
		if len(got) != len(a.history)+1 {
			t.Fatalf("%s: history %v, want one row more than %v", what, got, a.history)
		}
		row := got[0]
		if row["cause"] != "past_refund" || row["from"] != "active" || row["to"] != "active" || row["plan"] != "basic" {
			t.Fatalf("%s: the refund's row %v", what, row)
		}
		expectTime(t, what+": the row's expiresAt", row["expiresAt"], &a.tx.ExpiresDate)
		a.history = got
		a.events[webhooks.SubscriptionRefunded]++
		fresh := r.eventsSince(t, what, a.id, a.events, a.seen)
		if len(fresh) != 1 || fresh[0].typ() != webhooks.SubscriptionRefunded {
			t.Fatalf("%s: events %v, want one subscription.refunded", what, fresh)
		}
		data, _ := verifyHook(t, r.secret, fresh[0])["data"].(map[string]any)
		period, _ := data["refundedPeriod"].(map[string]any)
		if data["state"] != "active" || data["userId"] != a.id || period == nil ||
			period["transactionId"] != a.refunded.TransactionID || period["reason"] != a.reason || period["productId"] != appleBasic {
			t.Fatalf("%s: subscription.refunded data %v", what, data)
		}
		expectTime(t, what+": the event's expiresAt", data["expiresAt"], &a.renewal.ExpiresDate)
		expectTime(t, what+": refundedPeriod.startsAt", period["startsAt"], &a.tx.OriginalPurchaseDate)
		expectTime(t, what+": refundedPeriod.endsAt", period["endsAt"], &a.tx.ExpiresDate)
		expectTime(t, what+": refundedPeriod.revokedAt", period["revokedAt"], &a.refunded.RevocationDate)
	}
	nothingMore := func(what string, a *account) {
		t.Helper()
		if sub, got := r.detail(t, a.access, a.id); !sameAccess(sub, a.before) || !reflect.DeepEqual(got, a.history) {
			t.Fatalf("%s: %v, history %v; want %v and %v unchanged", what, sub, got, a.before, a.history)
		}
		if fresh := r.eventsSince(t, what, a.id, a.events, a.seen); len(fresh) != 0 {
			t.Fatalf("%s: new events %v", what, fresh)
		}
	}
	refund := func(what string, a *account, want string) {
		t.Helper()
		id := uuid.NewString()
		typ := "REFUND"
		if a.reason == "revoked" {
			typ = "REVOKE"
		}
		r.deliver(t, what, r.fake.NotificationWithUUID(id, typ, "", a.refunded, appstorefake.RenewalFields{}))
		if n := r.processed(t, id); n.Outcome != want {
			t.Fatalf("%s: outcome %q, want %q", what, n.Outcome, want)
		}
	}
	reconcile := func(what string, a *account) {
		t.Helper()
		res := noServerError(t, what, restCall(t, r.h, http.MethodPost, "/api/v1/admin/users/"+a.id+"/subscription/reconcile", nil, withBearer(r.admin)))
		expectOK(t, what, res, http.StatusOK)
	}

	kim := renewed("kim@example.com", "4400000000000001")
	refund("kim's REFUND of the first period", kim, "recorded: past refund of "+kim.refunded.TransactionID)
	recordedOnce("kim's REFUND of the first period", kim)
	refund("kim's REFUND again, another uuid", kim, "ignored: past refund of "+kim.refunded.TransactionID+" recorded already")
	nothingMore("kim's REFUND again", kim)

	// Family Sharing withdrawn from an earlier period: REVOKE, the same.
	mo := renewed("mo@example.com", "4700000000000001")
	mo.reason = "revoked"
	mo.refunded.RevocationReason, mo.refunded.InAppOwnershipType = nil, "FAMILY_SHARED"
	refund("mo's REVOKE of the first period", mo, "recorded: past refund of "+mo.refunded.TransactionID)
	recordedOnce("mo's REVOKE of the first period", mo)
	if !r.api {
		return
	}
	reconcile("kim's reconcile after the REFUND", kim)
	nothingMore("kim's reconcile after the REFUND", kim)

	lee := renewed("lee@example.com", "4500000000000001")
	reconcile("lee's reconcile finds the refund", lee)
	recordedOnce("lee's reconcile finds the refund", lee)
	refund("lee's REFUND after the reconcile", lee, "ignored: past refund of "+lee.refunded.TransactionID+" recorded already")
	nothingMore("lee's REFUND after the reconcile", lee)
}

// testAppleProofsAtOnce: an app's proof of a purchase Herald does not
// know yet, posted twice at once (the app retries, or proves at purchase
// and at start) while the App Store's SUBSCRIBED for it arrives: every
// answer 200 (no 500 from the entitlement's unique key), one
// entitlement, one history row, one subscription.started. The race is a
// matter of timing, so it is run for several purchases, each its own
// account.
func testAppleProofsAtOnce(t *testing.T, r *appleRig) {
	now := time.Now().UTC().Truncate(time.Second)
	on := appstorefake.RenewalFields{AutoRenewStatus: 1}
	for i := range 8 {
		what := fmt.Sprintf("purchase %d: two proofs and SUBSCRIBED at once", i)
		access, id := newUserToken(t, r.h, restDoor.name, fmt.Sprintf("prover%d@example.com", i))
		tx := appstorefake.TransactionFields{
			OriginalTransactionID: fmt.Sprintf("46000000000000%02d", i), ProductID: appleBasic, AppAccountToken: id,
			OriginalPurchaseDate: now.Add(-time.Hour), ExpiresDate: now.Add(30 * day),
		}
		r.fake.SetSubscription(appstorefake.StatusActive, tx, on)
		proof, err := json.Marshal(map[string]string{"signedTransaction": r.fake.SignedTransaction(tx)})
		if err != nil {
			t.Fatal(err)
		}
		subscribed := uuid.NewString()
		type post struct {
			what, path, bearer string
			body               []byte
		}
		posts := []post{
			{"a proof", appleTxPath, access, proof},
			{"the same proof", appleTxPath, access, proof},
			{"SUBSCRIBED", appleNotifyPath, "", r.fake.NotificationWithUUID(subscribed, "SUBSCRIBED", "INITIAL_BUY", tx, on)},
		}
		answers := make([]string, len(posts))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for k, p := range posts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				req, err := http.NewRequest(http.MethodPost, r.h.BaseURL+p.path, bytes.NewReader(p.body))
				if err != nil {
					answers[k] = err.Error()
					return
				}
				req.Header.Set("Content-Type", "application/json")
				if p.bearer != "" {
					req.Header.Set("Authorization", "Bearer "+p.bearer)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					answers[k] = err.Error()
					return
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				if res.StatusCode != http.StatusOK {
					answers[k] = fmt.Sprintf("%d %s", res.StatusCode, b)
				}
			}()
		}
		close(start)
		wg.Wait()
		for k, a := range answers {
			if a != "" {
				t.Fatalf("%s: %s answered %s, want 200", what, posts[k].what, a)
			}
		}
		r.processed(t, subscribed)
		sub, history := r.detail(t, access, id)
		if ents := asObjects(t, sub["entitlements"]); len(ents) != 1 || sub["status"] != "active" || sub["plan"] != "basic" {
			t.Fatalf("%s: subscription %v, want one entitlement, basic active", what, sub)
		}
		if len(history) != 1 {
			t.Fatalf("%s: history %v, want one row", what, history)
		}
		r.eventsSince(t, what, id, map[string]int{webhooks.SubscriptionStarted: 1}, map[string]bool{})
	}
}

// sameAccess reports whether two subscriptions (GET /api/v1/subscription)
// say the same, but for when each entitlement was last read from its store
// (updatedAt moves with every read).
func sameAccess(a, b map[string]any) bool {
	strip := func(m map[string]any) map[string]any {
		m = maps.Clone(m)
		ents, _ := m["entitlements"].([]any)
		var out []any
		for _, e := range ents {
			em, _ := e.(map[string]any)
			em = maps.Clone(em)
			delete(em, "updatedAt")
			out = append(out, em)
		}
		m["entitlements"] = out
		return m
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// testAppleLateNotification: with the Server API, a notification is only
// a signal. One that arrives after the purchase moved on (a failed renewal
// told after the retry succeeded) records the API's state, not its own.
func testAppleLateNotification(t *testing.T, r *appleRig) {
	gus, gusID, now, tx, on := r.subscribedBasic(t, "gus@example.com", "7000000000000001")

	grace := now.Add(46 * day)
	lateID := uuid.NewString()
	late := r.fake.NotificationWithUUID(lateID, "DID_FAIL_TO_RENEW", "GRACE_PERIOD", tx,
		appstorefake.RenewalFields{AutoRenewStatus: 1, IsInBillingRetryPeriod: true, GracePeriodExpiresDate: grace})
	renewal := tx
	renewal.TransactionID, renewal.PurchaseDate, renewal.ExpiresDate = "7000000000000002", now.Add(-time.Minute), now.Add(60*day)
	r.fake.SetSubscription(appstorefake.StatusActive, renewal, on)
	r.deliver(t, "a late DID_FAIL_TO_RENEW", late)
	r.processed(t, lateID)
	sub, history := r.detail(t, gus, gusID)
	if sub["status"] != "active" || sub["graceEndsAt"] != nil || history[0]["to"] != "active" || history[0]["cause"] != "app_store:DID_FAIL_TO_RENEW/GRACE_PERIOD" {
		t.Fatalf("after a late failure notice: %v, history %v; want the API's renewal", sub, history)
	}
	expectTime(t, "expiresAt", sub["expiresAt"], &renewal.ExpiresDate)
	r.eventsSince(t, "a late failure notice", gusID, map[string]int{webhooks.SubscriptionStarted: 1, webhooks.SubscriptionRenewed: 1}, map[string]bool{})
}

// testAppleRefusals: a notification that is forged, meant for another app
// or environment, or not the App Store's format is refused with 4xx and
// kept nowhere; the same purchase told properly then counts.
func testAppleRefusals(t *testing.T, r *appleRig) {
	fay, fayID := newUserToken(t, r.h, restDoor.name, "fay@example.com")
	now := time.Now().UTC().Truncate(time.Second)
	tx := appstorefake.TransactionFields{
		OriginalTransactionID: "5000000000000001", ProductID: appleBasic, AppAccountToken: fayID,
		OriginalPurchaseDate: now.Add(-time.Hour), ExpiresDate: now.Add(30 * day),
	}
	on := appstorefake.RenewalFields{AutoRenewStatus: 1}
	if r.api {
		// The store's API would confirm it: only the refusal keeps it out.
		r.fake.SetSubscription(appstorefake.StatusActive, tx, on)
	}
	signedBy := func(f *appstorefake.Fake) func(string) []byte {
		return func(id string) []byte { return f.NotificationWithUUID(id, "SUBSCRIBED", "INITIAL_BUY", tx, on) }
	}
	raw := func(body string) func(string) []byte { return func(string) []byte { return []byte(body) } }
	for _, c := range []struct {
		name   string
		body   func(id string) []byte
		status int
		code   string
	}{
		{"signed by a chain to another root", signedBy(r.fake.As(appstorefake.ForeignRoot)), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"the fake's chain, signed by another key", signedBy(r.fake.As(appstorefake.ForeignKey)), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"signed by an expired leaf", signedBy(r.fake.As(appstorefake.ExpiredLeaf)), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"a leaf without Apple's marker", signedBy(r.fake.As(appstorefake.NoMarkers)), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID"},
		{"another app's", signedBy(r.fake.Addressed("com.other.app", "Production")), http.StatusForbidden, "BILLING_WRONG_APP"},
		{"the sandbox's", signedBy(r.fake.Addressed(appleBundle, "Sandbox")), http.StatusForbidden, "BILLING_WRONG_APP"},
		{"malformed JSON", raw(`{"signedPayload":`), http.StatusBadRequest, "VALIDATION_ERROR"},
		{"no signedPayload", raw(`{}`), http.StatusBadRequest, "VALIDATION_ERROR"},
		{"a signedPayload that is no JWS", raw(`{"signedPayload":"abc"}`), http.StatusBadRequest, "VALIDATION_ERROR"},
		{"a signedPayload that is no string", raw(`{"signedPayload":42}`), http.StatusBadRequest, "VALIDATION_ERROR"},
		{"an array", raw(`[]`), http.StatusBadRequest, "VALIDATION_ERROR"},
		{"empty", raw(``), http.StatusBadRequest, "VALIDATION_ERROR"},
	} {
		id := uuid.NewString()
		expectError(t, c.name, r.notify(t, c.name, c.body(id)), c.status, c.code)
		r.expectNotKept(t, c.name, id)
	}
	expectError(t, "fay after the refusals", mySubscription(t, r.h, fay), http.StatusNotFound, "SUBSCRIPTION_NOT_FOUND")

	id := uuid.NewString()
	r.deliver(t, "told properly", signedBy(r.fake)(id))
	r.processed(t, id)
	if sub, _ := r.detail(t, fay, fayID); sub["plan"] != "basic" || sub["status"] != "active" {
		t.Fatalf("fay's subscription %v, want basic active", sub)
	}
}

func TestAppleBillingE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		// With the in-app purchase key, each notification has the purchase
		// read from the Server API; without it, the notification's own word
		// is the state.
		for _, mode := range []struct {
			name string
			api  bool
		}{{"ServerAPI", true}, {"NotificationsOnly", false}} {
			t.Run(mode.name, func(t *testing.T) {
				r := startAppleRig(t, d, mode.api)
				t.Run("Lifecycle", func(t *testing.T) { testAppleLifecycle(t, r) })
				t.Run("PurchaseBeforeAccount", func(t *testing.T) { testApplePurchaseBeforeAccount(t, r) })
				t.Run("Refusals", func(t *testing.T) { testAppleRefusals(t, r) })
				t.Run("PastRefundNotified", func(t *testing.T) { testApplePastRefundNotified(t, r) })
				if mode.api {
					t.Run("Transactions", func(t *testing.T) { testAppleTransactions(t, r) })
					t.Run("ProofsAtOnce", func(t *testing.T) { testAppleProofsAtOnce(t, r) })
					t.Run("Reconcile", func(t *testing.T) { testAppleReconcile(t, r) })
					t.Run("PastRefund", func(t *testing.T) { testApplePastRefund(t, r) })
					t.Run("LateNotification", func(t *testing.T) { testAppleLateNotification(t, r) })
				}
			})
		}
	})
}

// A server with no store connected answers BILLING_NOT_CONFIGURED to the
// App Store's notifications and to an app's transactions, whatever they
// hold.
func TestAppleBillingNotConfiguredE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := appstorefake.New(t, appleBundle)
		h := startHerald(t, d, webhooksEnv(nil))
		access, userID := newUserToken(t, h, restDoor.name, "ann@example.com")
		tx := appstorefake.TransactionFields{
			OriginalTransactionID: "8000000000000001", ProductID: appleBasic, AppAccountToken: userID,
			OriginalPurchaseDate: time.Now().Add(-time.Hour), ExpiresDate: time.Now().Add(30 * day),
		}
		for _, body := range [][]byte{fake.Notification("SUBSCRIBED", "INITIAL_BUY", tx, appstorefake.RenewalFields{AutoRenewStatus: 1}), []byte(`{}`)} {
			expectError(t, "a notification", noServerError(t, "a notification", restCall(t, h, http.MethodPost, appleNotifyPath, body)), http.StatusNotFound, "BILLING_NOT_CONFIGURED")
		}
		res := restCall(t, h, http.MethodPost, appleTxPath, map[string]any{"signedTransaction": fake.SignedTransaction(tx)}, withBearer(access))
		expectError(t, "a transaction", noServerError(t, "a transaction", res), http.StatusNotFound, "BILLING_NOT_CONFIGURED")
		// The signup trial is all the account has.
		sub := mySubscription(t, h, access)
		expectOK(t, "the subscription", sub, http.StatusOK)
		if jsonPath(sub.data, "source") != "trial" {
			t.Fatalf("subscription %v, want the signup trial alone", sub.data)
		}
	})
}
