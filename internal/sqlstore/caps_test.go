package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/testsupport"
)

func TestNotificationCapsConformance(t *testing.T) {
	runConformance(t, []storeCase{
		{"ConcurrentSendsPassTheCapOnce", testCapConcurrent},
		{"ASendCountedAgainCountsOnce", testCapIdempotent},
		{"PastWindowsArePruned", testCapPrune},
		{"DeletingTheAccountErasesItsCounts", testCapErasure},
	}, mustOpen)
}

// Sends of one user and category racing on their own connections (on
// PostgreSQL each its own transaction, as two replicas would) pass the
// cap exactly Limit times.
func testCapConcurrent(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "u1")
	const sends, limit = 12, 3
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for i := range sends {
		wg.Go(func() {
			ok, err := preferences.UseCap(ctx, db, preferences.CapUse{AccountID: "u1", Category: "product", Window: "2026-11-22", SendID: fmt.Sprint("s", i), Limit: limit})
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if allowed != limit {
		t.Fatalf("%d of %d concurrent sends passed a cap of %d", allowed, sends, limit)
	}
	if n := capCount(t, db, "u1", "product", "2026-11-22"); n != limit {
		t.Fatalf("counted %d, want %d", n, limit)
	}
}

// A send counted again (a retried job, a repeated request) answers its
// first decision and counts nothing; other categories, windows and
// accounts have caps of their own.
func testCapIdempotent(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "u1")
	mustAccount(t, db, "u2")
	use := func(account, category, window, send string) bool {
		t.Helper()
		ok, err := preferences.UseCap(ctx, db, preferences.CapUse{AccountID: account, Category: category, Window: window, SendID: send, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, step := range []struct {
		account, category, window, send string
		want                            bool
	}{
		{"u1", "product", "2026-11-22", "a", true},
		{"u1", "product", "2026-11-22", "a", true}, // again: still allowed, not counted
		{"u1", "product", "2026-11-22", "b", true},
		{"u1", "product", "2026-11-22", "a", true},
		{"u1", "product", "2026-11-22", "c", false}, // the third send of the day
		{"u1", "product", "2026-11-22", "c", false}, // again: still capped
		{"u1", "offers", "2026-11-22", "c", true},   // another category
		{"u1", "product", "2026-11-23", "d", true},  // another day
		{"u2", "product", "2026-11-22", "e", true},  // another user
	} {
		if got := use(step.account, step.category, step.window, step.send); got != step.want {
			t.Fatalf("%+v: allowed %v", step, got)
		}
	}
	if n := capCount(t, db, "u1", "product", "2026-11-22"); n != 2 {
		t.Fatalf("counted %d, want 2", n)
	}
}

// Housekeeping deletes the counts and decisions of windows before the
// cutoff; a send of such a window would count afresh.
func testCapPrune(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "u1")
	for _, w := range []string{"2026-11-19", "2026-11-20", "2026-11-21"} {
		if _, err := preferences.UseCap(ctx, db, preferences.CapUse{AccountID: "u1", Category: "product", Window: w, SendID: "s", Limit: 1}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.DeleteCapWindows(ctx, "2026-11-21")
	if err != nil || n != 2 {
		t.Fatalf("pruned %d, %v; want the two windows before 2026-11-21", n, err)
	}
	if capCount(t, db, "u1", "product", "2026-11-21") != 1 || capCount(t, db, "u1", "product", "2026-11-20") != 0 {
		t.Fatal("pruned the wrong windows")
	}
	ok, err := preferences.UseCap(ctx, db, preferences.CapUse{AccountID: "u1", Category: "product", Window: "2026-11-20", SendID: "s2", Limit: 1})
	if err != nil || !ok {
		t.Fatalf("a pruned window's send: %v, %v; want allowed", ok, err)
	}
}

// Deleting an account erases its counts and decisions (the account's row
// stays as a tombstone, so no cascade does it).
func testCapErasure(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "u1")
	use := preferences.CapUse{AccountID: "u1", Category: "product", Window: "2026-11-22", SendID: "s", Limit: 1}
	if _, err := preferences.UseCap(ctx, db, use); err != nil {
		t.Fatal(err)
	}
	if err := accounts.DeleteAccount(ctx, db, "u1", nil); err != nil {
		t.Fatal(err)
	}
	if _, found, err := db.CapDecision(ctx, use); err != nil || found {
		t.Fatalf("the deleted account's decision: found %v, %v", found, err)
	}
	if n := capCount(t, db, "u1", "product", "2026-11-22"); n != 0 {
		t.Fatalf("the deleted account's count is %d", n)
	}
}

// capCount is the count of the window, read inside a unit of work.
func capCount(t *testing.T, db *sqlstore.DB, account, category, window string) int {
	t.Helper()
	var n int
	if err := db.InTx(context.Background(), func(ctx context.Context) error {
		var err error
		n, err = db.LockCapCount(ctx, account, category, window)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}
