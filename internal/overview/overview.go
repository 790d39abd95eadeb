// Package overview is the service at a glance, for the operator console:
// the counts each domain package defines (accounts, devices, broadcasts,
// webhooks), each made by one aggregate query of the store, with the
// bot's status and this replica's rate limiter.
package overview

import (
	"context"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// Store counts; sqlstore implements it on SQLite and PostgreSQL. Each
// method is one aggregate query: no rows are loaded.
type Store interface {
	// CountAccounts counts the accounts not deleted; NewLast24h are those
	// created at or after since.
	CountAccounts(ctx context.Context, since time.Time) (accounts.Counts, error)
	// CountDeviceTokens counts the active devices by platform and token
	// state.
	CountDeviceTokens(ctx context.Context) ([]devices.PlatformTokens, error)
	// CountActiveNotificationJobs counts the push broadcast jobs queued,
	// scheduled or running.
	CountActiveNotificationJobs(ctx context.Context) (notifications.JobCounts, error)
	// CountActiveMessengerBroadcasts counts the messenger broadcasts queued
	// or running.
	CountActiveMessengerBroadcasts(ctx context.Context) (int, error)
	// CountWebhookEndpoints counts the webhook endpoints.
	CountWebhookEndpoints(ctx context.Context) (webhooks.Counts, error)
}

// Bot is the messenger bot's status (messenger.Service).
type Bot interface {
	Status(ctx context.Context) (messenger.Status, error)
}

// Overview is the service at a glance.
type Overview struct {
	Version     string
	Accounts    accounts.Counts
	Devices     devices.Counts
	Broadcasts  Broadcasts
	Bot         messenger.Status
	Webhooks    webhooks.Counts
	RateLimiter limits.State
}

// Broadcasts are the broadcasts not yet finished: push jobs by status,
// and messenger broadcasts queued or running.
type Broadcasts struct {
	Running, Queued, Scheduled int
	MessengerRunning           int
}

// Config is what the overview reports besides the store's counts.
type Config struct {
	Version string
	// RateLimiter reports this replica's rate limiter (nil: in memory).
	RateLimiter func() limits.State
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Service makes the overview.
type Service struct {
	store Store
	bot   Bot
	cfg   Config
}

// New returns the service.
func New(store Store, bot Bot, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RateLimiter == nil {
		cfg.RateLimiter = func() limits.State { return limits.State{Backend: limits.BackendMemory} }
	}
	return &Service{store: store, bot: bot, cfg: cfg}
}

// Get counts everything now. The counts are read one query after another,
// not as one snapshot: each is exact at its own moment.
func (s *Service) Get(ctx context.Context) (Overview, error) {
	out := Overview{Version: s.cfg.Version, RateLimiter: s.cfg.RateLimiter()}
	var err error
	if out.Accounts, err = s.store.CountAccounts(ctx, s.cfg.Now().Add(-24*time.Hour)); err != nil {
		return Overview{}, err
	}
	tokens, err := s.store.CountDeviceTokens(ctx)
	if err != nil {
		return Overview{}, err
	}
	out.Devices = devices.Summarize(tokens)
	jobs, err := s.store.CountActiveNotificationJobs(ctx)
	if err != nil {
		return Overview{}, err
	}
	out.Broadcasts = Broadcasts{Running: jobs.Running, Queued: jobs.Queued, Scheduled: jobs.Scheduled}
	if out.Broadcasts.MessengerRunning, err = s.store.CountActiveMessengerBroadcasts(ctx); err != nil {
		return Overview{}, err
	}
	if out.Webhooks, err = s.store.CountWebhookEndpoints(ctx); err != nil {
		return Overview{}, err
	}
	if out.Bot, err = s.bot.Status(ctx); err != nil {
		return Overview{}, err
	}
	return out, nil
}
