package notifications_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// verifyEmails marks every account's address verified, so that the
// email walk queues an email for each.
func verifyEmails(t *testing.T, e *env) {
	t.Helper()
	const q = `UPDATE accounts SET email_verified_at = created_at`
	var err error
	if e.db.Dialect() == storage.Postgres {
		_, err = e.db.Pool().Exec(context.Background(), q)
	} else {
		_, err = e.db.SQL().ExecContext(context.Background(), q)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// emailsScheduled is when each notification_email job of broadcast job
// is scheduled, by the account it emails (River's rows).
func emailsScheduled(t *testing.T, e *env, job string) map[string]time.Time {
	t.Helper()
	const q = `SELECT args, scheduled_at FROM river_job WHERE kind = 'notification_email'`
	out := map[string]time.Time{}
	add := func(args []byte, at time.Time) {
		var a notifications.EmailArgs
		if err := json.Unmarshal(args, &a); err != nil {
			t.Fatal(err)
		}
		if a.BroadcastID == job {
			out[a.AccountID] = at.UTC()
		}
	}
	ctx := context.Background()
	if e.db.Dialect() == storage.Postgres {
		rows, err := e.db.Pool().Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var args []byte
			var at time.Time
			if err := rows.Scan(&args, &at); err != nil {
				t.Fatal(err)
			}
			add(args, at)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	rows, err := e.db.SQL().QueryContext(ctx, `SELECT json(args), scheduled_at FROM river_job WHERE kind = 'notification_email'`)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var args []byte
		var at sql.NullTime
		if err := rows.Scan(&args, &at); err != nil {
			t.Fatal(err)
		}
		add(args, at.Time)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A broadcast's emails obey quiet hours as its devices do: at 23:00 in
// Berlin a product broadcast on email schedules the two night owls'
// emails at the end of their window (07:00 CEST, the night the clocks
// jump) and the daytime user's at once (River's clock, a year behind the
// test's); a security broadcast and an urgent one schedule all three at
// once.
func TestBroadcastEmailHoldsQuietHours(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		q := newQuietEnv(t, url)
		verifyEmails(t, q.env)
		ctx := context.Background()
		end := time.Date(2027, 3, 28, 5, 0, 0, 0, time.UTC)
		for _, tc := range []struct {
			o         notifications.BroadcastOptions
			heldUntil time.Time // for the owls; zero: at once
		}{
			{notifications.BroadcastOptions{Category: preferences.CategoryProduct}, end},
			{notifications.BroadcastOptions{Category: preferences.CategorySecurity}, time.Time{}},
			{notifications.BroadcastOptions{Category: preferences.CategoryProduct, Urgent: true}, time.Time{}},
		} {
			tc.o.Channels = []string{notifications.ChannelEmail}
			j, err := q.svc.BroadcastWith(ctx, hello, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if j = q.waitJob(t, j.ID, 30*time.Second); j.Status != notifications.StatusCompleted || j.Email.Queued != 3 {
				t.Fatalf("%s broadcast (urgent %v) = %+v, want completed with 3 emails queued", tc.o.Category, tc.o.Urgent, j)
			}
			at := emailsScheduled(t, q.env, j.ID)
			if len(at) != 3 {
				t.Fatalf("%s broadcast (urgent %v): emails %v, want 3", tc.o.Category, tc.o.Urgent, at)
			}
			for _, a := range []string{q.owl, q.sleeper} {
				if held := !tc.heldUntil.IsZero(); held && !at[a].Equal(tc.heldUntil) || !held && !at[a].Before(quietNight) {
					t.Errorf("%s broadcast (urgent %v): a night owl's email scheduled at %v, want %v (zero: at once)", tc.o.Category, tc.o.Urgent, at[a], tc.heldUntil)
				}
			}
			if !at[q.daytime].Before(quietNight) {
				t.Errorf("%s broadcast (urgent %v): the daytime user's email scheduled at %v, want at once", tc.o.Category, tc.o.Urgent, at[q.daytime])
			}
		}
	})
}

// "At 09:00 local" on email: each owner's email is scheduled at 09:00 on
// their own clock (Tokyo 00:00 UTC, New York 13:00 UTC, the day Europe's
// clocks jump), and one whose 09:00 falls inside their quiet hours
// (Berlin, 08:30–10:00) at the end of them, 10:00 CEST.
func TestBroadcastEmailAtLocalTime(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		clk := testsupport.NewClock(time.Date(2027, 3, 27, 12, 0, 0, 0, time.UTC))
		e := newEnv(t, url, withConfig(func(c *notifications.Config) { c.Now = clk.Now }))
		e.db.UseTestClock(clk.Now)
		ctx := context.Background()
		morning := preferences.QuietHours{Start: 8*60 + 30, End: 10 * 60}
		want := map[string]time.Time{}
		for _, u := range []struct {
			s   preferences.Schedule
			due time.Time
		}{
			{preferences.Schedule{TimeZone: "Asia/Tokyo"}, time.Date(2027, 3, 28, 0, 0, 0, 0, time.UTC)},
			{preferences.Schedule{TimeZone: "America/New_York"}, time.Date(2027, 3, 28, 13, 0, 0, 0, time.UTC)},
			{preferences.Schedule{TimeZone: "Europe/Berlin", Quiet: &morning}, time.Date(2027, 3, 28, 8, 0, 0, 0, time.UTC)},
		} {
			a := e.account(t, u.s.TimeZone+"@example.com")
			if _, err := e.devices.Register(ctx, a, "android", "phone-"+u.s.TimeZone, ""); err != nil {
				t.Fatal(err)
			}
			if err := e.db.InTx(ctx, func(ctx context.Context) error { return e.db.SetNotificationSchedule(ctx, a, u.s) }); err != nil {
				t.Fatal(err)
			}
			want[a] = u.due
		}
		verifyEmails(t, e)
		e.start(t)
		j, err := e.svc.BroadcastWith(ctx, hello, notifications.BroadcastOptions{Channels: []string{notifications.ChannelEmail},
			SendAtLocal: &notifications.LocalSendTime{Date: "2027-03-28", Time: "09:00"}})
		if err != nil {
			t.Fatal(err)
		}
		clk.Set(time.Date(2027, 3, 27, 19, 0, 0, 0, time.UTC))
		w := &notifications.BroadcastWorker{Service: e.svc}
		if err := w.Work(ctx, &river.Job[notifications.BroadcastArgs]{JobRow: &rivertype.JobRow{ID: 1 << 40, Attempt: 1, MaxAttempts: 25}, Args: notifications.BroadcastArgs{JobID: j.ID}}); err != nil {
			t.Fatal(err)
		}
		if j, _ = e.svc.Job(ctx, j.ID); j.Status != notifications.StatusCompleted || j.Email.Queued != 3 {
			t.Fatalf("job = %+v, want completed with 3 emails queued", j)
		}
		got := emailsScheduled(t, e, j.ID)
		for a, due := range want {
			if !got[a].Equal(due) {
				t.Errorf("%s's email scheduled at %v, want %v", a, got[a], due)
			}
		}
	})
}
