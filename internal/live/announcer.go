package live

import (
	"context"
	"sync"
	"time"
)

// Announcer publishes the state of things (jobs) on their topics when they
// change: at most once per interval per thing — changes in between are
// coalesced into the next publication, which reads the state as it then
// is — and at once when a change is final. Push broadcasts and messenger
// broadcasts announce their progress through one each.
type Announcer struct {
	broker   *Broker
	interval time.Duration
	topic    func(id string) string
	// read returns the thing's state as published, and whether it is the
	// last one.
	read    func(ctx context.Context, id string) (data []byte, finished bool, err error)
	onError func(id string, err error)

	mu     sync.Mutex
	things map[string]*announced
}

type announced struct {
	last    time.Time // of the latest publication
	pending bool      // a publication is scheduled
	mu      sync.Mutex
}

// NewAnnouncer returns an announcer publishing on b; onError hears of a
// state that could not be read (nothing is published then).
func NewAnnouncer(b *Broker, interval time.Duration, topic func(id string) string,
	read func(ctx context.Context, id string) ([]byte, bool, error), onError func(id string, err error)) *Announcer {
	return &Announcer{broker: b, interval: interval, topic: topic, read: read, onError: onError, things: map[string]*announced{}}
}

// Changed notes that thing id changed; final: it finished, publish now.
func (a *Announcer) Changed(id string, final bool) {
	a.mu.Lock()
	t := a.things[id]
	if t == nil {
		t = &announced{}
		a.things[id] = t
	}
	if final {
		a.mu.Unlock()
		a.publish(id, t)
		return
	}
	if t.pending {
		a.mu.Unlock()
		return
	}
	t.pending = true
	wait := a.interval - time.Since(t.last)
	a.mu.Unlock()
	if wait <= 0 {
		go a.publish(id, t)
		return
	}
	time.AfterFunc(wait, func() { a.publish(id, t) })
}

// publish reads the thing and publishes it; one publication per thing at a
// time, so they leave in the order they read.
func (a *Announcer) publish(id string, t *announced) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a.mu.Lock()
	t.pending, t.last = false, time.Now()
	a.mu.Unlock()
	ctx := context.Background()
	data, finished, err := a.read(ctx, id)
	if err != nil {
		a.onError(id, err)
		return
	}
	a.broker.Publish(ctx, a.topic(id), data)
	if finished {
		a.mu.Lock()
		if !t.pending {
			delete(a.things, id)
		}
		a.mu.Unlock()
	}
}
