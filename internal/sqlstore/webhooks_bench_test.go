package sqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/riverqueue/river"
)

// BenchmarkSignupOutbox is the signup transaction (account, subscription,
// and its user.created event) with no webhook endpoint, and with one
// subscribed endpoint (the event's delivery job too): what the outbox adds
// to a signup, the password hash aside.
func BenchmarkSignupOutbox(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		for _, endpoints := range []int{0, 1} {
			b.Run(fmt.Sprintf("%s/endpoints-%d", d, endpoints), func(b *testing.B) {
				sqlstoretest.Require(b, d)
				workers := river.NewWorkers()
				river.AddWorker(workers, &webhooks.DeliveryWorker{})
				db, _ := jobstest.Open(b, sqlstoretest.NewURL(b, d), jobs.Config{Workers: workers})
				if endpoints > 0 {
					mustEndpoint(b, db, "ep1", time.Now())
				}
				ctx := context.Background()
				i := 0
				for b.Loop() {
					i++
					id := fmt.Sprintf("u%d", i)
					if _, _, err := accounts.Create(ctx, db, newAccount(id, id+"@example.com", "C"+id)); err != nil {
						b.Fatal(err)
					}
				}
				if evs, _ := db.WebhookEvents(ctx, webhooks.UserCreated); len(evs) != i {
					b.Fatalf("%d events for %d signups", len(evs), i)
				}
			})
		}
	}
}
