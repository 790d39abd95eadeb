package notifications

import (
	"context"

	"github.com/herald-vpn/herald/internal/push"
)

// DefaultSendRate is the default cap of sends per second per provider.
const DefaultSendRate = 10_000

// Pacer spaces sends: Wait returns when the caller may send, or with the
// context's error. limits.Pace paces one process; limits.SharedPace every
// replica sharing one Redis.
type Pacer interface {
	Wait(ctx context.Context) error
}

// RateLimit returns p with every send waiting its turn in pace first. Wrap
// each provider with its own pace (the FCM client and the APNs client,
// before push.NewRouter) so each has its own cap. A nil pace, or a nil p
// (also a typed nil such as an unset *fcm.Client, which push.NewRouter
// reads as "not configured"), returns p unchanged.
func RateLimit(p push.Provider, pace Pacer) push.Provider {
	if pace == nil || push.IsNil(p) {
		return p
	}
	return &limited{p: p, pace: pace}
}

type limited struct {
	p    push.Provider
	pace Pacer
}

func (l *limited) Send(ctx context.Context, t push.Target, n push.Notification) error {
	if err := l.pace.Wait(ctx); err != nil {
		return &push.Error{Kind: push.Other, Provider: "ratelimit", Reason: "Canceled", Err: err}
	}
	return l.p.Send(ctx, t, n)
}
