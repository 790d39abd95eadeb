package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/riverqueue/river"
)

// HousekeepingArgs is the periodic job that prunes what nothing needs any
// more (sqlstore.DB.Prune).
type HousekeepingArgs struct{}

func (HousekeepingArgs) Kind() string { return "housekeeping" }

// HousekeepingWorker works HousekeepingArgs.
type HousekeepingWorker struct {
	river.WorkerDefaults[HousekeepingArgs]
	DB                *sqlstore.DB
	DeliveryRetention time.Duration
	// SecurityLogRetention, when set, is how long security log entries
	// are kept (securitylog.Log.Prune).
	SecurityLogRetention time.Duration
	SecurityLog          *securitylog.Log
	// Guests, when set, are purged once unused for GuestRetention.
	Guests interface {
		PurgeGuests(ctx context.Context, retention time.Duration) (int, error)
	}
	GuestRetention time.Duration
	// Inbox, when set, has its expired items deleted (inbox.Service.Prune).
	Inbox interface {
		Prune(ctx context.Context) (int64, error)
	}
	// WebhookSlots, when set, are the rules by which parked webhook
	// deliveries are handed free slots (sqlstore.DB.SweepWebhookSlots).
	WebhookSlots *webhooks.Slots
	Logger       *slog.Logger
}

// Timeout: pruning a month of deliveries can take a while.
func (w *HousekeepingWorker) Timeout(*river.Job[HousekeepingArgs]) time.Duration {
	return 10 * time.Minute
}

func (w *HousekeepingWorker) Work(ctx context.Context, _ *river.Job[HousekeepingArgs]) error {
	p, err := w.DB.Prune(ctx, w.DB.Now().Add(-w.DeliveryRetention))
	if err != nil {
		return fmt.Errorf("housekeeping: %w", err)
	}
	var security int64
	if w.SecurityLog != nil && w.SecurityLogRetention > 0 {
		if security, err = w.SecurityLog.Prune(ctx, w.SecurityLogRetention); err != nil {
			return fmt.Errorf("housekeeping: security log: %w", err)
		}
	}
	var guests int
	if w.Guests != nil && w.GuestRetention > 0 {
		if guests, err = w.Guests.PurgeGuests(ctx, w.GuestRetention); err != nil {
			return fmt.Errorf("housekeeping: guests: %w", err)
		}
	}
	// An unsubscribe link's use is kept as long as the link could be
	// used again: past the links' lifetime it names an expired token.
	links, err := w.DB.DeleteUnsubscribeLinkUses(ctx, w.DB.Now().Add(-preferences.UnsubscribeTTL))
	if err != nil {
		return fmt.Errorf("housekeeping: unsubscribe links: %w", err)
	}
	// A cap's window is a day on the user's clock, at most a day from
	// UTC's: two days back is past in every zone.
	capWindows, err := w.DB.DeleteCapWindows(ctx, w.DB.Now().UTC().AddDate(0, 0, -2).Format(time.DateOnly))
	if err != nil {
		return fmt.Errorf("housekeeping: notification caps: %w", err)
	}
	var inboxItems int64
	if w.Inbox != nil {
		if inboxItems, err = w.Inbox.Prune(ctx); err != nil {
			return fmt.Errorf("housekeeping: inbox: %w", err)
		}
	}
	if w.WebhookSlots != nil {
		if _, err := w.DB.SweepWebhookSlots(ctx, *w.WebhookSlots); err != nil {
			return fmt.Errorf("housekeeping: webhook slots: %w", err)
		}
	}
	w.Logger.InfoContext(ctx, "housekeeping", "deliveries", p.Deliveries, "sessions", p.Sessions, "codes", p.Codes, "pending_codes", p.PendingCodes, "leases", p.Leases,
		"telegram_updates", p.TelegramUpdates, "webhook_events", p.WebhookEvents, "idempotency_keys", p.IdempotencyKeys, "security_events", security, "guests", guests, "unsubscribe_link_uses", links, "cap_windows", capWindows, "inbox_items", inboxItems)
	return nil
}

// HousekeepingSchedule runs the pass at start and then hourly; River's
// elected leader inserts it, so replicas do not repeat it.
func HousekeepingSchedule() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(time.Hour), func() (river.JobArgs, *river.InsertOpts) {
		return HousekeepingArgs{}, nil
	}, &river.PeriodicJobOpts{RunOnStart: true})
}
