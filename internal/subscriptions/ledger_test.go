package subscriptions_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// The ledger's use cases on both databases: a purchase recorded, kept
// unlinked and restored, an upgrade that replaces a purchase, words out
// of order, and an administrator's grant over a purchase.
func TestLedger(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db, _ := jobstest.Open(t, url, jobs.Config{})
		for _, id := range []string{"11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"} {
			if _, _, err := accounts.Create(ctx, db, accounts.NewAccount{ID: id, Email: id[:4] + "@example.com", PasswordHash: "x", ReferralCode: "REF" + id[:5], Trial: time.Hour, DeviceLimit: devicesOf}); err != nil {
				t.Fatal(err)
			}
		}
		alice, bob := "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
		clock := time.Now().UTC().Truncate(time.Second)
		month := 30 * 24 * time.Hour
		word := func(ext, hint string, st subscriptions.State, at time.Duration) subscriptions.Observation {
			return subscriptions.Observation{Source: subscriptions.AppStore, ExternalID: ext, AccountHint: hint, ProductID: "vpn.premium",
				State: st, StartedAt: clock, ExpiresAt: clock.Add(month), ObservedAt: clock.Add(at), AutoRenew: st == subscriptions.StateActive}
		}
		record := func(o subscriptions.Observation, plan string) subscriptions.Entitlement {
			t.Helper()
			e, err := subscriptions.Record(ctx, db, o, plan, "test", devicesOf)
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		plan := func(id string) subscriptions.Subscription {
			t.Helper()
			a, err := db.AccountByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return a.Subscription
		}

		// A purchase naming Alice becomes her plan, with its event.
		e := record(word("otx-1", alice, subscriptions.StateActive, 0), "premium")
		if e.AccountID != alice || plan(alice).Plan != "premium" || plan(alice).Source != subscriptions.AppStore || !plan(alice).AutoRenew {
			t.Fatalf("purchase: %+v, plan %+v", e, plan(alice))
		}
		// An older word arriving later changes nothing; a newer one does.
		record(word("otx-1", alice, subscriptions.StateOnHold, -time.Minute), "premium")
		if got, _ := db.LockEntitlement(ctx, subscriptions.AppStore, "otx-1"); got.State != subscriptions.StateActive {
			t.Fatalf("an older word won: %s", got.State)
		}
		record(word("otx-1", alice, subscriptions.StateOnHold, time.Minute), "premium")
		if p := plan(alice); p.Plan != "trial" || !p.Active(clock) {
			t.Fatalf("on hold: the trial should carry on, got %+v", p)
		}

		// A purchase naming no account is kept unlinked, then restored by
		// Bob; Alice cannot take it from him.
		orphan := record(word("otx-2", "", subscriptions.StateActive, 0), "basic")
		if orphan.AccountID != "" {
			t.Fatalf("orphan linked to %q", orphan.AccountID)
		}
		if _, err := subscriptions.Link(ctx, db, subscriptions.AppStore, "otx-2", bob, devicesOf); err != nil {
			t.Fatal(err)
		}
		if p := plan(bob); p.Plan != "basic" {
			t.Fatalf("restored: %+v", p)
		}
		if _, err := subscriptions.Link(ctx, db, subscriptions.AppStore, "otx-2", alice, devicesOf); !errors.Is(err, storage.ErrConflict) {
			t.Fatalf("taking another's purchase: %v", err)
		}
		// A hint naming no account Herald knows is kept unlinked too.
		if e := record(word("otx-3", "33333333-3333-4333-8333-333333333333", subscriptions.StateActive, 0), "basic"); e.AccountID != "" {
			t.Fatalf("unknown account linked: %+v", e)
		}

		// An upgrade replaces Bob's purchase: the old one ends, the new one
		// goes on (renewed, not started), and his plan changes.
		up := word("otx-4", "", subscriptions.StateActive, time.Minute)
		up.Replaces = "otx-2"
		if e := record(up, "premium"); e.AccountID != bob {
			t.Fatalf("upgrade not linked to the replaced purchase's account: %+v", e)
		}
		if old, _ := db.LockEntitlement(ctx, subscriptions.AppStore, "otx-2"); old.State != subscriptions.StateExpired {
			t.Fatalf("replaced purchase: %s", old.State)
		}
		if p := plan(bob); p.Plan != "premium" {
			t.Fatalf("upgraded: %+v", p)
		}

		// An administrator's grant of a lesser plan leaves the purchase,
		// which stays the plan; the trial ends.
		if _, _, err := subscriptions.Set(ctx, db, bob, "basic", clock.Add(2*month), devicesOf); err != nil {
			t.Fatal(err)
		}
		if p := plan(bob); p.Plan != "premium" || p.Source != subscriptions.AppStore {
			t.Fatalf("a grant under a purchase: %+v", p)
		}
		ents, err := db.AccountEntitlements(ctx, bob)
		if err != nil {
			t.Fatal(err)
		}
		states := map[subscriptions.Source]subscriptions.State{}
		for _, e := range ents {
			if e.Source != subscriptions.AppStore {
				states[e.Source] = e.State
			}
		}
		if states[subscriptions.TrialGrant] != subscriptions.StateExpired || states[subscriptions.Admin] != subscriptions.StateActive {
			t.Fatalf("bob's grants: %v", states)
		}

		// Every change has its history row and its events.
		history, err := db.EntitlementChanges(ctx, bob, 100)
		if err != nil || len(history) < 5 {
			t.Fatalf("history %d rows, %v", len(history), err)
		}
		for typ, want := range map[string]int{
			webhooks.SubscriptionStarted:       5, // two trials, otx-1, bob's restore, bob's admin grant
			webhooks.SubscriptionPaymentFailed: 1,
			webhooks.SubscriptionPlanChanged:   4, // alice trial→premium→trial, bob trial→basic→premium
		} {
			if got := countEvents(t, db, typ); got != want {
				t.Errorf("%s: %d events, want %d", typ, got, want)
			}
		}

		// Deleting Bob leaves his purchase unlinked (the store still bills
		// it) and erases his own grants; the store's next word is kept.
		if err := accounts.DeleteAccount(ctx, db, bob, nil); err != nil {
			t.Fatal(err)
		}
		if e, _ := db.LockEntitlement(ctx, subscriptions.AppStore, "otx-4"); e.AccountID != "" {
			t.Fatalf("a deleted account's purchase still names it: %+v", e)
		}
		if _, err := db.LockEntitlement(ctx, subscriptions.Admin, bob); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a deleted account's grant: %v", err)
		}
		if e := record(word("otx-4", bob, subscriptions.StateActive, time.Hour), "premium"); e.AccountID != "" {
			t.Fatalf("a word naming a deleted account linked it: %+v", e)
		}
		if h, _ := db.EntitlementChanges(ctx, bob, 100); len(h) != 0 {
			t.Fatalf("a deleted account's history: %d rows", len(h))
		}
	})
}

func countEvents(t *testing.T, db *sqlstore.DB, typ string) int {
	t.Helper()
	evs, err := db.WebhookEvents(context.Background(), typ)
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

// A purchase kept unlinked that a newer word of the store links to an
// account (an app's proof after a purchase made before signing in) is a
// subscription that starts for that account: subscription.started, for
// it, once.
func TestRecordLinkingAPurchaseStartsIt(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db, _ := jobstest.Open(t, url, jobs.Config{})
		carol := "33333333-3333-4333-8333-333333333333"
		if _, _, err := accounts.Create(ctx, db, accounts.NewAccount{ID: carol, Email: "carol@example.com", PasswordHash: "x", ReferralCode: "REFCAROL", DeviceLimit: devicesOf}); err != nil {
			t.Fatal(err)
		}
		clock := time.Now().UTC().Truncate(time.Second)
		word := func(hint string, at time.Duration) subscriptions.Observation {
			return subscriptions.Observation{Source: subscriptions.AppStore, ExternalID: "otx-9", AccountHint: hint, ProductID: "vpn.basic",
				State: subscriptions.StateActive, StartedAt: clock, ExpiresAt: clock.Add(30 * 24 * time.Hour), ObservedAt: clock.Add(at), AutoRenew: true}
		}
		if e, err := subscriptions.Record(ctx, db, word("", 0), "basic", "app_store:SUBSCRIBED", devicesOf); err != nil || e.AccountID != "" {
			t.Fatalf("the unlinked purchase: %+v, %v", e, err)
		}
		e, err := subscriptions.Record(ctx, db, word(carol, time.Minute), "basic", "purchase", devicesOf)
		if err != nil || e.AccountID != carol {
			t.Fatalf("linked: %+v, %v", e, err)
		}
		a, err := db.AccountByID(ctx, carol)
		if err != nil || a.Subscription.Plan != "basic" {
			t.Fatalf("carol's plan: %+v, %v", a.Subscription, err)
		}
		evs, err := db.WebhookEvents(ctx, webhooks.SubscriptionStarted)
		if err != nil {
			t.Fatal(err)
		}
		started := 0
		for _, ev := range evs {
			if strings.Contains(string(ev.Payload), carol) {
				started++
			}
		}
		if started != 1 {
			t.Fatalf("%d subscription.started events for carol, want 1", started)
		}
	})
}
