package billing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

const alice = "11111111-1111-4111-8111-111111111111"

// fakeStore is a store channel whose notifications are JSON
// Observations signed with "ok" in an X-Sig header, and whose API answers
// from a map.
type fakeStore struct {
	api map[string]subscriptions.Observation
	// settled are the purchases Settled was asked to settle; failSettle
	// fails that many asks first.
	settled    []string
	failSettle int
}

func (f *fakeStore) channel() billing.Channel {
	return billing.Channel{
		Verify: func(_ context.Context, header func(string) string, body []byte) (billing.Inbound, error) {
			switch header("X-Sig") {
			case "ok":
			case "other-app":
				return billing.Inbound{}, fmt.Errorf("%w: bundle", billing.ErrMisaddressed)
			default:
				return billing.Inbound{}, fmt.Errorf("%w: bad signature", billing.ErrForged)
			}
			var n struct {
				ID      string                     `json:"id"`
				Obs     *subscriptions.Observation `json:"obs"`
				Refresh string                     `json:"refresh"`
			}
			if err := json.Unmarshal(body, &n); err != nil || n.ID == "" {
				return billing.Inbound{}, fmt.Errorf("%w: %v", billing.ErrMalformed, err)
			}
			return billing.Inbound{ID: n.ID, Kind: "TEST", Observation: n.Obs, Refresh: n.Refresh}, nil
		},
		Read: func(_ context.Context, id string, _ json.RawMessage) (subscriptions.Observation, error) {
			o, ok := f.api[id]
			if !ok {
				return o, billing.ErrUnknownPurchase
			}
			return o, nil
		},
		Settled: func(_ context.Context, obs subscriptions.Observation, _ json.RawMessage) error {
			if f.failSettle > 0 {
				f.failSettle--
				return fmt.Errorf("settle %s: %w", obs.ExternalID, billing.ErrUpstream)
			}
			f.settled = append(f.settled, obs.ExternalID)
			return nil
		},
		Prove: func(_ context.Context, proof json.RawMessage) (subscriptions.Observation, error) {
			var id string
			if err := json.Unmarshal(proof, &id); err != nil {
				return subscriptions.Observation{}, billing.ErrMalformed
			}
			o, ok := f.api[id]
			if !ok {
				return o, billing.ErrUnknownPurchase
			}
			return o, nil
		},
	}
}

func setup(t *testing.T, url string) (*sqlstore.DB, *billing.Service, *fakeStore) {
	t.Helper()
	ctx := context.Background()
	db, _ := jobstest.Open(t, url, jobs.Config{})
	for _, id := range []string{alice, "22222222-2222-4222-8222-222222222222"} {
		if _, _, err := accounts.Create(ctx, db, accounts.NewAccount{ID: id, Email: id[:4] + "@example.com", PasswordHash: "x", ReferralCode: "REF" + id[:5], Trial: 48 * time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	fake := &fakeStore{api: map[string]subscriptions.Observation{}}
	plans := subscriptions.NewService(db, subscriptions.Config{})
	svc := billing.NewService(db, plans, billing.Config{
		Products: billing.Products{subscriptions.AppStore: {"vpn.premium": "premium", "vpn.basic": "basic"}},
		Channels: map[subscriptions.Source]billing.Channel{subscriptions.AppStore: fake.channel()},
	})
	return db, svc, fake
}

func TestReceiveAndIngest(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db, svc, fake := setup(t, url)
		now := time.Now().UTC().Truncate(time.Second)
		obs := subscriptions.Observation{Source: subscriptions.AppStore, ExternalID: "otx-1", AccountHint: alice, ProductID: "vpn.premium",
			State: subscriptions.StateActive, ExpiresAt: now.Add(720 * time.Hour), ObservedAt: now, AutoRenew: true}
		body, _ := json.Marshal(map[string]any{"id": "n-1", "obs": obs})
		hdr := func(sig string) func(string) string {
			return func(k string) string {
				if k == "X-Sig" {
					return sig
				}
				return ""
			}
		}
		// Refusals keep nothing.
		for _, c := range []struct {
			sig, body string
			code      apperr.Code
		}{
			{"forged", string(body), apperr.BillingSignatureInvalid},
			{"other-app", string(body), apperr.BillingWrongApp},
			{"ok", "{not json", apperr.ValidationError},
		} {
			if err := svc.Receive(ctx, subscriptions.AppStore, hdr(c.sig), []byte(c.body)); !apperr.Is(err, c.code) {
				t.Errorf("%s: %v, want %s", c.sig, err, c.code)
			}
		}
		if _, err := db.BillingNotification(ctx, subscriptions.AppStore, "n-1"); err == nil {
			t.Fatal("a refused notification was kept")
		}
		if err := svc.Receive(ctx, subscriptions.GooglePlay, hdr("ok"), body); !apperr.Is(err, apperr.BillingNotConfigured) {
			t.Errorf("a store not connected: %v", err)
		}
		// Kept before answered; a repeat is answered the same and kept once.
		for range 2 {
			if err := svc.Receive(ctx, subscriptions.AppStore, hdr("ok"), body); err != nil {
				t.Fatal(err)
			}
		}
		n, err := db.BillingNotification(ctx, subscriptions.AppStore, "n-1")
		if err != nil || n.ProcessedAt != nil || string(n.Payload) != string(body) {
			t.Fatalf("kept: %+v %v", n, err)
		}
		for range 2 { // a job run twice records once
			if err := svc.Ingest(ctx, subscriptions.AppStore, "n-1"); err != nil {
				t.Fatal(err)
			}
		}
		n, _ = db.BillingNotification(ctx, subscriptions.AppStore, "n-1")
		if n.ProcessedAt == nil || !strings.HasPrefix(n.Outcome, "recorded") {
			t.Fatalf("worked: %+v", n)
		}
		if a, _ := db.AccountByID(ctx, alice); a.Subscription.Plan != "premium" {
			t.Fatalf("alice's plan %+v", a.Subscription)
		}
		history, _ := db.EntitlementChanges(ctx, alice, 100)
		if history[0].Cause != "app_store:TEST" {
			t.Errorf("cause %q", history[0].Cause)
		}

		// A product no plan is mapped to is kept with its outcome, not retried.
		odd := obs
		odd.ExternalID, odd.ProductID = "otx-2", "vpn.gold"
		body2, _ := json.Marshal(map[string]any{"id": "n-2", "obs": odd})
		if err := svc.Receive(ctx, subscriptions.AppStore, hdr("ok"), body2); err != nil {
			t.Fatal(err)
		}
		if err := svc.Ingest(ctx, subscriptions.AppStore, "n-2"); err != nil {
			t.Fatal(err)
		}
		if n, _ := db.BillingNotification(ctx, subscriptions.AppStore, "n-2"); !strings.HasPrefix(n.Outcome, "refused") {
			t.Errorf("unmapped product: %q", n.Outcome)
		}

		// A notification that only signals is worked from the store's API.
		fake.api["otx-1"] = func() subscriptions.Observation {
			o := obs
			o.State, o.ObservedAt = subscriptions.StateGrace, now.Add(time.Minute)
			return o
		}()
		body3, _ := json.Marshal(map[string]any{"id": "n-3", "refresh": "otx-1"})
		if err := svc.Receive(ctx, subscriptions.AppStore, hdr("ok"), body3); err != nil {
			t.Fatal(err)
		}
		if err := svc.Ingest(ctx, subscriptions.AppStore, "n-3"); err != nil {
			t.Fatal(err)
		}
		if e, _ := db.LockEntitlement(ctx, subscriptions.AppStore, "otx-1"); e.State != subscriptions.StateGrace {
			t.Errorf("read from the API: %s", e.State)
		}
	})
}

func TestProve(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db, svc, fake := setup(t, url)
		bob := "22222222-2222-4222-8222-222222222222"
		now := time.Now().UTC().Truncate(time.Second)
		buy := func(id, hint string) subscriptions.Observation {
			return subscriptions.Observation{Source: subscriptions.AppStore, ExternalID: id, AccountHint: hint, ProductID: "vpn.basic",
				State: subscriptions.StateActive, ExpiresAt: now.Add(720 * time.Hour), ObservedAt: now}
		}
		fake.api["mine"], fake.api["hers"], fake.api["nobody"] = buy("mine", bob), buy("hers", alice), buy("nobody", "")
		proof := func(id string) json.RawMessage { b, _ := json.Marshal(id); return b }
		cases := []struct {
			id   string
			code apperr.Code
		}{
			{"mine", ""},
			{"hers", apperr.PurchaseOwnedElsewhere},
			{"nobody", ""}, // a restore: it becomes the caller's
			{"unknown", apperr.PurchaseNotFound},
		}
		for _, c := range cases {
			e, err := svc.Prove(ctx, subscriptions.AppStore, bob, proof(c.id))
			if c.code != "" {
				if !apperr.Is(err, c.code) {
					t.Errorf("%s: %v, want %s", c.id, err, c.code)
				}
				continue
			}
			if err != nil || e.AccountID != bob {
				t.Errorf("%s: %+v %v", c.id, e, err)
			}
		}
		// A purchase kept unlinked (a notification first), then proved.
		if _, err := subscriptions.Record(ctx, db, buy("early", ""), "basic", "test", nil); err != nil {
			t.Fatal(err)
		}
		fake.api["early"] = buy("early", "")
		if e, err := svc.Prove(ctx, subscriptions.AppStore, bob, proof("early")); err != nil || e.AccountID != bob {
			t.Fatalf("restore of a kept purchase: %+v %v", e, err)
		}
		if _, err := svc.Prove(ctx, subscriptions.AppStore, alice, proof("early")); !apperr.Is(err, apperr.PurchaseOwnedElsewhere) {
			t.Fatalf("taking a restored purchase: %v", err)
		}
	})
}

// TestSettle: a purchase an app posts is settled at once, and when the
// store refuses, by the job kept with it, which reads the purchase's
// state again; the reconciliation settles every purchase it reads, and a
// failure to settle does not stop it.
func TestSettle(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		_, svc, fake := setup(t, url)
		now := time.Now().UTC().Truncate(time.Second)
		buy := func(id string) subscriptions.Observation {
			return subscriptions.Observation{Source: subscriptions.AppStore, ExternalID: id, ProductID: "vpn.basic",
				State: subscriptions.StateActive, ExpiresAt: now.Add(720 * time.Hour), ObservedAt: now}
		}
		settleJobs := func() []string {
			return sqlstoretest.RawColumn(t, url, `SELECT args FROM river_job WHERE kind = 'billing_settle' ORDER BY id`)
		}
		fake.api["p-1"] = buy("p-1")
		fake.failSettle = 2
		for range 2 { // the app posts it again: one job
			if _, err := svc.Prove(ctx, subscriptions.AppStore, alice, json.RawMessage(`"p-1"`)); err != nil {
				t.Fatal(err)
			}
		}
		if len(fake.settled) != 0 {
			t.Fatalf("settled %v though the store refused", fake.settled)
		}
		jobs := settleJobs()
		if len(jobs) != 1 || !strings.Contains(jobs[0], "p-1") {
			t.Fatalf("settle jobs %v, want one for p-1", jobs)
		}
		// The job's first run meets the store down, its retry settles.
		fake.failSettle = 1
		if err := svc.Settle(ctx, subscriptions.AppStore, "p-1"); err == nil {
			t.Fatal("Settle with the store down: no error, so the job would not be retried")
		}
		if err := svc.Settle(ctx, subscriptions.AppStore, "p-1"); err != nil || len(fake.settled) != 1 {
			t.Fatalf("Settle: %v, settled %v", err, fake.settled)
		}
		// A purchase the store forgot is done with.
		if err := svc.Settle(ctx, subscriptions.AppStore, "unknown"); err != nil {
			t.Fatalf("Settle of a purchase the store does not know: %v", err)
		}
		// A second purchase; then the reconciliation settles both, the
		// first ask failing.
		fake.api["p-2"] = buy("p-2")
		if _, err := svc.Prove(ctx, subscriptions.AppStore, alice, json.RawMessage(`"p-2"`)); err != nil {
			t.Fatal(err)
		}
		fake.settled, fake.failSettle = nil, 1
		n, err := svc.ReconcileAll(ctx)
		if err != nil || n != 2 {
			t.Fatalf("ReconcileAll: %d %v, want 2", n, err)
		}
		if len(fake.settled) != 1 {
			t.Fatalf("the reconciliation settled %v, want one of the two (the other failed)", fake.settled)
		}
		if _, err := svc.ReconcileAll(ctx); err != nil || len(fake.settled) != 3 {
			t.Fatalf("the next reconciliation: %v, settled %v", err, fake.settled)
		}
	})
}

func TestSweep(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db, svc, fake := setup(t, url)
		notices := func() int {
			return len(sqlstoretest.RawColumn(t, url, `SELECT id FROM river_job WHERE kind = 'subscription_notice'`))
		}
		now := time.Now().UTC()
		// Alice's trial ends within three days (48h): one reminder, once.
		for range 2 {
			if err := svc.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
		}
		ents, _ := db.AccountEntitlements(ctx, alice)
		if len(ents) != 1 {
			t.Fatalf("entitlements %+v", ents)
		}
		// A grant whose time ran out is ended by the sweep, and the account
		// falls back to the next best.
		if _, err := subscriptions.Record(ctx, db, subscriptions.Observation{Source: subscriptions.Admin, ExternalID: alice, AccountHint: alice,
			State: subscriptions.StateActive, StartedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Second), ObservedAt: now.Add(-time.Hour)}, "premium", "test", nil); err != nil {
			t.Fatal(err)
		}
		if err := svc.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		e, err := db.LockEntitlement(ctx, subscriptions.Admin, alice)
		if err != nil || e.State != subscriptions.StateExpired {
			t.Fatalf("lapsed grant: %+v %v", e, err)
		}
		if a, _ := db.AccountByID(ctx, alice); a.Subscription.Plan != "trial" || !a.Subscription.Active(now) {
			t.Fatalf("after the sweep: %+v", a.Subscription)
		}
		if got := notices(); got != 3 { // the two trials ending (once each, though swept three times) and the grant's expiry
			t.Errorf("%d notices, want 3", got)
		}

		// Store purchases past their end: one the store renewed (read from
		// its API), one within the leeway, one the store no longer knows.
		purchase := func(id string, ended time.Duration) {
			t.Helper()
			if _, err := subscriptions.Record(ctx, db, subscriptions.Observation{Source: subscriptions.AppStore, ExternalID: id, ProductID: "vpn.basic", AccountHint: alice,
				State: subscriptions.StateActive, AutoRenew: true, ExpiresAt: now.Add(-ended), ObservedAt: now.Add(-ended - time.Hour)}, "basic", "test", nil); err != nil {
				t.Fatal(err)
			}
		}
		purchase("renewed", 2*time.Hour)
		purchase("leeway", 10*time.Minute)
		purchase("gone", 2*time.Hour)
		fake.api["renewed"] = subscriptions.Observation{Source: subscriptions.AppStore, ExternalID: "renewed", ProductID: "vpn.basic",
			State: subscriptions.StateActive, AutoRenew: true, ExpiresAt: now.Add(720 * time.Hour), ObservedAt: now}
		if err := svc.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]subscriptions.State{"renewed": subscriptions.StateActive, "leeway": subscriptions.StateActive, "gone": subscriptions.StateExpired} {
			if e, _ := db.LockEntitlement(ctx, subscriptions.AppStore, id); e.State != want {
				t.Errorf("%s: %s, want %s", id, e.State, want)
			}
		}
		if e, _ := db.LockEntitlement(ctx, subscriptions.AppStore, "renewed"); !e.Grants(now) {
			t.Errorf("the renewal read from the store: %+v", e)
		}
		if got := notices(); got != 4 { // and the purchase the store no longer knows
			t.Errorf("%d notices after the store purchases, want 4", got)
		}
	})
}

func FuzzParseProducts(f *testing.F) {
	f.Add([]byte(`{"app_store": {"com.example.premium": "premium"}, "stripe": {"price_1": "basic"}}`))
	f.Add([]byte(`{"trial": {"x": "basic"}}`))
	f.Add([]byte(`{"google_play": {"": "basic"}}`))
	f.Add([]byte(`{} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := billing.ParseProducts(data, []string{"trial", "basic", "premium"})
		if err != nil {
			return
		}
		for src, m := range p {
			if !src.Store() {
				t.Fatalf("accepted a source %q", src)
			}
			for product, plan := range m {
				if strings.TrimSpace(product) == "" || (plan != "trial" && plan != "basic" && plan != "premium") {
					t.Fatalf("accepted %q → %q", product, plan)
				}
			}
		}
	})
}

// A refusal is the catalogue's error, with the details the catalogue
// gives its code: VALIDATION_ERROR names the field at fault (the body),
// what was expected and what came.
func TestRefusal(t *testing.T) {
	for _, c := range []struct {
		err     error
		code    apperr.Code
		details map[string]any
	}{
		{fmt.Errorf("%w: not a compact JWS", billing.ErrMalformed), apperr.ValidationError,
			map[string]any{"field": "body", "constraint": "the store's format", "received": "not a compact JWS"}},
		{fmt.Errorf("%w: bad signature", billing.ErrForged), apperr.BillingSignatureInvalid, nil},
		{fmt.Errorf("%w: bundle", billing.ErrMisaddressed), apperr.BillingWrongApp, nil},
		{fmt.Errorf("%w: gone", billing.ErrUnknownPurchase), apperr.PurchaseNotFound, nil},
	} {
		ae := apperr.As(billing.Refusal(c.err))
		if ae.Code != c.code || fmt.Sprint(ae.Details) != fmt.Sprint(c.details) {
			t.Errorf("Refusal(%v) = %s %v, want %s %v", c.err, ae.Code, ae.Details, c.code, c.details)
		}
	}
}
