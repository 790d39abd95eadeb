package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/storage"
)

// Migration 0018 moves each account's subscription into its row: a live
// account keeps its plan and expiry, a tombstone (which had no
// subscription row) stays unreadable, and new accounts work as before.
func TestMigrateSubscriptionIntoAccounts(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db, err := sqlstore.Open(ctx, url, sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := sqlstore.MigrateUpTo(ctx, db, 17); err != nil {
			t.Fatal(err)
		}
		created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		expires := time.Date(2027, 6, 7, 8, 9, 10, 0, time.UTC)
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO accounts (id, email, password_hash, referral_code, created_at) VALUES (?, ?, ?, ?, ?)`, []any{"live", "live@example.com", "$argon2id$x", "LIVE0001", created}},
			{`INSERT INTO subscriptions (account_id, plan, expires_at, updated_at) VALUES (?, ?, ?, ?)`, []any{"live", "pro", expires, created}},
			{`INSERT INTO accounts (id, email, password_hash, referral_code, created_at, deleted_at) VALUES (?, ?, ?, ?, ?, ?)`, []any{"gone", "deleted:gone", "", "deleted:gone", created, created}},
		} {
			if err := sqlstore.Exec(ctx, db, q.sql, q.args...); err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
		}
		applied, err := db.Migrate(ctx)
		if err != nil || len(applied) == 0 || applied[0] != "0018_account_subscription.sql" {
			t.Fatalf("migrate: %v %v, want 0018_account_subscription.sql first", applied, err)
		}
		a, err := db.AccountByID(ctx, "live")
		if err != nil || a.Subscription.Plan != "pro" || !a.Subscription.ExpiresAt.Equal(expires) || !a.CreatedAt.Equal(created) {
			t.Fatalf("live account after the migration: %+v %v", a, err)
		}
		if _, err := db.AccountByID(ctx, "gone"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("tombstone after the migration: %v, want ErrNotFound", err)
		}
		if _, _, err := db.SetSubscription(ctx, "gone", "pro", expires); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("subscription of a tombstone: %v, want ErrNotFound", err)
		}
		sub, changed, err := db.SetSubscription(ctx, "live", "basic", expires.Add(time.Hour))
		if err != nil || !changed || sub.Plan != "basic" {
			t.Fatalf("set subscription: %+v %v %v", sub, changed, err)
		}
		if a, err := db.AccountByID(ctx, "live"); err != nil || a.Subscription.Plan != "basic" || !a.Subscription.ExpiresAt.Equal(expires.Add(time.Hour)) {
			t.Fatalf("after set: %+v %v", a, err)
		}
	})
}
