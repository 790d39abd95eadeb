package sqlstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// The unit of work: store methods called with InTx's ctx, and InTx calls
// nested in it, run in its one transaction, so they commit or roll back
// together; the locking methods refuse to run outside one.
func TestUnitOfWork(t *testing.T) {
	insert := func(ctx context.Context, db *sqlstore.DB, id, email, code string) error {
		return db.InsertAccount(ctx, newAccount(id, email, code), subscriptions.Subscription{Plan: "trial", ExpiresAt: db.TxTime(ctx)})
	}
	exists := func(t *testing.T, db *sqlstore.DB, id string) bool {
		t.Helper()
		_, err := db.AccountByID(context.Background(), id)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	cases := []storeCase{
		{"RollsBackTogether", func(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
			boom := errors.New("boom")
			err := db.InTx(context.Background(), func(ctx context.Context) error {
				if err := insert(ctx, db, "a1", "a1@example.com", "AAAAAAAA"); err != nil {
					return err
				}
				if err := db.InTx(ctx, func(ctx context.Context) error {
					return insert(ctx, db, "a2", "a2@example.com", "BBBBBBBB")
				}); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("InTx = %v, want boom", err)
			}
			if exists(t, db, "a1") || exists(t, db, "a2") {
				t.Fatal("a rolled-back unit of work left an account behind")
			}
		}},
		{"CommitsTogether", func(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
			err := db.InTx(context.Background(), func(ctx context.Context) error {
				if err := insert(ctx, db, "a1", "a1@example.com", "AAAAAAAA"); err != nil {
					return err
				}
				if err := db.LockAccount(ctx, "a1"); err != nil {
					return err
				}
				return db.InTx(ctx, func(ctx context.Context) error {
					return insert(ctx, db, "a2", "a2@example.com", "BBBBBBBB")
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			if !exists(t, db, "a1") || !exists(t, db, "a2") {
				t.Fatal("a committed unit of work lost an account")
			}
		}},
		{"LockNeedsAUnitOfWork", func(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
			if _, _, err := accounts.Create(context.Background(), db, newAccount("a1", "a1@example.com", "AAAAAAAA")); err != nil {
				t.Fatal(err)
			}
			if err := db.LockAccount(context.Background(), "a1"); err == nil {
				t.Fatal("LockAccount outside InTx succeeded; its lock would end at once")
			}
		}},
	}
	runConformance(t, cases, mustOpen)
}
