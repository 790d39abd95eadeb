package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/storage"
)

// With every pooled connection taken, a read waits out the acquire
// timeout and reports the database unavailable (503, not a hang); a
// cancelled caller is told so, at once or when it leaves while waiting;
// once connections are back, reads work again.
func TestAcquireTimeoutOnExhaustedPool(t *testing.T) {
	sqlstoretest.Require(t, "postgres")
	db, _ := jobstest.Open(t, sqlstoretest.NewURL(t, "postgres"), jobs.Config{})
	ctx := context.Background()
	sqlstore.SetAcquireTimeout(db, 300*time.Millisecond)
	release := sqlstore.HoldConnections(t, db)
	if _, err := db.AccountByID(ctx, "nobody"); !errors.Is(err, storage.ErrUnavailable) {
		release()
		t.Fatalf("read with the pool exhausted: %v, want ErrUnavailable", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := db.AccountByID(cancelled, "nobody"); !errors.Is(err, context.Canceled) {
		release()
		t.Fatalf("read by a cancelled caller: %v, want context.Canceled", err)
	}
	// A caller that goes away while it waits is told of its own end, not
	// of the wait's (a client gone is a 499, not a 500).
	leaving, leave := context.WithCancel(ctx)
	time.AfterFunc(50*time.Millisecond, leave)
	if _, err := db.AccountByID(leaving, "nobody"); !errors.Is(err, context.Canceled) {
		release()
		t.Fatalf("read by a caller that left while waiting: %v, want context.Canceled", err)
	}
	release()
	if _, err := db.AccountByID(ctx, "nobody"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("read once connections are back: %v, want ErrNotFound", err)
	}
}
