package messenger

import (
	"context"
	"time"

	"github.com/herald-vpn/herald/internal/fanout"
	"github.com/herald-vpn/herald/internal/live"
)

// BroadcastTopic is the live topic of messenger broadcast id's progress.
func BroadcastTopic(id string) string { return "messenger-broadcast:" + id }

// progressInterval: a running job's progress is published at most twice a
// second; its end at once.
const progressInterval = 500 * time.Millisecond

// Version orders the states of one job: statuses only move forward and
// counters only grow, so a subscriber that saw version v needs nothing at
// or below it.
func (b Broadcast) Version() int64 { return fanout.Version(b.Status, b.Sent+b.Failed+b.Blocked) }

// Watch follows broadcast id for a live subscriber: the job as it is now,
// then each newer state published by whichever replica works it (at most
// two a second, and the final one); the channel is closed after the final
// state or when ctx ends. JOB_NOT_FOUND when unknown.
func (b *Broadcaster) Watch(ctx context.Context, id string) (<-chan Broadcast, error) {
	// Subscribed before the first read, so no change falls in between.
	sub := b.svc.live.Subscribe(BroadcastTopic(id), true, 1)
	j, err := b.Job(ctx, id)
	if err != nil {
		sub.Close()
		return nil, err
	}
	return live.Follow(ctx, sub, j, -1, b.cfg.Wire.Decode,
		func(ctx context.Context) (Broadcast, error) { return b.store.MessengerBroadcast(ctx, id) },
		func(error) {}), nil // a gap is read again; a garbled event waits for the next
}
