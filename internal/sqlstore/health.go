package sqlstore

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herald-vpn/herald/internal/storage"
)

// health turns a database outage into two log lines, one when it starts
// and one when it ends, however many requests fail in between: the store
// notes every ErrUnavailable, and while the database is down one goroutine
// pings it until it answers.
type health struct {
	logger *slog.Logger
	ping   func(ctx context.Context) error
	every  time.Duration

	mu     sync.Mutex
	down   bool
	isDown atomic.Bool // down, read without the lock on every success
	since  time.Time
	closed chan struct{}
	wg     sync.WaitGroup
}

func newHealth(logger *slog.Logger, ping func(ctx context.Context) error) *health {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &health{logger: logger, ping: ping, every: time.Second, closed: make(chan struct{})}
}

// note passes err through, starting an outage when it says the database
// cannot be reached, and ending one when a query succeeds.
func (h *health) note(err error) error {
	if err == nil {
		if h.isDown.Load() {
			h.up()
		}
		return nil
	}
	if !errors.Is(err, storage.ErrUnavailable) {
		return err
	}
	h.mu.Lock()
	if h.down {
		h.mu.Unlock()
		return err
	}
	select {
	case <-h.closed:
		h.mu.Unlock()
		return err
	default:
	}
	h.down, h.since = true, time.Now()
	h.isDown.Store(true)
	h.wg.Add(1)
	h.mu.Unlock()
	h.logger.Error("database unavailable: API requests that need it answer 503 SERVICE_UNAVAILABLE until it is back", "err", err)
	go h.watch()
	return err
}

// Down reports whether an outage is in progress.
func (h *health) Down() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down
}

func (h *health) watch() {
	defer h.wg.Done()
	t := time.NewTicker(h.every)
	defer t.Stop()
	for {
		select {
		case <-h.closed:
			return
		case <-t.C:
		}
		if !h.Down() {
			return // a query succeeded first
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := h.ping(ctx)
		cancel()
		if err == nil {
			h.up()
			return
		}
	}
}

// up ends the outage, once.
func (h *health) up() {
	h.mu.Lock()
	if !h.down {
		h.mu.Unlock()
		return
	}
	h.down = false
	h.isDown.Store(false)
	outage := time.Since(h.since)
	h.mu.Unlock()
	h.logger.Info("database available again", "outage_seconds", outage.Round(time.Millisecond).Seconds())
}

// close stops the watcher.
func (h *health) close() {
	h.mu.Lock()
	select {
	case <-h.closed:
	default:
		close(h.closed)
	}
	h.mu.Unlock()
	h.wg.Wait()
}
