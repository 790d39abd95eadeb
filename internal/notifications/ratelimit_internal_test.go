package notifications

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push"
)

func TestBucketSpacesSendsAfterTheBurst(t *testing.T) {
	// 100/s with a burst of 10: the first 10 go at once, then one per 10ms.
	b := RateLimit(push.NewDev(slog.New(slog.DiscardHandler)), 100).(*limited).b
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var waits []time.Duration
	for range 13 {
		waits = append(waits, b.reserve(t0))
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
		if w := b.reserve(t1); w != 0 {
			t.Fatalf("send %d after a pause waited %v", i, w)
		}
	}
	if w := b.reserve(t1); w != 10*time.Millisecond {
		t.Fatalf("11th send after a pause waited %v", w)
	}
}

func TestRateLimitDisabledAndCancelled(t *testing.T) {
	p := push.NewDev(slog.New(slog.DiscardHandler))
	if RateLimit(p, 0) != p {
		t.Fatal("a zero rate must not wrap the provider")
	}
	var unset *devProviderStub
	if got := RateLimit(unset, 10); got != push.Provider(unset) {
		t.Fatal("a typed nil provider must stay nil for push.NewRouter")
	}
	l := RateLimit(p, 1) // burst 1: the second send waits a second
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.Send(ctx, push.Target{Platform: "android", Token: "t"}, push.Notification{}); err != nil {
		t.Fatal(err)
	}
	cancel()
	err := l.Send(ctx, push.Target{Platform: "android", Token: "t"}, push.Notification{})
	if kind, _ := push.Classify(err); kind != push.Other {
		t.Fatalf("cancelled wait: %v (%v)", err, kind)
	}
}

type devProviderStub struct{}

func (*devProviderStub) Send(context.Context, push.Target, push.Notification) error { return nil }
