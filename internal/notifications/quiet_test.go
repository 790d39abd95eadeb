package notifications_test

import (
	"context"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// A send to a user inside their quiet hours is held, written as a River
// job for the end of the window, and delivered then by another process
// (the first never runs its jobs): the night Europe/Berlin springs
// forward, 22:00–07:00 ends at 07:00 local, 05:00 UTC. Security sends
// and urgent sends pass through.
func TestQuietHoursHoldUntilTheEnd(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		clk := testsupport.NewClock(time.Date(2026, 3, 28, 23, 0, 0, 0, berlin))
		e := newEnv(t, url, withConfig(func(c *notifications.Config) { c.Now = clk.Now }))
		ctx := context.Background()
		user := e.account(t, "night-owl@example.com")
		if _, err := e.devices.Register(ctx, user, "android", "night-phone", ""); err != nil {
			t.Fatal(err)
		}
		q, err := preferences.NewQuietHours("22:00", "07:00")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.db.InTx(ctx, func(ctx context.Context) error {
			return e.db.SetNotificationSchedule(ctx, user, preferences.Schedule{TimeZone: "Europe/Berlin", Quiet: &q})
		}); err != nil {
			t.Fatal(err)
		}

		res, err := e.svc.SendToUser(ctx, user, hello, notifications.UserSendOptions{Category: preferences.CategoryProduct})
		if err != nil {
			t.Fatal(err)
		}
		want := time.Date(2026, 3, 29, 5, 0, 0, 0, time.UTC)
		if res.Status != notifications.UserHeld || res.HeldUntil == nil || !res.HeldUntil.Equal(want) || e.fcm.Delivered("night-phone") != 0 {
			t.Fatalf("a product send at 23:00 = %+v (the phone got %d), want held until %v", res, e.fcm.Delivered("night-phone"), want)
		}
		for _, o := range []notifications.UserSendOptions{{Category: preferences.CategorySecurity}, {Category: preferences.CategoryProduct, Urgent: true}} {
			res, err := e.svc.SendToUser(ctx, user, hello, o)
			if err != nil || res.Status != notifications.UserSent {
				t.Fatalf("a %s send (urgent %v) at 23:00 = %+v, %v; want sent at once", o.Category, o.Urgent, res, err)
			}
		}
		if got := e.fcm.Delivered("night-phone"); got != 2 {
			t.Fatalf("the phone got %d pushes by night, want 2 (security, urgent)", got)
		}

		// Morning: another process, on the same database, runs the job.
		clk.Set(time.Date(2026, 3, 29, 7, 0, 30, 0, berlin))
		e2 := e.restart(t, url)
		e2.start(t)
		waitFor(t, "the held send delivered after the quiet hours", 30*time.Second, func() bool { return e.fcm.Delivered("night-phone") == 3 })
	})
}
