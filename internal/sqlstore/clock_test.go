package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// Two replicas on one PostgreSQL database, one clock 2 s behind and one
// 2 s ahead: a 3 s lease the one behind takes ends, on its own clock,
// 1 s before the other's now, yet the one ahead neither takes it nor
// queues it for takeover, because leases run on the database's clock
// (clock.go). PostgreSQL only: on SQLite one process is the only writer
// and its clock is the lease's.
func TestLeasesIgnoreReplicaClocks(t *testing.T) {
	url := sqlstoretest.NewURL(t, "postgres")
	const skew, ttl = 2 * time.Second, 3 * time.Second
	behind, _ := jobstest.Open(t, url, jobs.Config{})
	ahead, _ := jobstest.Open(t, url, jobs.Config{})
	behind.Now = func() time.Time { return time.Now().Add(-skew).UTC() }
	ahead.Now = func() time.Time { return time.Now().Add(skew).UTC() }
	ctx := context.Background()

	if ok, err := behind.AcquireLease(ctx, "telegram-poll", "r1", behind.Now().Add(ttl)); err != nil || !ok {
		t.Fatalf("the replica behind did not take the free polling lease: %v, %v", ok, err)
	}
	if ok, err := ahead.AcquireLease(ctx, "telegram-poll", "r2", ahead.Now().Add(ttl)); err != nil || ok {
		t.Fatalf("the replica ahead took the live polling lease: %v, %v", ok, err)
	}

	seedRecipients(t, behind, 2)
	if _, err := behind.CreateBroadcast(ctx, notifications.NewBroadcast{ID: "job1", Subject: "s", Content: "c"}, notifications.BroadcastArgs{JobID: "job1"}); err != nil {
		t.Fatal(err)
	}
	if l, err := behind.AcquireBroadcast(ctx, "job1", "w1", behind.Now().Add(ttl)); err != nil || !l.Acquired {
		t.Fatalf("the replica behind did not take the broadcast: %+v, %v", l, err)
	}
	if l, err := ahead.AcquireBroadcast(ctx, "job1", "w2", ahead.Now().Add(ttl)); err != nil || l.Acquired || l.HeldBy != "w1" {
		t.Fatalf("the replica ahead took the live broadcast: %+v, %v", l, err)
	}
	ids, err := ahead.RequeueStalledBroadcasts(ctx, time.Millisecond, func(id string) river.JobArgs { return notifications.BroadcastArgs{JobID: id} })
	if err != nil || len(ids) != 0 {
		t.Fatalf("the replica ahead queued the live broadcast for takeover: %v, %v", ids, err)
	}
	if _, err := behind.RecordDeliveries(ctx, "job1", "w1", notifications.Record{}, behind.Now().Add(ttl)); err != nil {
		t.Fatal(err)
	}
	if l, err := ahead.AcquireBroadcast(ctx, "job1", "w2", ahead.Now().Add(ttl)); err != nil || l.Acquired {
		t.Fatalf("the replica ahead took the broadcast after its lease was renewed: %+v, %v", l, err)
	}
}
