package notifications_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// Sends of a digest category within the window are folded: each is
// answered digested with the digest's time, none reaches the phone, and
// when the window ends another process sends one notification saying how
// many, naming the latest subjects. Security and urgent sends pass
// through; a send after the digest went opens the next one.
func TestDigestFoldsAWindow(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		t0 := time.Date(2026, 1, 10, 10, 0, 0, 0, time.UTC)
		clk := testsupport.NewClock(t0)
		digests := preferences.Digests{preferences.CategoryMessages: 15 * time.Minute}
		e := newEnv(t, url, withConfig(func(c *notifications.Config) { c.Now, c.Digests = clk.Now, digests }))
		ctx := context.Background()
		user := e.account(t, "chatty@example.com")
		if _, err := e.devices.Register(ctx, user, "android", "chatty-phone", ""); err != nil {
			t.Fatal(err)
		}
		due := t0.Add(15 * time.Minute)
		for i := range 4 {
			n := notifications.Notification{Subject: fmt.Sprintf("Message %d", i+1), Content: "Hi"}
			res, err := e.svc.SendToUser(ctx, user, n, notifications.UserSendOptions{Category: preferences.CategoryMessages})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != notifications.UserDigested || res.HeldUntil == nil || !res.HeldUntil.Equal(due) || len(res.Outcomes) != 0 {
				t.Fatalf("message %d = %+v, want digested until %v", i+1, res, due)
			}
			clk.Advance(time.Minute) // the window is the first send's
		}
		for _, o := range []notifications.UserSendOptions{{Category: preferences.CategorySecurity}, {Category: preferences.CategoryMessages, Urgent: true}, {Category: preferences.CategoryProduct}} {
			res, err := e.svc.SendToUser(ctx, user, hello, o)
			if err != nil || res.Status != notifications.UserSent {
				t.Fatalf("a %s send (urgent %v) = %+v, %v; want sent at once", o.Category, o.Urgent, res, err)
			}
		}
		if got := e.fcm.Delivered("chatty-phone"); got != 3 {
			t.Fatalf("the phone got %d pushes before the digest, want 3 (security, urgent, product)", got)
		}

		// The window ends; another process runs the digest's job.
		clk.Set(due.Add(time.Second))
		e2 := e.restart(t, url)
		e2.start(t)
		waitFor(t, "the digest delivered", 30*time.Second, func() bool { return e.fcm.Delivered("chatty-phone") == 4 })
		msgs := e.fcm.MessagesFor("chatty-phone")
		last := msgs[len(msgs)-1]
		if last.Title != "4 new notifications" || last.Body != "Message 4\nMessage 3\nMessage 2\nand 1 more" || last.Data["digest"] != "4" || last.Data["category"] != "messages" {
			t.Fatalf("the digest = %q / %q / %v", last.Title, last.Body, last.Data)
		}

		// The next send opens the next digest, of its own window.
		res, err := e2.svc.SendToUser(ctx, user, notifications.Notification{Subject: "Later", Content: "Hi"}, notifications.UserSendOptions{Category: preferences.CategoryMessages})
		if err != nil || res.Status != notifications.UserDigested || !res.HeldUntil.Equal(clk.Now().Add(15*time.Minute)) {
			t.Fatalf("a send after the digest = %+v, %v; want a new digest", res, err)
		}
		// A digest of one is that send itself.
		waitFor(t, "the digest of one delivered", 30*time.Second, func() bool { return e.fcm.Delivered("chatty-phone") == 5 })
		msgs = e.fcm.MessagesFor("chatty-phone")
		if last := msgs[len(msgs)-1]; last.Title != "Later" || last.Body != "Hi" || last.Data["digest"] != "" {
			t.Fatalf("a digest of one = %q / %q / %v, want the send itself", last.Title, last.Body, last.Data)
		}
	})
}

// Sends racing to open a user's digest fold into one: one digest, one
// job, every send counted.
func TestDigestConcurrentSendsOpenOne(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		e := newEnv(t, url, withConfig(func(c *notifications.Config) {
			c.Digests = preferences.Digests{preferences.CategoryMessages: time.Hour}
		}))
		ctx := context.Background()
		user := e.account(t, "racing@example.com")
		const sends = 12
		var wg sync.WaitGroup
		due := make(chan time.Time, sends)
		errs := make(chan error, sends)
		for i := range sends {
			wg.Go(func() {
				res, err := e.svc.SendToUser(ctx, user, notifications.Notification{Subject: fmt.Sprint("m", i), Content: "x"}, notifications.UserSendOptions{Category: preferences.CategoryMessages})
				if err != nil {
					errs <- err
					return
				}
				due <- *res.HeldUntil
			})
		}
		wg.Wait()
		close(errs)
		close(due)
		for err := range errs {
			t.Fatal(err)
		}
		var first time.Time
		for d := range due {
			if first.IsZero() {
				first = d
			} else if !d.Equal(first) {
				t.Fatalf("sends joined digests due at %v and %v, want one", first, d)
			}
		}
		digests := countRows(t, e, `SELECT COUNT(*) FROM notification_digests WHERE account_id = $1`, user)
		count := countRows(t, e, `SELECT COALESCE(SUM(count), 0) FROM notification_digests WHERE account_id = $1`, user)
		jobs := countRows(t, e, `SELECT COUNT(*) FROM river_job WHERE kind = 'notification_digest'`)
		if digests != 1 || count != sends || jobs != 1 {
			t.Fatalf("%d digests counting %d sends and %d jobs, want 1, %d, 1", digests, count, jobs, sends)
		}
	})
}

// countRows runs a query of one number on either database ($1 is a
// placeholder both take).
func countRows(t testing.TB, e *env, q string, args ...any) int {
	t.Helper()
	var n int
	var err error
	if p := e.db.Pool(); p != nil {
		err = p.QueryRow(context.Background(), q, args...).Scan(&n)
	} else {
		err = e.db.SQL().QueryRowContext(context.Background(), q, args...).Scan(&n)
	}
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}
