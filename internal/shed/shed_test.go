package shed

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A queue admits up to its concurrency, queues up to its queue, and
// refuses beyond: at once when the queue is full, after the wait
// otherwise; a waiter whose context ends gets the context's error.
func TestQueueBounds(t *testing.T) {
	ctx := context.Background()
	q := New("test work", Bounds{Concurrency: 2, Queue: 1, Wait: 20 * time.Millisecond})
	for range 2 {
		if err := q.Acquire(ctx); err != nil {
			t.Fatalf("within the concurrency: %v", err)
		}
	}
	// Full: the one queue place waits out its bound and is refused.
	err := q.Acquire(ctx)
	var refused *Refused
	if !errors.As(err, &refused) || refused.QueueFull || refused.Class != "test work" || refused.RetryAfter < time.Second {
		t.Fatalf("past the wait: %v, want *Refused after waiting, retry after at least 1 s", err)
	}

	// A waiter takes the queue's one place; the next is refused at once.
	waiter := make(chan error, 1)
	wctx, cancel := context.WithCancel(ctx)
	long := New("test work", Bounds{Concurrency: 1, Queue: 1, Wait: time.Hour})
	if err := long.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	go func() { waiter <- long.Acquire(wctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for long.Waiting() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never queued")
		}
		time.Sleep(time.Millisecond)
	}
	if err := long.Acquire(ctx); !errors.As(err, &refused) || !refused.QueueFull {
		t.Fatalf("beyond a full queue: %v, want *Refused with QueueFull", err)
	}
	cancel()
	select {
	case err := <-waiter:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a waiter whose context ended: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled waiter still waits")
	}
	if long.Waiting() != 0 || long.Running() != 1 || long.Refusals() != 1 {
		t.Fatalf("after: %d waiting, %d running, %d refused; want 0, 1, 1", long.Waiting(), long.Running(), long.Refusals())
	}
	long.Release()
	if err := long.Acquire(ctx); err != nil {
		t.Fatalf("a freed place: %v", err)
	}
}
