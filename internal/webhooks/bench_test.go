package webhooks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/herald-vpn/herald/internal/webhooks/httpsend"
	"github.com/riverqueue/river"
)

// BenchmarkDelivery measures events delivered per second to a receiver on
// loopback: b.N events are written with their jobs, then signed and
// POSTed by 20 River workers, each attempt recorded. To one endpoint with
// 20 slots (every delivery takes and releases a slot of the same row), or
// spread over ten endpoints with the default two slots each.
func BenchmarkDelivery(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		for _, c := range []struct {
			name                   string
			endpoints, concurrency int
		}{{"one-endpoint", 1, 20}, {"ten-endpoints", 10, webhooks.DefaultConcurrency}} {
			b.Run(string(d)+"/"+c.name, func(b *testing.B) {
				sqlstoretest.Require(b, d)
				var got atomic.Int64
				rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					got.Add(1)
					w.WriteHeader(http.StatusNoContent)
				}))
				defer rcv.Close()
				workers := river.NewWorkers()
				db, runner := jobstest.Open(b, sqlstoretest.NewURL(b, d), jobs.Config{
					Workers:   workers,
					Queues:    map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 1}, webhooks.Queue: {MaxWorkers: 20}},
					FetchPoll: 20 * time.Millisecond,
				})
				svc := webhooks.NewService(db, httpsend.New(httpsend.Options{Policy: webhooks.AddressPolicy{AllowPrivate: true}}),
					webhooks.Config{AllowInsecure: true, AllowPrivate: true, Concurrency: c.concurrency})
				river.AddWorker(workers, &webhooks.DeliveryWorker{Service: svc})
				ctx := context.Background()
				var eps []string
				for range c.endpoints {
					ep, err := svc.Create(ctx, webhooks.NewEndpoint{URL: rcv.URL + "/hook", EventTypes: []string{webhooks.UserCreated}})
					if err != nil {
						b.Fatal(err)
					}
					eps = append(eps, ep.ID)
				}
				// The events are written first: the figure is delivery alone.
				for i := range b.N {
					ev, err := webhooks.NewEvent(webhooks.UserCreated, time.Now(), map[string]any{"userId": "u1"})
					if err != nil {
						b.Fatal(err)
					}
					if err := db.SendWebhookEvent(ctx, eps[i%len(eps)], ev); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				start := time.Now()
				if err := runner.Start(ctx); err != nil {
					b.Fatal(err)
				}
				defer runner.Stop(ctx)
				deadline := time.Now().Add(2 * time.Minute)
				for got.Load() < int64(b.N) {
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d delivered", got.Load(), b.N)
					}
					time.Sleep(5 * time.Millisecond)
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
			})
		}
	}
}
