package sqlstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/herald-vpn/herald/internal/fanout"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// fanoutChannel is one broadcast channel as the fan-out conformance test
// drives it through the store, the way its worker does: a job over
// recipients, its lease, the next batch the worker would send, the record
// of that batch's outcomes, the end, the cancel and the sweep.
type fanoutChannel struct {
	name string
	// create makes n recipients and a job for them.
	create  func(t *testing.T, db *sqlstore.DB, id string, n int)
	acquire func(ctx context.Context, db *sqlstore.DB, id, owner string, until time.Time) (fanout.Lease, error)
	// claim takes the next batch of up to limit recipients owner would
	// send: those an earlier run left unknown first, then the walk's
	// next. stop: the job is not owner's running job.
	claim func(ctx context.Context, db *sqlstore.DB, id, owner string, limit int, until time.Time) (b fanoutBatch, stop bool, err error)
	// state is the job's status and the recipients its counters count.
	state   func(ctx context.Context, db *sqlstore.DB, id string) (status string, counted int, version int64, err error)
	finish  func(ctx context.Context, db *sqlstore.DB, id, owner, status string) (string, error)
	cancel  func(ctx context.Context, db *sqlstore.DB, id string) (string, error)
	release func(ctx context.Context, db *sqlstore.DB, id, owner string) error
	requeue func(ctx context.Context, db *sqlstore.DB, minInterval time.Duration) ([]string, error)
	// completed is the data of the webhook event of a completed job of
	// total recipients, all sent, as the store writes it.
	completed func(id string, total int) string
}

// fanoutBatch is a claimed batch: settle records every recipient of it as
// sent, as its owner, and reports whether the owner still held the lease.
type fanoutBatch struct {
	size   int
	settle func(ctx context.Context, until time.Time) (kept bool, err error)
}

var pushChannel = fanoutChannel{
	name: "push",
	create: func(t *testing.T, db *sqlstore.DB, id string, n int) {
		for i := range n {
			a := fmt.Sprintf("%s-a%d", id, i)
			mustAccount(t, db, a)
			mustRegister(t, db, fmt.Sprintf("%s-d%d", id, i), a, fmt.Sprintf("%s-tok%d", id, i))
		}
		if _, err := db.CreateBroadcast(context.Background(), notifications.NewBroadcast{ID: id, Subject: "Hi", Content: "Hello"}, notifications.BroadcastArgs{JobID: id}); err != nil {
			t.Fatal(err)
		}
	},
	acquire: func(ctx context.Context, db *sqlstore.DB, id, owner string, until time.Time) (fanout.Lease, error) {
		l, err := db.AcquireBroadcast(ctx, id, owner, until)
		return l.Lease, err
	},
	claim: func(ctx context.Context, db *sqlstore.DB, id, owner string, limit int, until time.Time) (fanoutBatch, bool, error) {
		c, err := db.ResumeWalk(ctx, id, owner, "", limit, until)
		if err == nil && !c.Stop && len(c.Claims) == 0 {
			c, err = db.ClaimNextBatch(ctx, id, owner, limit, until)
		}
		if err != nil || c.Stop {
			return fanoutBatch{}, c.Stop, err
		}
		return fanoutBatch{size: len(c.Claims), settle: func(ctx context.Context, until time.Time) (bool, error) {
			return db.RecordDeliveries(ctx, id, owner, notifications.Record{Sent: len(c.Claims), Settled: c.Last}, until)
		}}, false, nil
	},
	state: func(ctx context.Context, db *sqlstore.DB, id string) (string, int, int64, error) {
		j, err := db.BroadcastJob(ctx, id)
		return j.Status, j.Sent + j.Failed + j.InvalidTokens, j.Version(), err
	},
	finish: func(ctx context.Context, db *sqlstore.DB, id, owner, status string) (string, error) {
		j, err := db.FinishBroadcast(ctx, id, owner, status, "")
		return j.Status, err
	},
	cancel: func(ctx context.Context, db *sqlstore.DB, id string) (string, error) {
		j, err := db.CancelBroadcast(ctx, id)
		return j.Status, err
	},
	release: func(ctx context.Context, db *sqlstore.DB, id, owner string) error {
		return db.ReleaseBroadcast(ctx, id, owner)
	},
	requeue: func(ctx context.Context, db *sqlstore.DB, minInterval time.Duration) ([]string, error) {
		return db.RequeueStalledBroadcasts(ctx, minInterval, func(id string) river.JobArgs { return notifications.BroadcastArgs{JobID: id} })
	},
	completed: func(id string, total int) string {
		return fmt.Sprintf(`"data":{"failed":0,"invalidTokens":0,"jobId":%q,"sent":%d,"status":"completed","totalRecipients":%d}`, id, total, total)
	},
}

var telegramChannel = fanoutChannel{
	name: "telegram",
	create: func(t *testing.T, db *sqlstore.DB, id string, n int) {
		var chats []int64
		for i := range n {
			chats = append(chats, int64(len(id))*1000+int64(i)+1) // distinct per job in these tests
		}
		subscribeChats(t, db, chats...)
		mustCreateMessengerBroadcast(t, db, id)
	},
	acquire: func(ctx context.Context, db *sqlstore.DB, id, owner string, until time.Time) (fanout.Lease, error) {
		_, held, err := db.AcquireMessengerBroadcast(ctx, id, owner, until)
		return fanout.Lease{Acquired: held}, err
	},
	claim: func(ctx context.Context, db *sqlstore.DB, id, owner string, limit int, until time.Time) (fanoutBatch, bool, error) {
		b, err := db.NextMessengerBroadcastBatch(ctx, id, owner, limit, until)
		if err != nil || b.Stop {
			return fanoutBatch{}, b.Stop, err
		}
		return fanoutBatch{size: len(b.ChatIDs), settle: func(ctx context.Context, until time.Time) (bool, error) {
			return db.RecordMessengerBroadcast(ctx, id, owner, messenger.BroadcastProgress{Cursor: b.ChatIDs[len(b.ChatIDs)-1], Sent: len(b.ChatIDs)}, until)
		}}, false, nil
	},
	state: func(ctx context.Context, db *sqlstore.DB, id string) (string, int, int64, error) {
		b, err := db.MessengerBroadcast(ctx, id)
		return b.Status, b.Sent + b.Failed + b.Blocked, b.Version(), err
	},
	finish: func(ctx context.Context, db *sqlstore.DB, id, owner, status string) (string, error) {
		b, err := db.FinishMessengerBroadcast(ctx, id, owner, status, "")
		return b.Status, err
	},
	cancel: func(ctx context.Context, db *sqlstore.DB, id string) (string, error) {
		b, err := db.CancelMessengerBroadcast(ctx, id)
		return b.Status, err
	},
	release: func(ctx context.Context, db *sqlstore.DB, id, owner string) error {
		return db.ReleaseMessengerBroadcast(ctx, id, owner)
	},
	requeue: func(ctx context.Context, db *sqlstore.DB, minInterval time.Duration) ([]string, error) {
		return db.RequeueStalledMessengerBroadcasts(ctx, minInterval, func(id string) river.JobArgs { return messenger.BroadcastArgs{JobID: id} })
	},
	completed: func(id string, total int) string {
		return fmt.Sprintf(`"data":{"blocked":0,"failed":0,"jobId":%q,"sent":%d,"status":"completed","totalRecipients":%d}`, id, total, total)
	},
}

// TestFanoutConformance holds both broadcast channels, on every database,
// to what the fan-out engine relies on: settling counts each batch once
// and ends the job with its event; a cancel stops the walk but counts the
// batch that was out; a worker that lost its lease adds nothing and walks
// no further; a live lease keeps others out and an expired one is taken
// over; after a crash the sweep queues the job once and the next worker
// finishes it with every recipient counted once.
func TestFanoutConformance(t *testing.T) {
	cases := []struct {
		name string
		fn   func(t *testing.T, ch fanoutChannel, db *sqlstore.DB, clk *testsupport.Clock)
	}{
		{"Settling", testFanoutSettling},
		{"Cancel", testFanoutCancel},
		{"LeaseLossAndTakeover", testFanoutLeaseLoss},
		{"ResumeAfterCrash", testFanoutResume},
	}
	for _, ch := range []fanoutChannel{pushChannel, telegramChannel} {
		t.Run(ch.name, func(t *testing.T) {
			var each []storeCase
			for _, c := range cases {
				each = append(each, storeCase{c.name, func(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) { c.fn(t, ch, db, clk) }})
			}
			runConformance(t, each, mustOpenWithBroadcastWorkers)
		})
	}
}

// wantState checks the job's status and count, and that its version never
// goes back.
func wantState(t *testing.T, ch fanoutChannel, db *sqlstore.DB, id, status string, counted int, last *int64) {
	t.Helper()
	s, n, v, err := ch.state(context.Background(), db, id)
	if err != nil || s != status || n != counted {
		t.Fatalf("job %s: %s with %d counted (%v), want %s with %d", id, s, n, err, status, counted)
	}
	if v < *last {
		t.Fatalf("job %s: version %d after %d", id, v, *last)
	}
	*last = v
}

// drain claims and settles batches of size 2 as owner until none is left,
// and returns how many recipients it settled.
func drain(t *testing.T, ch fanoutChannel, db *sqlstore.DB, id, owner string, until time.Time) int {
	t.Helper()
	ctx := context.Background()
	total := 0
	for range 100 {
		b, stop, err := ch.claim(ctx, db, id, owner, 2, until)
		if err != nil || stop {
			t.Fatalf("%s claims: stop %v, %v", owner, stop, err)
		}
		if b.size == 0 {
			return total
		}
		if kept, err := b.settle(ctx, until); err != nil || !kept {
			t.Fatalf("%s settles: kept %v, %v", owner, kept, err)
		}
		total += b.size
	}
	t.Fatal("the walk does not end")
	return 0
}

func testFanoutSettling(t *testing.T, ch fanoutChannel, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	ch.create(t, db, "j1", 5)
	var v int64
	wantState(t, ch, db, "j1", fanout.Queued, 0, &v)
	until := clk.Now().Add(time.Minute)
	if l, err := ch.acquire(ctx, db, "j1", "w1", until); err != nil || !l.Acquired {
		t.Fatalf("acquire: %+v, %v", l, err)
	}
	wantState(t, ch, db, "j1", fanout.Running, 0, &v)
	b, stop, err := ch.claim(ctx, db, "j1", "w1", 2, until)
	if err != nil || stop || b.size != 2 {
		t.Fatalf("claim: %+v %v %v", b, stop, err)
	}
	wantState(t, ch, db, "j1", fanout.Running, 0, &v) // claimed, not yet known
	if kept, err := b.settle(ctx, until); err != nil || !kept {
		t.Fatalf("settle: %v %v", kept, err)
	}
	wantState(t, ch, db, "j1", fanout.Running, 2, &v)
	if n := drain(t, ch, db, "j1", "w1", until); n != 3 {
		t.Fatalf("the rest of the walk settled %d, want 3", n)
	}
	wantState(t, ch, db, "j1", fanout.Running, 5, &v)
	if s, err := ch.finish(ctx, db, "j1", "w2", fanout.Completed); err != nil || s != fanout.Running {
		t.Fatalf("finish by another worker: %s, %v", s, err)
	}
	if s, err := ch.finish(ctx, db, "j1", "w1", fanout.Completed); err != nil || s != fanout.Completed {
		t.Fatalf("finish: %s, %v", s, err)
	}
	wantState(t, ch, db, "j1", fanout.Completed, 5, &v)
	if s, err := ch.finish(ctx, db, "j1", "w1", fanout.Failed); err != nil || s != fanout.Completed {
		t.Fatalf("finish twice: %s, %v", s, err)
	}
	if l, err := ch.acquire(ctx, db, "j1", "w2", until); err != nil || l.Acquired {
		t.Fatalf("a finished job was acquired: %+v, %v", l, err)
	}
	// One finishing event, its data from the job's wire type.
	payloads := broadcastEvents(t, db)
	want := ch.completed("j1", 5)
	if n := slices.IndexFunc(payloads, func(p string) bool { return strings.Contains(p, want) }); n < 0 || len(payloads) != 1 {
		t.Fatalf("events %q, want one with %s", payloads, want)
	}
}

// broadcastEvents is the payloads of the broadcast events in the outbox.
func broadcastEvents(t *testing.T, db *sqlstore.DB) []string {
	t.Helper()
	all, err := sqlstore.WebhookOutbox(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(all, func(p string) bool { return !strings.Contains(p, `.broadcast.`) })
}

func testFanoutCancel(t *testing.T, ch fanoutChannel, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	ch.create(t, db, "q1", 2)
	if s, err := ch.cancel(ctx, db, "q1"); err != nil || s != fanout.Cancelled {
		t.Fatalf("cancel queued: %s, %v", s, err)
	}
	until := clk.Now().Add(time.Minute)
	if l, err := ch.acquire(ctx, db, "q1", "w1", until); err != nil || l.Acquired {
		t.Fatalf("a cancelled job was acquired: %+v, %v", l, err)
	}

	ch.create(t, db, "r1", 4)
	var v int64
	if l, err := ch.acquire(ctx, db, "r1", "w1", until); err != nil || !l.Acquired {
		t.Fatalf("acquire: %+v, %v", l, err)
	}
	b, _, err := ch.claim(ctx, db, "r1", "w1", 2, until)
	if err != nil || b.size != 2 {
		t.Fatalf("claim: %+v, %v", b, err)
	}
	if s, err := ch.cancel(ctx, db, "r1"); err != nil || s != fanout.Cancelled {
		t.Fatalf("cancel running: %s, %v", s, err)
	}
	// The batch out at the cancel went out: it is counted; the walk stops.
	if kept, err := b.settle(ctx, until); err != nil || !kept {
		t.Fatalf("settle the batch out at the cancel: %v %v", kept, err)
	}
	wantState(t, ch, db, "r1", fanout.Cancelled, 2, &v)
	if _, stop, err := ch.claim(ctx, db, "r1", "w1", 2, until); err != nil || !stop {
		t.Fatalf("claim after cancel: stop %v, %v", stop, err)
	}
	if s, err := ch.finish(ctx, db, "r1", "w1", fanout.Completed); err != nil || s != fanout.Cancelled {
		t.Fatalf("finish after cancel: %s, %v", s, err)
	}
	if s, err := ch.cancel(ctx, db, "r1"); err != nil || s != fanout.Cancelled {
		t.Fatalf("cancel twice: %s, %v", s, err)
	}
	if err := ch.release(ctx, db, "r1", "w1"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	if ids, err := ch.requeue(ctx, db, time.Second); err != nil || len(ids) != 0 {
		t.Fatalf("a cancelled job was requeued: %v, %v", ids, err)
	}
	wantState(t, ch, db, "r1", fanout.Cancelled, 2, &v)
	if payloads := broadcastEvents(t, db); len(payloads) != 2 || !strings.Contains(payloads[1], `"status":"cancelled"`) {
		t.Fatalf("events %q, want the two cancels", payloads)
	}
}

func testFanoutLeaseLoss(t *testing.T, ch fanoutChannel, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	ch.create(t, db, "j1", 4)
	var v int64
	until := clk.Now().Add(10 * time.Second)
	if l, err := ch.acquire(ctx, db, "j1", "w1", until); err != nil || !l.Acquired {
		t.Fatalf("w1: %+v, %v", l, err)
	}
	if l, err := ch.acquire(ctx, db, "j1", "w2", clk.Now().Add(10*time.Second)); err != nil || l.Acquired {
		t.Fatalf("w2 took a live lease: %+v, %v", l, err)
	}
	lost, _, err := ch.claim(ctx, db, "j1", "w1", 2, until)
	if err != nil || lost.size != 2 {
		t.Fatalf("claim: %+v, %v", lost, err)
	}
	// w1 stalls; once its lease expires w2 takes over.
	clk.Advance(11 * time.Second)
	until = clk.Now().Add(10 * time.Second)
	if l, err := ch.acquire(ctx, db, "j1", "w2", until); err != nil || !l.Acquired {
		t.Fatalf("w2 after expiry: %+v, %v", l, err)
	}
	// w1's batch is not counted: w2 sends it again.
	if kept, err := lost.settle(ctx, until); err != nil || kept {
		t.Fatalf("w1 still settles: kept %v, %v", kept, err)
	}
	wantState(t, ch, db, "j1", fanout.Running, 0, &v)
	if _, stop, err := ch.claim(ctx, db, "j1", "w1", 2, until); err != nil || !stop {
		t.Fatalf("w1 still walks: stop %v, %v", stop, err)
	}
	if s, err := ch.finish(ctx, db, "j1", "w1", fanout.Completed); err != nil || s != fanout.Running {
		t.Fatalf("w1 finished w2's job: %s, %v", s, err)
	}
	if err := ch.release(ctx, db, "j1", "w1"); err != nil {
		t.Fatal(err)
	}
	if n := drain(t, ch, db, "j1", "w2", until); n != 4 {
		t.Fatalf("w2 settled %d, want every recipient once", n)
	}
	if s, err := ch.finish(ctx, db, "j1", "w2", fanout.Completed); err != nil || s != fanout.Completed {
		t.Fatalf("finish: %s, %v", s, err)
	}
	wantState(t, ch, db, "j1", fanout.Completed, 4, &v)
}

func testFanoutResume(t *testing.T, ch fanoutChannel, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	ch.create(t, db, "j1", 5)
	var v int64
	until := clk.Now().Add(10 * time.Second)
	if l, err := ch.acquire(ctx, db, "j1", "dead", until); err != nil || !l.Acquired {
		t.Fatalf("acquire: %+v, %v", l, err)
	}
	b, _, err := ch.claim(ctx, db, "j1", "dead", 2, until)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.settle(ctx, until); err != nil {
		t.Fatal(err)
	}
	// The worker dies with a second batch out.
	if _, _, err := ch.claim(ctx, db, "j1", "dead", 2, until); err != nil {
		t.Fatal(err)
	}
	wantState(t, ch, db, "j1", fanout.Running, 2, &v)
	if ids, err := ch.requeue(ctx, db, 10*time.Second); err != nil || len(ids) != 0 {
		t.Fatalf("requeued within the lease: %v, %v", ids, err)
	}
	clk.Advance(11 * time.Second)
	if ids, err := ch.requeue(ctx, db, 10*time.Second); err != nil || !slices.Equal(ids, []string{"j1"}) {
		t.Fatalf("sweep after the lease: %v, %v", ids, err)
	}
	if ids, err := ch.requeue(ctx, db, 10*time.Second); err != nil || len(ids) != 0 {
		t.Fatalf("requeued twice: %v, %v", ids, err)
	}
	until = clk.Now().Add(10 * time.Second)
	if l, err := ch.acquire(ctx, db, "j1", "next", until); err != nil || !l.Acquired {
		t.Fatalf("takeover: %+v, %v", l, err)
	}
	wantState(t, ch, db, "j1", fanout.Running, 2, &v)
	if n := drain(t, ch, db, "j1", "next", until); n != 3 {
		t.Fatalf("the next worker settled %d, want the 3 left", n)
	}
	if s, err := ch.finish(ctx, db, "j1", "next", fanout.Completed); err != nil || s != fanout.Completed {
		t.Fatalf("finish: %s, %v", s, err)
	}
	wantState(t, ch, db, "j1", fanout.Completed, 5, &v)
}
