package sqlstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

// MigrationStatus reads without changing: on a fresh database everything
// is pending (and stays so), after Migrate everything is applied, River's
// migrations listed before Herald's.
func TestMigrationStatus(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := t.Context()
		db := openUnmigrated(t, url)
		count := func() (applied, pending int, list []sqlstore.Migration) {
			t.Helper()
			list, err := db.MigrationStatus(ctx)
			if err != nil {
				t.Fatalf("MigrationStatus: %v", err)
			}
			for _, m := range list {
				if m.Applied {
					applied++
				} else {
					pending++
				}
			}
			return applied, pending, list
		}
		for range 2 {
			if a, p, _ := count(); a != 0 || p == 0 {
				t.Fatalf("fresh database: %d applied, %d pending; want 0 applied and some pending", a, p)
			}
		}
		done, err := db.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a, p, list := count()
		if p != 0 || a != len(list) {
			t.Fatalf("after Migrate: %d applied, %d pending, want all %d applied", a, p, len(list))
		}
		if !strings.HasPrefix(list[0].Name, "river ") || list[len(list)-1].Name != done[len(done)-1] {
			t.Errorf("order: first %q, last %q; want River's first and Herald's last (%q)", list[0].Name, list[len(list)-1].Name, done[len(done)-1])
		}
	})
}

// openUnmigrated opens the database at url without migrating it; the test
// closes it.
func openUnmigrated(t *testing.T, url string) *sqlstore.DB {
	t.Helper()
	db, err := sqlstore.Open(t.Context(), url, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Migration 0018 moves each account's subscription into its row: a live
// account keeps its plan and expiry, a tombstone (which had no
// subscription row) stays unreadable, and new accounts work as before.
func TestMigrateSubscriptionIntoAccounts(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := t.Context()
		db := openUnmigrated(t, url)
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
		if _, _, err := subscriptions.Set(ctx, db, "gone", "pro", expires, nil); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("subscription of a tombstone: %v, want ErrNotFound", err)
		}
		sub, changed, err := subscriptions.Set(ctx, db, "live", "basic", expires.Add(time.Hour), nil)
		if err != nil || !changed || sub.Plan != "basic" {
			t.Fatalf("set subscription: %+v %v %v", sub, changed, err)
		}
		if a, err := db.AccountByID(ctx, "live"); err != nil || a.Subscription.Plan != "basic" || !a.Subscription.ExpiresAt.Equal(expires.Add(time.Hour)) {
			t.Fatalf("after set: %+v %v", a, err)
		}
	})
}

// Migration 0019 keeps only the class of each attempt's error.
func TestMigrateWebhookAttemptErrors(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := t.Context()
		db := openUnmigrated(t, url)
		if err := sqlstore.MigrateUpTo(ctx, db, 18); err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		attempt := func(id string, status int, err string) []any {
			return []any{id, "ep1", "msg_1", "user.created", 1, status, 10, err, at}
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO webhook_endpoints (id, url, description, event_types, secret, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`, []any{"ep1", "https://example.com/?token=t", "", "user.created", "whsec_c2VjcmV0", at, at}},
			{`INSERT INTO webhook_attempts (id, endpoint_id, event_id, event_type, attempt, status_code, duration_ms, error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, attempt("a1", 0, `Post "https://example.com/?token=t": dial tcp 10.0.0.1:443: connect: connection refused`)},
			{`INSERT INTO webhook_attempts (id, endpoint_id, event_id, event_type, attempt, status_code, duration_ms, error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, attempt("a2", 0, `Post "https://example.com/?token=t": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`)},
			{`INSERT INTO webhook_attempts (id, endpoint_id, event_id, event_type, attempt, status_code, duration_ms, error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, attempt("a3", 0, `Post "https://example.com/": tls: failed to verify certificate: x509: certificate signed by unknown authority`)},
			{`INSERT INTO webhook_attempts (id, endpoint_id, event_id, event_type, attempt, status_code, duration_ms, error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, attempt("a4", 500, `HTTP 500`)},
			{`INSERT INTO webhook_attempts (id, endpoint_id, event_id, event_type, attempt, status_code, duration_ms, error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, attempt("a5", 204, ``)},
		} {
			if err := sqlstore.Exec(ctx, db, q.sql, q.args...); err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
		}
		if err := sqlstore.MigrateUpTo(ctx, db, 19); err != nil {
			t.Fatal(err)
		}
		page, err := db.WebhookAttempts(ctx, "ep1", "", 10)
		if err != nil || len(page) != 5 {
			t.Fatalf("attempts %v %v", page, err)
		}
		want := map[string]string{"a1": "unreachable", "a2": "timeout", "a3": "tls", "a4": "http_status", "a5": ""}
		for _, a := range page {
			if a.Error != want[a.ID] {
				t.Errorf("attempt %s: error %q, want %q", a.ID, a.Error, want[a.ID])
			}
		}
	})
}

// Migration 0021 does to the events of accounts deleted before it what
// deletion now does, and lists the accounts each event names.
func TestMigrateDeletedAccountsEvents(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := t.Context()
		db := openUnmigrated(t, url)
		if err := sqlstore.MigrateUpTo(ctx, db, 20); err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		event := func(id, typ, data string) []any {
			return []any{id, typ, `{"type":"` + typ + `","timestamp":"2026-01-02T03:04:05Z","data":` + data + `}`, at}
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO accounts (id, email, password_hash, referral_code, created_at) VALUES (?, ?, ?, ?, ?)`, []any{"live", "live@example.com", "$argon2id$x", "LIVE0001", at}},
			{`INSERT INTO accounts (id, email, password_hash, referral_code, created_at, deleted_at) VALUES (?, ?, ?, ?, ?, ?)`, []any{"gone", "deleted:gone", "", "deleted:gone", at, at}},
			{`INSERT INTO webhook_events (id, type, payload, created_at) VALUES (?, ?, ?, ?)`, event("msg_1", "user.created", `{"userId":"gone","email":"gone@example.com"}`)},
			{`INSERT INTO webhook_events (id, type, payload, created_at) VALUES (?, ?, ?, ?)`, event("msg_2", "device.registered", `{"deviceId":"d1","userId":"gone","name":"Gone's phone"}`)},
			{`INSERT INTO webhook_events (id, type, payload, created_at) VALUES (?, ?, ?, ?)`, event("msg_3", "user.created", `{"userId":"live","email":"live@example.com","referrerId":"gone"}`)},
			{`INSERT INTO webhook_events (id, type, payload, created_at) VALUES (?, ?, ?, ?)`, event("msg_4", "user.deleted", `{"userId":"gone"}`)},
			{`INSERT INTO webhook_events (id, type, payload, created_at) VALUES (?, ?, ?, ?)`, event("msg_5", "device.removed", `{"deviceId":"d2","userId":"live"}`)},
		} {
			if err := sqlstore.Exec(ctx, db, q.sql, q.args...); err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
		}
		applied, err := db.Migrate(ctx)
		if err != nil || len(applied) == 0 || applied[0] != "0021_webhook_event_accounts.sql" {
			t.Fatalf("migrate: %v %v, want 0021_webhook_event_accounts.sql first", applied, err)
		}
		outbox, err := sqlstore.WebhookOutbox(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if len(outbox) != 3 {
			t.Fatalf("outbox after the migration: %q", outbox)
		}
		for _, p := range outbox {
			if strings.Contains(p, "gone@example.com") || strings.Contains(p, "Gone's") || strings.Contains(p, "referrerId") {
				t.Fatalf("the migration left %s", p)
			}
		}
		if n, err := sqlstore.WebhookEventAccounts(ctx, db, "live"); err != nil || n != 2 {
			t.Fatalf("events naming live: %d %v, want 2", n, err)
		}
		if n, err := sqlstore.WebhookEventAccounts(ctx, db, "gone"); err != nil || n != 0 {
			t.Fatalf("events naming gone: %d %v, want 0 (user.deleted is not listed)", n, err)
		}
		// Deleting live now removes its two events.
		if err := accounts.DeleteAccount(ctx, db, "live", nil); err != nil {
			t.Fatal(err)
		}
		outbox, _ = sqlstore.WebhookOutbox(ctx, db)
		if len(outbox) != 2 || !strings.Contains(outbox[0], `"user.deleted"`) || !strings.Contains(outbox[1], `"user.deleted"`) {
			t.Fatalf("outbox after deleting live: %q, want the two user.deleted", outbox)
		}
	})
}

// Migration 0046 lets a security event belong to no account (the
// operators' log); on SQLite it rebuilds the table, which must keep every
// event already recorded, and its account's cascade.
func TestMigrateSecurityLogKeepsEvents(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := t.Context()
		db := openUnmigrated(t, url)
		if err := sqlstore.MigrateUpTo(ctx, db, 45); err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO accounts (id, email, password_hash, referral_code, created_at) VALUES (?, ?, ?, ?, ?)`, []any{"ann", "ann@example.com", "$argon2id$x", "ANN00001", at}},
			{`INSERT INTO security_events (id, account_id, kind, outcome, actor, ip, user_agent, device_key, detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				[]any{"ev1", "ann", "login_ok", "ok", "user", "192.0.2.1", "Firefox", "k1", `{"method":"pwd"}`, at}},
			{`INSERT INTO security_events (id, account_id, kind, outcome, actor, ip, user_agent, device_key, detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				[]any{"ev2", "ann", "password_changed", "ok", "user", "192.0.2.1", "Firefox", "k1", `{}`, at.Add(time.Minute)}},
		} {
			if err := sqlstore.Exec(ctx, db, q.sql, q.args...); err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
		}
		if _, err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		evs, err := db.SecurityEvents(ctx, "ann", "", 10)
		if err != nil || len(evs) != 2 || evs[0].ID != "ev2" || evs[1].ID != "ev1" || evs[1].Detail["method"] != "pwd" || evs[1].IP != "192.0.2.1" || !evs[1].At.Equal(at) {
			t.Fatalf("ann's log after the migration: %+v %v", evs, err)
		}
		if err := sqlstore.Exec(ctx, db, `DELETE FROM accounts WHERE id = ?`, "ann"); err != nil {
			t.Fatal(err)
		}
		if evs, err := db.SecurityEvents(ctx, "ann", "", 10); err != nil || len(evs) != 0 {
			t.Fatalf("ann's log after the account's row went: %+v %v (the cascade was lost)", evs, err)
		}
	})
}
