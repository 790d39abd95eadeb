package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/herald-vpn/herald/internal/sqlstore"
)

// The backoff between attempts to reach the database at start: doubling
// from the first delay to the cap, each drawn in [d/2, d] so replicas
// started together do not knock at once; and the longest one attempt may
// take (a connection that is never answered is given up on).
const (
	startRetryFirst  = 500 * time.Millisecond
	startRetryMax    = 5 * time.Second
	startAttemptMax  = 10 * time.Second
	startRetryJitter = 2 // each delay is drawn in [d/startRetryJitter, d]
)

// errStartInterrupted is a stop (SIGTERM, SIGINT) while serve was still
// waiting for its database: serve exits 0, as a stop does.
var errStartInterrupted = errors.New("stopped while waiting for the database")

// openWhenReachable calls open until it succeeds, fails with an error
// that retrying cannot fix (sqlstore.ConnectRetryable), or wait has passed since
// the first attempt; wait 0 is one attempt. Each failed attempt is one
// log line, at most one every startRetryMax once the backoff is capped.
func openWhenReachable(ctx context.Context, wait time.Duration, logger *slog.Logger, open func(context.Context) (*sqlstore.DB, error)) (*sqlstore.DB, error) {
	if wait <= 0 {
		return open(ctx)
	}
	start := time.Now()
	deadline := start.Add(wait)
	backoff := startRetryFirst
	var previous error
	for attempt := 1; ; attempt++ {
		// The last attempt gets a second even if the wait ends sooner, so
		// that it can fail for its own reason rather than the deadline's.
		actx, cancel := context.WithTimeout(ctx, min(max(time.Until(deadline), time.Second), startAttemptMax))
		db, err := open(actx)
		cancel()
		if err == nil {
			if attempt > 1 {
				logger.Info("database reachable", "attempts", attempt, "waited", time.Since(start).Round(time.Millisecond).String())
			}
			return db, nil
		}
		if ctx.Err() != nil {
			return nil, errStartInterrupted
		}
		if !sqlstore.ConnectRetryable(err) {
			return nil, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			if errors.Is(err, context.DeadlineExceeded) && previous != nil {
				err = previous // cut short by the wait: the earlier reason says more
			}
			return nil, fmt.Errorf("the database was not reachable within HERALD_DATABASE_START_TIMEOUT (%s, %d attempts): %w", wait, attempt, err)
		}
		previous = err
		delay := min(backoff/startRetryJitter+rand.N(backoff-backoff/startRetryJitter+1), left)
		logger.Warn("database not reachable yet; retrying (the API answers 503 meanwhile)", "attempt", attempt, "retry_in", delay.Round(time.Millisecond).String(), "timeout_in", left.Round(time.Second).String(), "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, errStartInterrupted
		case <-t.C:
		}
		backoff = min(2*backoff, startRetryMax)
	}
}

// handlerSwap serves one handler and then another on the same listener:
// serve starts with server.Starting while it waits for its database, and
// swaps in the real handler once everything is open.
type handlerSwap struct{ current atomic.Pointer[http.Handler] }

func newHandlerSwap(h http.Handler) *handlerSwap {
	s := &handlerSwap{}
	s.set(h)
	return s
}

func (s *handlerSwap) set(h http.Handler) { s.current.Store(&h) }

func (s *handlerSwap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.current.Load()).ServeHTTP(w, r)
}
