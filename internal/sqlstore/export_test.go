package sqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SetAcquireTimeout shortens the wait for a pooled PostgreSQL connection.
func SetAcquireTimeout(db *DB, d time.Duration) {
	db.deadlines.timeout = d
	db.deadlines.cur.Store(nil)
}

// HoldConnections takes every PostgreSQL connection the pool will give
// until release is called.
func HoldConnections(t testing.TB, db *DB) (release func()) {
	t.Helper()
	var held []*pgxpool.Conn
	for range db.pool.Config().MaxConns {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		c, err := db.pool.Acquire(ctx)
		cancel()
		if err != nil {
			break // the rest are held elsewhere (River)
		}
		held = append(held, c)
	}
	if len(held) == 0 {
		t.Fatal("no connection to hold")
	}
	return func() {
		for _, c := range held {
			c.Release()
		}
	}
}

// MigrateUpTo applies Herald's migrations up to version.
func MigrateUpTo(ctx context.Context, db *DB, version int) error {
	_, err := db.migrate(ctx, version)
	return err
}

// Exec runs a statement outside the store's methods (`?` placeholders).
func Exec(ctx context.Context, db *DB, q string, args ...any) error {
	_, err := db.conn().exec(ctx, q, args...)
	return err
}

// WebhookOutbox is every event's payload, whatever its type.
func WebhookOutbox(ctx context.Context, db *DB) ([]string, error) {
	rs, err := db.conn().query(ctx, `SELECT payload FROM webhook_events ORDER BY id`)
	return collect(rs, err, func(r row) (string, error) {
		var p string
		return p, r.Scan(&p)
	})
}

// WebhookEventAccounts counts the events listed as naming account.
func WebhookEventAccounts(ctx context.Context, db *DB, account string) (int, error) {
	var n int
	err := db.conn().queryRow(ctx, `SELECT COUNT(*) FROM webhook_event_accounts WHERE account_id = ?`, account).Scan(&n)
	return n, err
}

// WebhookJob is a delivery job as River holds it.
type WebhookJob struct {
	ID          int64
	Args        string
	State       string
	ScheduledAt time.Time
}

// WebhookJobs lists the delivery jobs, oldest first.
func WebhookJobs(ctx context.Context, db *DB) ([]WebhookJob, error) {
	args := `json(args)`
	if db.dialect == storage.Postgres {
		args = `args::text`
	}
	rs, err := db.conn().query(ctx, `SELECT id, `+args+`, state, scheduled_at FROM river_job WHERE kind = 'webhook_delivery' ORDER BY id`)
	return collect(rs, err, func(r row) (WebhookJob, error) {
		var j WebhookJob
		return j, r.Scan(&j.ID, &j.Args, &j.State, &j.ScheduledAt)
	})
}

// SetQueryTimeout changes the query timeout.
func SetQueryTimeout(db *DB, d time.Duration) { db.queryTimeout = d }

// ExecInTx runs a statement in a transaction of its own.
func ExecInTx(ctx context.Context, db *DB, q string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, q)
		return err
	})
}

// Translate is translate.
var Translate = translate

// Recount counts accounts and devices by reading every row, as the
// overview's maintained counters must say.
func Recount(ctx context.Context, db *DB, since time.Time) (accounts.Counts, []devices.PlatformTokens, error) {
	a, err := db.recountAccounts(ctx, since)
	if err != nil {
		return a, nil, err
	}
	d, err := db.recountDeviceTokens(ctx)
	return a, d, err
}

// NotificationEmailJobs lists the notification_email jobs' arguments (as
// JSON), oldest first.
func NotificationEmailJobs(ctx context.Context, db *DB) ([]string, error) {
	args := `json(args)`
	if db.dialect == storage.Postgres {
		args = `args::text`
	}
	rs, err := db.conn().query(ctx, `SELECT `+args+` FROM river_job WHERE kind = 'notification_email' ORDER BY id`)
	return collect(rs, err, func(r row) (string, error) {
		var s string
		return s, r.Scan(&s)
	})
}

// NotificationEmailSchedule is when each notification_email job is
// scheduled, by the account it emails.
func NotificationEmailSchedule(ctx context.Context, db *DB) (map[string]time.Time, error) {
	account := `json_extract(args, '$.account_id')`
	if db.dialect == storage.Postgres {
		account = `args->>'account_id'`
	}
	rs, err := db.conn().query(ctx, `SELECT `+account+`, scheduled_at FROM river_job WHERE kind = 'notification_email' ORDER BY id`)
	type at struct {
		account string
		at      time.Time
	}
	all, err := collect(rs, err, func(r row) (at, error) {
		var a at
		return a, r.Scan(&a.account, &a.at)
	})
	out := map[string]time.Time{}
	for _, a := range all {
		out[a.account] = a.at
	}
	return out, err
}
