package live_test

import (
	"context"
	"errors"
	"testing"

	"github.com/herald-vpn/herald/internal/live"
)

type recordingBus struct{ sent []string }

func (b *recordingBus) Publish(_ context.Context, topic string, data []byte) error {
	b.sent = append(b.sent, topic+"="+string(data))
	return nil
}

func TestBroker(t *testing.T) {
	bus := &recordingBus{}
	b := live.New(bus, nil)
	latest := b.Subscribe("job:1", true, 0)
	queued := b.Subscribe("messenger", false, 2)
	other := b.Subscribe("job:2", true, 0)

	b.Publish(context.Background(), "job:1", []byte("a"))
	b.Publish(context.Background(), "job:1", []byte("b"))
	if got := string(<-latest.C); got != "b" {
		t.Fatalf("a latest-only subscriber read %q, want the newest, b", got)
	}
	// What comes from the bus is delivered here, not sent back.
	b.Deliver("messenger", []byte("1"))
	b.Deliver("messenger", []byte("2"))
	if got := string(<-queued.C) + string(<-queued.C); got != "12" {
		t.Fatalf("queued subscriber read %q, want 12 in order", got)
	}
	if want := []string{"job:1=a", "job:1=b"}; len(bus.sent) != 2 || bus.sent[0] != want[0] || bus.sent[1] != want[1] {
		t.Fatalf("bus got %v, want %v", bus.sent, want)
	}
	if len(other.C) != 0 {
		t.Fatal("a subscriber of another topic got an event")
	}

	// A resync is a nil event, kept over a newer event on a latest-only
	// subscription.
	b.Resync()
	b.Deliver("job:1", []byte("c"))
	if got := <-latest.C; got != nil {
		t.Fatalf("after a resync read %q, want nil", got)
	}
	if got := <-other.C; got != nil {
		t.Fatalf("after a resync read %q, want nil", got)
	}
	<-queued.C

	// A queued subscriber too far behind is dropped.
	for _, s := range []string{"x", "y", "z"} {
		b.Deliver("messenger", []byte(s))
	}
	n := 0
	for range queued.C {
		n++
	}
	if n != 2 || !queued.Overflowed() {
		t.Fatalf("read %d before the end, overflowed %v; want 2 and dropped", n, queued.Overflowed())
	}
	if b.Subscribers("messenger") != 0 {
		t.Fatal("a dropped subscriber is still counted")
	}
	latest.Close()
	latest.Close()
	if _, ok := <-latest.C; ok {
		t.Fatal("a closed subscription's channel is open")
	}
	if b.Subscribers("job:1") != 0 || b.Subscribers("job:2") != 1 {
		t.Fatal("subscriber counts wrong after Close")
	}
}

type failingBus struct{}

func (failingBus) Publish(context.Context, string, []byte) error { return errors.New("down") }

// A bus that fails does not stop delivery in this process.
func TestBrokerBusDown(t *testing.T) {
	b := live.New(failingBus{}, nil)
	s := b.Subscribe("t", true, 1)
	b.Publish(context.Background(), "t", []byte("v"))
	if got := string(<-s.C); got != "v" {
		t.Fatalf("read %q", got)
	}
}
