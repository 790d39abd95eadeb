// Package stripefake is a fake Stripe for tests: an httptest.Server that
// speaks Stripe's form-encoded API with JSON answers (Checkout Sessions,
// billing portal sessions, subscriptions) for the key it issued, and
// webhook events signed as Stripe signs them (Stripe-Signature
// "t=<unix>,v1=<hex HMAC-SHA256 of "t.payload">").
package stripefake

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// APIVersion is the version the fake's events carry (stripe-go v82's).
const APIVersion = "2025-08-27.basil"

// Fake is a fake Stripe account.
type Fake struct {
	t      testing.TB
	srv    *httptest.Server
	key    string
	secret string

	mu        sync.Mutex
	now       func() time.Time
	seq       int
	subs      map[string]Subscription
	checkouts []Checkout
	portals   []Portal
	failures  []int
}

// New starts a fake, closed when the test ends.
func New(t testing.TB) *Fake {
	t.Helper()
	f := &Fake{
		t:      t,
		key:    "sk_test_" + token(24),
		secret: "whsec_" + token(32),
		now:    time.Now,
		subs:   map[string]Subscription{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/checkout/sessions", f.createCheckout)
	mux.HandleFunc("POST /v1/billing_portal/sessions", f.createPortal)
	mux.HandleFunc("GET /v1/subscriptions/{id}", f.getSubscription)
	f.srv = httptest.NewServer(f.guard(mux))
	t.Cleanup(f.srv.Close)
	return f
}

func token(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// URL is the API base to configure the client with.
func (f *Fake) URL() string { return f.srv.URL }

// SecretKey is the API key the fake accepts (sk_test_...).
func (f *Fake) SecretKey() string { return f.key }

// WebhookSecret is the endpoint secret the fake signs events with.
func (f *Fake) WebhookSecret() string { return f.secret }

// SetNow sets the fake's clock (events' created and signature times,
// sessions' created); time.Now by default.
func (f *Fake) SetNow(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = now
}

func (f *Fake) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now()
}

func (f *Fake) nextID(prefix string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	return fmt.Sprintf("%s_test_%06d%s", prefix, f.seq, token(8))
}

// FailNext makes the next API calls answer these statuses, one each, with
// Stripe's error body (429 → rate_limit, 5xx → api_error).
func (f *Fake) FailNext(statuses ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, statuses...)
}

// Subscription is a subscription's state, answered by GET
// /v1/subscriptions/{id} and usable as an event's object: it marshals to
// Stripe's JSON shape.
type Subscription struct {
	ID       string
	Customer string
	// Status is Stripe's: trialing, active, past_due, unpaid, paused,
	// canceled, incomplete, incomplete_expired.
	Status             string
	PriceID            string
	StartDate          time.Time
	CurrentPeriodStart time.Time
	CurrentPeriodEnd   time.Time
	CancelAtPeriodEnd  bool
	CancelAt           *time.Time
	EndedAt            *time.Time
	TrialEnd           *time.Time
	Metadata           map[string]string
	Livemode           bool
	// Legacy puts current_period_start/end on the subscription, as API
	// versions before 2025-03-31.basil did, instead of on its items.
	Legacy bool
}

func unixOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.Unix()
}

// MarshalJSON writes the subscription as Stripe does.
func (s Subscription) MarshalJSON() ([]byte, error) {
	md := s.Metadata
	if md == nil {
		md = map[string]string{}
	}
	item := map[string]any{
		"id":     "si_" + strings.TrimPrefix(s.ID, "sub_"),
		"object": "subscription_item",
		"price": map[string]any{
			"id": s.PriceID, "object": "price", "active": true, "currency": "usd",
			"recurring": map[string]any{"interval": "month", "interval_count": 1},
			"type":      "recurring",
		},
		"quantity":     1,
		"subscription": s.ID,
	}
	sub := map[string]any{
		"id":                   s.ID,
		"object":               "subscription",
		"customer":             s.Customer,
		"status":               s.Status,
		"start_date":           s.StartDate.Unix(),
		"created":              s.StartDate.Unix(),
		"cancel_at_period_end": s.CancelAtPeriodEnd,
		"cancel_at":            unixOrNil(s.CancelAt),
		"canceled_at":          unixOrNil(s.CancelAt),
		"ended_at":             unixOrNil(s.EndedAt),
		"trial_end":            unixOrNil(s.TrialEnd),
		"metadata":             md,
		"livemode":             s.Livemode,
		"collection_method":    "charge_automatically",
		"currency":             "usd",
		"items": map[string]any{
			"object":   "list",
			"data":     []any{item},
			"has_more": false,
			"url":      "/v1/subscription_items?subscription=" + s.ID,
		},
	}
	if s.Legacy {
		sub["current_period_start"] = s.CurrentPeriodStart.Unix()
		sub["current_period_end"] = s.CurrentPeriodEnd.Unix()
	} else {
		item["current_period_start"] = s.CurrentPeriodStart.Unix()
		item["current_period_end"] = s.CurrentPeriodEnd.Unix()
	}
	return json.Marshal(sub)
}

// SetSubscription sets (or replaces) the subscription the API answers.
func (f *Fake) SetSubscription(s Subscription) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs[s.ID] = s
}

// CheckoutSession is a Checkout Session as an event's object
// (checkout.session.completed).
type CheckoutSession struct {
	ID                string
	ClientReferenceID string
	Customer          string
	Subscription      string
	// Mode is "subscription" when "".
	Mode     string
	Metadata map[string]string
	Livemode bool
}

// MarshalJSON writes the session as Stripe does once completed.
func (s CheckoutSession) MarshalJSON() ([]byte, error) {
	mode := s.Mode
	if mode == "" {
		mode = "subscription"
	}
	md := s.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return json.Marshal(map[string]any{
		"id":                  s.ID,
		"object":              "checkout.session",
		"mode":                mode,
		"status":              "complete",
		"payment_status":      "paid",
		"client_reference_id": nilIfEmpty(s.ClientReferenceID),
		"customer":            nilIfEmpty(s.Customer),
		"subscription":        nilIfEmpty(s.Subscription),
		"metadata":            md,
		"livemode":            s.Livemode,
		"url":                 nil,
	})
}

// Invoice is an invoice as an event's object (invoice.paid,
// invoice.payment_failed).
type Invoice struct {
	ID           string
	Customer     string
	Subscription string
	// Status is "paid" when "".
	Status   string
	Livemode bool
	// Legacy puts the subscription at invoice.subscription, as API
	// versions before 2025-03-31.basil did, instead of
	// invoice.parent.subscription_details.subscription.
	Legacy bool
}

// MarshalJSON writes the invoice as Stripe does.
func (in Invoice) MarshalJSON() ([]byte, error) {
	status := in.Status
	if status == "" {
		status = "paid"
	}
	inv := map[string]any{
		"id":             in.ID,
		"object":         "invoice",
		"customer":       in.Customer,
		"status":         status,
		"billing_reason": "subscription_cycle",
		"livemode":       in.Livemode,
	}
	switch {
	case in.Legacy:
		inv["subscription"] = nilIfEmpty(in.Subscription)
	case in.Subscription != "":
		inv["parent"] = map[string]any{
			"type":          "subscription_details",
			"quote_details": nil,
			"subscription_details": map[string]any{
				"metadata":     map[string]string{},
				"subscription": in.Subscription,
			},
		}
	default:
		inv["parent"] = nil
	}
	return json.Marshal(inv)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Checkout is a Checkout Session the fake created, from the request's form.
type Checkout struct {
	ID                   string
	URL                  string
	Mode                 string
	Price                string
	Quantity             string
	ClientReferenceID    string
	Customer             string
	CustomerEmail        string
	Metadata             map[string]string
	SubscriptionMetadata map[string]string
	SuccessURL           string
	CancelURL            string
	IdempotencyKey       string
	StripeVersion        string
	// Form is the whole request.
	Form url.Values
}

// Checkouts lists the Checkout Sessions created, oldest first.
func (f *Fake) Checkouts() []Checkout {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Checkout(nil), f.checkouts...)
}

// Portal is a billing portal session the fake created.
type Portal struct {
	ID        string
	URL       string
	Customer  string
	ReturnURL string
}

// Portals lists the portal sessions created, oldest first.
func (f *Fake) Portals() []Portal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Portal(nil), f.portals...)
}

// guard answers as Stripe does for a missing or wrong key, and for the
// failures queued by FailNext.
func (f *Fake) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+f.key {
			writeError(w, http.StatusUnauthorized, "invalid_request_error", "", "Invalid API Key provided.")
			return
		}
		f.mu.Lock()
		var fail int
		if len(f.failures) > 0 {
			fail, f.failures = f.failures[0], f.failures[1:]
		}
		f.mu.Unlock()
		switch {
		case fail == http.StatusTooManyRequests:
			writeError(w, fail, "invalid_request_error", "rate_limit", "Too many requests hit the API too quickly.")
			return
		case fail != 0:
			writeError(w, fail, "api_error", "", "An unknown error occurred.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	e := map[string]any{"type": typ, "message": msg}
	if code != "" {
		e["code"] = code
		e["doc_url"] = "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(code, "_", "-")
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_"+token(14))
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func prefixed(form url.Values, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range form {
		if rest, ok := strings.CutPrefix(k, prefix+"["); ok && strings.HasSuffix(rest, "]") && len(v) > 0 {
			out[strings.TrimSuffix(rest, "]")] = v[0]
		}
	}
	return out
}

func (f *Fake) createCheckout(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "Invalid request body.")
		return
	}
	form := r.PostForm
	for _, p := range []string{"mode", "success_url"} {
		if form.Get(p) == "" {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_missing", "Missing required param: "+p+".")
			return
		}
	}
	if form.Get("customer") != "" && form.Get("customer_email") != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "You may only specify one of these parameters: customer, customer_email.")
		return
	}
	id := f.nextID("cs")
	c := Checkout{
		ID:                   id,
		URL:                  "https://checkout.stripe.com/c/pay/" + id,
		Mode:                 form.Get("mode"),
		Price:                form.Get("line_items[0][price]"),
		Quantity:             form.Get("line_items[0][quantity]"),
		ClientReferenceID:    form.Get("client_reference_id"),
		Customer:             form.Get("customer"),
		CustomerEmail:        form.Get("customer_email"),
		Metadata:             prefixed(form, "metadata"),
		SubscriptionMetadata: prefixed(form, "subscription_data[metadata]"),
		SuccessURL:           form.Get("success_url"),
		CancelURL:            form.Get("cancel_url"),
		IdempotencyKey:       r.Header.Get("Idempotency-Key"),
		StripeVersion:        r.Header.Get("Stripe-Version"),
		Form:                 form,
	}
	f.mu.Lock()
	f.checkouts = append(f.checkouts, c)
	now := f.now()
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"id":                  c.ID,
		"object":              "checkout.session",
		"url":                 c.URL,
		"mode":                c.Mode,
		"status":              "open",
		"payment_status":      "unpaid",
		"client_reference_id": nilIfEmpty(c.ClientReferenceID),
		"customer":            nilIfEmpty(c.Customer),
		"customer_email":      nilIfEmpty(c.CustomerEmail),
		"metadata":            c.Metadata,
		"success_url":         c.SuccessURL,
		"cancel_url":          nilIfEmpty(c.CancelURL),
		"subscription":        nil,
		"livemode":            false,
		"created":             now.Unix(),
		"expires_at":          now.Add(24 * time.Hour).Unix(),
	})
}

func (f *Fake) createPortal(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "Invalid request body.")
		return
	}
	customer := r.PostForm.Get("customer")
	if customer == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_missing", "Missing required param: customer.")
		return
	}
	id := f.nextID("bps")
	p := Portal{ID: id, URL: "https://billing.stripe.com/p/session/" + id, Customer: customer, ReturnURL: r.PostForm.Get("return_url")}
	f.mu.Lock()
	f.portals = append(f.portals, p)
	now := f.now()
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"id":            p.ID,
		"object":        "billing_portal.session",
		"configuration": "bpc_test_default",
		"created":       now.Unix(),
		"customer":      p.Customer,
		"livemode":      false,
		"locale":        nil,
		"on_behalf_of":  nil,
		"return_url":    nilIfEmpty(p.ReturnURL),
		"url":           p.URL,
	})
}

func (f *Fake) getSubscription(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f.mu.Lock()
	s, ok := f.subs[id]
	f.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "invalid_request_error", "resource_missing", fmt.Sprintf("No such subscription: '%s'", id))
		return
	}
	writeJSON(w, http.StatusOK, s)
}

// Envelope is the event Stripe would send for object: {id, object:
// "event", api_version, created, data: {object}, livemode,
// pending_webhooks, request, type}.
func (f *Fake) Envelope(typ string, object any) []byte {
	f.t.Helper()
	obj, err := json.Marshal(object)
	if err != nil {
		f.t.Fatalf("stripefake: event object: %v", err)
	}
	var live struct {
		Livemode bool `json:"livemode"`
	}
	_ = json.Unmarshal(obj, &live)
	payload, err := json.Marshal(map[string]any{
		"id":               f.nextID("evt"),
		"object":           "event",
		"api_version":      APIVersion,
		"created":          f.clock().Unix(),
		"data":             map[string]any{"object": json.RawMessage(obj)},
		"livemode":         live.Livemode,
		"pending_webhooks": 1,
		"request":          map[string]any{"id": nil, "idempotency_key": nil},
		"type":             typ,
	})
	if err != nil {
		f.t.Fatalf("stripefake: event: %v", err)
	}
	return payload
}

// Sign is the Stripe-Signature header for payload signed at t with
// secret: "t=<unix>,v1=<hex HMAC-SHA256(secret, "<unix>.<payload>")>".
func Sign(payload []byte, t time.Time, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.", t.Unix())
	mac.Write(payload)
	return fmt.Sprintf("t=%d,v1=%s", t.Unix(), hex.EncodeToString(mac.Sum(nil)))
}

// Event is a webhook delivery of an event of typ about object (a
// Subscription, CheckoutSession, Invoice, or any JSON value), signed now.
func (f *Fake) Event(typ string, object any) (payload []byte, signatureHeader string) {
	f.t.Helper()
	payload = f.Envelope(typ, object)
	return payload, Sign(payload, f.clock(), f.secret)
}

// StaleEvent is Event signed age ago (a replay outside the tolerance when
// age exceeds it).
func (f *Fake) StaleEvent(typ string, object any, age time.Duration) (payload []byte, signatureHeader string) {
	f.t.Helper()
	payload = f.Envelope(typ, object)
	return payload, Sign(payload, f.clock().Add(-age), f.secret)
}

// ForgedEvent is Event signed with another secret.
func (f *Fake) ForgedEvent(typ string, object any) (payload []byte, signatureHeader string) {
	f.t.Helper()
	payload = f.Envelope(typ, object)
	return payload, Sign(payload, f.clock(), "whsec_"+token(32))
}
