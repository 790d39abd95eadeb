package notifications_test

import (
	"context"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/inbox"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// With product capped at 3 a day, a user's 4th product send of the day
// (their day, in Europe/Berlin) reaches none of their two phones and is
// counted in skipped.capped; security and urgent sends pass; the inbox
// still keeps it; the next day, on the user's clock, sends pass again.
func TestCapSkipsSendsOverIt(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		clk := testsupport.NewClock(time.Date(2026, 11, 22, 20, 0, 0, 0, berlin))
		cat, err := preferences.NewCatalogue([]string{"product:3/day"})
		if err != nil {
			t.Fatal(err)
		}
		k := &keeper{}
		e := newEnv(t, url, withConfig(func(c *notifications.Config) { c.Now, c.Categories, c.Inbox = clk.Now, cat, k }))
		k.svc = inbox.NewService(e.db, inbox.Config{})
		ctx := context.Background()
		user := e.account(t, "capped@example.com")
		for _, tok := range []string{"cap-phone-1", "cap-phone-2"} {
			if _, err := e.devices.Register(ctx, user, "android", tok, ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.db.InTx(ctx, func(ctx context.Context) error {
			return e.db.SetNotificationSchedule(ctx, user, preferences.Schedule{TimeZone: "Europe/Berlin"})
		}); err != nil {
			t.Fatal(err)
		}
		send := func(o notifications.UserSendOptions) notifications.UserSendResult {
			t.Helper()
			res, err := e.svc.SendToUser(ctx, user, hello, o)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		product := notifications.UserSendOptions{Category: preferences.CategoryProduct}
		for i := range 3 {
			if res := send(product); res.Status != notifications.UserSent || res.Skipped.Capped != 0 {
				t.Fatalf("product send %d = %+v, want sent", i+1, res)
			}
		}
		res := send(product)
		if res.Status != notifications.UserNoRecipients || res.Skipped.Capped != 2 || len(res.Outcomes) != 0 {
			t.Fatalf("the 4th product send = %+v, want no_recipients with both phones capped", res)
		}
		if got := e.fcm.Delivered("cap-phone-1") + e.fcm.Delivered("cap-phone-2"); got != 6 {
			t.Fatalf("the phones got %d pushes, want 6 (3 sends × 2)", got)
		}
		for _, o := range []notifications.UserSendOptions{{Category: preferences.CategorySecurity}, {Category: preferences.CategoryProduct, Urgent: true}, {Category: preferences.CategoryService}} {
			if res := send(o); res.Status != notifications.UserSent || res.Skipped.Capped != 0 {
				t.Fatalf("a %s send (urgent %v) over the product cap = %+v, want sent", o.Category, o.Urgent, res)
			}
		}
		// Over the cap the inbox still keeps it: the cap is about what
		// interrupts.
		res = send(notifications.UserSendOptions{Category: preferences.CategoryProduct, Inbox: true})
		if res.Status != notifications.UserSent || res.Skipped.Capped != 2 || len(res.Outcomes) != 1 || res.Outcomes[0].Channel != notifications.ChannelInbox {
			t.Fatalf("a 5th product send with inbox = %+v, want kept in the inbox, both phones capped", res)
		}
		// 23:59 in Berlin is still the same day; 00:00 is the next.
		clk.Set(time.Date(2026, 11, 22, 23, 59, 0, 0, berlin))
		if res := send(product); res.Skipped.Capped != 2 {
			t.Fatalf("at 23:59 = %+v, want capped", res)
		}
		clk.Set(time.Date(2026, 11, 23, 0, 0, 0, 0, berlin))
		if res := send(product); res.Status != notifications.UserSent || res.Skipped.Capped != 0 {
			t.Fatalf("at midnight in Berlin (23:00 UTC) = %+v, want sent: a new day", res)
		}
	})
}
