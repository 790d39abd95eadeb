package sqlstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// Caps for broadcasts (issue 26): a capped broadcast's claim counts each
// owner of its devices once against their cap of the day, and skips (and
// counts) the devices of owners over it.
func TestBroadcastCapsConformance(t *testing.T) {
	runConformance(t, []storeCase{
		{"OwnersOverTheCapAreSkipped", testBroadcastCapSkips},
		{"AResumedWalkCountsOnce", testBroadcastCapResumed},
		{"TwoBroadcastsAtOnce", testBroadcastCapConcurrent},
	}, mustOpenWithWorkers)
}

// createCappedBroadcast creates and leases to owner a product broadcast
// under a cap of limit a day.
func createCappedBroadcast(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock, id, owner string, limit int) {
	t.Helper()
	ctx := context.Background()
	j, err := db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: id, Subject: "News", Content: "Body", Category: "product", CapPerDay: limit}, notifications.BroadcastArgs{JobID: id})
	if err != nil || j.CapPerDay != limit {
		t.Fatalf("created %+v, %v", j, err)
	}
	if l, err := db.AcquireBroadcast(ctx, id, owner, clk.Now().Add(time.Hour)); err != nil || !l.Acquired {
		t.Fatalf("acquire %s: %+v, %v", id, l, err)
	}
}

// useCap counts one send of account against its product cap of today (UTC).
func useCap(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock, account, send string, limit int) bool {
	t.Helper()
	ok, err := preferences.UseCap(context.Background(), db, preferences.CapUse{AccountID: account, Category: "product",
		Window: clk.Now().UTC().Format(time.DateOnly), SendID: send, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// A cap of 2: an owner who already had 2 product sends today is skipped
// (each of their devices counted in Capped, with a row a resumed walk
// does not send), one who had 1 gets the broadcast (and is at the cap
// after it), an owner with two devices in two batches is counted once,
// an owner who opted out is not counted at all, and the day is the
// owner's own.
func testBroadcastCapSkips(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	for _, a := range []string{"a1", "a2", "a3", "a4", "a5"} {
		mustAccount(t, db, a)
	}
	// Devices in walk order: a1 twice (two batches of 2), a2, a3 twice,
	// a4, a5.
	for _, d := range [][2]string{{"d0", "a1"}, {"d1", "a2"}, {"d2", "a1"}, {"d3", "a3"}, {"d4", "a3"}, {"d5", "a4"}, {"d6", "a5"}} {
		mustRegister(t, db, d[0], d[1], "tok-"+d[0])
	}
	useCap(t, db, clk, "a2", "earlier-1", 2) // a2 had one today
	useCap(t, db, clk, "a3", "earlier-1", 2) // a3 had two: at the cap
	useCap(t, db, clk, "a3", "earlier-2", 2)
	setPreference(t, db, "a4", "product", "push", false)
	// a5 lives 14 hours ahead: its day is another than UTC's, with
	// nothing counted in it yet, whatever the 2 sends of UTC's day.
	if err := db.InTx(ctx, func(ctx context.Context) error {
		return db.SetNotificationSchedule(ctx, "a5", preferences.Schedule{TimeZone: "Pacific/Kiritimati"})
	}); err != nil {
		t.Fatal(err)
	}
	clk.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)) // 02:00 on the 23rd in Kiritimati
	useCap(t, db, clk, "a5", "earlier-1", 2)
	useCap(t, db, clk, "a5", "earlier-2", 2)

	createCappedBroadcast(t, db, clk, "job1", "w1", 2)
	until := clk.Now().Add(time.Hour)
	var claimed []string
	for range 4 {
		c, err := db.ClaimNextBatch(ctx, "job1", "w1", 2, until)
		if err != nil {
			t.Fatal(err)
		}
		claimed = append(claimed, claimIDs(c.Claims)...)
		if c.Done {
			break
		}
	}
	if want := []string{"d0", "d1", "d2", "d6"}; !slices.Equal(claimed, want) {
		t.Fatalf("claimed %v, want %v (a3 over the cap, a4 opted out)", claimed, want)
	}
	j, err := db.BroadcastJob(ctx, "job1")
	if err != nil || j.Capped != 2 || j.OptedOut != 1 {
		t.Fatalf("job %+v, %v; want capped 2 (a3's devices), opted out 1", j, err)
	}
	today := clk.Now().UTC().Format(time.DateOnly)
	for account, want := range map[string]int{"a1": 1, "a2": 2, "a3": 2, "a4": 0} {
		if n := capCount(t, db, account, "product", today); n != want {
			t.Errorf("%s counted %d today, want %d", account, n, want)
		}
	}
	if n := capCount(t, db, "a5", "product", "2026-11-23"); n != 1 {
		t.Errorf("a5 counted %d on its own day, want 1", n)
	}
	// Nothing settled: a new run resumes the claims, never a capped device.
	r, err := db.ResumeWalk(ctx, "job1", "w1", "", 10, until)
	if err != nil || !slices.Equal(claimIDs(r.Claims), claimed) {
		t.Fatalf("resume %+v, %v; want %v", r, err, claimed)
	}
}

// An owner counted by a run that died is not counted again by the run
// that takes the job over: its devices in later batches are sent, under
// a cap of 1.
func testBroadcastCapResumed(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	seedRecipients(t, db, 4) // a1: d000..d003
	createCappedBroadcast(t, db, clk, "job1", "w1", 1)
	c, err := db.ClaimNextBatch(ctx, "job1", "w1", 2, clk.Now().Add(time.Minute))
	if err != nil || !slices.Equal(claimIDs(c.Claims), []string{"d000", "d001"}) {
		t.Fatalf("first batch %+v, %v", c, err)
	}
	// w1 dies; w2 takes the lease over once it lapses.
	clk.Advance(2 * time.Hour)
	until := clk.Now().Add(time.Hour)
	if l, err := db.AcquireBroadcast(ctx, "job1", "w2", until); err != nil || !l.Acquired {
		t.Fatalf("take over %+v, %v", l, err)
	}
	if r, err := db.ResumeWalk(ctx, "job1", "w2", "", 10, until); err != nil || !slices.Equal(claimIDs(r.Claims), []string{"d000", "d001"}) {
		t.Fatalf("resume %+v, %v", r, err)
	}
	c, err = db.ClaimNextBatch(ctx, "job1", "w2", 2, until)
	if err != nil || !slices.Equal(claimIDs(c.Claims), []string{"d002", "d003"}) {
		t.Fatalf("second batch %+v, %v; want a1's other devices sent", c, err)
	}
	if j, _ := db.BroadcastJob(ctx, "job1"); j.Capped != 0 {
		t.Fatalf("capped %d, want 0", j.Capped)
	}
	if n := capCount(t, db, "a1", "product", clk.Now().UTC().Format(time.DateOnly)); n != 1 {
		t.Fatalf("a1 counted %d, want 1", n)
	}
	if useCap(t, db, clk, "a1", "later", 1) {
		t.Fatal("a send after the broadcast passed a cap of 1")
	}
}

// Two capped broadcasts walk the same owners at once, in batches of
// different sizes (so the owners of a batch of one overlap two batches of
// the other, in different device orders): neither fails (no deadlock),
// and under a cap of 1 each owner gets exactly one of them, on all of
// their devices.
func testBroadcastCapConcurrent(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	const owners, perOwner = 10, 3
	for a := range owners {
		mustAccount(t, db, fmt.Sprintf("a%02d", a))
	}
	for i := range owners * perOwner {
		mustRegister(t, db, fmt.Sprintf("d%03d", i), fmt.Sprintf("a%02d", i%owners), fmt.Sprintf("t%03d", i))
	}
	createCappedBroadcast(t, db, clk, "job1", "w1", 1)
	createCappedBroadcast(t, db, clk, "job2", "w2", 1)
	until := clk.Now().Add(time.Hour)
	claimed := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range []struct {
		job, owner string
		batch      int
	}{{"job1", "w1", 7}, {"job2", "w2", 12}} {
		wg.Go(func() {
			for range owners * perOwner {
				c, err := db.ClaimNextBatch(ctx, w.job, w.owner, w.batch, until)
				if err != nil {
					t.Errorf("%s: %v", w.job, err)
					return
				}
				mu.Lock()
				claimed[w.job] = append(claimed[w.job], claimIDs(c.Claims)...)
				mu.Unlock()
				if c.Done || c.Stop {
					return
				}
			}
			t.Errorf("%s: the walk did not end", w.job)
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	got := map[string]int{} // devices claimed per owner, in either job
	for _, job := range []string{"job1", "job2"} {
		for _, d := range claimed[job] {
			var i int
			fmt.Sscanf(d, "d%03d", &i)
			got[fmt.Sprintf("a%02d", i%owners)]++
		}
	}
	j1, _ := db.BroadcastJob(ctx, "job1")
	j2, _ := db.BroadcastJob(ctx, "job2")
	if len(claimed["job1"])+len(claimed["job2"]) != owners*perOwner || j1.Capped+j2.Capped != owners*perOwner {
		t.Fatalf("claimed %d + %d, capped %d + %d; want %d each way", len(claimed["job1"]), len(claimed["job2"]), j1.Capped, j2.Capped, owners*perOwner)
	}
	for a := range owners {
		account := fmt.Sprintf("a%02d", a)
		if got[account] != perOwner {
			t.Errorf("%s: %d devices claimed, want %d (one broadcast, every device)", account, got[account], perOwner)
		}
		if n := capCount(t, db, account, "product", clk.Now().UTC().Format(time.DateOnly)); n != 1 {
			t.Errorf("%s counted %d, want 1", account, n)
		}
	}
}
