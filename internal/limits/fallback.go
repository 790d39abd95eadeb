package limits

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"
)

const (
	// fallbackLogEvery limits "degraded" log lines during an outage.
	fallbackLogEvery = time.Minute
	// fallbackProbeEvery is how often, while degraded, one request tries the
	// primary again; the others go straight to the fallback so an outage
	// does not add a dial timeout to every request.
	fallbackProbeEvery = time.Second
)

// Fallback answers from primary (Redis) and, when it fails, from an
// in-process fallback (Memory). Limits are then per instance instead of
// shared, which is better than refusing or admitting everything.
type Fallback struct {
	primary  Backend
	fallback Backend
	logger   *slog.Logger
	now      func() time.Time

	degraded  atomic.Bool
	lastLog   atomic.Int64 // UnixMilli of the last "degraded" log, 0 = never
	nextProbe atomic.Int64 // UnixMilli before which the primary is skipped
}

var _ Backend = (*Fallback)(nil)

// NewFallback wraps primary with fallback. logger and now default to
// slog.Default and time.Now.
func NewFallback(primary Backend, fallback Backend, logger *slog.Logger, now func() time.Time) *Fallback {
	if logger == nil {
		logger = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Fallback{primary: primary, fallback: fallback, logger: logger, now: now}
}

// Degraded reports whether answers currently come from the fallback.
func (f *Fallback) Degraded() bool { return f.degraded.Load() }

// Allow implements Backend.
func (f *Fallback) Allow(ctx context.Context, abuseKey string, checks []Check) (Decision, error) {
	if f.degraded.Load() && !f.claimProbe() {
		return f.fallback.Allow(ctx, abuseKey, checks)
	}
	d, err := f.primary.Allow(ctx, abuseKey, checks)
	if err == nil {
		if f.degraded.CompareAndSwap(true, false) {
			f.logger.Info("rate limit backend recovered")
		}
		return d, nil
	}
	// Caller mistakes and cancelled requests say nothing about Redis health.
	if errors.Is(err, ErrInvalidCheck) || ctx.Err() != nil {
		return Decision{}, err
	}
	f.markDegraded(err)
	return f.fallback.Allow(ctx, abuseKey, checks)
}

// claimProbe lets exactly one caller per fallbackProbeEvery try the primary.
func (f *Fallback) claimProbe() bool {
	now := f.now().UnixMilli()
	next := f.nextProbe.Load()
	return now >= next && f.nextProbe.CompareAndSwap(next, now+fallbackProbeEvery.Milliseconds())
}

func (f *Fallback) markDegraded(err error) {
	now := f.now().UnixMilli()
	if !f.degraded.Swap(true) {
		f.nextProbe.Store(now + fallbackProbeEvery.Milliseconds())
	}
	last := f.lastLog.Load()
	if last != 0 && now-last < fallbackLogEvery.Milliseconds() {
		return
	}
	if f.lastLog.CompareAndSwap(last, now) {
		f.logger.Warn("rate limit backend unavailable, using in-process limits", "err", err)
	}
}
