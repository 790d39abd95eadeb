package notifications_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/inbox"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// keeper is the inbox as the server wires it, counting the broadcasts'
// attempts to write their items.
type keeper struct {
	svc      *inbox.Service
	attempts atomic.Int32
}

func (k *keeper) Keep(ctx context.Context, it inbox.Item) (inbox.Item, error) {
	return k.svc.Keep(ctx, it)
}

func (k *keeper) KeepBroadcast(ctx context.Context, jobID string) (int64, error) {
	k.attempts.Add(1)
	return k.svc.KeepBroadcast(ctx, jobID)
}

// A broadcast with inbox writes one item per account in its audience,
// from its job; a job whose items a run before a crash wrote does not try
// again when it is taken over, and writes nothing twice.
func TestBroadcastInboxOnce(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		k := &keeper{}
		e := newEnv(t, url, withConfig(func(c *notifications.Config) { c.Inbox = k }))
		k.svc = inbox.NewService(e.db, inbox.Config{})
		ctx := context.Background()
		var owners []string
		for _, tok := range []string{"inbox-a", "inbox-b", "inbox-c"} {
			owners = append(owners, e.device(t, "android", tok).AccountID)
		}
		fresh, err := e.svc.BroadcastWith(ctx, hello, notifications.BroadcastOptions{Inbox: true})
		if err != nil || !fresh.Inbox {
			t.Fatalf("broadcast %+v, %v", fresh, err)
		}
		// The run that died had written the items of this one.
		crashed, err := e.svc.BroadcastWith(ctx, hello, notifications.BroadcastOptions{Inbox: true})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := k.svc.KeepBroadcast(ctx, crashed.ID); err != nil || n != 3 {
			t.Fatalf("the first run's items: %d, %v", n, err)
		}
		plain, err := e.svc.Broadcast(ctx, hello)
		if err != nil {
			t.Fatal(err)
		}
		e.start(t)
		for _, id := range []string{fresh.ID, crashed.ID, plain.ID} {
			if j := e.waitJob(t, id, time.Minute); j.Status != notifications.StatusCompleted || j.Sent != 3 {
				t.Fatalf("job %+v", j)
			}
		}
		if a := k.attempts.Load(); a != 1 {
			t.Fatalf("%d attempts to write a broadcast's items, want the fresh one's alone", a)
		}
		if j, _ := e.svc.Job(ctx, fresh.ID); !j.InboxWritten || j.InboxItems != 3 {
			t.Fatalf("fresh job %+v, want its 3 items written", j)
		}
		for _, a := range owners {
			p, err := k.svc.List(ctx, a, inbox.Filter{}, 0, "")
			if err != nil || len(p.Items) != 2 {
				t.Fatalf("%s: %d items, %v; want one per inbox broadcast", a, len(p.Items), err)
			}
		}
	})
}

// BenchmarkBroadcastInbox measures writing one broadcast's inbox items
// for 2,000 accounts (one device each, one in ten with the category off
// on the inbox): one INSERT ... SELECT in one transaction.
func BenchmarkBroadcastInbox(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			sqlstoretest.Require(b, d)
			e := newEnv(b, sqlstoretest.NewURL(b, d))
			svc := inbox.NewService(e.db, inbox.Config{})
			ctx := context.Background()
			const accounts = 2000
			catalogue, _ := preferences.NewCatalogue(nil)
			e.importDevices(b, accounts, accounts, func(i int) string { return fmt.Sprintf("bench-%05d", i) }, func(int) string { return "android" })
			for a := 0; a < accounts; a += 10 {
				acct, err := e.db.AccountByEmail(ctx, fmt.Sprintf("owner%d@example.com", a))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := preferences.NewService(e.db, catalogue).Update(ctx, acct.ID, preferences.Change{Settings: []preferences.Setting{{Category: "product", Channel: preferences.ChannelInbox, Enabled: false}}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				j, err := e.svc.BroadcastWith(ctx, hello, notifications.BroadcastOptions{Inbox: true, Category: "product"})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				n, err := svc.KeepBroadcast(ctx, j.ID)
				if err != nil || n != accounts-accounts/10 {
					b.Fatalf("%d items, %v", n, err)
				}
			}
		})
	}
}
