package sqlstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// The acquires of one tick share a deadline timeout after the tick began;
// the next tick gets a fresh one, and every wait ends within timeout.
func TestAcquireDeadlinesShared(t *testing.T) {
	a := &acquireDeadlines{timeout: 800 * time.Millisecond}
	defer a.close()
	t0 := time.Now()
	first := a.get(t0)
	if d, ok := first.Deadline(); !ok || !d.Equal(t0.Add(a.timeout)) {
		t.Fatalf("deadline %v %v, want %v", d, ok, t0.Add(a.timeout))
	}
	if a.get(t0.Add(a.timeout/8-time.Nanosecond)) != first {
		t.Fatal("an acquire within the tick got a context of its own")
	}
	next := a.get(t0.Add(a.timeout / 8))
	if next == first {
		t.Fatal("the next tick reused the old deadline")
	}
	if d, _ := next.Deadline(); !d.Equal(t0.Add(a.timeout/8 + a.timeout)) {
		t.Fatalf("next deadline %v, want %v", d, t0.Add(a.timeout/8+a.timeout))
	}
	select {
	case <-first.Done():
		if !errors.Is(first.Err(), context.DeadlineExceeded) {
			t.Fatalf("first ended with %v", first.Err())
		}
	case <-time.After(time.Minute):
		t.Fatal("the shared deadline never ended")
	}
}

// The request's values reach the pool (tracing); its end does not.
func TestAcquireCtxValues(t *testing.T) {
	type key struct{}
	req, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "span"))
	cancel()
	c := acquireCtx{Context: context.Background(), values: req}
	if c.Value(key{}) != "span" {
		t.Fatal("the request's value is lost")
	}
	if c.Err() != nil {
		t.Fatal("the acquire context ended with the request")
	}
}

// Acquires racing to renew the deadline, across ticks, all get one that
// has not ended.
func TestAcquireDeadlinesRace(t *testing.T) {
	a := &acquireDeadlines{timeout: time.Minute}
	defer a.close()
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			if err := a.get(t0.Add(time.Duration(i%4) * a.timeout / 8)).Err(); err != nil {
				t.Errorf("acquire %d got a context that ended: %v", i, err)
			}
		})
	}
	wg.Wait()
}
