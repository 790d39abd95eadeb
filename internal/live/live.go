// Package live is the in-process broker of live events: a topic's
// subscribers in this process get what is published on it here, and, through
// a Bus, what other replicas publish. It knows no HTTP and no database; the
// store is the Bus on PostgreSQL (LISTEN/NOTIFY), and a single SQLite
// process needs none.
package live

import (
	"context"
	"log/slog"
	"sync"
)

// Bus carries events to the other processes sharing the database. What it
// receives from them it hands to Broker.Deliver, and after a gap in which
// it may have missed some, it calls Broker.Resync.
type Bus interface {
	Publish(ctx context.Context, topic string, data []byte) error
}

// Broker fans events out to subscribers. The zero value is not usable; use
// New.
type Broker struct {
	bus    Bus
	logger *slog.Logger

	mu   sync.Mutex
	subs map[string]map[*Sub]struct{}
}

// New returns a broker; bus may be nil (one process alone).
func New(bus Bus, logger *slog.Logger) *Broker {
	if logger == nil {
		logger = slog.Default()
	}
	return &Broker{bus: bus, logger: logger, subs: map[string]map[*Sub]struct{}{}}
}

// Publish delivers data to this process's subscribers of topic and sends it
// to the other processes through the bus. A bus failure is logged: live
// events are a view of state kept in the database, which a subscriber can
// always read again.
func (b *Broker) Publish(ctx context.Context, topic string, data []byte) {
	b.Deliver(topic, data)
	if b.bus == nil {
		return
	}
	if err := b.bus.Publish(ctx, topic, data); err != nil && ctx.Err() == nil {
		b.logger.WarnContext(ctx, "live event not sent to the other replicas", "topic", topic, "err", err)
	}
}

// Deliver hands data to this process's subscribers of topic only.
func (b *Broker) Deliver(topic string, data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs[topic] {
		s.offer(data)
	}
}

// Resync tells every subscriber that events may have been missed: each
// receives a nil event, on which it should read the state again.
func (b *Broker) Resync() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, subs := range b.subs {
		for s := range subs {
			s.offer(nil)
		}
	}
}

// Subscribers counts the subscriptions of topic in this process.
func (b *Broker) Subscribers(topic string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs[topic])
}

// Subscribe starts a subscription to topic. latest: only the newest event
// matters (each is a full state), so a slow reader skips to it; otherwise
// up to buffer events wait, and a reader further behind is dropped (C is
// closed and Overflowed reports true). Close it when done.
func (b *Broker) Subscribe(topic string, latest bool, buffer int) *Sub {
	if latest || buffer < 1 {
		buffer = 1
	}
	c := make(chan []byte, buffer)
	s := &Sub{C: c, c: c, b: b, topic: topic, latest: latest}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs[topic] == nil {
		b.subs[topic] = map[*Sub]struct{}{}
	}
	b.subs[topic][s] = struct{}{}
	return s
}

// Sub is one subscription. A nil event on C means "read the state again".
type Sub struct {
	C <-chan []byte

	c          chan []byte
	b          *Broker
	topic      string
	latest     bool
	closed     bool // under b.mu
	overflowed bool // under b.mu
}

// offer hands data to the subscriber without waiting; called under b.mu.
func (s *Sub) offer(data []byte) {
	if s.closed {
		return
	}
	select {
	case s.c <- data:
		return
	default:
	}
	if s.latest {
		// Replace the unread event by the newer one; a pending resync
		// (nil) is kept, since it reads the newest state anyway.
		select {
		case old := <-s.c:
			if old == nil {
				data = nil
			}
		default:
		}
		select {
		case s.c <- data:
		default:
		}
		return
	}
	s.overflowed = true
	s.remove()
}

// remove ends the subscription; called under b.mu.
func (s *Sub) remove() {
	if s.closed {
		return
	}
	s.closed = true
	delete(s.b.subs[s.topic], s)
	if len(s.b.subs[s.topic]) == 0 {
		delete(s.b.subs, s.topic)
	}
	close(s.c)
}

// Overflowed reports whether the subscription was dropped for reading too
// slowly.
func (s *Sub) Overflowed() bool {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return s.overflowed
}

// Close ends the subscription; C is closed. Closing twice is harmless.
func (s *Sub) Close() {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.remove()
}
