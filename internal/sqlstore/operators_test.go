package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// The changes that can take an account out of the enabled admins
// (disable, delete, revoke the scope) decide on its standing under one
// lock, on every database.
func TestOperatorsConformance(t *testing.T) {
	cases := []storeCase{
		{"StandingAndRefusal", testStanding},
		{"LastTwoAdminsRace", testLastTwoAdminsRace},
	}
	runConformance(t, cases, mustOpenWithWorkers)
}

// mustAdmin creates a verified account holding admin.
func mustAdmin(t *testing.T, db *sqlstore.DB, id string) {
	t.Helper()
	n := newAccount(id, id+"@example.com", "CODE"+id)
	n.Verified, n.Scope = true, "admin"
	if _, _, err := accounts.Create(context.Background(), db, n); err != nil {
		t.Fatal(err)
	}
}

var errRefused = errors.New("refused by the test's rule")

// removal is one change that takes an account out of the enabled admins.
type removal struct {
	name string
	do   func(db *sqlstore.DB, id string, allow func(accounts.Standing) error) error
}

var removals = []removal{
	{"disable", func(db *sqlstore.DB, id string, allow func(accounts.Standing) error) error {
		_, err := db.SetDisabled(context.Background(), id, true, "test", allow)
		return err
	}},
	{"delete", func(db *sqlstore.DB, id string, allow func(accounts.Standing) error) error {
		return accounts.DeleteAccount(context.Background(), db, id, allow)
	}},
	{"revoke admin", func(db *sqlstore.DB, id string, allow func(accounts.Standing) error) error {
		return db.SetScope(context.Background(), id, "", true, allow)
	}},
}

// testStanding: allow sees the account as it is and the other enabled
// admins (not the disabled or deleted ones, not plain users), and its
// error leaves everything as it was.
func testStanding(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		mustAdmin(t, db, id)
	}
	mustAccount(t, db, "u1")
	if _, err := db.SetDisabled(ctx, "a3", true, "", nil); err != nil {
		t.Fatal(err)
	}
	if err := accounts.DeleteAccount(ctx, db, "a4", nil); err != nil {
		t.Fatal(err)
	}
	db.CreateSession(ctx, sessions.Session{ID: "s1", AccountID: "a1", CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(time.Hour)}, []byte("s1"))
	for _, c := range []struct {
		id          string
		admin       bool
		otherAdmins int
	}{
		{"a1", true, 1},  // a2; a3 is disabled, a4 deleted
		{"a3", false, 2}, // holds admin but is disabled: not an enabled admin
		{"u1", false, 2},
	} {
		for _, r := range removals {
			var seen []accounts.Standing
			err := r.do(db, c.id, func(st accounts.Standing) error {
				seen = append(seen, st)
				return errRefused
			})
			if !errors.Is(err, errRefused) {
				t.Fatalf("%s %s: %v, want the rule's refusal", r.name, c.id, err)
			}
			if len(seen) != 1 || seen[0].Account.ID != c.id || seen[0].Account.EnabledAdmin() != c.admin || seen[0].OtherAdmins != c.otherAdmins {
				t.Fatalf("%s %s: standing %+v, want enabled admin %v and %d other admins", r.name, c.id, seen, c.admin, c.otherAdmins)
			}
		}
	}
	// The refused changes changed nothing.
	a1, err := db.AccountByID(ctx, "a1")
	if err != nil || a1.Disabled() || !a1.HasScope("admin") {
		t.Fatalf("a1 after refusals: %+v, %v", a1, err)
	}
	if live, err := db.LiveSessions(ctx, "a1"); err != nil || len(live) != 1 {
		t.Fatalf("a1's session after refusals: %d, %v", len(live), err)
	}
	if _, err := db.AccountByID(ctx, "u1"); err != nil {
		t.Fatalf("u1 after a refused delete: %v", err)
	}
	// An unknown or deleted account is ErrNotFound before any rule.
	for _, r := range removals {
		for _, id := range []string{"nobody", "a4"} {
			if err := r.do(db, id, func(accounts.Standing) error { return errRefused }); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("%s %s: %v, want ErrNotFound", r.name, id, err)
			}
		}
	}
}

// keepAnAdmin is the rule the accounts service gives: the last enabled
// admin stays.
func keepAnAdmin(st accounts.Standing) error {
	if st.Account.EnabledAdmin() && st.OtherAdmins == 0 {
		return errRefused
	}
	return nil
}

// operatorsBusy reports whether a change is waiting for the lock that
// serializes the changes of the operators: on PostgreSQL, an advisory
// lock of this schema not yet granted; on SQLite, a transaction waiting
// for the one writer connection.
func operatorsBusy(t *testing.T, db *sqlstore.DB) func() bool {
	if db.Dialect() == storage.Postgres {
		return func() bool {
			var n int
			err := db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_locks
				WHERE locktype = 'advisory' AND NOT granted AND objid = hashtext(current_schema())::oid`).Scan(&n)
			if err != nil {
				t.Errorf("pg_locks: %v", err)
				return true
			}
			return n > 0
		}
	}
	waits := db.SQL().Stats().WaitCount
	return func() bool { return db.SQL().Stats().WaitCount > waits }
}

// testLastTwoAdminsRace: two admins, two changes at once that would each
// leave one: exactly one succeeds. Each change's rule holds its decision
// until the other change has reached its own rule or is seen waiting for
// the lock, so that without the lock both would decide on two admins.
func testLastTwoAdminsRace(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	for i, pair := range [][2]removal{
		{removals[0], removals[0]},
		{removals[1], removals[0]},
		{removals[2], removals[1]},
	} {
		ids := [2]string{string(rune('p'+i)) + "1", string(rune('p'+i)) + "2"}
		mustAdmin(t, db, ids[0])
		mustAdmin(t, db, ids[1])
		busy := operatorsBusy(t, db)
		var decided atomic.Int32
		allow := func(st accounts.Standing) error {
			decided.Add(1)
			for deadline := time.Now().Add(10 * time.Second); decided.Load() < 2 && !busy(); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					return fmt.Errorf("after 10s the other change had neither decided nor waited for the lock")
				}
			}
			return keepAnAdmin(st)
		}
		var errs [2]error
		var wg sync.WaitGroup
		for j := range 2 {
			wg.Go(func() { errs[j] = pair[j].do(db, ids[j], allow) })
		}
		wg.Wait()
		refused := 0
		for j, err := range errs {
			switch {
			case errors.Is(err, errRefused):
				refused++
			case err != nil:
				t.Fatalf("%s %s: %v", pair[j].name, ids[j], err)
			}
		}
		if refused != 1 {
			t.Fatalf("%s and %s of the last two admins at once: %d refused, want exactly 1 (%v)", pair[0].name, pair[1].name, refused, errs)
		}
		left := 0
		for _, id := range ids {
			if a, err := db.AccountByID(ctx, id); err == nil && a.EnabledAdmin() {
				left++
			}
		}
		if left != 1 {
			t.Fatalf("%s and %s: %d enabled admins left, want 1", pair[0].name, pair[1].name, left)
		}
		// The survivor steps aside for the next pair.
		for _, id := range ids {
			db.SetDisabled(ctx, id, true, "next pair", nil)
		}
	}
}
