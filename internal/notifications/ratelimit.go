package notifications

import (
	"context"
	"sync"
	"time"

	"github.com/herald-vpn/herald/internal/push"
)

// DefaultSendRate is the default cap of sends per second per provider.
const DefaultSendRate = 10_000

// RateLimit returns p with its sends capped at perSecond (a token bucket
// holding a tenth of a second's worth, at least one): callers beyond the
// rate wait their turn, in order, or until their context ends. Wrap each
// provider separately (the FCM client and the APNs client, before
// push.NewRouter) so each has its own cap. The cap is per process: with n
// replicas the provider sees up to n × perSecond. perSecond <= 0, or a nil
// p (also a typed nil such as an unset *fcm.Client, which push.NewRouter
// reads as "not configured"), returns p unchanged.
func RateLimit(p push.Provider, perSecond float64) push.Provider {
	if perSecond <= 0 || push.IsNil(p) {
		return p
	}
	interval := time.Duration(float64(time.Second) / perSecond)
	burst := max(int(perSecond/10), 1)
	return &limited{p: p, b: &bucket{interval: interval, tolerance: interval * time.Duration(burst-1)}}
}

type limited struct {
	p push.Provider
	b *bucket
}

func (l *limited) Send(ctx context.Context, t push.Target, n push.Notification) error {
	if err := l.b.wait(ctx); err != nil {
		return &push.Error{Kind: push.Other, Provider: "ratelimit", Reason: "Canceled", Err: err}
	}
	return l.p.Send(ctx, t, n)
}

// bucket is a token bucket in its GCRA form: tat is the theoretical arrival
// time of the next send; a send may go when tat - tolerance <= now.
type bucket struct {
	mu        sync.Mutex
	tat       time.Time
	interval  time.Duration
	tolerance time.Duration
}

func (b *bucket) reserve(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tat.Before(now) {
		b.tat = now
	}
	wait := b.tat.Add(-b.tolerance).Sub(now)
	b.tat = b.tat.Add(b.interval)
	return max(wait, 0)
}

func (b *bucket) wait(ctx context.Context) error {
	d := b.reserve(time.Now())
	if d <= 0 {
		return ctx.Err()
	}
	return push.Sleep(ctx, d)
}
