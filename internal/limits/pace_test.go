package limits

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/herald-vpn/herald/internal/testsupport"
)

func TestPaceSpacesEventsAfterTheBurst(t *testing.T) {
	// 100/s with a burst of 10: the first 10 go at once, then one per 10ms.
	p := NewPace(100)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var waits []time.Duration
	for range 13 {
		waits = append(waits, p.reserve(t0))
	}
	want := []time.Duration{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits = %v, want %v", waits, want)
		}
	}
	// After a quiet second the bucket is full again, and no fuller.
	t1 := t0.Add(time.Second)
	for i := range 10 {
		if w := p.reserve(t1); w != 0 {
			t.Fatalf("event %d after a pause waited %v", i, w)
		}
	}
	if w := p.reserve(t1); w != 10*time.Millisecond {
		t.Fatalf("11th event after a pause waited %v", w)
	}
}

// countEvents runs waiters on each pace until stop and counts the events
// each second, as a provider would see them.
func countEvents(t *testing.T, paces []interface{ Wait(context.Context) error }, per time.Duration) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), per)
	defer cancel()
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	for _, p := range paces {
		for range 8 {
			wg.Go(func() {
				for p.Wait(ctx) == nil {
					mu.Lock()
					n++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return n
}

// Three processes pacing through one Redis key keep to one rate together,
// even with every waiter of each trying at once. (Load on the machine can
// only lower the count, so only the upper bound is checked here; that the
// pace is shared and not slower than its rate is checked by its schedule,
// below.)
func TestSharedPaceHoldsAcrossProcesses(t *testing.T) {
	c := testRedisClient(t)
	key := testPrefix(t, c) + ":pace"
	const rate = 200
	shared := []interface{ Wait(context.Context) error }{
		NewSharedPace(c, key, rate, nil), NewSharedPace(c, key, rate, nil), NewSharedPace(c, key, rate, nil),
	}
	// One second: the rate plus the burst (a tenth) plus a booked chunk
	// per process, and some slack for timers.
	got := countEvents(t, shared, time.Second)
	if limit := rate + rate/10 + 3*rate/50 + 10; got > limit {
		t.Fatalf("three shared paces let %d events through in a second, want at most %d", got, limit)
	}
}

// The turns three processes book through one Redis key form one schedule:
// one interval apart whichever process books, so neither faster than the
// rate (three local paces would each start at once) nor slower. The
// interval is long (a hundred seconds) so that the time the test itself
// takes cannot blur it; nothing sleeps.
func TestSharedPaceBooksOneSchedule(t *testing.T) {
	c := testRedisClient(t)
	key := testPrefix(t, c) + ":schedule"
	const rate = 0.01 // an event per 100 s: a burst and a chunk of one
	interval := 100 * time.Second
	paces := []*SharedPace{NewSharedPace(c, key, rate, nil), NewSharedPace(c, key, rate, nil), NewSharedPace(c, key, rate, nil)}
	start := time.Now()
	for i := range 9 {
		at, err := paces[i%3].book(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := start.Add(time.Duration(i) * interval)
		if d := at.Sub(want); d < -time.Second || d > time.Minute {
			t.Fatalf("turn %d (process %d) at +%s, want +%s", i+1, i%3+1, at.Sub(start), want.Sub(start))
		}
	}
}

// Without Redis the shared pace falls back to pacing alone.
func TestSharedPaceFallsBackWithoutRedis(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 50 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	p := NewSharedPace(c, "herald:test:pace", 100, slog.New(slog.DiscardHandler))
	if err := p.Wait(context.Background()); err != nil { // finds Redis gone
		t.Fatal(err)
	}
	got := countEvents(t, []interface{ Wait(context.Context) error }{p}, 500*time.Millisecond)
	// At most the burst and half a second's worth (load can only lower
	// the count), and not none: the fallback paces, it does not stop.
	if got < 1 || got > 100/10+50+10 {
		t.Fatalf("%d events in half a second at 100/s without Redis", got)
	}
}

// A Redis that goes silent (it takes connections and never answers) costs
// the shared pace one Redis timeout, not one per waiter: the waiters
// queued behind the one that found it silent pace alone at once, so a send
// pool's worth of them all get their turn within their deadline.
func TestSharedPaceSilentRedisCostsOneTimeout(t *testing.T) {
	silent := testsupport.NewTCPProxy(t, "127.0.0.1:1")
	silent.Blackhole(t)
	c := redis.NewClient(&redis.Options{Addr: silent.Addr, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, MaxRetries: -1, PoolSize: 64})
	t.Cleanup(func() { c.Close() })
	p := NewSharedPace(c, "herald:test:pace", 1000, slog.New(slog.DiscardHandler))
	// 64 waiters (HERALD_PUSH_CONCURRENCY's default), each with a deadline
	// far past one timeout and far short of 64 of them.
	const waiters, deadline = 64, 8 * time.Second
	errs := make(chan error, waiters)
	for range waiters {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			errs <- p.Wait(ctx)
		}()
	}
	failed := 0
	for range waiters {
		if err := testsupport.Receive(t, errs, 2*deadline, "a waiter's turn"); err != nil {
			failed++
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d waiters on a shared pace over a silent Redis missed their %s deadline", failed, waiters, deadline)
	}
}
