package notifications

import (
	"context"
	"log/slog"
	"testing"

	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/push"
)

func TestRateLimitDisabledAndCancelled(t *testing.T) {
	p := push.NewDev(slog.New(slog.DiscardHandler))
	if RateLimit(p, nil) != p {
		t.Fatal("no pace must not wrap the provider")
	}
	var unset *devProviderStub
	if got := RateLimit(unset, limits.NewPace(10)); got != push.Provider(unset) {
		t.Fatal("a typed nil provider must stay nil for push.NewRouter")
	}
	l := RateLimit(p, limits.NewPace(1)) // burst 1: the second send waits a second
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
