package sqlstore_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/jackc/pgx/v5/pgconn"
)

// A query whose caller sets no deadline (a job, a loop) is cut off at the
// query timeout, in a transaction or not; the answer is a 503 with
// Retry-After, and the pool serves the next query.
func TestQueryTimeout(t *testing.T) {
	sqlstoretest.Require(t, "postgres")
	db := sqlstoretest.Open(t, sqlstoretest.NewURL(t, "postgres"))
	sqlstore.SetQueryTimeout(db, 300*time.Millisecond)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"alone", func() error { return sqlstore.Exec(ctx, db, `SELECT pg_sleep(30)`) }},
		{"in a transaction", func() error { return sqlstore.ExecInTx(ctx, db, `SELECT pg_sleep(30)`) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- c.run() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("a 30 s query under a 300 ms query timeout still runs after 20 s")
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("query past its timeout: %v, want context.DeadlineExceeded", err)
			}
			if ae := api.Classify(err); ae.Status() != http.StatusServiceUnavailable || ae.RetryAfterSeconds <= 0 {
				t.Fatalf("shown as %d %s (Retry-After %d), want 503 with Retry-After", ae.Status(), ae.Code, ae.RetryAfterSeconds)
			}
			if err := sqlstore.Exec(ctx, db, `SELECT 1`); err != nil {
				t.Fatalf("the next query: %v", err)
			}
		})
	}
	// A caller's sooner deadline is kept as it is.
	soon, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	sqlstore.SetQueryTimeout(db, time.Minute)
	if err := sqlstore.Exec(soon, db, `SELECT pg_sleep(30)`); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("query past its caller's deadline: %v, want context.DeadlineExceeded", err)
	}
}

// A caller whose deadline comes before the acquire timeout's waits for a
// connection until its own deadline, and is told so (a 503 like the
// acquire timeout's, but within the request's deadline).
func TestAcquireKeepsCallersSoonerDeadline(t *testing.T) {
	sqlstoretest.Require(t, "postgres")
	// A small pool (migrations need two connections), every one of them
	// held: each acquire waits as long as it must, so none is left free.
	db := sqlstoretest.Open(t, sqlstoretest.NewURL(t, "postgres")+"&pool_max_conns=3")
	sqlstore.SetAcquireTimeout(db, time.Minute)
	hold, cancelHold := context.WithTimeout(context.Background(), time.Minute)
	defer cancelHold()
	for range 3 {
		held, err := db.Pool().Acquire(hold)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Release()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := db.AccountByID(ctx, "nobody"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read with the pool exhausted, past the caller's deadline: %v, want context.DeadlineExceeded", err)
	}
}

// PostgreSQL's "too many clients already" (53300) at run time is a busy
// database: 503 SERVICE_UNAVAILABLE with Retry-After, never a 500.
func TestTooManyClientsIsBusy(t *testing.T) {
	err := sqlstore.Translate(&pgconn.PgError{Severity: "FATAL", Code: "53300", Message: "sorry, too many clients already"})
	if !errors.Is(err, storage.ErrBusy) {
		t.Fatalf("53300 translated to %v, want ErrBusy", err)
	}
	ae := api.Classify(err)
	if ae.Status() != http.StatusServiceUnavailable || ae.Code != apperr.ServiceUnavailable || ae.RetryAfterSeconds <= 0 {
		t.Fatalf("53300 shown as %d %s (Retry-After %d), want 503 SERVICE_UNAVAILABLE with Retry-After", ae.Status(), ae.Code, ae.RetryAfterSeconds)
	}
}
