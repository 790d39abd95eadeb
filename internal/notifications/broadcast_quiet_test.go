package notifications_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// quietEnv is a running Herald whose service and store read one test
// clock (Herald's own "now"; River's is real time, and the clock is a
// year ahead of it, so a River job scheduled for the end of the quiet
// hours never runs by itself: only the sweep, on the test clock, starts
// it), and three users with a phone each: two in Europe/Berlin with
// quiet hours 22:00–07:00 and one without quiet hours.
type quietEnv struct {
	*env
	clk                   *testsupport.Clock
	owl, sleeper, daytime string
}

// quietNight is 23:00 in Berlin on the night the clocks jump from 02:00
// to 03:00: the window 22:00–07:00 ends at 07:00 CEST, 05:00 UTC.
var quietNight = time.Date(2027, 3, 27, 22, 0, 0, 0, time.UTC)

func newQuietEnv(t *testing.T, url string) *quietEnv {
	t.Helper()
	q := newQuietEnvStopped(t, url)
	q.start(t)
	return q
}

// newQuietEnvStopped is newQuietEnv with its job runner not started.
func newQuietEnvStopped(t *testing.T, url string) *quietEnv {
	t.Helper()
	clk := testsupport.NewClock(quietNight)
	e := newEnv(t, url, withConfig(func(c *notifications.Config) { c.Now = clk.Now }))
	e.db.UseTestClock(clk.Now)
	q := &quietEnv{env: e, clk: clk}
	ctx := context.Background()
	night := preferences.QuietHours{Start: 22 * 60, End: 7 * 60}
	for _, u := range []struct {
		id    *string
		token string
		s     preferences.Schedule
	}{{&q.owl, "owl-phone", preferences.Schedule{TimeZone: "Europe/Berlin", Quiet: &night}},
		{&q.sleeper, "sleeper-phone", preferences.Schedule{TimeZone: "Europe/Berlin", Quiet: &night}},
		{&q.daytime, "day-phone", preferences.Schedule{TimeZone: "Asia/Tokyo"}}} {
		*u.id = e.account(t, u.token+"@example.com")
		if _, err := e.devices.Register(ctx, *u.id, "android", u.token, ""); err != nil {
			t.Fatal(err)
		}
		if err := e.db.InTx(ctx, func(ctx context.Context) error { return e.db.SetNotificationSchedule(ctx, *u.id, u.s) }); err != nil {
			t.Fatal(err)
		}
	}
	return q
}

// pushes is how many pushes each phone got: owl, sleeper, daytime.
func (q *quietEnv) pushes() [3]int {
	return [3]int{q.fcm.Delivered("owl-phone"), q.fcm.Delivered("sleeper-phone"), q.fcm.Delivered("day-phone")}
}

// waitHeld waits until the job's walk is over with held devices held and
// sent sent, and the job waits, running, for the end of the quiet hours.
func (q *quietEnv) waitHeld(t *testing.T, id string, held, sent int) notifications.Job {
	t.Helper()
	var j notifications.Job
	waitFor(t, "the walk to hold the night owls' phones", 30*time.Second, func() bool {
		var err error
		if j, err = q.svc.Job(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return (j.Held == held && j.Sent == sent && j.ResumeAt != nil) || j.Finished()
	})
	if want := time.Date(2027, 3, 28, 5, 0, 0, 0, time.UTC); j.Status != notifications.StatusRunning || j.Held != held || j.Sent != sent || j.ResumeAt == nil || !j.ResumeAt.Equal(want) {
		t.Fatalf("job = %+v, want running with %d held and %d sent, resuming at %v", j, held, sent, want)
	}
	return j
}

// A product broadcast at 23:00 in Berlin sends the phone of the user
// without quiet hours at once and holds the two night owls' phones; a
// security broadcast and an urgent one pass through. While held, the
// sweep leaves the job alone and one owl turns product pushes off. At
// 07:00 (the night the clocks jump) the sweep, on any replica, starts it
// again: the other owl's phone gets it, the one who opted out is counted
// opted_out, and the job completes with nothing held.
func TestBroadcastHoldsQuietHours(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		q := newQuietEnv(t, url)
		ctx := context.Background()
		for _, o := range []notifications.BroadcastOptions{{Category: preferences.CategorySecurity}, {Category: preferences.CategoryProduct, Urgent: true}} {
			j, err := q.svc.BroadcastWith(ctx, hello, o)
			if err != nil {
				t.Fatal(err)
			}
			if j = q.waitJob(t, j.ID, 30*time.Second); j.Status != notifications.StatusCompleted || j.Sent != 3 || j.Held != 0 {
				t.Fatalf("a %s broadcast (urgent %v) at night = %+v, want all 3 sent, none held", o.Category, o.Urgent, j)
			}
		}
		if got := q.pushes(); got != [3]int{2, 2, 2} {
			t.Fatalf("pushes %v after the security and urgent broadcasts, want 2 each", got)
		}

		j, err := q.svc.BroadcastWith(ctx, hello, notifications.BroadcastOptions{Category: preferences.CategoryProduct})
		if err != nil {
			t.Fatal(err)
		}
		q.waitHeld(t, j.ID, 2, 1)
		if got := q.pushes(); got != [3]int{2, 2, 3} {
			t.Fatalf("pushes %v at 23:00, want only the daytime phone to get the product broadcast", got)
		}
		if n, err := q.svc.Sweep(ctx); err != nil || n != 0 {
			t.Fatalf("the sweep at 23:00 requeued %d (%v), want the waiting job left alone", n, err)
		}
		q.clk.Set(time.Date(2027, 3, 28, 4, 59, 0, 0, time.UTC)) // 06:59 CEST
		if n, err := q.svc.Sweep(ctx); err != nil || n != 0 {
			t.Fatalf("the sweep at 06:59 requeued %d (%v), want the waiting job left alone", n, err)
		}
		if err := q.db.InTx(ctx, func(ctx context.Context) error {
			return q.db.SetNotificationSettings(ctx, q.sleeper, []preferences.Setting{{Category: preferences.CategoryProduct, Channel: preferences.ChannelPush, Enabled: false}})
		}); err != nil {
			t.Fatal(err)
		}

		q.clk.Set(time.Date(2027, 3, 28, 5, 0, 30, 0, time.UTC)) // 07:00:30 CEST
		if n, err := q.svc.Sweep(ctx); err != nil || n != 1 {
			t.Fatalf("the sweep at 07:00 requeued %d (%v), want the job", n, err)
		}
		j = q.waitJob(t, j.ID, 30*time.Second)
		if j.Status != notifications.StatusCompleted || j.Sent != 2 || j.OptedOut != 1 || j.Held != 0 || j.Sent+j.OptedOut != j.TotalRecipients {
			t.Fatalf("job after the quiet hours = %+v, want completed: 2 sent, 1 opted out, none held", j)
		}
		if got := q.pushes(); got != [3]int{3, 2, 3} {
			t.Fatalf("pushes %v after 07:00, want the owl's phone to get the held broadcast, not the one who opted out", got)
		}
	})
}

// Cancelling a broadcast with held devices sends none of them: the River
// job due at the end of the window (run here at once, by hand) finds the
// job cancelled.
func TestBroadcastCancelSendsNoneHeld(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		q := newQuietEnv(t, url)
		ctx := context.Background()
		j, err := q.svc.BroadcastWith(ctx, hello, notifications.BroadcastOptions{Category: preferences.CategoryService})
		if err != nil {
			t.Fatal(err)
		}
		q.waitHeld(t, j.ID, 2, 1)
		if j, err = q.svc.Cancel(ctx, j.ID); err != nil || j.Status != notifications.StatusCancelled {
			t.Fatalf("cancel = %+v, %v", j, err)
		}
		q.clk.Set(time.Date(2027, 3, 28, 6, 0, 0, 0, time.UTC))
		if n, err := q.svc.Sweep(ctx); err != nil || n != 0 {
			t.Fatalf("the sweep requeued %d cancelled jobs (%v)", n, err)
		}
		w := &notifications.BroadcastWorker{Service: q.svc}
		if err := w.Work(ctx, &river.Job[notifications.BroadcastArgs]{JobRow: &rivertype.JobRow{ID: 1 << 40, Attempt: 1, MaxAttempts: 25}, Args: notifications.BroadcastArgs{JobID: j.ID}}); err != nil {
			t.Fatal(err)
		}
		if got := q.pushes(); got != [3]int{0, 0, 1} {
			t.Fatalf("pushes %v after the cancel and the end of the window, want only the daytime phone's", got)
		}
		if j, _ = q.svc.Job(ctx, j.ID); j.Status != notifications.StatusCancelled || j.Sent != 1 {
			t.Fatalf("job = %+v, want cancelled with 1 sent", j)
		}
	})
}

// A run that claimed the walk's devices and died before sending any is
// taken over after its lease: the resumed walk decides quiet hours again,
// so the night owls' phones are held, not sent.
func TestBroadcastResumedWalkHoldsAgain(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		q := newQuietEnvStopped(t, url)
		ctx := context.Background()
		j, err := q.svc.BroadcastWith(ctx, hello, notifications.BroadcastOptions{Category: preferences.CategoryProduct})
		if err != nil {
			t.Fatal(err)
		}
		until := q.clk.Now().Add(time.Minute)
		if l, err := q.db.AcquireBroadcast(ctx, j.ID, "dead-worker", until); err != nil || !l.Acquired {
			t.Fatalf("acquire %+v, %v", l, err)
		}
		if c, err := q.db.ClaimNextBatch(ctx, j.ID, "dead-worker", 10, until); err != nil || len(c.Claims) != 3 {
			t.Fatalf("claim %+v, %v", c, err)
		}
		// The dead worker's lease lapses; the broadcast's River job takes
		// the job over.
		q.clk.Advance(2 * time.Minute)
		q.start(t)
		q.waitHeld(t, j.ID, 2, 1)
		if got := q.pushes(); got != [3]int{0, 0, 1} {
			t.Fatalf("pushes %v after the takeover, want only the daytime phone's", got)
		}
	})
}

// "At 09:00 in each recipient's time zone" to users in Tokyo, Berlin and
// New York on the day Europe's clocks jump forward: one job, scheduled
// at 09:00 in UTC+14 (19:00 UTC the day before), that sends each phone at
// 09:00 on its owner's clock — 00:00, 07:00 (CEST, not CET) and 13:00 UTC —
// and completes after the last. The job's River jobs are a year ahead of
// River's clock, so the test starts each run: the first by hand, the rest
// through the sweep.
func TestBroadcastAtLocalTime(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		clk := testsupport.NewClock(time.Date(2027, 3, 27, 12, 0, 0, 0, time.UTC))
		e := newEnv(t, url, withConfig(func(c *notifications.Config) { c.Now = clk.Now }))
		e.db.UseTestClock(clk.Now)
		ctx := context.Background()
		zones := []string{"Asia/Tokyo", "Europe/Berlin", "America/New_York"}
		for _, z := range zones {
			a := e.account(t, z+"@example.com")
			if _, err := e.devices.Register(ctx, a, "android", "phone-"+z, ""); err != nil {
				t.Fatal(err)
			}
			if err := e.db.InTx(ctx, func(ctx context.Context) error {
				return e.db.SetNotificationSchedule(ctx, a, preferences.Schedule{TimeZone: z})
			}); err != nil {
				t.Fatal(err)
			}
		}
		e.start(t)
		pushes := func() (p [3]int) {
			for i, z := range zones {
				p[i] = e.fcm.Delivered("phone-" + z)
			}
			return p
		}
		for _, tc := range []struct {
			in    notifications.LocalSendTime
			field string
		}{{notifications.LocalSendTime{Date: "2027-3-28", Time: "09:00"}, "sendAtLocal.date"}, {notifications.LocalSendTime{Date: "2027-03-28", Time: "9:00"}, "sendAtLocal.time"},
			{notifications.LocalSendTime{Date: "2027-03-25", Time: "09:00"}, "sendAtLocal"}, {notifications.LocalSendTime{Date: "2027-05-28", Time: "09:00"}, "sendAtLocal"}} {
			_, err := e.svc.BroadcastWith(ctx, hello, notifications.BroadcastOptions{SendAtLocal: &tc.in})
			if ae := wantCode(t, err, "VALIDATION_ERROR"); ae.Details["field"] != tc.field {
				t.Fatalf("sendAtLocal %+v: %v, want field %s", tc.in, ae, tc.field)
			}
		}
		j, err := e.svc.BroadcastWith(ctx, hello, notifications.BroadcastOptions{SendAtLocal: &notifications.LocalSendTime{Date: "2027-03-28", Time: "09:00"}})
		if err != nil {
			t.Fatal(err)
		}
		if first := time.Date(2027, 3, 27, 19, 0, 0, 0, time.UTC); j.Status != notifications.StatusScheduled || j.SendAt == nil || !j.SendAt.Equal(first) || j.TotalRecipients != 3 {
			t.Fatalf("job = %+v, want scheduled at %v for 3", j, first)
		}
		clk.Set(time.Date(2027, 3, 27, 19, 0, 0, 0, time.UTC))
		w := &notifications.BroadcastWorker{Service: e.svc}
		if err := w.Work(ctx, &river.Job[notifications.BroadcastArgs]{JobRow: &rivertype.JobRow{ID: 1 << 40, Attempt: 1, MaxAttempts: 25}, Args: notifications.BroadcastArgs{JobID: j.ID}}); err != nil {
			t.Fatal(err)
		}
		if j, _ = e.svc.Job(ctx, j.ID); j.Held != 3 || j.ResumeAt == nil || !j.ResumeAt.Equal(time.Date(2027, 3, 28, 0, 0, 0, 0, time.UTC)) || pushes() != [3]int{} {
			t.Fatalf("at 19:00 UTC job = %+v, pushes %v; want all 3 held until Tokyo's 09:00", j, pushes())
		}
		for i, at := range []time.Time{time.Date(2027, 3, 28, 0, 0, 30, 0, time.UTC), time.Date(2027, 3, 28, 7, 0, 30, 0, time.UTC), time.Date(2027, 3, 28, 13, 0, 30, 0, time.UTC)} {
			clk.Set(at.Add(-time.Minute))
			if n, err := e.svc.Sweep(ctx); err != nil || n != 0 {
				t.Fatalf("the sweep a minute before %s's 09:00 requeued %d (%v)", zones[i], n, err)
			}
			clk.Set(at)
			if n, err := e.svc.Sweep(ctx); err != nil || n != 1 {
				t.Fatalf("the sweep at %s's 09:00 requeued %d (%v)", zones[i], n, err)
			}
			waitFor(t, zones[i]+"'s phone sent at its 09:00", 30*time.Second, func() bool {
				j, _ = e.svc.Job(ctx, j.ID)
				return j.Sent == i+1 && (j.Finished() || j.ResumeAt != nil && j.ResumeAt.After(at))
			})
			want := [3]int{}
			for k := range i + 1 {
				want[k] = 1
			}
			if got := pushes(); got != want {
				t.Fatalf("at %v pushes %v, want %v", at, got, want)
			}
		}
		if j.Status != notifications.StatusCompleted || j.Sent != 3 || j.Held != 0 {
			t.Fatalf("job = %+v, want completed with 3 sent", j)
		}
	})
}
