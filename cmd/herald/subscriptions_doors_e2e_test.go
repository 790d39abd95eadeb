package main

// Store subscriptions (issue 24) through both doors: the caller's
// subscription and its entitlements, an app's purchase, the Stripe links,
// and the admin detail with its history and reconciliation, the GraphQL
// door answering what the REST door answers (the same objects, the same
// refusals). With no store connected, and with the App Store connected to
// appstorefake, which signs with its own root and serves the App Store
// Server API.

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/billing/appstore/appstorefake"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

const (
	subscriptionFields = `plan status expiresAt source autoRenew graceEndsAt`
	entitlementFields  = `id source productId plan state startedAt expiresAt graceEndsAt autoRenew environment updatedAt`
	changeFields       = `id entitlementId source cause from to plan expiresAt at`
	detailFields       = subscriptionFields + ` entitlements { ` + entitlementFields + ` }`
	userDetailFields   = detailFields + ` history { ` + changeFields + ` }`
)

var subscriptionDocs = map[string]string{
	"mySubscription":        `query { mySubscription { ` + detailFields + ` } }`,
	"userSubscription":      `query UserSubscription($id: ID!) { userSubscription(id: $id) { ` + userDetailFields + ` } }`,
	"reconcileSubscription": `mutation Reconcile($userId: ID!) { reconcileSubscription(userId: $userId) { ` + userDetailFields + ` } }`,
	"appleTransaction":      `mutation Apple($signedTransaction: String!) { appleTransaction(signedTransaction: $signedTransaction) { ` + detailFields + ` } }`,
	"googlePurchase":        `mutation Google($purchaseToken: String!, $productId: String!) { googlePurchase(purchaseToken: $purchaseToken, productId: $productId) { ` + detailFields + ` } }`,
	"stripeCheckout":        `mutation Checkout($productId: String!) { stripeCheckout(productId: $productId) }`,
	"stripePortal":          `mutation { stripePortal }`,
}

// subscriptionOp runs an operation of store subscriptions through the
// door. REST's Stripe answers are reduced to GraphQL's: the URL.
func subscriptionOp(t testing.TB, h *herald, dn, op string, args map[string]any, opts ...reqOption) result {
	t.Helper()
	if dn == graphQLDoor.name {
		return gql(t, h, op, subscriptionDocs[op], args, opts...)
	}
	str := func(k string) string { s, _ := args[k].(string); return s }
	var method, path string
	var body any
	switch op {
	case "mySubscription":
		method, path = http.MethodGet, "/api/v1/subscription"
	case "userSubscription":
		method, path = http.MethodGet, "/api/v1/admin/users/"+url.PathEscape(str("id"))+"/subscription"
	case "reconcileSubscription":
		method, path = http.MethodPost, "/api/v1/admin/users/"+url.PathEscape(str("userId"))+"/subscription/reconcile"
	case "appleTransaction", "googlePurchase", "stripeCheckout":
		method, body = http.MethodPost, args
		path = map[string]string{
			"appleTransaction": "/api/v1/billing/apple/transactions",
			"googlePurchase":   "/api/v1/billing/google/purchases",
			"stripeCheckout":   "/api/v1/billing/stripe/checkout",
		}[op]
	case "stripePortal":
		method, path = http.MethodPost, "/api/v1/billing/stripe/portal"
	default:
		t.Fatalf("no REST route for %s", op)
	}
	status, env, hdr := h.rest(t, method, path, body, opts...)
	r := envelopeResult(t, op, status, env, hdr)
	if r.code == "" && (op == "stripeCheckout" || op == "stripePortal") {
		r.data = jsonPath(r.data, "url")
	}
	return r
}

// subscriptionOK runs op, expects a success and returns its object.
func subscriptionOK(t testing.TB, h *herald, dn, op string, args map[string]any, opts ...reqOption) map[string]any {
	t.Helper()
	r := subscriptionOp(t, h, dn, op, args, opts...)
	expectOK(t, dn+" "+op, r, http.StatusOK)
	m, ok := r.data.(map[string]any)
	if !ok {
		t.Fatalf("%s %s: not an object: %v", dn, op, r.data)
	}
	return m
}

// sameThroughBothDoors reads op through both doors and fails unless they
// answer the same object; it returns it.
func sameThroughBothDoors(t testing.TB, h *herald, op string, args map[string]any, opts ...reqOption) map[string]any {
	t.Helper()
	viaGraphQL := subscriptionOK(t, h, graphQLDoor.name, op, args, opts...)
	viaREST := subscriptionOK(t, h, restDoor.name, op, args, opts...)
	if !reflect.DeepEqual(viaGraphQL, viaREST) {
		t.Fatalf("%s: the doors answer differently\ngraphql: %v\nrest:    %v", op, viaGraphQL, viaREST)
	}
	return viaGraphQL
}

// listOf is the objects of a detail's list field.
func listOf(t testing.TB, detail map[string]any, field string) []map[string]any {
	t.Helper()
	raw, ok := detail[field].([]any)
	if !ok {
		t.Fatalf("%s is not a list: %v", field, detail)
	}
	out := make([]map[string]any, 0, len(raw))
	for _, v := range raw {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: an element is not an object: %v", field, v)
		}
		out = append(out, m)
	}
	return out
}

// expectFields fails unless m has each field with the value want names
// (nil: JSON null).
func expectFields(t testing.TB, what string, m map[string]any, want map[string]any) {
	t.Helper()
	for k, w := range want {
		got, has := m[k]
		if !has || !reflect.DeepEqual(got, w) {
			t.Fatalf("%s: %s = %#v (present %v), want %#v; all: %v", what, k, got, has, w, m)
		}
	}
}

// subscriptionOf is the subscription part of a detail: what me and a
// user record show.
func subscriptionOf(detail map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range strings.Fields(subscriptionFields) {
		out[k] = detail[k]
	}
	return out
}

// TestE2ESubscriptionDoors: no store connected. A new account's trial, as
// mySubscription, me and the admin detail show it through both doors; the
// billing operations refused alike by both; scopes; reconciling an account
// with no store purchase.
func TestE2ESubscriptionDoors(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, nil)
		admin := newAdminToken(t, h, "ops@example.com")
		reader, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "support", "scopes": []string{"accounts:read"}})
		writer, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "billing", "scopes": []string{"accounts:write"}})
		access, id := newUserToken(t, h, graphQLDoor.name, "ann@example.com")

		// The caller's subscription: the signup's trial.
		mine := sameThroughBothDoors(t, h, "mySubscription", nil, withBearer(access))
		expectFields(t, "mySubscription", mine, map[string]any{"plan": "trial", "status": "active", "source": "trial", "autoRenew": false, "graceEndsAt": nil})
		ents := listOf(t, mine, "entitlements")
		if len(ents) != 1 {
			t.Fatalf("entitlements after signup: %v, want the trial alone", ents)
		}
		expectFields(t, "the trial entitlement", ents[0], map[string]any{
			"source": "trial", "plan": "trial", "state": "trial", "productId": "", "environment": nil, "graceEndsAt": nil,
			"autoRenew": false, "expiresAt": mine["expiresAt"],
		})
		// me (and REST's users/me) show the same subscription.
		_, body := h.graphql(t, `{ me { subscription { `+subscriptionFields+` } } }`, nil, withBearer(access))
		if got := jsonPath(body, "data", "me", "subscription"); !reflect.DeepEqual(got, subscriptionOf(mine)) {
			t.Fatalf("me.subscription = %v, mySubscription says %v", got, subscriptionOf(mine))
		}
		status, env, _ := h.rest(t, http.MethodGet, "/api/v1/users/me", nil, withBearer(access))
		if got := jsonPath(env, "data", "subscription"); status != http.StatusOK || !reflect.DeepEqual(got, subscriptionOf(mine)) {
			t.Fatalf("GET /api/v1/users/me: %d subscription %v, mySubscription says %v", status, got, subscriptionOf(mine))
		}

		// The admin detail: the same, and the signup in the history.
		detail := sameThroughBothDoors(t, h, "userSubscription", map[string]any{"id": id}, key(reader))
		if !reflect.DeepEqual(detail["entitlements"], mine["entitlements"]) || !reflect.DeepEqual(subscriptionOf(detail), subscriptionOf(mine)) {
			t.Fatalf("userSubscription %v differs from mySubscription %v", detail, mine)
		}
		history := listOf(t, detail, "history")
		if len(history) != 1 {
			t.Fatalf("history after signup: %v, want one change", history)
		}
		expectFields(t, "the signup's change", history[0], map[string]any{
			"entitlementId": ents[0]["id"], "source": "trial", "cause": "signup", "from": nil, "to": "trial", "plan": "trial",
		})
		// An admin user reads it too (admins hold every scope).
		if got := subscriptionOK(t, h, graphQLDoor.name, "userSubscription", map[string]any{"id": id}, withBearer(admin)); !reflect.DeepEqual(got, detail) {
			t.Fatalf("userSubscription as an admin %v, with a read key %v", got, detail)
		}

		// No store is connected: each store operation is refused, alike
		// through both doors.
		garbage := "eyJhbGciOiJFUzI1NiJ9.garbage.garbage"
		for _, dn := range doorNames {
			for _, c := range []struct {
				what, op string
				args     map[string]any
				cred     reqOption
				status   int
				code     string
				detail   map[string]any
			}{
				{"an App Store transaction", "appleTransaction", map[string]any{"signedTransaction": garbage}, withBearer(access), http.StatusNotFound, "BILLING_NOT_CONFIGURED", nil},
				{"a Play purchase", "googlePurchase", map[string]any{"purchaseToken": "garbage", "productId": "premium_monthly"}, withBearer(access), http.StatusNotFound, "BILLING_NOT_CONFIGURED", nil},
				{"a Stripe checkout", "stripeCheckout", map[string]any{"productId": "price_premium"}, withBearer(access), http.StatusNotFound, "BILLING_NOT_CONFIGURED", nil},
				{"the Stripe portal", "stripePortal", nil, withBearer(access), http.StatusNotFound, "BILLING_NOT_CONFIGURED", nil},
				{"an empty transaction", "appleTransaction", map[string]any{"signedTransaction": " "}, withBearer(access), http.StatusBadRequest, "VALIDATION_ERROR", map[string]any{"field": "signedTransaction"}},
				{"a purchase without its product", "googlePurchase", map[string]any{"purchaseToken": "t", "productId": ""}, withBearer(access), http.StatusBadRequest, "VALIDATION_ERROR", map[string]any{"field": "productId"}},
				{"a checkout without a product", "stripeCheckout", map[string]any{"productId": ""}, withBearer(access), http.StatusBadRequest, "VALIDATION_ERROR", map[string]any{"field": "productId"}},
				{"own subscription without a token", "mySubscription", nil, nil, http.StatusUnauthorized, "AUTH_REQUIRED", nil},
				{"own subscription with a key", "mySubscription", nil, key(writer), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS", nil},
				{"a purchase with a key", "appleTransaction", map[string]any{"signedTransaction": garbage}, key(writer), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS", nil},
				{"the detail with a write-only key", "userSubscription", map[string]any{"id": id}, key(writer), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS", map[string]any{"scope": "accounts:read"}},
				{"the detail as a plain user", "userSubscription", map[string]any{"id": id}, withBearer(access), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS", map[string]any{"scope": "accounts:read"}},
				{"reconcile with a read key", "reconcileSubscription", map[string]any{"userId": id}, key(reader), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS", map[string]any{"scope": "accounts:write"}},
				{"the detail of nobody", "userSubscription", map[string]any{"id": "nobody"}, key(reader), http.StatusNotFound, "USER_NOT_FOUND", nil},
				{"reconcile nobody", "reconcileSubscription", map[string]any{"userId": "nobody"}, key(writer), http.StatusNotFound, "USER_NOT_FOUND", nil},
			} {
				var opts []reqOption
				if c.cred != nil {
					opts = append(opts, c.cred)
				}
				r := subscriptionOp(t, h, dn, c.op, c.args, opts...)
				expectError(t, dn+": "+c.what, r, c.status, c.code)
				for k, v := range c.detail {
					if r.details[k] != v {
						t.Fatalf("%s: %s: details %v, want %s %v", dn, c.what, r.details, k, v)
					}
				}
			}
		}

		// Reconciling an account with no store purchase reads nothing and
		// answers the detail as it is.
		for _, dn := range doorNames {
			if got := subscriptionOK(t, h, dn, "reconcileSubscription", map[string]any{"userId": id}, key(writer)); !reflect.DeepEqual(got, detail) {
				t.Fatalf("%s: reconcileSubscription %v, the detail was %v", dn, got, detail)
			}
		}
	})
}

// TestE2ESubscriptionDoorsAppStore: the App Store connected to a fake with
// its own root and Server API, no trial. An account has no subscription
// until the app posts its purchase; forged and misaddressed transactions
// are refused alike by both doors; a purchase through either door is the
// account's premium plan; an operator's reconcile reads the store's
// grace period into the subscription.
func TestE2ESubscriptionDoorsAppStore(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		const bundle, product = "com.example.vpn", "com.example.vpn.premium.monthly"
		fake := appstorefake.New(t, bundle)
		h := startHerald(t, d, map[string]string{
			"HERALD_TRIAL_PERIOD":           "0",
			"HERALD_RATE_LIMIT_AUTH":        "100", // four signups and their logins
			"HERALD_BILLING_PRODUCTS":       writeTemp(t, "products.json", []byte(`{"app_store": {"`+product+`": "premium"}}`)),
			"HERALD_APPLE_BUNDLE_ID":        bundle,
			"HERALD_APPLE_ROOT_CERT_FILE":   writeTemp(t, "root.pem", fake.RootPEM()),
			"HERALD_APPLE_PRIVATE_KEY_FILE": writeTemp(t, "key.p8", fake.KeyPEM()),
			"HERALD_APPLE_ISSUER_ID":        fake.IssuerID(),
			"HERALD_APPLE_KEY_ID":           fake.KeyID(),
			"HERALD_APPLE_API_URL":          fake.URL(),
		})
		admin := newAdminToken(t, h, "ops@example.com")
		reader, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "support", "scopes": []string{"accounts:read"}})
		writer, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "billing", "scopes": []string{"accounts:write"}})

		for i, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				access, id := newUserToken(t, h, dn, dn+"-bea@example.com")
				now := time.Now().UTC()
				tx := appstorefake.TransactionFields{
					OriginalTransactionID: fmt.Sprintf("20000000000001%02d", i),
					ProductID:             product,
					AppAccountToken:       id,
					OriginalPurchaseDate:  now.Add(-time.Hour),
					ExpiresDate:           now.Add(30 * 24 * time.Hour).Truncate(time.Second),
				}
				apple := func(signed string) result {
					return subscriptionOp(t, h, dn, "appleTransaction", map[string]any{"signedTransaction": signed}, withBearer(access))
				}

				// No trial: nothing until a purchase.
				expectError(t, "mySubscription before a purchase", subscriptionOp(t, h, dn, "mySubscription", nil, withBearer(access)), http.StatusNotFound, "SUBSCRIPTION_NOT_FOUND")
				expectError(t, "the detail before a purchase", subscriptionOp(t, h, dn, "userSubscription", map[string]any{"id": id}, key(reader)), http.StatusNotFound, "SUBSCRIPTION_NOT_FOUND")

				// Refusals: what is not a JWS; a chain to another root, or
				// signed by another key; another app; a store not connected.
				expectError(t, "not a JWS", apple("garbage"), http.StatusBadRequest, "VALIDATION_ERROR")
				expectError(t, "another root", apple(fake.As(appstorefake.ForeignRoot).SignedTransaction(tx)), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID")
				expectError(t, "another key", apple(fake.As(appstorefake.ForeignKey).SignedTransaction(tx)), http.StatusUnauthorized, "BILLING_SIGNATURE_INVALID")
				expectError(t, "another app", apple(fake.Addressed("com.example.other", "Production").SignedTransaction(tx)), http.StatusForbidden, "BILLING_WRONG_APP")
				expectError(t, "Google Play", subscriptionOp(t, h, dn, "googlePurchase", map[string]any{"purchaseToken": "t", "productId": "p"}, withBearer(access)),
					http.StatusNotFound, "BILLING_NOT_CONFIGURED")
				expectError(t, "mySubscription after the refusals", subscriptionOp(t, h, dn, "mySubscription", nil, withBearer(access)), http.StatusNotFound, "SUBSCRIPTION_NOT_FOUND")

				// The purchase: the account's plan, answered at once.
				fake.SetSubscription(appstorefake.StatusActive, tx, appstorefake.RenewalFields{AutoRenewStatus: 1})
				r := apple(fake.SignedTransaction(tx))
				expectOK(t, "the purchase", r, http.StatusOK)
				bought, _ := r.data.(map[string]any)
				expiry := tx.ExpiresDate.Format(time.RFC3339)
				expectFields(t, "after the purchase", bought, map[string]any{
					"plan": "premium", "status": "active", "source": "app_store", "autoRenew": true, "graceEndsAt": nil, "expiresAt": expiry,
				})
				ents := listOf(t, bought, "entitlements")
				if len(ents) != 1 {
					t.Fatalf("entitlements after the purchase: %v", ents)
				}
				expectFields(t, "the purchase's entitlement", ents[0], map[string]any{
					"source": "app_store", "productId": product, "plan": "premium", "state": "active", "environment": "Production", "expiresAt": expiry,
				})
				if mine := sameThroughBothDoors(t, h, "mySubscription", nil, withBearer(access)); !reflect.DeepEqual(mine, bought) {
					t.Fatalf("mySubscription %v, the purchase answered %v", mine, bought)
				}

				// The store says the renewal failed and grants a grace
				// period; an operator's reconcile reads it.
				grace := now.Add(6 * 24 * time.Hour).Truncate(time.Second)
				lapsed := tx
				lapsed.ExpiresDate = now.Add(-time.Minute)
				fake.SetSubscription(appstorefake.StatusGrace, lapsed, appstorefake.RenewalFields{AutoRenewStatus: 1, IsInBillingRetryPeriod: true, GracePeriodExpiresDate: grace})
				before := fake.Requests()
				reconciled := subscriptionOK(t, h, dn, "reconcileSubscription", map[string]any{"userId": id}, key(writer))
				if fake.Requests() <= before {
					t.Fatalf("reconcileSubscription did not ask the App Store Server API (%d requests before, %d after)", before, fake.Requests())
				}
				graceAt := grace.Format(time.RFC3339)
				expectFields(t, "after the reconcile", reconciled, map[string]any{
					"plan": "premium", "status": "active", "source": "app_store", "graceEndsAt": graceAt, "expiresAt": graceAt,
				})
				expectFields(t, "the entitlement in grace", listOf(t, reconciled, "entitlements")[0], map[string]any{"state": "grace", "graceEndsAt": graceAt})
				history := listOf(t, reconciled, "history")
				if len(history) != 2 {
					t.Fatalf("history: %v, want the purchase and the reconcile", history)
				}
				expectFields(t, "the reconcile's change (newest first)", history[0], map[string]any{"source": "app_store", "cause": "reconcile", "from": "active", "to": "grace"})
				expectFields(t, "the purchase's change", history[1], map[string]any{"source": "app_store", "cause": "purchase", "from": nil, "to": "active"})
				if detail := sameThroughBothDoors(t, h, "userSubscription", map[string]any{"id": id}, key(reader)); !reflect.DeepEqual(detail, reconciled) {
					t.Fatalf("userSubscription %v, reconcileSubscription answered %v", detail, reconciled)
				}

				// The purchase is this account's: another account posting
				// it is refused.
				other, _ := newUserToken(t, h, dn, dn+"-cal@example.com")
				expectError(t, "another account's purchase", subscriptionOp(t, h, dn, "appleTransaction", map[string]any{"signedTransaction": fake.SignedTransaction(tx)}, withBearer(other)),
					http.StatusConflict, "PURCHASE_OWNED_ELSEWHERE")
			})
		}
	})
}
