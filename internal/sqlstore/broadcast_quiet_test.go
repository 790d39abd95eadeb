package sqlstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// Quiet hours for broadcasts (issue 26): the store hands the engine each
// claim's owner schedule, keeps held devices as rows due at the end of
// their window, releases them when due, and parks a job with nothing due
// so that the sweep leaves it alone until then.
func TestBroadcastQuietHoursConformance(t *testing.T) {
	runConformance(t, []storeCase{
		{"ClaimsCarryTheOwnersSchedule", testQuietClaimsCarrySchedule},
		{"HeldRowsParkAndRelease", testQuietHeldParkRelease},
	}, mustOpenWithWorkers)
}

func setSchedule(t *testing.T, db *sqlstore.DB, account string, s preferences.Schedule) {
	t.Helper()
	if err := db.InTx(context.Background(), func(ctx context.Context) error { return db.SetNotificationSchedule(ctx, account, s) }); err != nil {
		t.Fatal(err)
	}
}

var nightHours = &preferences.QuietHours{Start: 22 * 60, End: 7 * 60}

// The walk's claim (uncapped: one statement on PostgreSQL; capped: the
// owners counted one by one), its resumption and a take-up of a retry
// each carry the owner's time zone and quiet hours; an owner without a
// schedule row has the zero schedule.
func testQuietClaimsCarrySchedule(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	mustAccount(t, db, "a2")
	mustRegister(t, db, "d1", "a1", "tok-d1")
	mustRegister(t, db, "d2", "a2", "tok-d2")
	setSchedule(t, db, "a1", preferences.Schedule{TimeZone: "Europe/Berlin", Quiet: nightHours})
	want := map[string]preferences.Schedule{"d1": {TimeZone: "Europe/Berlin", Quiet: nightHours}, "d2": {}}
	check := func(what string, claims []notifications.Claim) {
		t.Helper()
		if len(claims) != 2 {
			t.Fatalf("%s: %d claims, want 2", what, len(claims))
		}
		for _, c := range claims {
			w := want[c.DeviceID]
			if c.Schedule.TimeZone != w.TimeZone || (c.Schedule.Quiet == nil) != (w.Quiet == nil) || (w.Quiet != nil && *c.Schedule.Quiet != *w.Quiet) {
				t.Fatalf("%s: %s has schedule %+v, want %+v", what, c.DeviceID, c.Schedule, w)
			}
		}
	}
	until := clk.Now().Add(time.Hour)
	for _, capPerDay := range []int{0, 5} {
		id := "plain"
		if capPerDay > 0 {
			id = "capped"
		}
		if _, err := db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: id, Subject: "S", Content: "C", Category: "product", CapPerDay: capPerDay}, notifications.BroadcastArgs{JobID: id}); err != nil {
			t.Fatal(err)
		}
		if l, err := db.AcquireBroadcast(ctx, id, "w1", until); err != nil || !l.Acquired {
			t.Fatalf("acquire %+v, %v", l, err)
		}
		c, err := db.ClaimNextBatch(ctx, id, "w1", 10, until)
		if err != nil {
			t.Fatal(err)
		}
		check(id+" claim", c.Claims)
		r, err := db.ResumeWalk(ctx, id, "w1", "", 10, until)
		if err != nil {
			t.Fatal(err)
		}
		check(id+" resume", r.Claims)
	}
	if _, err := db.RecordDeliveries(ctx, "plain", "w1", notifications.Record{Outcomes: []notifications.Outcome{
		{DeviceID: "d1", Status: notifications.DeliveryRetry}, {DeviceID: "d2", Status: notifications.DeliveryRetry}}}, until); err != nil {
		t.Fatal(err)
	}
	r, err := db.ReclaimDeliveries(ctx, "plain", "w1", true, "", 10, until)
	if err != nil {
		t.Fatal(err)
	}
	check("retry", r.Claims)
}

// Held outcomes are rows with their due time, counted in Held; with
// nothing due the job parks (running, lease freed, resume_at set) and the
// sweep leaves it alone until resume_at; once due, a release takes the
// rows up: a device whose owner opted out meanwhile becomes opted_out, a
// removed one skipped, the rest claimed with their schedule, and Held
// falls back to 0; with nothing held, the job does not park.
func testQuietHeldParkRelease(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	for _, a := range []string{"a1", "a2", "a3", "a4"} {
		mustAccount(t, db, a)
		mustRegister(t, db, "d-"+a, a, "tok-"+a)
		setSchedule(t, db, a, preferences.Schedule{TimeZone: "Europe/Berlin", Quiet: nightHours})
	}
	if _, err := db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: "job1", Subject: "S", Content: "C", Category: "product"}, notifications.BroadcastArgs{JobID: "job1"}); err != nil {
		t.Fatal(err)
	}
	until := clk.Now().Add(time.Minute)
	if l, err := db.AcquireBroadcast(ctx, "job1", "w1", until); err != nil || !l.Acquired {
		t.Fatalf("acquire %+v, %v", l, err)
	}
	c, err := db.ClaimNextBatch(ctx, "job1", "w1", 10, until)
	if err != nil || len(c.Claims) != 4 || !c.Done {
		t.Fatalf("claim %+v, %v", c, err)
	}
	soon, later := clk.Now().Add(2*time.Hour).UTC().Truncate(time.Second), clk.Now().Add(5*time.Hour).UTC().Truncate(time.Second)
	rec := notifications.Record{Sent: 1, Settled: c.Last, Outcomes: []notifications.Outcome{
		{DeviceID: "d-a1", Status: notifications.DeliveryHeld, DueAt: soon},
		{DeviceID: "d-a2", Status: notifications.DeliveryHeld, DueAt: soon},
		{DeviceID: "d-a3", Status: notifications.DeliveryHeld, DueAt: later},
	}}
	if kept, err := db.RecordDeliveries(ctx, "job1", "w1", rec, until); err != nil || !kept {
		t.Fatalf("record: %v, %v", kept, err)
	}
	if j, err := db.BroadcastJob(ctx, "job1"); err != nil || j.Held != 3 || j.Sent != 1 {
		t.Fatalf("job %+v, %v; want 3 held, 1 sent", j, err)
	}
	if r, err := db.ReleaseHeld(ctx, "job1", "w1", "", clk.Now(), 10, until); err != nil || len(r.Claims) != 0 || r.Last != "" {
		t.Fatalf("a release before any is due took %+v, %v", r, err)
	}
	var scheduled []notifications.BroadcastArgs
	newJob := func(id string) river.JobArgs {
		scheduled = append(scheduled, notifications.BroadcastArgs{JobID: id})
		return notifications.BroadcastArgs{JobID: id}
	}
	if parked, err := db.ParkBroadcast(ctx, "job1", "w1", newJob); err != nil || !parked || len(scheduled) != 1 {
		t.Fatalf("park: %v, %v (%d jobs)", parked, err, len(scheduled))
	}
	j, err := db.BroadcastJob(ctx, "job1")
	if err != nil || j.Status != notifications.StatusRunning || j.ResumeAt == nil || !j.ResumeAt.Equal(soon) {
		t.Fatalf("parked job %+v, %v; want running, resuming at %v", j, err, soon)
	}
	// The lease is free, but the job waits on purpose: no sweep until
	// its first device is due, however long after the lease.
	clk.Advance(time.Hour)
	if ids, err := db.RequeueStalledBroadcasts(ctx, time.Second, newJob); err != nil || len(ids) != 0 {
		t.Fatalf("the sweep requeued a parked job before it was due: %v, %v", ids, err)
	}
	clk.Advance(time.Hour + time.Second)
	if ids, err := db.RequeueStalledBroadcasts(ctx, time.Second, newJob); err != nil || !slices.Equal(ids, []string{"job1"}) {
		t.Fatalf("the sweep after resume_at: %v, %v; want job1 requeued (its River job lost)", ids, err)
	}
	// Another replica takes it; meanwhile a2 opted out and a1's device
	// was removed.
	setPreference(t, db, "a2", "product", "push", false)
	if err := db.DeactivateDevice(ctx, "a1", "d-a1"); err != nil {
		t.Fatal(err)
	}
	until = clk.Now().Add(time.Minute)
	if l, err := db.AcquireBroadcast(ctx, "job1", "w2", until); err != nil || !l.Acquired {
		t.Fatalf("take over %+v, %v", l, err)
	}
	r, err := db.ReleaseHeld(ctx, "job1", "w2", "", clk.Now(), 10, until)
	if err != nil || len(r.Claims) != 0 || r.Last != "d-a2" {
		t.Fatalf("release %+v, %v; want a1 skipped, a2 opted out, none claimed (a3 not due)", r, err)
	}
	if j, err := db.BroadcastJob(ctx, "job1"); err != nil || j.Held != 1 || j.OptedOut != 1 {
		t.Fatalf("job %+v, %v; want 1 held (a3), 1 opted out (a2)", j, err)
	}
	clk.Advance(3 * time.Hour)
	r, err = db.ReleaseHeld(ctx, "job1", "w2", "", clk.Now(), 10, until)
	if err != nil || !slices.Equal(claimIDs(r.Claims), []string{"d-a3"}) || r.Claims[0].Schedule.TimeZone != "Europe/Berlin" {
		t.Fatalf("release %+v, %v; want a3 with its schedule", r, err)
	}
	if kept, err := db.RecordDeliveries(ctx, "job1", "w2", notifications.Record{Outcomes: []notifications.Outcome{{DeviceID: "d-a3", Status: notifications.DeliverySent}}}, until); err != nil || !kept {
		t.Fatalf("record: %v, %v", kept, err)
	}
	if j, err := db.BroadcastJob(ctx, "job1"); err != nil || j.Held != 0 || j.Sent != 2 {
		t.Fatalf("job %+v, %v; want 0 held, 2 sent", j, err)
	}
	if parked, err := db.ParkBroadcast(ctx, "job1", "w2", newJob); err != nil || parked {
		t.Fatalf("park with nothing held: %v, %v", parked, err)
	}
	if j, err := db.BroadcastJob(ctx, "job1"); err != nil || j.ResumeAt != nil {
		t.Fatalf("job %+v, %v; want no resume_at once nothing is held", j, err)
	}
}
