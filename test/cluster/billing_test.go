package cluster

// Store notifications on replicas (issue 24): the same notification
// delivered to every replica at the same moment, and again later (a
// store's retry), is kept once and worked once, so that each change of the
// purchase is one history row and one webhook event; every replica then
// reads the same subscription.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/herald-vpn/herald/internal/billing/appstore/appstorefake"
	"github.com/herald-vpn/herald/internal/billing/stripebill"
	"github.com/herald-vpn/herald/internal/billing/stripebill/stripefake"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/internal/webhooks"
)

const (
	billBundle  = "com.herald.vpn.cluster"
	billApple   = "com.herald.vpn.premium.monthly"
	billStripe  = "price_premium_monthly"
	billDay     = 24 * time.Hour
	applePath   = "/api/v1/billing/apple/notifications"
	appleTxPath = "/api/v1/billing/apple/transactions"
	stripePath  = "/api/v1/billing/stripe/webhook"
	billHooks   = "/subscriptions"
	buyerEmail  = "buyer@example.com"
	webBuyEmail = "web-buyer@example.com"
)

// billEvents are the lifecycle events the test's endpoint subscribes to.
var billEvents = []string{
	webhooks.SubscriptionStarted, webhooks.SubscriptionRenewed, webhooks.SubscriptionPaymentFailed, webhooks.SubscriptionRecovered,
	webhooks.SubscriptionExpired, webhooks.SubscriptionRefunded, webhooks.SubscriptionCancelled, webhooks.SubscriptionPlanChanged,
}

// billRig is a cluster connected to a fake App Store (with its Server
// API) and a fake Stripe, with a webhook receiver of the subscription
// events and a connection to the cluster's database for the counts.
type billRig struct {
	c      *cluster
	rs     []*replica
	apple  *appstorefake.Fake
	stripe *stripefake.Fake
	db     *pgx.Conn
	hooks  *hookSink
}

// hookSink records the webhook deliveries it gets.
type hookSink struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []hookGot
}

type hookGot struct{ id, typ, userID string }

func newHookSink(t *testing.T) *hookSink {
	s := &hookSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p struct {
			Type string
			Data struct {
				UserID string `json:"userId"`
			}
		}
		_ = json.Unmarshal(body, &p)
		s.mu.Lock()
		s.got = append(s.got, hookGot{id: r.Header.Get("webhook-id"), typ: p.Type, userID: p.Data.UserID})
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// of counts the account's deliveries by type, and the event ids
// delivered more than once.
func (s *hookSink) of(userID string) (types map[string]int, repeated []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	types, ids := map[string]int{}, map[string]int{}
	for _, g := range s.got {
		if g.userID != userID {
			continue
		}
		if ids[g.id]++; ids[g.id] == 2 {
			repeated = append(repeated, g.id)
		}
		types[g.typ]++
	}
	return types, repeated
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func startBillRig(t *testing.T) *billRig {
	t.Helper()
	apple := appstorefake.New(t, billBundle)
	stripe := stripefake.New(t)
	products, err := json.Marshal(map[string]map[string]string{"app_store": {billApple: "premium"}, "stripe": {billStripe: "premium"}})
	if err != nil {
		t.Fatal(err)
	}
	dbURL := ""
	c := newCluster(t, map[string]string{
		"HERALD_TRIAL_PERIOD":            "0",
		"HERALD_BILLING_PRODUCTS":        writeFile(t, "products.json", products),
		"HERALD_APPLE_BUNDLE_ID":         billBundle,
		"HERALD_APPLE_ENVIRONMENT":       "Production",
		"HERALD_APPLE_ROOT_CERT_FILE":    writeFile(t, "root.pem", apple.RootPEM()),
		"HERALD_APPLE_PRIVATE_KEY_FILE":  writeFile(t, "SubscriptionKey.p8", apple.KeyPEM()),
		"HERALD_APPLE_ISSUER_ID":         apple.IssuerID(),
		"HERALD_APPLE_KEY_ID":            apple.KeyID(),
		"HERALD_APPLE_API_URL":           apple.URL(),
		"HERALD_STRIPE_SECRET_KEY":       stripe.SecretKey(),
		"HERALD_STRIPE_WEBHOOK_SECRET":   stripe.WebhookSecret(),
		"HERALD_STRIPE_API_URL":          stripe.URL(),
		"HERALD_STRIPE_SUCCESS_URL":      "https://vpn.example.test/done",
		"HERALD_STRIPE_CANCEL_URL":       "https://vpn.example.test/billing",
		"HERALD_WEBHOOKS_ALLOW_INSECURE": "on",
		"HERALD_WEBHOOKS_ALLOW_PRIVATE":  "on",
		"HERALD_WEBHOOKS_RETRY_SCHEDULE": "100ms,100ms,100ms",
	})
	dbURL = c.Env["HERALD_DATABASE_URL"]
	c.Prepare(t)
	for _, email := range []string{buyerEmail, webBuyEmail} {
		c.CLI(t, "admin", "create", "--email", email, "--password", password)
	}
	rs := c.Start(t, replicas)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect to the cluster's database: %v", err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	r := &billRig{c: c, rs: rs, apple: apple, stripe: stripe, db: db, hooks: newHookSink(t)}
	admin := c.Login(t, opsEmail)
	c.MustGQL(t, "createWebhookEndpoint", admin, `mutation($u:String!,$e:[String!]!){createWebhookEndpoint(input:{url:$u,eventTypes:$e}){secret}}`,
		map[string]any{"u": r.hooks.srv.URL + billHooks, "e": billEvents})
	return r
}

// userID signs in as email and returns the account's id and access token.
func (r *billRig) user(t *testing.T, email string) (id, access string) {
	t.Helper()
	access = r.c.Login(t, email)
	d := r.c.MustGQL(t, "me", access, `{me{id}}`, nil)
	id, _ = jsonPath(d, "me", "id").(string)
	if id == "" {
		t.Fatalf("me: %v", d)
	}
	return id, access
}

// post sends a store's delivery to one replica.
func post(t *testing.T, rep *replica, path string, body []byte, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, rep.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := rep.Client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// deliverEverywhere posts the same delivery to every replica at the same
// moment (all requests wait on one start signal), then once more to one
// of them, as a store retries; every delivery must be answered 200.
func (r *billRig) deliverEverywhere(t *testing.T, what, path string, body []byte, header map[string]string) {
	t.Helper()
	type answer struct {
		replica string
		status  int
		body    string
	}
	start := make(chan struct{})
	answers := make(chan answer, len(r.rs))
	var wg sync.WaitGroup
	for _, rep := range r.rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			status, b := post(t, rep, path, body, header)
			answers <- answer{rep.Name, status, b}
		}()
	}
	close(start)
	wg.Wait()
	close(answers)
	for a := range answers {
		if a.status != http.StatusOK {
			t.Fatalf("%s at %s: %d %s, want 200", what, a.replica, a.status, a.body)
		}
	}
	retry := r.rs[len(r.rs)-1]
	if status, b := post(t, retry, path, body, header); status != http.StatusOK {
		t.Fatalf("%s delivered again to %s: %d %s, want 200", what, retry.Name, status, b)
	}
}

// count runs a counting query on the cluster's database.
func (r *billRig) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := r.db.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// settled waits until the notification was worked and no job about it is
// left to run, and checks it was kept once and given one job.
func (r *billRig) settled(t *testing.T, what, source, id string) {
	t.Helper()
	testsupport.Eventually(t, pollWait, func() bool {
		return r.count(t, `SELECT count(*) FROM billing_notifications WHERE source = $1 AND id = $2 AND processed_at IS NOT NULL`, source, id) == 1 &&
			r.count(t, `SELECT count(*) FROM river_job WHERE kind = 'billing_ingest' AND args->>'id' = $1 AND state NOT IN ('completed', 'discarded', 'cancelled')`, id) == 0
	}, "%s: the notification %s/%s was not worked", what, source, id)
	if n := r.count(t, `SELECT count(*) FROM river_job WHERE kind = 'billing_ingest' AND args->>'id' = $1`, id); n != 1 {
		t.Fatalf("%s: %d ingest jobs for the notification %s, want 1", what, n, id)
	}
}

// expectChanges checks the account's history rows (their causes, oldest
// first), the events the server wrote about it, and that the receiver got
// each of those once.
func (r *billRig) expectChanges(t *testing.T, what, userID string, causes []string, events map[string]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := r.db.Query(ctx, `SELECT cause FROM entitlement_changes WHERE account_id = $1 ORDER BY at, id`, userID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, causes) {
		t.Fatalf("%s: history %v, want %v", what, got, causes)
	}
	outbox := map[string]int{}
	for _, typ := range billEvents {
		if n := r.count(t, `SELECT count(*) FROM webhook_events WHERE type = $1 AND payload::jsonb->'data'->>'userId' = $2`, typ, userID); n > 0 {
			outbox[typ] = n
		}
	}
	if !maps.Equal(outbox, events) {
		t.Fatalf("%s: the server wrote %v about the account, want %v", what, outbox, events)
	}
	testsupport.Eventually(t, pollWait, func() bool {
		types, _ := r.hooks.of(userID)
		return maps.Equal(types, events)
	}, "%s: the receiver did not get %v", what, events)
	if _, repeated := r.hooks.of(userID); len(repeated) > 0 {
		t.Fatalf("%s: events delivered more than once: %v", what, repeated)
	}
}

// agree reads the account's subscription on every replica and checks
// they all answer the same; it returns it.
func (r *billRig) agree(t *testing.T, what, access string) map[string]any {
	t.Helper()
	var first map[string]any
	for _, rep := range r.rs {
		req, err := http.NewRequest(http.MethodGet, rep.URL+"/api/v1/subscription", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+access)
		resp, err := rep.Client.Do(req)
		if err != nil {
			t.Fatalf("%s: GET /api/v1/subscription at %s: %v", what, rep.Name, err)
		}
		var env struct {
			Data map[string]any `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&env)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: GET /api/v1/subscription at %s: %d %v", what, rep.Name, resp.StatusCode, err)
		}
		if first == nil {
			first = env.Data
		} else if !reflect.DeepEqual(first, env.Data) {
			t.Fatalf("%s: %s reads %v, %s %v", what, r.rs[0].Name, first, rep.Name, env.Data)
		}
	}
	return first
}

func expectSub(t *testing.T, what string, sub map[string]any, source, state string, expires time.Time) {
	t.Helper()
	at, _ := time.Parse(time.RFC3339, fmt.Sprint(sub["expiresAt"]))
	ents, _ := sub["entitlements"].([]any)
	var entState any
	if len(ents) == 1 {
		entState = jsonPath(ents[0].(map[string]any), "state")
	}
	if sub["plan"] != "premium" || sub["source"] != source || !at.Equal(expires) || len(ents) != 1 || entState != state {
		t.Fatalf("%s: subscription %v, want one %s entitlement %s until %s", what, sub, source, state, expires.Format(time.RFC3339))
	}
}

// The same App Store notification and the same Stripe event, each
// delivered to the three replicas at once and then retried, make one
// change each: one history row, one webhook event delivered once; the
// replicas read the same subscription after each.
func TestBillingOnceAcrossReplicas(t *testing.T) {
	r := startBillRig(t)
	now := time.Now().UTC().Truncate(time.Second)

	buyer, buyerAccess := r.user(t, buyerEmail)
	tx := appstorefake.TransactionFields{
		OriginalTransactionID: "9100000000000001", ProductID: billApple, AppAccountToken: buyer,
		OriginalPurchaseDate: now.Add(-time.Hour), ExpiresDate: now.Add(30 * billDay),
	}
	on := appstorefake.RenewalFields{AutoRenewStatus: 1}
	r.apple.SetSubscription(appstorefake.StatusActive, tx, on)
	subscribed := uuid.NewString()
	r.deliverEverywhere(t, "SUBSCRIBED", applePath, r.apple.NotificationWithUUID(subscribed, "SUBSCRIBED", "INITIAL_BUY", tx, on), nil)
	r.settled(t, "SUBSCRIBED", "app_store", subscribed)
	r.expectChanges(t, "SUBSCRIBED", buyer, []string{"app_store:SUBSCRIBED/INITIAL_BUY"}, map[string]int{webhooks.SubscriptionStarted: 1})
	expectSub(t, "SUBSCRIBED", r.agree(t, "SUBSCRIBED", buyerAccess), "app_store", "active", tx.ExpiresDate)

	renewal := tx
	renewal.TransactionID, renewal.PurchaseDate, renewal.ExpiresDate = "9100000000000002", now.Add(-time.Minute), now.Add(60*billDay)
	r.apple.SetSubscription(appstorefake.StatusActive, renewal, on)
	renewed := uuid.NewString()
	r.deliverEverywhere(t, "DID_RENEW", applePath, r.apple.NotificationWithUUID(renewed, "DID_RENEW", "", renewal, on), nil)
	r.settled(t, "DID_RENEW", "app_store", renewed)
	r.expectChanges(t, "DID_RENEW", buyer, []string{"app_store:SUBSCRIBED/INITIAL_BUY", "app_store:DID_RENEW"},
		map[string]int{webhooks.SubscriptionStarted: 1, webhooks.SubscriptionRenewed: 1})
	expectSub(t, "DID_RENEW", r.agree(t, "DID_RENEW", buyerAccess), "app_store", "active", renewal.ExpiresDate)

	webBuyer, webAccess := r.user(t, webBuyEmail)
	st := stripefake.Subscription{
		ID: "sub_cluster", Customer: "cus_cluster", Status: "active", PriceID: billStripe,
		StartDate: now, CurrentPeriodStart: now, CurrentPeriodEnd: now.Add(30 * billDay),
		Metadata: map[string]string{stripebill.MetadataUserID: webBuyer},
	}
	r.stripe.SetSubscription(st)
	created, sig := r.stripe.Event(stripebill.EventSubscriptionCreated, st)
	createdID := eventID(t, created)
	r.deliverEverywhere(t, "customer.subscription.created", stripePath, created, map[string]string{"Stripe-Signature": sig})
	r.settled(t, "customer.subscription.created", "stripe", createdID)
	r.expectChanges(t, "customer.subscription.created", webBuyer, []string{"stripe:" + stripebill.EventSubscriptionCreated},
		map[string]int{webhooks.SubscriptionStarted: 1})
	expectSub(t, "customer.subscription.created", r.agree(t, "customer.subscription.created", webAccess), "stripe", "active", st.CurrentPeriodEnd)

	st.CurrentPeriodStart, st.CurrentPeriodEnd = st.CurrentPeriodEnd, now.Add(60*billDay)
	r.stripe.SetSubscription(st)
	paid, sig := r.stripe.Event(stripebill.EventInvoicePaid, stripefake.Invoice{ID: "in_cluster_2", Customer: st.Customer, Subscription: st.ID})
	paidID := eventID(t, paid)
	r.deliverEverywhere(t, "invoice.paid", stripePath, paid, map[string]string{"Stripe-Signature": sig})
	r.settled(t, "invoice.paid", "stripe", paidID)
	r.expectChanges(t, "invoice.paid", webBuyer, []string{"stripe:" + stripebill.EventSubscriptionCreated, "stripe:" + stripebill.EventInvoicePaid},
		map[string]int{webhooks.SubscriptionStarted: 1, webhooks.SubscriptionRenewed: 1})
	expectSub(t, "invoice.paid", r.agree(t, "invoice.paid", webAccess), "stripe", "active", st.CurrentPeriodEnd)

	// The first purchase's account saw nothing of the second's.
	r.expectChanges(t, "in the end", buyer, []string{"app_store:SUBSCRIBED/INITIAL_BUY", "app_store:DID_RENEW"},
		map[string]int{webhooks.SubscriptionStarted: 1, webhooks.SubscriptionRenewed: 1})
}

// delivery is one store delivery to one replica.
type delivery struct {
	what, path string
	body       []byte
	header     map[string]string
	to         *replica
}

// deliverTogether posts each delivery to its replica at the same moment
// (all wait on one start signal), then each once more to another replica,
// as a store retries; every answer must be 200.
func (r *billRig) deliverTogether(t *testing.T, ds ...delivery) {
	t.Helper()
	start := make(chan struct{})
	type answer struct {
		d      delivery
		status int
		body   string
	}
	answers := make(chan answer, len(ds))
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			status, b := post(t, d.to, d.path, d.body, d.header)
			answers <- answer{d, status, b}
		}()
	}
	close(start)
	wg.Wait()
	close(answers)
	for a := range answers {
		if a.status != http.StatusOK {
			t.Fatalf("%s at %s: %d %s, want 200", a.d.what, a.d.to.Name, a.status, a.body)
		}
	}
	for i, d := range ds {
		other := r.rs[(i+len(ds))%len(r.rs)]
		if status, b := post(t, other, d.path, d.body, d.header); status != http.StatusOK {
			t.Fatalf("%s delivered again to %s: %d %s, want 200", d.what, other.Name, status, b)
		}
	}
}

// firstAttempt checks that the ingest job of each notification id
// succeeded at its first attempt: two replicas creating the same
// purchase's entitlement at once must not fail one of them (a unique
// violation retried later).
func (r *billRig) firstAttempt(t *testing.T, what string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if n := r.count(t, `SELECT count(*) FROM river_job WHERE kind = 'billing_ingest' AND args->>'id' = $1 AND (attempt > 1 OR cardinality(errors) > 0)`, id); n != 0 {
			var errs string
			_ = r.db.QueryRow(context.Background(), `SELECT COALESCE(errors::text, '') FROM river_job WHERE kind = 'billing_ingest' AND args->>'id' = $1`, id).Scan(&errs)
			t.Fatalf("%s: the ingest job of %s failed before it succeeded: %s", what, id, errs)
		}
	}
}

// entitlements counts the account's entitlements of source.
func (r *billRig) entitlements(t *testing.T, userID, source string) int {
	t.Helper()
	return r.count(t, `SELECT count(*) FROM entitlements WHERE account_id = $1 AND source = $2`, userID, source)
}

// Two different notifications of a purchase Herald does not know yet,
// arriving together at two replicas (the App Store's SUBSCRIBED at one
// and DID_RENEW at the other; Stripe's customer.subscription.created and
// invoice.paid), each worked by whichever replica's worker takes its job:
// both answered 200, one entitlement at the store's newest truth, one
// history row and one subscription.started (both read the same truth from
// the store's API), and every replica reads the same subscription.
func TestBillingDifferentNotificationsAtOnce(t *testing.T) {
	r := startBillRig(t)
	now := time.Now().UTC().Truncate(time.Second)

	buyer, buyerAccess := r.user(t, buyerEmail)
	tx := appstorefake.TransactionFields{
		OriginalTransactionID: "9200000000000001", ProductID: billApple, AppAccountToken: buyer,
		OriginalPurchaseDate: now.Add(-31 * billDay), ExpiresDate: now.Add(-billDay),
	}
	renewal := tx
	renewal.TransactionID, renewal.PurchaseDate, renewal.ExpiresDate = "9200000000000002", tx.ExpiresDate, now.Add(29*billDay)
	on := appstorefake.RenewalFields{AutoRenewStatus: 1}
	r.apple.SetSubscription(appstorefake.StatusActive, tx, on)
	r.apple.SetSubscription(appstorefake.StatusActive, renewal, on)
	subscribed, renewed := uuid.NewString(), uuid.NewString()
	r.deliverTogether(t,
		delivery{what: "SUBSCRIBED", path: applePath, body: r.apple.NotificationWithUUID(subscribed, "SUBSCRIBED", "INITIAL_BUY", tx, on), to: r.rs[0]},
		delivery{what: "DID_RENEW", path: applePath, body: r.apple.NotificationWithUUID(renewed, "DID_RENEW", "", renewal, on), to: r.rs[1]},
	)
	r.settled(t, "SUBSCRIBED", "app_store", subscribed)
	r.settled(t, "DID_RENEW", "app_store", renewed)
	if n := r.entitlements(t, buyer, "app_store"); n != 1 {
		t.Fatalf("%d App Store entitlements for the purchase, want 1", n)
	}
	r.firstAttempt(t, "SUBSCRIBED and DID_RENEW at once", subscribed, renewed)
	changes := r.count(t, `SELECT count(*) FROM entitlement_changes WHERE account_id = $1`, buyer)
	if changes != 1 {
		t.Fatalf("%d history rows, want 1 (both notifications read the same truth)", changes)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cause string
	if err := r.db.QueryRow(ctx, `SELECT cause FROM entitlement_changes WHERE account_id = $1`, buyer).Scan(&cause); err != nil {
		t.Fatal(err)
	}
	r.expectChanges(t, "SUBSCRIBED and DID_RENEW at once", buyer, []string{cause}, map[string]int{webhooks.SubscriptionStarted: 1})
	expectSub(t, "SUBSCRIBED and DID_RENEW at once", r.agree(t, "SUBSCRIBED and DID_RENEW at once", buyerAccess), "app_store", "active", renewal.ExpiresDate)

	webBuyer, webAccess := r.user(t, webBuyEmail)
	st := stripefake.Subscription{
		ID: "sub_cluster_together", Customer: "cus_cluster_together", Status: "active", PriceID: billStripe,
		StartDate: now, CurrentPeriodStart: now, CurrentPeriodEnd: now.Add(30 * billDay),
		Metadata: map[string]string{stripebill.MetadataUserID: webBuyer},
	}
	r.stripe.SetSubscription(st)
	created, createdSig := r.stripe.Event(stripebill.EventSubscriptionCreated, st)
	paid, paidSig := r.stripe.Event(stripebill.EventInvoicePaid, stripefake.Invoice{ID: "in_cluster_together", Customer: st.Customer, Subscription: st.ID})
	r.deliverTogether(t,
		delivery{what: "customer.subscription.created", path: stripePath, body: created, header: map[string]string{"Stripe-Signature": createdSig}, to: r.rs[1]},
		delivery{what: "invoice.paid", path: stripePath, body: paid, header: map[string]string{"Stripe-Signature": paidSig}, to: r.rs[2]},
	)
	r.settled(t, "customer.subscription.created", "stripe", eventID(t, created))
	r.settled(t, "invoice.paid", "stripe", eventID(t, paid))
	if n := r.entitlements(t, webBuyer, "stripe"); n != 1 {
		t.Fatalf("%d Stripe entitlements for the subscription, want 1", n)
	}
	r.firstAttempt(t, "created and invoice.paid at once", eventID(t, created), eventID(t, paid))
	if n := r.count(t, `SELECT count(*) FROM entitlement_changes WHERE account_id = $1`, webBuyer); n != 1 {
		t.Fatalf("%d history rows for the Stripe subscription, want 1", n)
	}
	if err := r.db.QueryRow(ctx, `SELECT cause FROM entitlement_changes WHERE account_id = $1`, webBuyer).Scan(&cause); err != nil {
		t.Fatal(err)
	}
	r.expectChanges(t, "created and invoice.paid at once", webBuyer, []string{cause}, map[string]int{webhooks.SubscriptionStarted: 1})
	expectSub(t, "created and invoice.paid at once", r.agree(t, "created and invoice.paid at once", webAccess), "stripe", "active", st.CurrentPeriodEnd)
}

// eventID reads a Stripe payload's event id.
func eventID(t *testing.T, payload []byte) string {
	t.Helper()
	var e struct{ ID string }
	if err := json.Unmarshal(payload, &e); err != nil || e.ID == "" {
		t.Fatalf("event without an id: %s", payload)
	}
	return e.ID
}

// An app's proof of a purchase Herald does not know yet, posted twice at
// once to two replicas (the app retries, or proves at purchase and at
// start), while the App Store's SUBSCRIBED for it arrives at the third:
// every answer 2xx (no 500 from the entitlement's unique key), one
// entitlement, one history row, one subscription.started, the
// notification's job done at its first attempt, and every replica reads
// the same subscription. The race is a matter of timing, so it is run
// for several purchases, each its own account.
func TestBillingProofsAtOnce(t *testing.T) {
	r := startBillRig(t)
	now := time.Now().UTC().Truncate(time.Second)
	const purchases = 8
	on := appstorefake.RenewalFields{AutoRenewStatus: 1}
	for i := range purchases {
		email := fmt.Sprintf("prover%d@example.com", i)
		r.c.CLI(t, "admin", "create", "--email", email, "--password", password)
		id, access := r.user(t, email)
		tx := appstorefake.TransactionFields{
			OriginalTransactionID: fmt.Sprintf("93000000000000%02d", i), ProductID: billApple, AppAccountToken: id,
			OriginalPurchaseDate: now.Add(-time.Hour), ExpiresDate: now.Add(30 * billDay),
		}
		r.apple.SetSubscription(appstorefake.StatusActive, tx, on)
		proof, err := json.Marshal(map[string]string{"signedTransaction": r.apple.SignedTransaction(tx)})
		if err != nil {
			t.Fatal(err)
		}
		bearer := map[string]string{"Authorization": "Bearer " + access}
		subscribed := uuid.NewString()
		what := fmt.Sprintf("purchase %d: two proofs and SUBSCRIBED at once", i)
		type answer struct {
			what   string
			status int
			body   string
		}
		start := make(chan struct{})
		answers := make(chan answer, 3)
		var wg sync.WaitGroup
		for _, d := range []delivery{
			{what: "proof", path: appleTxPath, body: proof, header: bearer, to: r.rs[0]},
			{what: "proof", path: appleTxPath, body: proof, header: bearer, to: r.rs[1]},
			{what: "SUBSCRIBED", path: applePath, body: r.apple.NotificationWithUUID(subscribed, "SUBSCRIBED", "INITIAL_BUY", tx, on), to: r.rs[2]},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				status, b := post(t, d.to, d.path, d.body, d.header)
				answers <- answer{d.what + " at " + d.to.Name, status, b}
			}()
		}
		close(start)
		wg.Wait()
		close(answers)
		for a := range answers {
			if a.status != http.StatusOK {
				t.Fatalf("%s: %s answered %d %s, want 200", what, a.what, a.status, a.body)
			}
		}
		r.settled(t, what, "app_store", subscribed)
		r.firstAttempt(t, what, subscribed)
		if n := r.entitlements(t, id, "app_store"); n != 1 {
			t.Fatalf("%s: %d App Store entitlements, want 1", what, n)
		}
		if n := r.count(t, `SELECT count(*) FROM entitlement_changes WHERE account_id = $1`, id); n != 1 {
			t.Fatalf("%s: %d history rows, want 1", what, n)
		}
		var cause string
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = r.db.QueryRow(ctx, `SELECT cause FROM entitlement_changes WHERE account_id = $1`, id).Scan(&cause)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		r.expectChanges(t, what, id, []string{cause}, map[string]int{webhooks.SubscriptionStarted: 1})
		expectSub(t, what, r.agree(t, what, access), "app_store", "active", tx.ExpiresDate)
	}
}
