package stripebill_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/billing/stripebill"
	"github.com/herald-vpn/herald/internal/billing/stripebill/stripefake"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

var (
	now         = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	start       = now.AddDate(0, -2, 0)
	periodStart = now.AddDate(0, 0, -10)
	periodEnd   = periodStart.AddDate(0, 1, 0)
)

// setup is a fake and a client of it, both on the fixed clock.
func setup(t *testing.T) (*stripefake.Fake, *stripebill.Client) {
	t.Helper()
	f := stripefake.New(t)
	f.SetNow(func() time.Time { return now })
	c, err := stripebill.New(stripebill.Config{
		SecretKey:         f.SecretKey(),
		WebhookSecret:     f.WebhookSecret(),
		APIBase:           f.URL(),
		MaxNetworkRetries: new(int64), // the caller retries; no sleeps in tests
		Now:               func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

// liveClient verifies events signed by f with a live key (its API calls
// would be refused).
func liveClient(t *testing.T, f *stripefake.Fake) *stripebill.Client {
	t.Helper()
	c, err := stripebill.New(stripebill.Config{SecretKey: "sk_live_x", WebhookSecret: f.WebhookSecret(), APIBase: f.URL(),
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sub(status string) stripefake.Subscription {
	return stripefake.Subscription{
		ID:                 "sub_1",
		Customer:           "cus_1",
		Status:             status,
		PriceID:            "price_monthly",
		StartDate:          start,
		CurrentPeriodStart: periodStart,
		CurrentPeriodEnd:   periodEnd,
		Metadata:           map[string]string{stripebill.MetadataUserID: "user-1"},
	}
}

func ptr[T any](v T) *T { return &v }

// obs is the Observation of sub("...") in state st, observed at at.
func obs(st subscriptions.State, at time.Time, edit func(*subscriptions.Observation)) subscriptions.Observation {
	o := subscriptions.Observation{
		Source:      subscriptions.Stripe,
		ExternalID:  "sub_1",
		AccountHint: "user-1",
		ProductID:   "price_monthly",
		State:       st,
		StartedAt:   start,
		ExpiresAt:   periodEnd,
		AutoRenew:   true,
		Environment: "Sandbox",
		Customer:    "cus_1",
		ObservedAt:  at,
	}
	if edit != nil {
		edit(&o)
	}
	return o
}

func sameObservation(t *testing.T, got, want subscriptions.Observation) {
	t.Helper()
	gg, wg := got.GraceEndsAt, want.GraceEndsAt
	got.GraceEndsAt, want.GraceEndsAt = nil, nil
	if !got.StartedAt.Equal(want.StartedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) || !got.ObservedAt.Equal(want.ObservedAt) {
		t.Errorf("times: got started %v expires %v observed %v, want %v %v %v",
			got.StartedAt, got.ExpiresAt, got.ObservedAt, want.StartedAt, want.ExpiresAt, want.ObservedAt)
	}
	got.StartedAt, got.ExpiresAt, got.ObservedAt = want.StartedAt, want.ExpiresAt, want.ObservedAt
	if got != want {
		t.Errorf("observation:\n got %+v\nwant %+v", got, want)
	}
	if (gg == nil) != (wg == nil) || (gg != nil && !gg.Equal(*wg)) {
		t.Errorf("GraceEndsAt: got %v, want %v", gg, wg)
	}
}

// statusCases map each Stripe subscription status (and its cancel flags)
// to the Observation, for events and API reads alike.
var statusCases = []struct {
	name string
	sub  func(*stripefake.Subscription)
	want func(at time.Time) (subscriptions.Observation, error)
}{
	{"trialing", func(s *stripefake.Subscription) { s.Status = "trialing" },
		func(at time.Time) (subscriptions.Observation, error) {
			return obs(subscriptions.StateTrial, at, nil), nil
		}},
	{"trialing, will not convert", func(s *stripefake.Subscription) { s.Status, s.CancelAtPeriodEnd = "trialing", true },
		func(at time.Time) (subscriptions.Observation, error) {
			return obs(subscriptions.StateCancelled, at, func(o *subscriptions.Observation) { o.AutoRenew = false }), nil
		}},
	{"active", func(s *stripefake.Subscription) {},
		func(at time.Time) (subscriptions.Observation, error) {
			return obs(subscriptions.StateActive, at, nil), nil
		}},
	{"active, legacy period on the subscription", func(s *stripefake.Subscription) { s.Legacy = true },
		func(at time.Time) (subscriptions.Observation, error) {
			return obs(subscriptions.StateActive, at, nil), nil
		}},
	{"active, live mode", func(s *stripefake.Subscription) { s.Livemode = true },
		func(at time.Time) (subscriptions.Observation, error) {
			return obs(subscriptions.StateActive, at, func(o *subscriptions.Observation) { o.Environment = "Production" }), nil
		}},
	{"active, no user in metadata", func(s *stripefake.Subscription) { s.Metadata = nil },
		func(at time.Time) (subscriptions.Observation, error) {
			return obs(subscriptions.StateActive, at, func(o *subscriptions.Observation) { o.AccountHint = "" }), nil
		}},
	{"active, cancel at period end", func(s *stripefake.Subscription) { s.CancelAtPeriodEnd, s.CancelAt = true, ptr(periodEnd) },
		func(at time.Time) (subscriptions.Observation, error) {
			return obs(subscriptions.StateCancelled, at, func(o *subscriptions.Observation) { o.AutoRenew = false }), nil
		}},
	{"active, cancel_at before the period's end", func(s *stripefake.Subscription) { s.CancelAt = ptr(now.AddDate(0, 0, 3)) },
		func(at time.Time) (subscriptions.Observation, error) {
			return obs(subscriptions.StateCancelled, at, func(o *subscriptions.Observation) {
				o.AutoRenew, o.ExpiresAt = false, now.AddDate(0, 0, 3)
			}), nil
		}},
	{"past_due", func(s *stripefake.Subscription) { s.Status = "past_due" },
		func(at time.Time) (subscriptions.Observation, error) {
			return obs(subscriptions.StateGrace, at, func(o *subscriptions.Observation) { o.GraceEndsAt = ptr(periodEnd) }), nil
		}},
	{"unpaid", func(s *stripefake.Subscription) { s.Status = "unpaid" },
		func(at time.Time) (subscriptions.Observation, error) {
			return obs(subscriptions.StateOnHold, at, nil), nil
		}},
	{"paused", func(s *stripefake.Subscription) { s.Status = "paused" },
		func(at time.Time) (subscriptions.Observation, error) {
			return obs(subscriptions.StatePaused, at, nil), nil
		}},
	{"canceled", func(s *stripefake.Subscription) { s.Status, s.EndedAt = "canceled", ptr(now.Add(-time.Hour)) },
		func(at time.Time) (subscriptions.Observation, error) {
			return obs(subscriptions.StateExpired, at, func(o *subscriptions.Observation) {
				o.AutoRenew, o.ExpiresAt = false, now.Add(-time.Hour)
			}), nil
		}},
	{"incomplete_expired", func(s *stripefake.Subscription) { s.Status, s.EndedAt = "incomplete_expired", ptr(now) },
		func(at time.Time) (subscriptions.Observation, error) {
			return obs(subscriptions.StateExpired, at, func(o *subscriptions.Observation) { o.AutoRenew, o.ExpiresAt = false, now }), nil
		}},
	{"incomplete", func(s *stripefake.Subscription) { s.Status = "incomplete" },
		func(time.Time) (subscriptions.Observation, error) {
			return subscriptions.Observation{}, stripebill.ErrIncomplete
		}},
	{"unknown status", func(s *stripefake.Subscription) { s.Status = "frozen" },
		func(time.Time) (subscriptions.Observation, error) {
			return subscriptions.Observation{}, billing.ErrMalformed
		}},
	{"no price", func(s *stripefake.Subscription) { s.PriceID = "" },
		func(time.Time) (subscriptions.Observation, error) {
			return subscriptions.Observation{}, billing.ErrMalformed
		}},
}

func TestSubscriptionEvents(t *testing.T) {
	for _, typ := range []string{stripebill.EventSubscriptionCreated, stripebill.EventSubscriptionUpdated, stripebill.EventSubscriptionDeleted} {
		for _, tc := range statusCases {
			t.Run(typ+"/"+tc.name, func(t *testing.T) {
				f, c := setup(t)
				s := sub("active")
				tc.sub(&s)
				// The event was created a minute before it is delivered.
				f.SetNow(func() time.Time { return now.Add(-time.Minute) })
				payload, header := f.Event(typ, s)
				if s.Livemode { // a live event needs a live key
					c = liveClient(t, f)
				}
				ev, err := c.Event(payload, header)
				want, wantErr := tc.want(now.Add(-time.Minute))
				if wantErr != nil && !errors.Is(wantErr, stripebill.ErrIncomplete) {
					if !errors.Is(err, wantErr) {
						t.Fatalf("err = %v, want %v", err, wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type != typ || ev.ID == "" || !ev.Created.Equal(now.Add(-time.Minute)) || ev.Livemode != s.Livemode {
					t.Errorf("envelope: %+v", ev)
				}
				if ev.SubscriptionID != "sub_1" || ev.CustomerID != "cus_1" {
					t.Errorf("ids: %+v", ev)
				}
				if wantErr != nil { // incomplete: nothing to grant
					if ev.Observation != nil {
						t.Errorf("Observation = %+v, want nil", ev.Observation)
					}
					return
				}
				if ev.Observation == nil {
					t.Fatal("no Observation")
				}
				sameObservation(t, *ev.Observation, want)
			})
		}
	}
}

func TestSubscriptionRead(t *testing.T) {
	for _, tc := range statusCases {
		t.Run(tc.name, func(t *testing.T) {
			f, c := setup(t)
			s := sub("active")
			tc.sub(&s)
			f.SetSubscription(s)
			got, err := c.Subscription(context.Background(), "sub_1")
			want, wantErr := tc.want(now) // an API read is observed now
			if wantErr != nil {
				if !errors.Is(err, wantErr) {
					t.Fatalf("err = %v, want %v", err, wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sameObservation(t, got, want)
		})
	}
}

func TestSubscriptionReadFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fail   int
		unset  bool
		want   error
		notErr error
	}{
		{name: "404", unset: true, want: stripebill.ErrNoSubscription, notErr: billing.ErrUpstream},
		{name: "429", fail: http.StatusTooManyRequests, want: billing.ErrUpstream},
		{name: "500", fail: http.StatusInternalServerError, want: billing.ErrUpstream},
		{name: "503", fail: http.StatusServiceUnavailable, want: billing.ErrUpstream},
		{name: "400", fail: http.StatusBadRequest, notErr: billing.ErrUpstream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c := setup(t)
			if !tc.unset {
				f.SetSubscription(sub("active"))
			}
			if tc.fail != 0 {
				f.FailNext(tc.fail)
			}
			_, err := c.Subscription(context.Background(), "sub_1")
			if err == nil {
				t.Fatal("no error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if tc.notErr != nil && errors.Is(err, tc.notErr) {
				t.Errorf("err = %v, must not be %v", err, tc.notErr)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	f := stripefake.New(t)
	c, err := stripebill.New(stripebill.Config{
		SecretKey:         f.SecretKey(),
		WebhookSecret:     f.WebhookSecret(),
		APIBase:           "http://127.0.0.1:1", // nothing listens
		MaxNetworkRetries: new(int64),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Subscription(ctx, "sub_1"); !errors.Is(err, billing.ErrUpstream) {
		t.Errorf("Subscription: err = %v, want ErrUpstream", err)
	}
	if _, err := c.Portal(ctx, "cus_1", "https://herald.example/account"); !errors.Is(err, billing.ErrUpstream) {
		t.Errorf("Portal: err = %v, want ErrUpstream", err)
	}
}

func TestWrongKey(t *testing.T) {
	f := stripefake.New(t)
	c, err := stripebill.New(stripebill.Config{
		SecretKey:         "sk_test_not_the_fakes",
		WebhookSecret:     f.WebhookSecret(),
		APIBase:           f.URL(),
		MaxNetworkRetries: new(int64),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.SetSubscription(sub("active"))
	_, err = c.Subscription(context.Background(), "sub_1")
	if err == nil || errors.Is(err, billing.ErrUpstream) || errors.Is(err, stripebill.ErrNoSubscription) {
		t.Errorf("err = %v, want a 401 that is not upstream", err)
	}
}

func TestOtherEvents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		typ    string
		object any
		want   stripebill.Event
	}{
		{"checkout completed", stripebill.EventCheckoutCompleted,
			stripefake.CheckoutSession{ID: "cs_1", ClientReferenceID: "user-1", Customer: "cus_1", Subscription: "sub_1"},
			stripebill.Event{SubscriptionID: "sub_1", CustomerID: "cus_1", ClientReferenceID: "user-1"}},
		{"checkout completed, user only in metadata", stripebill.EventCheckoutCompleted,
			stripefake.CheckoutSession{ID: "cs_1", Customer: "cus_1", Subscription: "sub_1", Metadata: map[string]string{stripebill.MetadataUserID: "user-2"}},
			stripebill.Event{SubscriptionID: "sub_1", CustomerID: "cus_1", ClientReferenceID: "user-2"}},
		{"checkout completed, one-off payment", stripebill.EventCheckoutCompleted,
			stripefake.CheckoutSession{ID: "cs_1", Mode: "payment", ClientReferenceID: "user-1", Customer: "cus_1"},
			stripebill.Event{CustomerID: "cus_1", ClientReferenceID: "user-1"}},
		{"checkout completed, expanded subscription and customer", stripebill.EventCheckoutCompleted,
			map[string]any{"id": "cs_1", "object": "checkout.session", "mode": "subscription", "client_reference_id": "user-1",
				"customer": map[string]any{"id": "cus_1", "object": "customer"}, "subscription": map[string]any{"id": "sub_1", "object": "subscription"}},
			stripebill.Event{SubscriptionID: "sub_1", CustomerID: "cus_1", ClientReferenceID: "user-1"}},
		{"invoice paid", stripebill.EventInvoicePaid,
			stripefake.Invoice{ID: "in_1", Customer: "cus_1", Subscription: "sub_1"},
			stripebill.Event{SubscriptionID: "sub_1", CustomerID: "cus_1"}},
		{"invoice paid, legacy subscription field", stripebill.EventInvoicePaid,
			stripefake.Invoice{ID: "in_1", Customer: "cus_1", Subscription: "sub_1", Legacy: true},
			stripebill.Event{SubscriptionID: "sub_1", CustomerID: "cus_1"}},
		{"invoice paid, no subscription", stripebill.EventInvoicePaid,
			stripefake.Invoice{ID: "in_1", Customer: "cus_1"},
			stripebill.Event{CustomerID: "cus_1"}},
		{"invoice payment failed", stripebill.EventInvoicePaymentFailed,
			stripefake.Invoice{ID: "in_1", Customer: "cus_1", Subscription: "sub_1", Status: "open"},
			stripebill.Event{SubscriptionID: "sub_1", CustomerID: "cus_1"}},
		{"invoice payment failed, legacy", stripebill.EventInvoicePaymentFailed,
			stripefake.Invoice{ID: "in_1", Customer: "cus_1", Subscription: "sub_1", Status: "open", Legacy: true},
			stripebill.Event{SubscriptionID: "sub_1", CustomerID: "cus_1"}},
		{"unhandled type", "customer.created",
			map[string]any{"id": "cus_1", "object": "customer"},
			stripebill.Event{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c := setup(t)
			payload, header := f.Event(tc.typ, tc.object)
			ev, err := c.Event(payload, header)
			if err != nil {
				t.Fatal(err)
			}
			if ev.ID == "" || ev.Type != tc.typ || !ev.Created.Equal(now) || ev.Observation != nil {
				t.Errorf("envelope: %+v", ev)
			}
			if ev.SubscriptionID != tc.want.SubscriptionID || ev.CustomerID != tc.want.CustomerID || ev.ClientReferenceID != tc.want.ClientReferenceID {
				t.Errorf("got sub %q cus %q ref %q, want %q %q %q", ev.SubscriptionID, ev.CustomerID, ev.ClientReferenceID,
					tc.want.SubscriptionID, tc.want.CustomerID, tc.want.ClientReferenceID)
			}
		})
	}
}

func TestEventRefusals(t *testing.T) {
	s := sub("active")
	for _, tc := range []struct {
		name    string
		deliver func(f *stripefake.Fake) ([]byte, string)
		want    error
	}{
		{"wrong secret", func(f *stripefake.Fake) ([]byte, string) {
			return f.ForgedEvent(stripebill.EventSubscriptionUpdated, s)
		}, billing.ErrForged},
		{"replay outside tolerance", func(f *stripefake.Fake) ([]byte, string) {
			return f.StaleEvent(stripebill.EventSubscriptionUpdated, s, 301*time.Second)
		}, billing.ErrForged},
		{"signed in the future", func(f *stripefake.Fake) ([]byte, string) {
			p := f.Envelope(stripebill.EventSubscriptionUpdated, s)
			return p, stripefake.Sign(p, now.Add(10*time.Minute), f.WebhookSecret())
		}, billing.ErrForged},
		{"payload changed", func(f *stripefake.Fake) ([]byte, string) {
			p, h := f.Event(stripebill.EventSubscriptionUpdated, s)
			return append(p, ' '), h
		}, billing.ErrForged},
		{"no header", func(f *stripefake.Fake) ([]byte, string) {
			p, _ := f.Event(stripebill.EventSubscriptionUpdated, s)
			return p, ""
		}, billing.ErrForged},
		{"garbage header", func(f *stripefake.Fake) ([]byte, string) {
			p, _ := f.Event(stripebill.EventSubscriptionUpdated, s)
			return p, "t=abc,v1=zz"
		}, billing.ErrForged},
		{"v0 only", func(f *stripefake.Fake) ([]byte, string) {
			p, h := f.Event(stripebill.EventSubscriptionUpdated, s)
			return p, h[:len("t=")+10] + ",v0=" + h[len("t=")+10+len(",v1="):]
		}, billing.ErrForged},
		{"garbage payload, signed", func(f *stripefake.Fake) ([]byte, string) {
			p := []byte("not json")
			return p, stripefake.Sign(p, now, f.WebhookSecret())
		}, billing.ErrMalformed},
		{"not an event, signed", func(f *stripefake.Fake) ([]byte, string) {
			p := []byte(`{"id":"sub_1","object":"subscription"}`)
			return p, stripefake.Sign(p, now, f.WebhookSecret())
		}, billing.ErrMalformed},
		{"subscription event about an invoice", func(f *stripefake.Fake) ([]byte, string) {
			return f.Event(stripebill.EventSubscriptionUpdated, stripefake.Invoice{ID: "in_1", Customer: "cus_1"})
		}, billing.ErrMalformed},
		{"invoice event about a string", func(f *stripefake.Fake) ([]byte, string) {
			return f.Event(stripebill.EventInvoicePaid, "in_1")
		}, billing.ErrMalformed},
		{"live event at a test key", func(f *stripefake.Fake) ([]byte, string) {
			live := s
			live.Livemode = true
			return f.Event(stripebill.EventSubscriptionUpdated, live)
		}, billing.ErrMisaddressed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c := setup(t)
			payload, header := tc.deliver(f)
			if _, err := c.Event(payload, header); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestEventWithinTolerance(t *testing.T) {
	f, c := setup(t)
	payload, header := f.StaleEvent(stripebill.EventSubscriptionUpdated, sub("active"), 299*time.Second)
	if _, err := c.Event(payload, header); err != nil {
		t.Fatalf("299s old: %v", err)
	}
	// A shorter configured tolerance refuses it.
	short, err := stripebill.New(stripebill.Config{SecretKey: f.SecretKey(), WebhookSecret: f.WebhookSecret(),
		APIBase: f.URL(), Tolerance: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := short.Event(payload, header); !errors.Is(err, billing.ErrForged) {
		t.Fatalf("tolerance 1m: err = %v, want ErrForged", err)
	}
}

func TestEventRolledSecret(t *testing.T) {
	// While a secret is rolled Stripe signs with both: any v1 verifies.
	f, c := setup(t)
	payload, header := f.Event(stripebill.EventSubscriptionUpdated, sub("active"))
	other := stripefake.Sign(payload, now, "whsec_old")
	_, v1, _ := strings.Cut(other, ",")
	if _, err := c.Event(payload, header[:len("t=")+10]+","+v1+header[len("t=")+10:]); err != nil {
		t.Fatal(err)
	}
}

func TestCheckout(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   stripebill.CheckoutInput
		// wantCustomer, wantEmail are what the session was made for.
		wantCustomer, wantEmail string
	}{
		{"by email", stripebill.CheckoutInput{UserID: "user-1", PriceID: "price_monthly", CustomerEmail: "a@example.com",
			SuccessURL: "https://herald.example/ok", CancelURL: "https://herald.example/no"}, "", "a@example.com"},
		{"known customer", stripebill.CheckoutInput{UserID: "user-1", PriceID: "price_monthly", CustomerID: "cus_1", CustomerEmail: "a@example.com",
			SuccessURL: "https://herald.example/ok", CancelURL: "https://herald.example/no", IdempotencyKey: "ck-1"}, "cus_1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c := setup(t)
			url, err := c.Checkout(context.Background(), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			cs := f.Checkouts()
			if len(cs) != 1 {
				t.Fatalf("%d checkouts", len(cs))
			}
			got := cs[0]
			if url != got.URL {
				t.Errorf("url %q, want %q", url, got.URL)
			}
			if got.Mode != "subscription" || got.Price != "price_monthly" || got.Quantity != "1" || got.ClientReferenceID != "user-1" ||
				got.Metadata[stripebill.MetadataUserID] != "user-1" || got.SubscriptionMetadata[stripebill.MetadataUserID] != "user-1" ||
				got.SuccessURL != tc.in.SuccessURL || got.CancelURL != tc.in.CancelURL ||
				got.Customer != tc.wantCustomer || got.CustomerEmail != tc.wantEmail {
				t.Errorf("checkout: %+v", got)
			}
			if got.StripeVersion == "" {
				t.Error("no Stripe-Version header")
			}
			if tc.in.IdempotencyKey != "" && got.IdempotencyKey != tc.in.IdempotencyKey {
				t.Errorf("Idempotency-Key %q", got.IdempotencyKey)
			}
		})
	}
}

func TestCheckoutRefusals(t *testing.T) {
	f, c := setup(t)
	ok := stripebill.CheckoutInput{UserID: "user-1", PriceID: "price_monthly", SuccessURL: "https://h/ok", CancelURL: "https://h/no"}
	for _, edit := range []func(*stripebill.CheckoutInput){
		func(in *stripebill.CheckoutInput) { in.UserID = "" },
		func(in *stripebill.CheckoutInput) { in.PriceID = "" },
		func(in *stripebill.CheckoutInput) { in.SuccessURL = "" },
	} {
		in := ok
		edit(&in)
		if _, err := c.Checkout(context.Background(), in); err == nil {
			t.Errorf("%+v: no error", in)
		}
	}
	f.FailNext(http.StatusBadGateway)
	if _, err := c.Checkout(context.Background(), ok); !errors.Is(err, billing.ErrUpstream) {
		t.Errorf("502: err = %v, want ErrUpstream", err)
	}
	if len(f.Checkouts()) != 0 {
		t.Errorf("checkouts: %+v", f.Checkouts())
	}
}

func TestPortal(t *testing.T) {
	f, c := setup(t)
	url, err := c.Portal(context.Background(), "cus_1", "https://herald.example/account")
	if err != nil {
		t.Fatal(err)
	}
	ps := f.Portals()
	if len(ps) != 1 || ps[0].URL != url || ps[0].Customer != "cus_1" || ps[0].ReturnURL != "https://herald.example/account" {
		t.Errorf("portals: %+v, url %q", ps, url)
	}
	if _, err := c.Portal(context.Background(), "", "https://herald.example/account"); err == nil {
		t.Error("no customer: no error")
	}
	f.FailNext(http.StatusTooManyRequests)
	if _, err := c.Portal(context.Background(), "cus_1", "https://herald.example/account"); !errors.Is(err, billing.ErrUpstream) {
		t.Errorf("429: err = %v, want ErrUpstream", err)
	}
}

func TestNewRefusals(t *testing.T) {
	for _, cfg := range []stripebill.Config{
		{WebhookSecret: "whsec_x"},
		{SecretKey: "sk_test_x"},
		{SecretKey: "sk_test_x", WebhookSecret: "whsec_x", APIBase: "ftp://x"},
		{SecretKey: "sk_test_x", WebhookSecret: "whsec_x", APIBase: "::"},
		{SecretKey: "sk_test_x", WebhookSecret: "whsec_x", Tolerance: -time.Second},
	} {
		if _, err := stripebill.New(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	if _, err := stripebill.New(stripebill.Config{SecretKey: "sk_live_x", WebhookSecret: "whsec_x"}); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// A live key refuses test events.
func TestLiveKeyRefusesTestEvents(t *testing.T) {
	f := stripefake.New(t)
	f.SetNow(func() time.Time { return now })
	c := liveClient(t, f)
	payload, header := f.Event(stripebill.EventSubscriptionUpdated, sub("active"))
	if _, err := c.Event(payload, header); !errors.Is(err, billing.ErrMisaddressed) {
		t.Errorf("err = %v, want ErrMisaddressed", err)
	}
}

// The client keeps its key and backend to itself: stripe-go's globals
// stay unset, so two clients (two accounts, a fake and the real API) can
// live in one process.
func TestNoGlobalState(t *testing.T) {
	f, c := setup(t)
	f.SetSubscription(sub("active"))
	if _, err := c.Subscription(context.Background(), "sub_1"); err != nil {
		t.Fatal(err)
	}
	if stripe.Key != "" {
		t.Errorf("stripe.Key = %q, want unset", stripe.Key)
	}
}
