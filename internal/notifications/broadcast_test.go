package notifications_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/push/apns/apnstest"
	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// importDevices registers n devices spread over accounts; token(i) and
// platform(i) name them. It returns the tokens.
func (e *env) importDevices(t testing.TB, n, accounts int, token func(i int) string, platform func(i int) string) []string {
	t.Helper()
	for a := range accounts {
		e.account(t, fmt.Sprintf("owner%d@example.com", a))
	}
	var buf bytes.Buffer
	tokens := make([]string, n)
	for i := range n {
		tokens[i] = token(i)
		fmt.Fprintf(&buf, `{"email":"owner%d@example.com","platform":%q,"pushToken":%q}`+"\n", i%accounts, platform(i), tokens[i])
	}
	res, err := e.devices.Import(context.Background(), &buf, nil)
	if err != nil || res.Imported != n {
		t.Fatalf("import: %+v, %v", res, err)
	}
	return tokens
}

func TestBroadcastToTenThousandDevices(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		// Outcomes wait a minute for their batch: on a loaded machine the
		// default second let most successes be written as rows, which the
		// count of rows below would take for a fault.
		e := newEnv(t, url, withConfig(func(c *notifications.Config) { c.OutcomeHold = time.Minute }))
		ctx := context.Background()
		const n = 10_000
		platform := func(i int) string {
			if i%4 == 0 {
				return "ios"
			}
			return "android"
		}
		tokens := e.importDevices(t, n, 100, func(i int) string { return fmt.Sprintf("tok-%05d", i) }, platform)

		// Devices that are not recipients: removed, or with a dead token.
		na := e.account(t, "not-recipients@example.com")
		removed, _ := e.devices.Register(ctx, na, "android", "not-0", "")
		invalid, _ := e.devices.Register(ctx, na, "android", "not-1", "")
		if err := e.devices.Remove(ctx, na, removed.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.db.InvalidatePushToken(ctx, invalid.ID, "not-1"); err != nil {
			t.Fatal(err)
		}

		// Scripted answers: dead tokens on both providers, transient
		// failures that succeed on retry, and payload refusals.
		dead, flaky, refused := map[string]bool{}, map[string]bool{}, map[string]bool{}
		for i := 0; i < n; i += 97 {
			tok := tokens[i]
			switch {
			case len(dead) < 50:
				dead[tok] = true
				if platform(i) == "ios" {
					e.apns.Fail(tok, -1, apnstest.Unregistered())
				} else {
					e.fcm.Fail(tok, -1, fcmtest.Unregistered())
				}
			case len(flaky) < 40:
				flaky[tok] = true
				if platform(i) == "ios" {
					e.apns.Fail(tok, 1, apnstest.ServiceUnavailable())
				} else {
					e.fcm.Fail(tok, 2, fcmtest.Unavailable(0))
				}
			case len(refused) < 10 && platform(i) == "android":
				refused[tok] = true
				e.fcm.Fail(tok, -1, fcmtest.InvalidPayload())
			}
		}

		job, err := e.svc.Broadcast(ctx, hello)
		if err != nil {
			t.Fatal(err)
		}
		if job.Status != "queued" || job.TotalRecipients != n || job.ID == "" {
			t.Fatalf("queued %+v", job)
		}
		e.start(t)
		j := e.waitJob(t, job.ID, 2*time.Minute)
		wantSent := n - len(dead) - len(refused)
		if j.Status != "completed" || j.TotalRecipients != n || j.Sent != wantSent || j.InvalidTokens != len(dead) || j.Failed != len(refused) ||
			j.StartedAt == nil || j.FinishedAt == nil || j.Subject != hello.Subject {
			t.Fatalf("job %+v; want sent %d, invalid %d, failed %d", j, wantSent, len(dead), len(refused))
		}

		for i, tok := range tokens {
			got := e.fcm.Delivered(tok) + e.apns.Delivered(tok)
			want := 1
			if dead[tok] || refused[tok] {
				want = 0
			}
			if got != want {
				t.Fatalf("device %d (%s): %d deliveries, want %d", i, tok, got, want)
			}
		}
		if e.fcm.Attempts("not-0")+e.fcm.Attempts("not-1") != 0 {
			t.Fatal("a non-recipient was sent to")
		}
		if total := e.fcm.TotalDelivered() + e.apns.TotalDelivered(); total != wantSent {
			t.Fatalf("providers got %d messages, want %d", total, wantSent)
		}
		for _, m := range e.fcm.Messages() {
			if m.Title != hello.Subject || m.Body != hello.Content || m.Data["kind"] != "maintenance" || m.Data["minutes"] != "15" || m.Data["nested"] != `{"a":true}` || m.CollapseKey != job.ID || m.Tag != job.ID {
				t.Fatalf("FCM message %+v", m)
			}
		}
		for _, m := range e.apns.Messages() {
			if m.Title != hello.Subject || m.Body != hello.Content || m.Payload["kind"] != "maintenance" || m.Payload["minutes"] != float64(15) || m.Collapse != job.ID {
				t.Fatalf("APNs message %+v", m)
			}
		}
		// Dead tokens are marked on their devices.
		marked := 0
		for after := ""; ; {
			p, err := e.devices.AdminList(ctx, nil, devices.MaxPageSize, after)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range p.Devices {
				if d.PushTokenStatus == "invalid" && dead[d.PushToken] {
					marked++
				}
			}
			if !p.HasNextPage {
				break
			}
			after = p.EndCursor
		}
		if marked != len(dead) {
			t.Fatalf("%d devices marked invalid, want %d", marked, len(dead))
		}
		// Cancelling a finished job changes nothing.
		if c, err := e.svc.Cancel(ctx, job.ID); err != nil || c.Status != "completed" {
			t.Fatalf("cancel finished: %+v, %v", c, err)
		}
		// Delivery rows: one per failure and dead token (the flaky ones
		// succeeded on the send's own retries); a success in a batch that
		// settled within OutcomeHold has none.
		p, err := e.db.Prune(ctx, j.FinishedAt.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if atLeast := int64(len(dead) + len(refused)); p.Deliveries < atLeast || p.Deliveries > n/2 {
			t.Fatalf("%d delivery rows, want at least %d (failures, dead tokens) and far fewer than the %d devices", p.Deliveries, atLeast, n)
		}
	})
}

// gate holds every send until opened.
type gate struct {
	p       push.Provider
	open    chan struct{}
	waiting atomic.Int64
}

func (g *gate) Send(ctx context.Context, t push.Target, n push.Notification) error {
	g.waiting.Add(1)
	select {
	case <-g.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.p.Send(ctx, t, n)
}

func TestBroadcastCancel(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		g := &gate{open: make(chan struct{})}
		e := newEnv(t, url,
			wrapProvider(func(p push.Provider) push.Provider { g.p = p; return g }),
			withConfig(func(c *notifications.Config) { c.BatchSize, c.Concurrency = 20, 4 }))
		ctx := context.Background()
		e.importDevices(t, 200, 10, func(i int) string { return fmt.Sprint("c-", i) }, func(int) string { return "android" })

		queued, _ := e.svc.Broadcast(ctx, hello)
		c, err := e.svc.Cancel(ctx, queued.ID)
		if err != nil || c.Status != "cancelled" || c.FinishedAt == nil {
			t.Fatalf("cancel queued: %+v, %v", c, err)
		}
		job, _ := e.svc.Broadcast(ctx, hello)
		e.start(t)
		waitFor(t, "the first batch to start sending", 30*time.Second, func() bool { return g.waiting.Load() > 0 })
		c, err = e.svc.Cancel(ctx, job.ID)
		if err != nil || c.Status != "cancelled" {
			t.Fatalf("cancel running: %+v, %v", c, err)
		}
		close(g.open)
		// The batch in flight finishes; no further batch starts.
		waitFor(t, "the first batch to be recorded", 30*time.Second, func() bool {
			j, _ := e.svc.Job(ctx, job.ID)
			return j.Sent == 20
		})
		time.Sleep(300 * time.Millisecond)
		j, _ := e.svc.Job(ctx, job.ID)
		if j.Status != "cancelled" || j.Sent != 20 || e.fcm.TotalDelivered() != 20 {
			t.Fatalf("after cancel: %+v, %d delivered", j, e.fcm.TotalDelivered())
		}
		if q, _ := e.svc.Job(ctx, queued.ID); q.Status != "cancelled" || q.Sent != 0 || q.StartedAt != nil {
			t.Fatalf("cancelled while queued: %+v", q)
		}
		_, err = e.svc.Cancel(ctx, "no-such-job")
		wantCode(t, err, apperr.JobNotFound)
		_, err = e.svc.Job(ctx, "no-such-job")
		wantCode(t, err, apperr.JobNotFound)
	})
}

// TestBroadcastResumesAfterCrash builds the state a kill -9 leaves behind
// (a lease held by a dead worker, two claimed batches of which part was
// sent and recorded, part neither) and checks that a live replica's sweep
// takes it over once the lease expires and finishes the broadcast with
// exactly one delivery per device.
func TestBroadcastResumesAfterCrash(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		e := newEnv(t, url, withConfig(func(c *notifications.Config) { c.BatchSize, c.LeaseTTL = 100, 300*time.Millisecond }))
		ctx := context.Background()
		tokens := e.importDevices(t, 300, 10, func(i int) string { return fmt.Sprintf("r-%03d", i) }, func(int) string { return "android" })
		job, err := e.svc.Broadcast(ctx, hello)
		if err != nil {
			t.Fatal(err)
		}

		// The worker that dies, with a lease long enough that the sweep
		// below surely runs within it, even on a loaded machine.
		until := time.Now().Add(2 * time.Second)
		if l, err := e.db.AcquireBroadcast(ctx, job.ID, "dead", until); err != nil || !l.Acquired {
			t.Fatalf("acquire: %+v, %v", l, err)
		}
		first, err := e.db.ClaimNextBatch(ctx, job.ID, "dead", 100, until)
		if err != nil || len(first.Claims) != 100 {
			t.Fatalf("claim: %+v, %v", first, err)
		}
		var outcomes []notifications.Outcome
		for _, c := range first.Claims[:40] {
			if err := e.provider.Send(ctx, push.Target{Platform: c.Platform, Token: c.Token}, push.Notification{Title: hello.Subject, Body: hello.Content, Data: hello.Data}); err != nil {
				t.Fatal(err)
			}
			outcomes = append(outcomes, notifications.Outcome{DeviceID: c.DeviceID, Token: c.Token, Status: "sent"})
		}
		if _, err := e.db.RecordDeliveries(ctx, job.ID, "dead", notifications.Record{Outcomes: outcomes}, until); err != nil {
			t.Fatal(err)
		}
		if second, err := e.db.ClaimNextBatch(ctx, job.ID, "dead", 100, until); err != nil || len(second.Claims) != 100 {
			t.Fatalf("claim 2: %+v, %v", second, err)
		}

		// A live replica's sweep: nothing while the dead worker's lease
		// lasts, the takeover once it has expired.
		if n, err := e.svc.Sweep(ctx); err != nil || n != 0 {
			t.Fatalf("sweep within the lease: %d, %v", n, err)
		}
		waitFor(t, "the sweep to queue the takeover", 10*time.Second, func() bool {
			n, err := e.svc.Sweep(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return n == 1
		})
		e.start(t)
		j := e.waitJob(t, job.ID, time.Minute)
		if j.Status != "completed" || j.Sent != 300 || j.Failed != 0 {
			t.Fatalf("job %+v", j)
		}
		for _, tok := range tokens {
			if d := e.fcm.Delivered(tok); d != 1 {
				t.Fatalf("%s got %d deliveries", tok, d)
			}
		}
		if n, _ := e.svc.Sweep(ctx); n != 0 {
			t.Fatalf("a sweep after the end queued %d jobs", n)
		}
	})
}

// slow delays every send a little so that a broadcast is still running
// when the test stops the worker.
type slow struct{ p push.Provider }

func (s slow) Send(ctx context.Context, t push.Target, n push.Notification) error {
	select {
	case <-time.After(2 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.p.Send(ctx, t, n)
}

// TestBroadcastGracefulStopAndRestart stops the job runner mid-broadcast
// the way SIGTERM does (the context given to Start ends), then starts
// another process on the same database: every device gets exactly one
// message, because a graceful stop lets the sends in flight finish and
// writes their outcomes.
func TestBroadcastGracefulStopAndRestart(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		e := newEnv(t, url,
			wrapProvider(func(p push.Provider) push.Provider { return slow{p} }),
			withConfig(func(c *notifications.Config) { c.BatchSize, c.Concurrency = 100, 8 }))
		ctx := context.Background()
		const n = 2000
		tokens := e.importDevices(t, n, 20, func(i int) string { return fmt.Sprintf("g-%04d", i) }, func(int) string { return "android" })
		job, _ := e.svc.Broadcast(ctx, hello)

		runCtx, stop := context.WithCancel(ctx)
		if err := e.jobs.Start(runCtx); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "part of the broadcast", 30*time.Second, func() bool { return e.fcm.TotalDelivered() >= 300 })
		stop()
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		e.jobs.Stop(sctx)
		cancel()
		j, _ := e.svc.Job(ctx, job.ID)
		if j.Status != "running" || j.Sent != e.fcm.TotalDelivered() || j.Sent >= n {
			t.Fatalf("after the stop: %+v, %d delivered", j, e.fcm.TotalDelivered())
		}

		e2 := e.restart(t, url)
		// The stopped worker released its lease: the sweep queues the
		// takeover at once, and only once.
		if got, err := e2.svc.Sweep(ctx); err != nil || got != 1 {
			t.Fatalf("sweep: %d, %v", got, err)
		}
		if got, err := e2.svc.Sweep(ctx); err != nil || got != 0 {
			t.Fatalf("second sweep: %d, %v", got, err)
		}
		e2.start(t)
		j = e2.waitJob(t, job.ID, time.Minute)
		if j.Status != "completed" || j.Sent != n {
			t.Fatalf("job %+v", j)
		}
		for _, tok := range tokens {
			if d := e.fcm.Delivered(tok); d != 1 {
				t.Fatalf("%s got %d deliveries", tok, d)
			}
		}
	})
}

func TestBroadcastProviderDownThenBack(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		e := newEnv(t, url, withConfig(func(c *notifications.Config) { c.BatchSize, c.Concurrency = 50, 8 }))
		ctx := context.Background()
		tokens := e.importDevices(t, 200, 10, func(i int) string { return fmt.Sprintf("d-%03d", i) }, func(int) string { return "android" })
		e.fcm.SetDown(true)
		job, _ := e.svc.Broadcast(ctx, hello)
		e.start(t)
		attempts := func() int {
			n := 0
			for _, tok := range tokens {
				n += e.fcm.Attempts(tok)
			}
			return n
		}
		// Two River attempts at least: the job paused and came back.
		waitFor(t, "sends while the provider is down", 30*time.Second, func() bool { return attempts() > 100 })
		if j, _ := e.svc.Job(ctx, job.ID); j.Status != "running" || j.Sent != 0 || j.Failed != 0 {
			t.Fatalf("while down: %+v", j)
		}
		e.fcm.SetDown(false)
		j := e.waitJob(t, job.ID, time.Minute)
		if j.Status != "completed" || j.Sent != 200 || j.Failed != 0 {
			t.Fatalf("job %+v", j)
		}
		for _, tok := range tokens {
			if d := e.fcm.Delivered(tok); d != 1 {
				t.Fatalf("%s got %d deliveries", tok, d)
			}
		}
	})
}

func TestBroadcastFailsOnFatalProviderError(t *testing.T) {
	e := newEnv(t, sqlstoretest.NewURL(t, "sqlite"))
	ctx := context.Background()
	e.importDevices(t, 50, 5, func(i int) string { return fmt.Sprint("f-", i) }, func(int) string { return "android" })
	e.fcm.SetTokenEndpointStatus(401)
	job, _ := e.svc.Broadcast(ctx, hello)
	e.start(t)
	j := e.waitJob(t, job.ID, 30*time.Second)
	if j.Status != "failed" || !strings.Contains(j.Error, "refused") || j.Sent != 0 {
		t.Fatalf("job %+v", j)
	}
}

func TestBroadcastWithoutRecipients(t *testing.T) {
	e := newEnv(t, sqlstoretest.NewURL(t, "sqlite"))
	job, err := e.svc.Broadcast(context.Background(), hello)
	if err != nil || job.TotalRecipients != 0 {
		t.Fatalf("%+v, %v", job, err)
	}
	e.start(t)
	if j := e.waitJob(t, job.ID, 30*time.Second); j.Status != "completed" || j.Sent != 0 {
		t.Fatalf("job %+v", j)
	}
	if msg := notifications.QueuedMessage(job); msg != "Notification queued for 0 devices." {
		t.Fatalf("message %q", msg)
	}
}

func TestJobsList(t *testing.T) {
	e := newEnv(t, sqlstoretest.NewURL(t, "sqlite"))
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		j, err := e.svc.Broadcast(ctx, notifications.Notification{Subject: fmt.Sprint("s", i), Content: "c"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	slices.Reverse(ids)
	var got []string
	after, pages := "", 0
	for {
		p, err := e.svc.Jobs(ctx, 2, after)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, j := range p.Jobs {
			got = append(got, j.ID)
		}
		if !p.HasNextPage {
			break
		}
		after = p.EndCursor
	}
	if !slices.Equal(got, ids) || pages != 3 {
		t.Fatalf("listed %v in %d pages, want %v (newest first) in 3", got, pages, ids)
	}
	for _, tc := range []struct {
		first int
		after string
	}{{-1, ""}, {notifications.MaxPageSize + 1, ""}, {2, "%%%"}, {2, "Zm9v"}} {
		_, err := e.svc.Jobs(ctx, tc.first, tc.after)
		wantCode(t, err, apperr.ValidationError)
	}
}

// BenchmarkBroadcast100k broadcasts to 100,000 Android devices through the
// fake FCM (HTTP/2 over TLS on loopback) with the default batch size and
// concurrency and no rate cap, and reports deliveries per second and
// peak-heap-MB, the peak of HeapInuse sampled every 5ms.
//
// The fake runs in the same process and keeps every message it accepts, so
// it dominates the heap (and, through GOGC, the headroom above it).
// broadcast-live-heap-MB separates Herald's own memory: every 250ms, after a
// GC, the heap profile's live bytes are summed over allocations whose stack
// does not pass through package fcmtest, and the peak is reported; it stays
// flat whatever the number of devices. fake-retained-MB is the fake's share
// at the end.
//
// The audience case has 150,000 devices, every third one iOS, and
// broadcasts to the Android ones with an active subscription: the same
// 100,000 deliveries, found through the audience filter.
//
// The preferences case is everyone's broadcast in category product where
// every owner has stored preferences (service push off, product telegram
// off): each device's owner is looked up, and none turned product push
// off, so the same 100,000 deliveries; against everyone (no preference
// stored) it is the cost of obeying preferences.
func BenchmarkBroadcast100k(b *testing.B) {
	const n = 100_000
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 16 << 10
	cases := []struct {
		name     string
		devices  int
		platform func(i int) string
		audience notifications.Audience
		prefs    bool
	}{
		{"everyone", n, func(int) string { return "android" }, notifications.Audience{}, false},
		{"preferences", n, func(int) string { return "android" }, notifications.Audience{}, true},
		{"audience", n * 3 / 2, func(i int) string {
			if i%3 == 2 {
				return "ios"
			}
			return "android"
		}, notifications.Audience{Platforms: []string{"android"}, SubscriptionStatus: "active"}, false},
	}
	for _, d := range sqlstoretest.Dialects() {
		for _, c := range cases {
			b.Run(string(d)+"/"+c.name, func(b *testing.B) {
				benchmarkBroadcast(b, d, n, c.devices, c.platform, c.audience, c.prefs)
			})
		}
	}
}

func benchmarkBroadcast(b *testing.B, d sqlstoretest.Dialect, n, devices int, platform func(int) string, aud notifications.Audience, prefs bool) {
	e := newEnv(b, sqlstoretest.NewURL(b, d), withConfig(func(c *notifications.Config) {
		c.BroadcastRetry = push.RetryPolicy{}
		c.SendRetry = push.RetryPolicy{}
	}))
	ctx := context.Background()
	const owners = 1000
	e.importDevices(b, devices, owners, func(i int) string { return fmt.Sprintf("bench-token-%07d-abcdefghijklmnopqrstuvwxyz0123456789", i) }, platform)
	opts := notifications.BroadcastOptions{Audience: aud}
	if prefs {
		opts.Category = preferences.CategoryProduct
		for a := range owners {
			acct, err := e.db.AccountByEmail(ctx, fmt.Sprintf("owner%d@example.com", a))
			if err != nil {
				b.Fatal(err)
			}
			if err := e.db.InTx(ctx, func(ctx context.Context) error {
				return e.db.SetNotificationSettings(ctx, acct.ID, []preferences.Setting{
					{Category: preferences.CategoryService, Channel: preferences.ChannelPush, Enabled: false},
					{Category: preferences.CategoryProduct, Channel: preferences.ChannelTelegram, Enabled: false},
				})
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	e.start(b)
	var peak atomic.Uint64
	var own float64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}
	})
	wg.Go(func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				mine, _ := liveHeap("/fcmtest.")
				own = max(own, mine)
			}
		}
	})
	delivered := 0
	var elapsed time.Duration
	for b.Loop() {
		start := time.Now()
		job, err := e.svc.BroadcastWith(ctx, hello, opts)
		if err != nil {
			b.Fatal(err)
		}
		j := e.waitJob(b, job.ID, 30*time.Minute)
		elapsed += time.Since(start)
		if j.Sent != n || j.TotalRecipients != n || j.OptedOut != 0 {
			b.Fatalf("job %+v", j)
		}
		delivered += j.Sent
	}
	close(stop)
	wg.Wait()
	_, fake := liveHeap("/fcmtest.")
	b.ReportMetric(float64(delivered)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
	b.ReportMetric(own/(1<<20), "broadcast-live-heap-MB")
	b.ReportMetric(fake/(1<<20), "fake-retained-MB")
	if got := e.fcm.DistinctTokens(); got != n {
		b.Fatalf("%d distinct tokens got a message, want %d", got, n)
	}
}

// liveHeap runs two GCs (the heap profile lags by up to two cycles) and
// returns the live bytes of the heap profile, unsampled as pprof does,
// split by whether the allocating stack passes through a function whose
// name contains skip.
func liveHeap(skip string) (rest, skipped float64) {
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, false)
	for {
		recs = make([]runtime.MemProfileRecord, n+100)
		var ok bool
		if n, ok = runtime.MemProfile(recs, false); ok {
			recs = recs[:n]
			break
		}
	}
	rate := float64(runtime.MemProfileRate)
	for _, r := range recs {
		bytes, objs := r.InUseBytes(), r.InUseObjects()
		if bytes <= 0 || objs <= 0 {
			continue
		}
		v := float64(bytes) / (1 - math.Exp(-float64(bytes)/float64(objs)/rate))
		frames := runtime.CallersFrames(r.Stack())
		in := false
		for {
			f, more := frames.Next()
			if strings.Contains(f.Function, skip) {
				in = true
				break
			}
			if !more {
				break
			}
		}
		if in {
			skipped += v
		} else {
			rest += v
		}
	}
	return rest, skipped
}
