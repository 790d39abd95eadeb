// Package shed bounds one class of work: how much runs at once, how much
// may wait for a place, and how long it may wait. Past either bound the
// work is refused at once with *Refused, which the doors show as 503
// SERVICE_UNAVAILABLE with Retry-After: beyond capacity a server answers
// "later" instead of queueing without bound (and timing out anyway).
package shed

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Bounds are a class's bounds.
type Bounds struct {
	// Concurrency is how much runs at once (at least 1).
	Concurrency int
	// Queue is how much may wait for a place beyond those (0: none).
	Queue int
	// Wait is the longest a waiter waits before it is refused (0: a
	// waiter is refused at once, as if the queue were full).
	Wait time.Duration
}

// Queue admits the work of one class within its Bounds. Its zero value is
// not usable; make one with New.
type Queue struct {
	class    string
	slots    chan struct{}
	maxQueue int64
	maxWait  time.Duration
	waiting  atomic.Int64
	refused  atomic.Uint64
}

// New returns the queue of class (a name for errors and metrics).
func New(class string, b Bounds) *Queue {
	return &Queue{class: class, slots: make(chan struct{}, max(b.Concurrency, 1)), maxQueue: int64(max(b.Queue, 0)), maxWait: max(b.Wait, 0)}
}

// Refused is the error of work refused by its class's bounds.
type Refused struct {
	Class string
	// QueueFull: refused on arrival, the queue was full; else refused
	// after waiting the longest wait.
	QueueFull bool
	// RetryAfter is when a client might try again.
	RetryAfter time.Duration
}

func (e *Refused) Error() string {
	if e.QueueFull {
		return fmt.Sprintf("shed: %s at capacity and its queue full", e.Class)
	}
	return fmt.Sprintf("shed: %s at capacity past the longest wait", e.Class)
}

// Acquire takes a place, waiting in the queue if every place is taken;
// *Refused when the queue is full or the wait exceeds the bound, ctx's
// error when ctx ends first. Each nil return is undone by one Release.
func (q *Queue) Acquire(ctx context.Context) error {
	select {
	case q.slots <- struct{}{}:
		return nil
	default:
	}
	if q.waiting.Add(1) > q.maxQueue {
		q.waiting.Add(-1)
		return q.refuse(true)
	}
	defer q.waiting.Add(-1)
	if q.maxWait <= 0 {
		return q.refuse(true)
	}
	t := time.NewTimer(q.maxWait)
	defer t.Stop()
	select {
	case q.slots <- struct{}{}:
		return nil
	case <-t.C:
		return q.refuse(false)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (q *Queue) refuse(full bool) error {
	q.refused.Add(1)
	// Retry after about the longest wait: by then the queue has turned
	// over, at least 1 s (Retry-After counts whole seconds).
	return &Refused{Class: q.class, QueueFull: full, RetryAfter: max(q.maxWait, time.Second)}
}

// Release gives back a place taken by Acquire.
func (q *Queue) Release() { <-q.slots }

// Concurrency is how much runs at once at most.
func (q *Queue) Concurrency() int { return cap(q.slots) }

// Running is how much runs now.
func (q *Queue) Running() int { return len(q.slots) }

// Waiting is how much waits for a place now.
func (q *Queue) Waiting() int { return int(q.waiting.Load()) }

// Refusals counts the work refused since the start.
func (q *Queue) Refusals() uint64 { return q.refused.Load() }

// Class is the queue's class name.
func (q *Queue) Class() string { return q.class }
