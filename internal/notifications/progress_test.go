package notifications_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// A subscriber on another process sharing the database (PostgreSQL: by
// LISTEN/NOTIFY; SQLite: the same process) sees the job's progress in
// increasing versions, at most one event per interval, and the final state
// last; the channel closes after it.
func TestWatchProgressFromAnotherProcess(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		worker := newEnv(t, url, withConfig(func(c *notifications.Config) { c.BatchSize, c.Concurrency = 20, 4 }))
		watcher := worker
		if url[:6] != "sqlite" {
			watcher = worker.restart(t, url) // never started: it works no job
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		const n = 400
		worker.importDevices(t, n, 10, func(i int) string { return fmt.Sprint("w-", i) }, func(int) string { return "android" })
		job, err := worker.svc.Broadcast(ctx, hello)
		if err != nil {
			t.Fatal(err)
		}
		events, err := watcher.svc.Watch(ctx, job.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		worker.start(t)
		var got []notifications.Job
		for j := range events {
			got = append(got, j)
		}
		if len(got) < 2 {
			t.Fatalf("%d events, want the queued state and at least the final one: %+v", len(got), got)
		}
		if got[0].Status != "queued" {
			t.Errorf("first event %+v, want the state at subscription (queued)", got[0])
		}
		for i := 1; i < len(got); i++ {
			if got[i].Version() <= got[i-1].Version() {
				t.Fatalf("event %d has version %d after %d", i, got[i].Version(), got[i-1].Version())
			}
		}
		last := got[len(got)-1]
		if last.Status != "completed" || last.Sent != n || last.FinishedAt == nil {
			t.Fatalf("last event %+v, want completed with %d sent", last, n)
		}

		// Subscribing after the end: the final state once, then the end;
		// with its version as Last-Event-ID, nothing at all.
		again, err := watcher.svc.Watch(ctx, job.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if j, ok := <-again; !ok || j.Version() != last.Version() {
			t.Fatalf("late subscriber got %+v (%v), want the final state", j, ok)
		}
		if _, ok := <-again; ok {
			t.Fatal("a finished job's stream did not end")
		}
		none, err := watcher.svc.Watch(ctx, job.ID, last.Version())
		if err != nil {
			t.Fatal(err)
		}
		if j, ok := <-none; ok {
			t.Fatalf("resuming after the final event sent %+v", j)
		}
		_, err = watcher.svc.Watch(ctx, "no-such-job", 0)
		wantCode(t, err, apperr.JobNotFound)
	})
}

// Cancelling a queued job is the end of its stream, on every subscriber.
func TestWatchEndsOnCancel(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		e.device(t, "android", "cancel-me")
		job, err := e.svc.Broadcast(ctx, hello)
		if err != nil {
			t.Fatal(err)
		}
		events, err := e.svc.Watch(ctx, job.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if j := <-events; j.Status != "queued" {
			t.Fatalf("first event %+v", j)
		}
		if _, err := e.svc.Cancel(ctx, job.ID); err != nil {
			t.Fatal(err)
		}
		if j := <-events; j.Status != "cancelled" {
			t.Fatalf("after cancel %+v, want cancelled", j)
		}
		if _, ok := <-events; ok {
			t.Fatal("stream went on after the cancelled state")
		}
	})
}

// BenchmarkProgressLatency measures, in one process, the time from a
// change of a job's counters (one outcome recorded as the worker records
// it, then announced) to the subscriber's event: a store read, the
// publication and the delivery.
func BenchmarkProgressLatency(b *testing.B) {
	e := newEnv(b, sqlstoretest.NewURL(b, "sqlite"), withConfig(func(c *notifications.Config) { c.ProgressInterval = time.Nanosecond }))
	ctx := context.Background()
	e.importDevices(b, b.N, 1, func(i int) string { return fmt.Sprint("bench-", i) }, func(int) string { return "android" })
	job, err := e.svc.Broadcast(ctx, hello)
	if err != nil {
		b.Fatal(err)
	}
	events, err := e.svc.Watch(ctx, job.ID, 0)
	if err != nil {
		b.Fatal(err)
	}
	<-events // queued
	until := time.Now().Add(time.Hour)
	if _, err := e.db.AcquireBroadcast(ctx, job.ID, "bench", until); err != nil {
		b.Fatal(err)
	}
	claims, err := e.db.ClaimNextBatch(ctx, job.ID, "bench", b.N, until)
	if err != nil || len(claims.Claims) != b.N {
		b.Fatalf("claimed %d of %d: %v", len(claims.Claims), b.N, err)
	}
	e.svc.Announce(job.ID, false)
	<-events // running
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c := claims.Claims[i]
		if _, err := e.db.RecordDeliveries(ctx, job.ID, "bench", notifications.Record{Outcomes: []notifications.Outcome{{DeviceID: c.DeviceID, Token: c.Token, Status: notifications.DeliverySent}}}, until); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		e.svc.Announce(job.ID, false)
		if j := <-events; j.Sent != i+1 {
			b.Fatalf("event with %d sent, want %d", j.Sent, i+1)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/event")
}
