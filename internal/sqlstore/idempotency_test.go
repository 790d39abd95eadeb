package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// TestIdempotencyKeys: a key is claimed once; a repeat sees the claim and
// then the answer; an abandoned claim of the same request is taken over,
// one of another request is not; a key older than the window is replaced
// and pruned; keys of two callers are apart.
func TestIdempotencyKeys(t *testing.T) {
	ctx := context.Background()
	claim := func(t *testing.T, db *sqlstore.DB, now time.Time, caller, hash, token string) bool {
		t.Helper()
		ok, err := db.ClaimIdempotencyKey(ctx, idempotency.Claim{Caller: caller, Key: "k", Operation: "op", RequestHash: hash, Token: token, Now: now, ClaimedUntil: now.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	cases := []storeCase{
		{"ClaimCompleteRepeat", func(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
			now := clk.Now()
			if !claim(t, db, now, "user:a", "h1", "t1") {
				t.Fatal("first claim refused")
			}
			if claim(t, db, now, "user:a", "h1", "t2") || claim(t, db, now, "user:a", "h2", "t3") {
				t.Fatal("a live claim was taken")
			}
			if !claim(t, db, now, "key:b", "h1", "t4") {
				t.Fatal("another caller's key was refused")
			}
			r, err := db.IdempotencyRecord(ctx, "user:a", "k")
			if err != nil || r.Status != idempotency.StatusPending || r.RequestHash != "h1" || r.Response != nil {
				t.Fatalf("pending record %+v, %v", r, err)
			}
			// Only the claim's own token completes it.
			if err := db.CompleteIdempotencyKey(ctx, "user:a", "k", "t2", []byte(`"wrong"`)); err != nil {
				t.Fatal(err)
			}
			if err := db.CompleteIdempotencyKey(ctx, "user:a", "k", "t1", []byte(`{"ok":true}`)); err != nil {
				t.Fatal(err)
			}
			r, err = db.IdempotencyRecord(ctx, "user:a", "k")
			if err != nil || r.Status != idempotency.StatusDone || string(r.Response) != `{"ok":true}` {
				t.Fatalf("done record %+v, %v", r, err)
			}
			if claim(t, db, now.Add(2*time.Minute), "user:a", "h1", "t5") {
				t.Fatal("a done key was claimed again within the window")
			}
			// Past the window the key is free again, and pruned.
			later := now.Add(idempotency.Window + time.Second)
			clk.Set(later)
			p, err := db.Prune(ctx, later)
			if err != nil || p.IdempotencyKeys != 2 {
				t.Fatalf("prune: %+v, %v; want 2 idempotency keys", p, err)
			}
			if _, err := db.IdempotencyRecord(ctx, "user:a", "k"); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("pruned key: %v", err)
			}
		}},
		{"AbandonedAndReleased", func(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
			now := clk.Now()
			claim(t, db, now, "user:a", "h1", "t1")
			lapsed := now.Add(2 * time.Minute)
			if claim(t, db, lapsed, "user:a", "h2", "t2") {
				t.Fatal("an abandoned claim was taken over by another request")
			}
			if !claim(t, db, lapsed, "user:a", "h1", "t3") {
				t.Fatal("an abandoned claim of the same request was not taken over")
			}
			// The first claimant's late release changes nothing.
			if err := db.ReleaseIdempotencyKey(ctx, "user:a", "k", "t1"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.IdempotencyRecord(ctx, "user:a", "k"); err != nil {
				t.Fatalf("a stale release removed the new claim: %v", err)
			}
			if err := db.ReleaseIdempotencyKey(ctx, "user:a", "k", "t3"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.IdempotencyRecord(ctx, "user:a", "k"); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("released key: %v", err)
			}
		}},
	}
	runConformance(t, cases, mustOpen)
}
