package notifications

import (
	"context"
	"errors"
	"time"

	"github.com/herald-vpn/herald/internal/fanout"
	"github.com/herald-vpn/herald/internal/live"
)

// DefaultProgressInterval is Config.ProgressInterval's default: a job's
// progress is published at most twice a second.
const DefaultProgressInterval = 500 * time.Millisecond

// ProgressTopic is the live topic of job id's progress.
func ProgressTopic(id string) string { return "job:" + id }

// Version orders the states of one job: it grows with every change of
// status or counters (statuses only move forward, counters only grow), so
// it is the event ID of live progress, the same on every replica, and a
// client that saw version v needs nothing at or below it. The email
// part's accounts count too, so that its pages are announced live.
func (j Job) Version() int64 {
	return fanout.Version(j.Status, j.Sent+j.Failed+j.InvalidTokens+j.Email.accounts())
}

// accounts counts the accounts the email part is done with.
func (e EmailCounts) accounts() int { return e.Queued + e.OptedOut + e.Capped + e.NoEmailAddress }

// Watch follows job id for a live subscriber: the job as it is now if its
// Version is above after (-1 for a subscriber that has nothing yet: a
// scheduled job's version is 0), then every newer state as it is published (at
// most one per Config.ProgressInterval, and the final one), from whichever
// replica works the job. The channel is closed after the finished state,
// or when ctx ends. JOB_NOT_FOUND when unknown.
func (s *Service) Watch(ctx context.Context, id string, after int64) (<-chan Job, error) {
	// Subscribed before the first read, so no change falls in between.
	sub := s.live.Subscribe(ProgressTopic(id), true, 1)
	j, err := s.Job(ctx, id)
	if err != nil {
		sub.Close()
		return nil, err
	}
	return live.Follow(ctx, sub, j, after, s.cfg.Wire.Decode,
		func(ctx context.Context) (Job, error) { return s.store.BroadcastJob(ctx, id) },
		func(err error) {
			if !errors.Is(err, context.Canceled) {
				s.cfg.Logger.WarnContext(ctx, "broadcast progress unreadable", "job_id", id, "err", err)
			}
		}), nil
}

// Live is the broker the service publishes progress on.
func (s *Service) Live() *live.Broker { return s.live }

// Announce tells live subscribers that job id changed, for code that
// changes a job outside this service's own paths: coalesced like the
// service's own announcements, at once when final.
func (s *Service) Announce(id string, final bool) { s.progress.Changed(id, final) }
